// mempath memcpy, pure logic: the size sweep, the saturation size, percentiles, what fits,
// and the planner's cases, skip reasons and bad input on the reference topologies.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/memcpy_plan.hpp"
#include "core/units.hpp"
#include "core/topology.hpp"

using namespace mempath;

namespace {

constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
const double kNaN = std::nan("");

Topology fixture(const std::string& name) { return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name); }

MemcpyRequest only(std::vector<std::string> directions, std::vector<std::string> engines) {
  MemcpyRequest r;
  r.directions = std::move(directions);
  r.engines = std::move(engines);
  return r;
}

}  // namespace

TEST(MemcpySizes, SweepRunsPowersOfTwoFrom4KiBTo4GiB) {
  const auto s = sweep_sizes(kSweepMaxSize);
  ASSERT_EQ(s.size(), 21u);  // 2^12 .. 2^32
  EXPECT_EQ(s.front(), 4 * KiB);
  EXPECT_EQ(s.back(), 4 * GiB);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], 2 * s[i - 1]);
}

TEST(MemcpySizes, MaxSizeEndsTheSweepAtThePowerOfTwoBelowIt) {
  EXPECT_EQ(sweep_sizes(1 * MiB).back(), 1 * MiB);
  EXPECT_EQ(sweep_sizes(3 * MiB).back(), 2 * MiB);
  EXPECT_EQ(sweep_sizes(4 * KiB), std::vector<uint64_t>{4 * KiB});
  EXPECT_TRUE(sweep_sizes(4 * KiB - 1).empty());
}

TEST(MemcpySizes, LatencyRuns4BytesTo1MiB) {
  const auto s = latency_sizes();
  ASSERT_EQ(s.size(), 19u);  // 2^2 .. 2^20
  EXPECT_EQ(s.front(), 4u);
  EXPECT_EQ(s.back(), 1 * MiB);
}

TEST(MemcpySizes, PowerOfTwoRangeRoundsItsEnds) {
  EXPECT_EQ(power_of_two_sizes(3, 20), (std::vector<uint64_t>{4, 8, 16}));
  EXPECT_TRUE(power_of_two_sizes(5, 7).empty());
  EXPECT_EQ(power_of_two_sizes(1ULL << 63, UINT64_MAX), std::vector<uint64_t>{1ULL << 63});
}

TEST(MemcpySaturation, SmallestSizeReaching95PercentOfTheMaximum) {
  const std::vector<uint64_t> sizes = {4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB};
  // 94.9 % of 55 is below the bar; 53 (96.4 %) is the first above it.
  EXPECT_EQ(saturation_size(sizes, {2, 20, 50, 53, 55}), static_cast<int64_t>(16 * MiB));
  EXPECT_EQ(saturation_size(sizes, {2, 20, 52.25, 53, 55}), static_cast<int64_t>(1 * MiB));  // exactly 95 %
  EXPECT_EQ(saturation_size(sizes, {2, 20, 52.2, 53, 55}), static_cast<int64_t>(16 * MiB));
}

TEST(MemcpySaturation, APeakInTheMiddleCountsAndLaterDipsDoNot) {
  const std::vector<uint64_t> sizes = {1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB};
  EXPECT_EQ(saturation_size(sizes, {10, 60, 40, 45}), static_cast<int64_t>(2 * MiB));
}

TEST(MemcpySaturation, IgnoresCasesThatDidNotRunAndUnsortedInput) {
  EXPECT_EQ(saturation_size({8 * MiB, 4 * KiB, 1 * MiB}, {50, 1, kNaN}), static_cast<int64_t>(8 * MiB));
  EXPECT_EQ(saturation_size({4 * KiB, 8 * KiB}, {kNaN, kNaN}), -1);
  EXPECT_EQ(saturation_size({}, {}), -1);
  EXPECT_EQ(saturation_size({4 * KiB, 8 * KiB, 16 * KiB}, {30, 29, 10}, 0.9), static_cast<int64_t>(4 * KiB));
}

TEST(MemcpyPercentile, NearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 99);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 50);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 100);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 1000}, 99), 1000);  // a tail of 1 in 4 shows at p99
  EXPECT_TRUE(std::isnan(percentile({}, 99)));
}

TEST(MemcpyFit, BuffersTakeAShareOfFreeHostAndLeaveDeviceReserve) {
  EXPECT_TRUE(buffers_fit(1 * GiB, 10 * GiB, 10 * GiB, 2, 2));
  EXPECT_FALSE(buffers_fit(4 * GiB, 9 * GiB, 100 * GiB, 2, 0));  // 8 GiB > 0.8 x 9 GiB
  EXPECT_TRUE(buffers_fit(4 * GiB, 10 * GiB, 100 * GiB, 2, 0));  // exactly 0.8 x 10 GiB
  EXPECT_FALSE(buffers_fit(1 * GiB, 0, 1 * GiB, 0, 1));           // reserve leaves 768 MiB
  EXPECT_TRUE(buffers_fit(512 * MiB, 0, 1 * GiB, 0, 1));
}

