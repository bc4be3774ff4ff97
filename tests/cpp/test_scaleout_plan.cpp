// mempath-mpi's arithmetic: windows per repetition, rank pairing across nodes, NUMA
// binding of local ranks, and nccl-tests' bus-bandwidth factors.
#include <gtest/gtest.h>

#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/scaleout_plan.hpp"
#include "core/topology.hpp"

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

Topology fixture(const std::string& name) { return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name); }

TEST(ScaleoutPlan, SplitModeDividesTheNodeSizeAmongItsRanks) {
  // The paper's Fig. 14: the x axis is the node's total, each of its ranks sends a share.
  EXPECT_EQ(split_rank_bytes(1ULL << 30, 4), 1ULL << 28);
  EXPECT_EQ(split_rank_bytes(12, 3), 4u);
  EXPECT_EQ(split_rank_bytes(2, 4), 0u);  // less than a byte each
  EXPECT_EQ(split_node_sizes(1, 64, 4), (std::vector<uint64_t>{4, 8, 16, 32, 64}));  // from one byte a rank
  EXPECT_EQ(split_node_sizes(1, 8, 1), (std::vector<uint64_t>{1, 2, 4, 8}));
  EXPECT_TRUE(split_node_sizes(1, 2, 4).empty());
}

TEST(ScaleoutPlan, NcclPlacementsOnAQuadGh200) {
  // Figs. 18/19: local HBM (cudaMalloc and system-allocated), local DDR, peer DDR.
  const Topology t = fixture("gh200_quad");
  auto at = [&](const std::string& name, int gpu) { return nccl_placement(t, name, gpu); };
  EXPECT_EQ(at("device", 1).alloc, Alloc::Device);
  EXPECT_EQ(at("device", 1).mem, "gpu1");
  EXPECT_EQ(at("device", 1).via, "local");
  const NcclPlacement hbm = at("hbm-system", 1);
  EXPECT_EQ(hbm.alloc, Alloc::Numa);
  EXPECT_EQ(hbm.mem, "numa12");  // gpu1's HBM NUMA node
  EXPECT_EQ(hbm.reason, "");
  EXPECT_EQ(at("host", 2).alloc, Alloc::Numa);
  EXPECT_EQ(at("host", 2).mem, "numa2");  // its own Grace's LPDDR
  EXPECT_EQ(at("host", 2).via, "c2c");
  const NcclPlacement peer_host = at("peer-host", 3);
  EXPECT_EQ(peer_host.alloc, Alloc::Numa);
  EXPECT_EQ(peer_host.mem, "numa0");  // the next superchip's LPDDR
  EXPECT_EQ(peer_host.reason, "");
  EXPECT_NE(peer_host.via.find("nvlink"), std::string::npos) << peer_host.via;
  EXPECT_EQ(at("peer", 0).mem, "gpu1");
  EXPECT_EQ(at("peer", 0).reason, "");
  for (const auto& name : nccl_placement_names()) EXPECT_EQ(at(name, 0).reason, "") << name;
}

TEST(ScaleoutPlan, NcclPlacementsANodeLacksAreSkippedWithTheReason) {
  const Topology x86 = fixture("x86_h100");
  EXPECT_EQ(nccl_placement(x86, "host", 0).alloc, Alloc::Pinned);  // no ATS: pinned host memory
  EXPECT_EQ(nccl_placement(x86, "host", 0).reason, "");
  EXPECT_NE(nccl_placement(x86, "hbm-system", 0).reason.find("no NUMA node"), std::string::npos);
  EXPECT_NE(nccl_placement(x86, "peer-host", 0).reason.find("GH200"), std::string::npos);
  EXPECT_NE(nccl_placement(x86, "peer", 0).reason.find("second GPU"), std::string::npos);
  // Two sockets, four GPUs on NVLink: peers, but no GPU reads another socket's pageable memory.
  const Topology two = fixture("x86_2s_4gpu");
  EXPECT_EQ(nccl_placement(two, "peer", 3).mem, "gpu0");
  EXPECT_EQ(nccl_placement(two, "peer", 3).reason, "");
  EXPECT_NE(nccl_placement(two, "peer-host", 0).reason.find("ATS"), std::string::npos);
  // One GH200: its HBM is a NUMA node, but there is no other superchip.
  const Topology single = fixture("gh200_single");
  EXPECT_EQ(nccl_placement(single, "hbm-system", 0).mem, "numa1");
  EXPECT_EQ(nccl_placement(single, "hbm-system", 0).reason, "");
  EXPECT_NE(nccl_placement(single, "peer-host", 0).reason.find("no other superchip"), std::string::npos);
  // Two GH200 without GPU peer access: the other superchip's LPDDR is read through ATS.
  const Topology dual = fixture("gh200_dual");
  EXPECT_EQ(nccl_placement(dual, "peer-host", 0).mem, "numa1");
  EXPECT_EQ(nccl_placement(dual, "peer-host", 0).reason, "");
  EXPECT_NE(nccl_placement(dual, "peer", 0).reason, "");
  EXPECT_NE(nccl_placement(x86, "device", 7).reason.find("does not exist"), std::string::npos);
  EXPECT_THROW(nccl_placement(x86, "remote", 0), UsageError);
}

