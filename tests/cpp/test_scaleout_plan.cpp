// mempath-mpi's arithmetic: windows per repetition, rank pairing across nodes, NUMA
// binding of local ranks, and nccl-tests' bus-bandwidth factors.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/scaleout_plan.hpp"

using namespace mempath;

TEST(ScaleoutPlan, WindowsMoveAbout256MiBWithinBounds) {
  EXPECT_EQ(mpi_windows(1, kMpiWindow), 100);              // tiny messages: capped
  EXPECT_EQ(mpi_windows(1ULL << 20, kMpiWindow), 4);       // 64 x 1 MiB = 64 MiB per window
  EXPECT_EQ(mpi_windows(1ULL << 30, kMpiWindow), 2);       // at least two windows
  EXPECT_EQ(mpi_windows(0, kMpiWindow), 100);
}

TEST(ScaleoutPlan, PartnersHaveTheSameLocalIndexOnTheOtherNode) {
  // Ranks 0,1 on node 0 and 2,3 on node 1; rank 4 is a third rank on node 0 with no peer.
  const std::vector<int> node = {0, 0, 1, 1, 0}, local = {0, 1, 0, 1, 2};
  EXPECT_EQ(mpi_partner(0, node, local), 2);
  EXPECT_EQ(mpi_partner(3, node, local), 1);
  EXPECT_EQ(mpi_partner(4, node, local), -1);
}

TEST(ScaleoutPlan, LocalRanksTakeTheirOwnNumaNodeThenWrap) {
  const std::vector<int> alps = {0, 1, 2, 3};  // the four Grace nodes of an Alps node
  for (int l = 0; l < 4; ++l) EXPECT_EQ(rank_numa(l, alps), l);
  EXPECT_EQ(rank_numa(5, alps), 1);
  EXPECT_EQ(rank_numa(0, {}), -1);
}

TEST(ScaleoutPlan, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor("allreduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor("allgather", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor("allreduce", 2), 1.0);
  EXPECT_THROW(busbw_factor("alltoall", 2), UsageError);
}

TEST(ScaleoutPlan, RanksPerNodeAndPairsComeFromTheLayout) {
  // Guards issue #12 (no rank waits forever): counted from the layout every rank has, so
  // the --ppn check needs no message a failing rank could leave unanswered.
  const std::vector<int> node = {0, 0, 1, 1, 0}, local = {0, 1, 0, 1, 2};
  EXPECT_EQ(ranks_per_node(node), (std::vector<int>{3, 2}));
  EXPECT_EQ(mpi_pairs(node, local), 2);
  EXPECT_EQ(mpi_pairs({0, 1}, {0, 0}), 1);
}

TEST(ScaleoutPlan, PatternTellsStaleShiftedAndClearedMessagesApart) {
  // Guards issue #12 (MPI bw never checked received data).
  for (uint64_t bytes : {1ULL, 7ULL, 8ULL, 13ULL, 4096ULL + 5}) {
    std::vector<unsigned char> buf(bytes + 8, 0);
    const uint64_t tag = pattern_tag(3, bytes, 1);
    EXPECT_EQ(pattern_mismatch(buf.data(), bytes, tag), 0u) << "a cleared buffer is not a message";
    fill_pattern(buf.data(), bytes, tag);
    EXPECT_EQ(pattern_mismatch(buf.data(), bytes, tag), bytes);
    if (bytes > 8) EXPECT_LT(pattern_mismatch(buf.data() + 1, bytes - 1, tag), 8u) << "a shifted message";
    buf[bytes - 1] ^= 0x10;
    EXPECT_EQ(pattern_mismatch(buf.data(), bytes, tag), bytes - 1) << "the last byte is checked too";
  }
  std::vector<unsigned char> buf(64);
  fill_pattern(buf.data(), buf.size(), pattern_tag(0, 64, 1));
  EXPECT_LT(pattern_mismatch(buf.data(), buf.size(), pattern_tag(0, 64, 2)), 8u) << "the previous repetition";
  EXPECT_LT(pattern_mismatch(buf.data(), buf.size(), pattern_tag(1, 64, 1)), 8u) << "another sender";
  EXPECT_NE(pattern_tag(0, 64, 1), pattern_tag(0, 128, 1));
}

TEST(ScaleoutPlan, NcclExpectedValuesAreExactSums) {
  // Guards issue #12 (the NCCL check looked at element 0 only): every element has an
  // expected value, different for neighbouring elements and for each rank's part.
  for (int ranks : {1, 2, 3, 8, 9, 17}) {
    for (uint64_t i = 0; i < 20; ++i) {
      double sum = 0;
      for (int r = 0; r < ranks; ++r) sum += nccl_input(r, i);
      EXPECT_EQ(nccl_allreduce_expected(ranks, i), static_cast<float>(sum));
    }
  }
  EXPECT_NE(nccl_allreduce_expected(2, 0), nccl_allreduce_expected(2, 1));
  EXPECT_EQ(nccl_allgather_expected(4, 5), nccl_input(1, 1));
  EXPECT_NE(nccl_allgather_expected(4, 1), nccl_allgather_expected(4, 5));
}
