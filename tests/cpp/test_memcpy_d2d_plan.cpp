// mempath memcpy --direction d2d, pure planning: GPU pairs, engines, skip reasons and bad
// input on the reference topologies (gh200_quad: NVLink peers; gh200_dual: no peer
// access; x86_h100: one GPU; x86_2s_4gpu: NVLink, GPUs on two sockets).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/memcpy_plan.hpp"
#include "core/topology.hpp"

using namespace mempath;

namespace {

constexpr uint64_t MiB = 1ULL << 20;

Topology fixture(const std::string& name) { return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name); }

MemcpyRequest d2d(std::vector<std::string> directions, std::vector<std::string> engines = {}) {
  MemcpyRequest r;
  r.directions = std::move(directions);
  r.engines = std::move(engines);
  r.size = 64 * MiB;
  return r;
}

std::vector<MemcpyCase> with_engine(const std::vector<MemcpyCase>& cases, const std::string& engine) {
  std::vector<MemcpyCase> out;
  std::copy_if(cases.begin(), cases.end(), std::back_inserter(out), [&](const MemcpyCase& c) { return c.engine == engine; });
  return out;
}

}  // namespace

TEST(D2dPairs, OrderedForOneWayUnorderedForBidirectional) {
  using P = std::vector<std::pair<int, int>>;
  EXPECT_EQ(d2d_pairs({0, 1, 2}, false), (P{{0, 1}, {0, 2}, {1, 0}, {1, 2}, {2, 0}, {2, 1}}));
  EXPECT_EQ(d2d_pairs({2, 0, 1, 0}, true), (P{{0, 1}, {0, 2}, {1, 2}}));
  EXPECT_TRUE(d2d_pairs({3}, false).empty());
  EXPECT_TRUE(d2d_pairs({}, true).empty());
}

TEST(D2dPlan, QuadGh200RunsEveryOrderedPairOnEveryEngine) {
  const auto topo = fixture("gh200_quad");
  const auto cases = plan_memcpy(topo, d2d({"d2d"}));
  ASSERT_EQ(cases.size(), 12u * 3u);  // 4 x 3 ordered pairs, ce/sm/staged
  for (const auto& c : cases) {
    EXPECT_TRUE(c.skip_reason.empty()) << c.engine << " " << c.skip_reason;
    ASSERT_EQ(c.gpus.size(), 2u);
    EXPECT_NE(c.gpus[0], c.gpus[1]);
    EXPECT_EQ(c.dst_gpu, c.gpus[1]);
    EXPECT_EQ(c.direction, "d2d");
    EXPECT_EQ(c.timing, "events");
  }
  for (const auto& c : with_engine(cases, "ce")) {
    EXPECT_EQ(c.via, "nvlink");
    EXPECT_EQ(c.alloc, Alloc::Device);
    EXPECT_TRUE(c.host_numas.empty());
    EXPECT_EQ(c.chunk, 0u);
  }
  // Staged through pinned memory on the source GPU's nearest Grace node (numa g).
  for (const auto& c : with_engine(cases, "staged")) {
    EXPECT_EQ(c.alloc, Alloc::Pinned);
    EXPECT_EQ(c.chunk, kStagedChunk);
    ASSERT_EQ(c.host_numas.size(), 1u);
    EXPECT_EQ(c.host_numas[0], c.gpus[0]);
    EXPECT_EQ(c.cpu_numa, c.gpus[0]);
    // The destination GPU reaches the source's Grace over NVLink, then that superchip's C2C.
    EXPECT_EQ(c.via, "c2c>numa" + std::to_string(c.gpus[0]) + ">nvlink+c2c");
  }
}

TEST(D2dPlan, BidirectionalTakesEachPairOnceAndStagesEachWayOnItsSourceNode) {
  const auto topo = fixture("gh200_quad");
  const auto cases = plan_memcpy(topo, d2d({"d2d-bidir"}, {"staged"}));
  ASSERT_EQ(cases.size(), 6u);  // 4 choose 2
  for (const auto& c : cases) {
    EXPECT_LT(c.gpus[0], c.gpus[1]);
    EXPECT_EQ(c.host_numas, (std::vector<int>{c.gpus[0], c.gpus[1]}));
    EXPECT_EQ(c.host_numa(), -1);  // two staging nodes
  }
}