TEST(MemcpyFit, SweepMaximumIsTheLargestPowerOfTwoThatFits) {
  EXPECT_EQ(fit_sweep_max(4 * GiB, 64 * GiB, 80 * GiB, 2, 2), 4 * GiB);
  EXPECT_EQ(fit_sweep_max(4 * GiB, 9 * GiB, 80 * GiB, 2, 2), 2 * GiB);  // 2 x 4 GiB > 7.2 GiB allowed
  EXPECT_EQ(fit_sweep_max(4 * GiB, 64 * GiB, 1 * GiB, 1, 1), 512 * MiB);
  EXPECT_EQ(fit_sweep_max(1 * MiB, 64 * GiB, 80 * GiB, 1, 1), 1 * MiB);
  EXPECT_EQ(fit_sweep_max(4 * GiB, 4 * KiB, 80 * GiB, 1, 1), 0u);
}

TEST(MemcpyPlan, DefaultsOnTheH100BoxAreEveryDirectionAndEngineAtOneSize) {
  const Topology t = fixture("x86_h100");
  const auto cases = plan_memcpy(t, MemcpyRequest{});
  ASSERT_EQ(cases.size(), 6u);  // h2d, d2h, bidir x ce, sm
  for (const auto& c : cases) {
    EXPECT_EQ(c.gpus, std::vector<int>{0});
    EXPECT_EQ(c.alloc, Alloc::Pinned);
    EXPECT_EQ(c.size, kMemcpyDefaultSize);
    EXPECT_EQ(c.via, "pcie");
    EXPECT_EQ(c.timing, "events");
    EXPECT_EQ(c.cpu_numa, c.host_numa());
    EXPECT_EQ(c.skip_reason, "");
  }
  EXPECT_EQ(cases[0].direction, "h2d");
  EXPECT_EQ(cases[0].engine, "ce");
  EXPECT_EQ(cases[5].direction, "bidir");
  EXPECT_EQ(cases[5].engine, "sm");
}

TEST(MemcpyPlan, SweepCasesAscendWithinOneGroupAndShareBuffers) {
  const Topology t = fixture("x86_h100");
  MemcpyRequest r = only({"h2d"}, {"ce", "sm"});
  r.sweep = true;
  r.max_size = 1 * MiB;
  const auto cases = plan_memcpy(t, r);
  ASSERT_EQ(cases.size(), 2 * sweep_sizes(1 * MiB).size());
  EXPECT_EQ(cases.front().size, 4 * KiB);
  EXPECT_EQ(cases[8].size, 1 * MiB);
  EXPECT_EQ(cases[0].group_key(), cases[8].group_key());
  EXPECT_NE(cases[8].group_key(), cases[9].group_key());  // ce -> sm
  EXPECT_EQ(cases[8].buffer_key(), cases[9].buffer_key());
  for (const auto& c : cases) EXPECT_TRUE(c.sweep);
}

TEST(MemcpyPlan, PageableMemoryIsHostTimedAndSkippedWhereItCannotRun) {
  const Topology t = fixture("x86_h100");  // no ATS/HMM
  MemcpyRequest r;
  r.allocs = {"system"};
  const auto cases = plan_memcpy(t, r);
  for (const auto& c : cases) {
    if (c.engine == "sm") {
      EXPECT_NE(c.skip_reason.find("pageable"), std::string::npos) << c.direction;
    } else if (c.direction == "bidir") {
      EXPECT_NE(c.skip_reason.find("blocks the issuing thread"), std::string::npos);
    } else {
      EXPECT_EQ(c.skip_reason, "");
      EXPECT_EQ(c.timing, "host");
    }
  }
}

TEST(MemcpyPlan, GraceHopperSmCopiesReadPageableMemoryAndPinnedStaysOffHbm) {
  const Topology t = fixture("gh200_quad");  // ATS: SM copies may read malloc memory
  EXPECT_EQ(memcpy_skip_reason(t, 0, 0, Alloc::System, "h2d", "sm", false), "");
  const std::string hbm = memcpy_skip_reason(t, 0, 4, Alloc::Pinned, "h2d", "ce", false);
  EXPECT_NE(hbm.find("not a host node"), std::string::npos);
  EXPECT_NE(hbm.find("GPU 0's HBM"), std::string::npos);
  EXPECT_EQ(memcpy_skip_reason(t, 1, 0, Alloc::Registered, "d2h", "ce", false), "");
}

