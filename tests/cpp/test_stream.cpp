// `mempath stream`: the plan on reference nodes (thread sweeps, interleaving, GPU paths),
// the recurrence that is the data check, and the CPU runner's check catching wrong data.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/topology.hpp"
#include "core/stream_plan.hpp"
#include "cpu/stream.hpp"

using namespace mempath;

namespace {

const std::string kFixtures = MEMPATH_FIXTURES_DIR;
Topology fixture(const std::string& name) { return load_snapshot(kFixtures + "/" + name); }

StreamRequest all_of(const std::string& mem = "") {
  StreamRequest r;
  r.all = true;
  if (!mem.empty()) r.filters.mems = {mem};
  return r;
}

}  // namespace

TEST(StreamPlan, KernelsCountArraysAsStreamAndBabelStream) {
  const auto& cpu = stream_kernels(PuKind::Cpu);
  const auto& gpu = stream_kernels(PuKind::Gpu);
  ASSERT_EQ(cpu.size(), 4u);
  ASSERT_EQ(gpu.size(), 5u);
  EXPECT_EQ(cpu[1].name, "scale");
  EXPECT_EQ(gpu[1].name, "mul");
  EXPECT_EQ(gpu[4].name, "dot");
  for (const auto* k : {&cpu, &gpu})
    for (const auto& info : *k)
      EXPECT_EQ(info.arrays, info.name == "add" || info.name == "triad" ? 3 : 2) << info.name;
}

TEST(StreamPlan, RecurrenceDecaysAndStaysFinite) {
  const StreamValues one = stream_values_after(1);
  EXPECT_DOUBLE_EQ(one.c, 0.1 + 0.04);
  EXPECT_DOUBLE_EQ(one.b, 0.04);
  EXPECT_NEAR(one.a, 0.096, 1e-15);  // a -> 0.96 a per repetition
  const StreamValues many = stream_values_after(10000);
  EXPECT_TRUE(std::isfinite(many.a) && many.a > 0);
  EXPECT_TRUE(stream_close(1.0, 1.0 + 1e-14));
  EXPECT_FALSE(stream_close(1.0, 1.0 + 1e-9));
}

TEST(StreamPlan, OneCpuNodeSweepsItsCoresAsOneSweep) {
  const Topology topo = fixture("x86_h100");
  StreamRequest r;
  r.pu = "cpu0";
  const auto cases = stream_cases(topo, r);
  ASSERT_GT(cases.size(), 2u);
  std::set<int> sweeps;
  for (const auto& c : cases) sweeps.insert(c.sweep);
  EXPECT_EQ(sweeps, std::set<int>{cases.front().sweep});
  EXPECT_GE(cases.front().sweep, 0);
  EXPECT_EQ(cases.front().bw.threads, 1);
  EXPECT_EQ(cases.front().bw.mem, "numa0");
  r.threads = "all";
  const auto one = stream_cases(topo, r);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one.front().sweep, -1);
}

TEST(StreamPlan, InterleaveNeedsTwoHostNodes) {
  const auto single = stream_cases(fixture("x86_h100"), all_of(kInterleave));
  ASSERT_FALSE(single.empty());
  for (const auto& c : single) EXPECT_NE(c.bw.skip_reason.find("nothing to interleave"), std::string::npos);
  const auto quad = stream_cases(fixture("gh200_quad"), all_of(kInterleave));
  ASSERT_FALSE(quad.empty());
  EXPECT_EQ(quad.back().bw.threads, 288);  // every Grace core of the four superchips
  for (const auto& c : quad) {
    EXPECT_TRUE(c.bw.skip_reason.empty()) << c.bw.skip_reason;
    EXPECT_EQ(c.bw.pu, "cpus");
    EXPECT_EQ(static_cast<int>(c.bw.cpus.size()), c.bw.threads);
  }
  StreamRequest bad;
  bad.mem = kInterleave;
  bad.pu = "gpu0";
  EXPECT_THROW(stream_cases(fixture("gh200_quad"), bad), UsageError);
}

TEST(StreamPlan, GpuCasesCoverEveryMemoryTheGpuReaches) {
  StreamRequest r = all_of();
  r.filters.pus = {"gpu0"};
  const auto cases = stream_cases(fixture("gh200_quad"), r);
  std::set<std::string> mems;
  for (const auto& c : cases) {
    EXPECT_EQ(c.sweep, -1);
    if (c.bw.skip_reason.empty()) mems.insert(c.bw.mem + ":" + alloc_name(c.bw.alloc));
  }
  // The paper's placements: own HBM (device, numa), local and remote LPDDR, a peer's HBM.
  for (const char* want : {"gpu0:device", "numa4:numa", "numa0:numa", "numa1:numa", "gpu1:device"})
    EXPECT_TRUE(mems.count(want)) << want;
}

TEST(StreamCpu, RunsVerifiedAndTheCheckCatchesWrongData) {
  const size_t n = 1 << 16;
  std::vector<double> a(n), b(n), c(n);
  const auto run = cpu::run_stream({0}, a.data(), b.data(), c.data(), n, 1, 3);
  EXPECT_TRUE(run.verified) << run.detail;
  ASSERT_EQ(run.seconds.size(), 4u);
  for (const auto& k : run.seconds) EXPECT_EQ(k.size(), 3u);
  const StreamValues want = stream_values_after(4);
  EXPECT_TRUE(stream_close(a[n - 1], want.a));
  // a and c the same memory: the kernels overwrite their own inputs, the recurrence no
  // longer holds, and the check must say so.
  std::vector<double> shared(n), other(n);
  const auto aliased = cpu::run_stream({0}, shared.data(), other.data(), shared.data(), n, 0, 2);
  EXPECT_FALSE(aliased.verified);
  EXPECT_NE(aliased.detail.find("differ"), std::string::npos);
}