TEST(ScaleoutPlan, NcclSizesAreExactAndThePapersPerRank) {
  // Fig. 19: all-reduce of 4 GiB, all-gather of 16 MiB from each of the processes.
  NcclSizes paper;
  paper.paper = true;
  for (int ranks : {4, 8, 16}) {
    const auto cases = nccl_cases({"allreduce", "allgather"}, paper, ranks);
    ASSERT_EQ(cases.size(), 2u);
    EXPECT_EQ(cases[0].size, 4ULL << 30);
    EXPECT_EQ(cases[0].rank_bytes, 4ULL << 30);
    EXPECT_EQ(cases[1].size, (16ULL << 20) * ranks);
    EXPECT_EQ(cases[1].rank_bytes, 16ULL << 20);
  }
  NcclSizes per_rank;
  per_rank.per_rank = 1 << 20;
  const auto one = nccl_cases({"allgather"}, per_rank, 3);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].size, 3u << 20);
  // A sweep over 3 ranks: every all-gather size is three equal whole-float parts.
  NcclSizes sweep;
  sweep.min_size = 1, sweep.max_size = 64;
  const auto swept = nccl_cases({"allreduce", "allgather"}, sweep, 3);
  for (const auto& c : swept) {
    EXPECT_EQ(c.rank_bytes % 4, 0u);
    EXPECT_EQ(c.size, c.collective == "allreduce" ? c.rank_bytes : 3 * c.rank_bytes) << c.size;
    EXPECT_GE(c.size, 12u);
  }
  EXPECT_EQ(swept.front().size, 16u);  // 4 B a rank at least: 12 rounds up to 16
  EXPECT_THROW(nccl_cases({"alltoall"}, sweep, 2), UsageError);
}

TEST(ScaleoutPlan, TheDurationModelGrowsWithTheWork) {
  const double small = mpi_bw_case_s(1 << 20, 1, false, 5, false);
  EXPECT_GT(small, 0);
  EXPECT_GT(mpi_bw_case_s(1 << 20, 1, true, 5, false), small);       // both directions
  EXPECT_GT(mpi_bw_case_s(1 << 20, 1, false, 50, false), 5 * small);  // ten times the repetitions
  EXPECT_GT(mpi_bw_case_s(1 << 20, 4, false, 5, false), small);      // four pairs share a node's network
  // Tiny messages: their count (a window of 64 in the warm-up, 100 in each of 5 repetitions).
  EXPECT_GT(mpi_bw_case_s(1, 1, false, 5, false), (1 + 100 * 5) * 64 * 2e-6);
  const NcclCase reduce{"allreduce", 4ULL << 30, 4ULL << 30};
  const double one_node = nccl_case_s(reduce, 4, 1, "local", "nvlink", 5, 20, false);
  EXPECT_GT(nccl_case_s(reduce, 8, 2, "local", "nvlink", 5, 20, false), one_node);  // over the network
  EXPECT_GT(nccl_case_s(reduce, 4, 1, "nvlink+c2c", "nvlink", 5, 20, true), one_node);  // peer LPDDR
  EXPECT_GT(nccl_case_s(reduce, 4, 1, "local", "pcie", 5, 20, false), one_node);
  EXPECT_GT(nccl_setup_s(1ULL << 30, 4ULL << 30, Alloc::Device), nccl_setup_s(1ULL << 20, 4ULL << 20, Alloc::Device));
  EXPECT_GT(nccl_setup_s(1ULL << 30, 1ULL << 30, Alloc::Pinned), nccl_setup_s(1ULL << 30, 1ULL << 30, Alloc::Device));
}

// --- plans without a job (mempath-mpi CMD --from SNAPSHOT, issue 39) ----------------------

namespace {
Topology scaleout_fixture(const std::string& name) {
  return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name);
}
}  // namespace