TEST(MemcpyPlan, AllGpusUseEachGpusNearestHostNode) {
  const Topology t = fixture("gh200_quad");
  MemcpyRequest r = only({"h2d"}, {"ce"});
  r.all_gpus = true;
  const auto cases = plan_memcpy(t, r);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].gpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cases[0].host_numas, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cases[0].host_numa(), -1);  // several nodes
  EXPECT_EQ(cases[0].gpu_label(), "all");
  EXPECT_EQ(cases[0].via, "c2c");
}

TEST(MemcpyPlan, RemoteHostNodeAndIssuingThreadElsewhere) {
  const Topology t = fixture("gh200_quad");
  MemcpyRequest r = only({"d2h"}, {"ce"});
  r.gpus = {"gpu2"};
  r.mems = {"numa0"};
  r.cpu_numa = 1;
  const auto cases = plan_memcpy(t, r);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].gpus, std::vector<int>{2});
  EXPECT_EQ(cases[0].host_numa(), 0);
  EXPECT_EQ(cases[0].cpu_numa, 1);
  EXPECT_EQ(cases[0].via, "nvlink+c2c");  // over NVLink to gpu0, then gpu0's C2C to numa0
}

TEST(MemcpyPlan, GpuAllRunsEachGpuInTurn) {
  const Topology t = fixture("gh200_quad");
  MemcpyRequest r = only({"h2d"}, {"ce"});
  r.gpus = {"all", "1"};
  const auto cases = plan_memcpy(t, r);
  ASSERT_EQ(cases.size(), 4u);
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(cases[g].gpus, std::vector<int>{g});
    EXPECT_EQ(cases[g].cpu_numa, g);  // nearest host node of each GPU
  }
}

TEST(MemcpyPlan, LatencyIsCopyEngineOneDirectionAtATime) {
  const Topology t = fixture("x86_h100");
  MemcpyRequest r;
  r.latency = true;
  const auto cases = plan_memcpy(t, r);
  ASSERT_EQ(cases.size(), 2 * latency_sizes().size());
  for (const auto& c : cases) {
    EXPECT_EQ(c.mode, "latency");
    EXPECT_EQ(c.engine, "ce");
    EXPECT_EQ(c.timing, "host");
  }
}

TEST(MemcpyPlan, BadInputIsAUsageError) {
  const Topology h100 = fixture("x86_h100");
  const Topology quad = fixture("gh200_quad");
  auto bad = [](const Topology& t, MemcpyRequest r, const std::string& expect) {
    try {
      plan_memcpy(t, r);
      ADD_FAILURE() << "no error; expected: " << expect;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  };
  MemcpyRequest r;
  r.gpus = {"3"};
  bad(h100, r, "valid --gpu: gpu0");
  r.gpus = {"gpux"};
  bad(h100, r, "unknown GPU");
  r = {};
  r.mems = {"numa7"};
  bad(h100, r, "valid --mem: numa0");
  r.mems = {"numa5"};  // an empty node of the quad GH200
  bad(quad, r, "without memory");
  r = {};
  r.cpu_numa = 4;  // HBM: no CPUs
  bad(quad, r, "without CPUs");
  r.cpu_numa = 99;
  bad(quad, r, "no such NUMA node");
  r = {};
  r.directions = {"h2h"};  // (d2d is a GPU<->GPU direction: test_memcpy_d2d_plan.cpp)
  bad(h100, r, "valid: h2d, d2h, bidir");
  r = {};
  r.engines = {"dma"};
  bad(h100, r, "valid: ce, sm");
  r = {};
  r.allocs = {"device"};
  bad(h100, r, "valid: pinned, registered, system, managed");
  r = {};
  r.latency = true;
  r.directions = {"bidir"};
  bad(h100, r, "bidir makes no sense");
  r.directions = {};
  r.engines = {"sm"};
  bad(h100, r, "--engine sm does not apply");
  r.engines = {};
  r.sweep = true;
  bad(h100, r, "--sweep");
  r = {};
  r.sweep = true;
  r.size = 1 * MiB;
  bad(h100, r, "does not combine with --size");
  r = {};
  r.all_gpus = true;
  r.gpus = {"0"};
  bad(h100, r, "--all-gpus");
  r = {};
  r.sweep = true;
  r.max_size = 1 * KiB;
  bad(h100, r, "at least 4KiB");
  r = {};
  r.max_size = 1 * GiB;
  bad(h100, r, "add --sweep");
  r = {};
  r.size = 1ULL << 40;  // 1 TiB: more than the H100 holds
  bad(h100, r, "exceeds GPU 0");
}

TEST(MemcpyPlan, ANodeWithoutGpusIsBadInput) {
  Topology t = fixture("x86_h100");
  t.gpus.clear();
  EXPECT_THROW(plan_memcpy(t, MemcpyRequest{}), UsageError);
  EXPECT_THROW(parse_gpu(t, "0"), UsageError);
}
