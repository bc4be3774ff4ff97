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