TEST(D2dPlan, DualGh200SkipsPeerCopiesAndStillStages) {
  const auto topo = fixture("gh200_dual");
  const auto cases = plan_memcpy(topo, d2d({"d2d", "d2d-bidir"}));
  ASSERT_EQ(cases.size(), 2u * 3u + 1u * 3u);
  for (const auto& c : cases) {
    if (c.engine == "staged") {
      EXPECT_TRUE(c.skip_reason.empty()) << c.skip_reason;
    } else {
      EXPECT_EQ(c.skip_reason, "no peer access from GPU " + std::to_string(c.gpus[0]) + " to GPU " +
                                   std::to_string(c.gpus[1]));
      EXPECT_EQ(c.via, "none");
    }
  }
  EXPECT_EQ(d2d_peer_reason(topo, 1, 0), "no peer access from GPU 1 to GPU 0");
  EXPECT_EQ(d2d_peer_reason(fixture("gh200_quad"), 1, 0), "");
}

TEST(D2dPlan, OneGpuIsSkippedWithTheReason) {
  const auto cases = plan_memcpy(fixture("x86_h100"), d2d({"d2d", "d2d-bidir"}));
  ASSERT_EQ(cases.size(), 6u);
  for (const auto& c : cases) {
    EXPECT_NE(c.skip_reason.find("one GPU"), std::string::npos) << c.skip_reason;
    EXPECT_EQ(c.dst_gpu, -1);
  }
}

TEST(D2dPlan, GpuListChoosesThePairsMemPlacesTheStagingAndChunkIsCapped) {
  const auto topo = fixture("x86_2s_4gpu");
  MemcpyRequest r = d2d({"d2d"}, {"staged"});
  r.gpus = {"gpu3", "1"};
  r.mems = {"numa0"};
  r.chunk = 128 * MiB;  // larger than the transfer: one chunk of the whole size
  const auto cases = plan_memcpy(topo, r);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].gpus, (std::vector<int>{1, 3}));
  EXPECT_EQ(cases[1].gpus, (std::vector<int>{3, 1}));
  for (const auto& c : cases) {
    EXPECT_EQ(c.host_numas, std::vector<int>{0});
    EXPECT_EQ(c.chunk, 64 * MiB);
  }
  EXPECT_EQ(cases[0].via, "pcie>numa0>pcie+interconnect");  // gpu1 is near numa0, gpu3 near numa1
}

TEST(D2dPlan, SweepKeepsPairsApartAndStagingOnAnHbmNodeIsSkipped) {
  const auto topo = fixture("gh200_quad");
  MemcpyRequest r = d2d({"d2d"}, {"staged"});
  r.size = 0;
  r.sweep = true;
  r.max_size = 64 * 1024;
  r.gpus = {"0", "1"};
  r.mems = {"numa4"};
  const auto cases = plan_memcpy(topo, r);
  ASSERT_EQ(cases.size(), 2u * 5u);  // 2 pairs x 4KiB .. 64KiB
  for (const auto& c : cases) {
    EXPECT_TRUE(c.sweep);
    EXPECT_EQ(c.chunk, c.size);
    EXPECT_NE(c.skip_reason.find("not a host node"), std::string::npos);
  }
  EXPECT_NE(cases[0].group_key(), cases[5].group_key());
  EXPECT_EQ(cases[0].group_key(), cases[4].group_key());
}

TEST(D2dPlan, BadInputIsAUsageError) {
  const auto dual = fixture("gh200_dual");
  auto bad = [&](MemcpyRequest r) { EXPECT_THROW(plan_memcpy(dual, r), UsageError); };
  MemcpyRequest r = d2d({"d2d"});
  r.gpus = {"0"};
  bad(r);  // one GPU named on a two-GPU node
  bad(d2d({"d2d", "h2d"}));
  r = d2d({"d2d"});
  r.allocs = {"pinned"};
  bad(r);
  r = d2d({"d2d"});
  r.all_gpus = true;
  bad(r);
  r = d2d({"d2d"});
  r.latency = true;
  bad(r);
  bad(d2d({"d2d"}, {"ce", "zero-copy"}));
  r = d2d({"d2d"}, {"ce"});
  r.mems = {"numa0"};
  bad(r);  // --mem only places staging buffers
  r = d2d({"d2d"});
  r.size = 1ULL << 50;
  bad(r);
  // --chunk and --engine staged belong to d2d.
  r = d2d({"h2d"});
  r.chunk = MiB;
  bad(r);
  bad(d2d({"h2d"}, {"staged"}));
}