TEST(ScaleoutPlan, APlannedJobIsLaidOutAsTheLauncherWould) {
  // srun -N 2 -n 8: four ranks a node, in blocks; bw pairs rank l of node 0 with rank l of node 1.
  const MpiLayout two = planned_layout(8, 2, true);
  EXPECT_EQ(two.nodes, 2);
  EXPECT_FALSE(two.split_host);
  EXPECT_EQ(two.node_of, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(two.local_of, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(mpi_pairs(two.node_of, two.local_of), 4);
  // Uneven: the first nodes hold one more (srun -N 3 -n 7: 3, 2, 2).
  EXPECT_EQ(ranks_per_node(planned_layout(7, 3, false).node_of), (std::vector<int>{3, 2, 2}));
  // One host, as discover_job splits it for bw: two halves play the two nodes.
  const MpiLayout halves = planned_layout(4, 1, true);
  EXPECT_TRUE(halves.split_host);
  EXPECT_EQ(halves.nodes, 2);
  EXPECT_EQ(halves.node_of, (std::vector<int>{0, 0, 1, 1}));
  // nccl's ranks of one node stay one node.
  const MpiLayout one = planned_layout(4, 1, false);
  EXPECT_EQ(one.nodes, 1);
  EXPECT_EQ(one.local_of, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_THROW(planned_layout(0, 1, false), UsageError);
  EXPECT_THROW(planned_layout(2, 3, false), UsageError);  // a node without a rank
}

TEST(ScaleoutPlan, TheMpiBandwidthExpectationCountsEveryCaseAndPlansTheRunnableOnes) {
  const std::vector<uint64_t> sizes = {1, 1 << 10, 1 << 20};
  const auto numa = mpi_bw_expectation({Alloc::Numa}, {"uni", "bi"}, sizes, 5, 4, false, "");
  EXPECT_EQ(numa.cases, 6u);
  EXPECT_EQ(numa.planned, 6u);
  double cases = 0;
  for (const char* mode : {"uni", "bi"})
    for (uint64_t s : sizes) cases += mpi_bw_case_s(s, 4, std::string(mode) == "bi", 5, false);
  EXPECT_GT(numa.seconds, cases);  // plus the buffers
  // Device buffers without a CUDA-aware MPI: counted, skipped, next to nothing expected.
  const auto device = mpi_bw_expectation({Alloc::Numa, Alloc::Device}, {"uni", "bi"}, sizes, 5, 4, false, "not CUDA-aware");
  EXPECT_EQ(device.cases, 12u);
  EXPECT_EQ(device.planned, 6u);
  EXPECT_LT(device.seconds - numa.seconds, 0.1);
  // With a CUDA-aware MPI they are planned.
  EXPECT_EQ(mpi_bw_expectation({Alloc::Numa, Alloc::Device}, {"uni"}, sizes, 5, 4, false, "").planned, 6u);
}

TEST(ScaleoutPlan, TheNcclExpectationPlansWhatTheNodeHostsAndChecksEveryByte) {
  NcclSizes sweep;
  const auto cases = nccl_cases({"allreduce", "allgather"}, sweep, 4);
  ASSERT_EQ(cases.size(), 42u);  // 1 KiB .. 1 GiB, two collectives
  const std::vector<std::string> all = {"device", "hbm-system", "host", "peer", "peer-host"};
  // A quad GH200 hosts every placement; an x86 node of four PCIe GPUs (no ATS, no HBM node)
  // skips system-allocated HBM and another superchip's memory.
  const Topology quad = scaleout_fixture("gh200_quad"), x86 = scaleout_fixture("x86_2s_4gpu");
  const auto on_quad = nccl_expectation(quad, 0, all, cases, 4, 1, 5, 20);
  EXPECT_EQ(on_quad.cases, 210u);
  EXPECT_EQ(on_quad.planned, 210u);
  const auto on_x86 = nccl_expectation(x86, 0, all, cases, 4, 1, 5, 20);
  EXPECT_EQ(on_x86.cases, 210u);
  EXPECT_EQ(on_x86.planned, 126u);
  // Every case's output is checked by the host at kNcclCheckGBps: at least 4 GiB a
  // placement (the sweeps' sizes add up to twice the largest, per collective).
  const double checked = 3 * 4.0 * (1ULL << 30) / (model::kNcclCheckGBps * 1e9);
  EXPECT_GT(on_x86.seconds, model::kNcclInitS + checked);
  EXPECT_LT(on_x86.seconds, 2 * (model::kNcclInitS + checked));
  // Nothing the node hosts: the start-up and the skipped cases' rows only.
  const auto none = nccl_expectation(x86, 0, {"hbm-system"}, cases, 4, 1, 5, 20);
  EXPECT_EQ(none.planned, 0u);
  EXPECT_LT(none.seconds, model::kNcclInitS + 1);
  // More timed collectives, longer.
  EXPECT_GT(nccl_expectation(quad, 0, {"device"}, cases, 4, 1, 5, 200).seconds,
            nccl_expectation(quad, 0, {"device"}, cases, 4, 1, 5, 20).seconds);
}
