// Latency benchmarks, pure logic and CPU sides: the chase chain (one cycle over every
// line, locality groups, the predicted end), the planners on the reference topologies,
// sysfs cache levels, and the CPU walker and ping-pong agent on real memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/chase_chain.hpp"
#include "core/chase_plan.hpp"
#include "core/error.hpp"
#include "core/pingpong_plan.hpp"
#include "core/topology.hpp"
#include "cpu/latency.hpp"

using namespace mempath;

namespace {

constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

const std::string kFixtures = MEMPATH_FIXTURES_DIR;
Topology fixture(const std::string& name) { return load_snapshot(kFixtures + "/" + name); }

// Follows a chain written at `base` for `steps` steps in software.
uint64_t walk(const std::vector<uint64_t>& words, uint64_t base, uint64_t from, uint64_t steps) {
  uint64_t p = from;
  for (uint64_t i = 0; i < steps; ++i) p = words[(p - base) / 8];
  return p;
}

}  // namespace

TEST(ChaseChain, RandomOrderIsOneCycleOverEveryLine) {
  const ChainSpec spec{1 * MiB, 64, 0, false, 7};
  const auto order = chain_order(spec);
  ASSERT_EQ(order.size(), MiB / 64);
  EXPECT_EQ(std::set<uint32_t>(order.begin(), order.end()).size(), order.size());
  std::vector<uint64_t> words(spec.size / 8, 0);
  const uint64_t base = 0x10000000;
  write_chain(words.data(), base, spec, order);
  const uint64_t start = chain_address_after(base, spec, order, 0);
  // A single cycle: back at the start after exactly n steps, never before.
  uint64_t p = start;
  for (size_t i = 1; i <= order.size(); ++i) {
    p = words[(p - base) / 8];
    if (i < order.size()) ASSERT_NE(p, start) << "short cycle after " << i << " steps";
  }
  EXPECT_EQ(p, start);
  // Not the identity: a prefetcher cannot follow it.
  size_t in_order = 0;
  for (size_t k = 1; k < order.size(); ++k) in_order += order[k] == order[k - 1] + 1;
  EXPECT_LT(in_order, order.size() / 100);
}

TEST(ChaseChain, PredictedEndMatchesTheWalkAndCatchesABrokenLink) {
  const ChainSpec spec{256 * KiB, 128, 0, false, 1};
  const auto order = chain_order(spec);
  std::vector<uint64_t> words(spec.size / 8, 0);
  const uint64_t base = 0x7f0000000000;
  write_chain(words.data(), base, spec, order);
  const uint64_t start = chain_address_after(base, spec, order, 0);
  for (uint64_t steps : {1ull, 5ull, 2047ull, 2048ull, 10001ull})
    EXPECT_EQ(walk(words, base, start, steps), chain_address_after(base, spec, order, steps));
  // A link that skips an element (what a walk that did not happen would look like to the
  // check): the end no longer matches.
  words[(order[3] * spec.line) / 8] = base + uint64_t(order[5]) * spec.line;
  EXPECT_NE(walk(words, base, start, 10), chain_address_after(base, spec, order, 10));
}

TEST(ChaseChain, LocalityKeepsConsecutiveLinesInOneGroup) {
  const ChainSpec spec{4 * MiB, 64, 64 * KiB, false, 3};
  const auto order = chain_order(spec);
  const uint64_t per_group = spec.locality / spec.line;
  size_t group_changes = 0;
  for (size_t k = 1; k < order.size(); ++k) group_changes += order[k] / per_group != order[k - 1] / per_group;
  EXPECT_EQ(group_changes, spec.size / spec.locality - 1);  // each group visited once, whole
  EXPECT_EQ(std::set<uint32_t>(order.begin(), order.end()).size(), order.size());
}

TEST(ChaseChain, SequentialIsInAddressOrder) {
  const auto order = chain_order({64 * KiB, 64, 0, true, 0});
  for (size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k], k);
}

TEST(ChaseChain, SameSeedSameChainOtherSeedOtherChain) {
  EXPECT_EQ(chain_order({1 * MiB, 64, 0, false, 9}), chain_order({1 * MiB, 64, 0, false, 9}));
  EXPECT_NE(chain_order({1 * MiB, 64, 0, false, 9}), chain_order({1 * MiB, 64, 0, false, 10}));
}

TEST(ChaseChain, BadSpecsAreUsageErrors) {
  EXPECT_THROW(check_chain({32, 64, 0, false, 0}), UsageError);          // smaller than a line
  EXPECT_THROW(check_chain({4096, 12, 0, false, 0}), UsageError);        // not a pointer multiple
  EXPECT_THROW(check_chain({4096 + 8, 64, 0, false, 0}), UsageError);    // not a line multiple
  EXPECT_THROW(check_chain({4096, 64, 100, false, 0}), UsageError);      // locality not lines
  EXPECT_THROW(check_chain({1ULL << 40, 8, 0, false, 0}), UsageError);   // over 2^32 lines
  EXPECT_NO_THROW(check_chain({4096, 64, 1024, false, 0}));
}

TEST(CpuChase, WalkEndsWhereTheChainPredicts) {
  const ChainSpec spec{1 * MiB, 64, 0, false, 11};
  const auto order = chain_order(spec);
  std::vector<uint64_t> buffer(spec.size / 8);
  const uint64_t base = reinterpret_cast<uintptr_t>(buffer.data());
  write_chain(buffer.data(), base, spec, order);
  const uint64_t start = chain_address_after(base, spec, order, 0);
  const void* end = cpu::chase(reinterpret_cast<const void*>(start), 100003);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(end), chain_address_after(base, spec, order, 100003));
}

TEST(ChasePlan, DefaultsPickTheCoreTheMemoryAndTheAllocator) {
  const Topology t = fixture("gh200_quad");
  const ChaseCase c = make_chase_case(t, "", -1, "", "");
  EXPECT_EQ(c.pu, "cpu0");
  EXPECT_EQ(c.cpu, t.find_pu("cpu0")->cpus.front());
  EXPECT_EQ(c.mem, "numa0");
  EXPECT_EQ(c.alloc, Alloc::Numa);
  EXPECT_TRUE(c.skip_reason.empty());
  const ChaseCase g = make_chase_case(t, "gpu1", -1, "", "");
  EXPECT_EQ(g.mem, "gpu1");
  EXPECT_EQ(g.alloc, Alloc::Device);
  EXPECT_EQ(g.cpu, -1);
  // A Hopper reads Grace memory through ATS on GH200: the numa allocator works.
  EXPECT_TRUE(make_chase_case(t, "gpu0", -1, "numa0", "numa").skip_reason.empty());
}

TEST(ChasePlan, ACoreNamesItsNodeAndBadNamesAreUsageErrors) {
  const Topology t = fixture("gh200_quad");
  const int core = t.find_pu("cpu1")->cpus[3];
  EXPECT_EQ(make_chase_case(t, "", core, "", "").pu, "cpu1");
  EXPECT_THROW(make_chase_case(t, "cpu0", core, "", ""), UsageError);  // the core is cpu1's
  EXPECT_THROW(make_chase_case(t, "", 100000, "", ""), UsageError);
  EXPECT_THROW(make_chase_case(t, "cpus", -1, "", ""), UsageError);
  EXPECT_THROW(make_chase_case(t, "gpu9", -1, "", ""), UsageError);
  EXPECT_THROW(make_chase_case(t, "gpu0", 0, "", ""), UsageError);
  EXPECT_THROW(make_chase_case(t, "cpu0", -1, "numa99", ""), UsageError);
  EXPECT_THROW(make_chase_case(t, "cpu0", -1, "", "magic"), UsageError);
}

TEST(ChasePlan, PcieGpuCannotChasePageableMemoryAndSaysWhy) {
  const Topology t = fixture("x86_h100");
  const ChaseCase c = make_chase_case(t, "gpu0", -1, "numa0", "numa");
  EXPECT_NE(c.skip_reason.find("pageable"), std::string::npos) << c.skip_reason;
  const ChaseCase d = make_chase_case(t, "cpu0", -1, "gpu0", "device");
  EXPECT_FALSE(d.skip_reason.empty());
}

TEST(ChasePlan, AllCoversEveryProcessorAndMemory) {
  const Topology t = fixture("gh200_quad");
  const auto cases = all_chase_cases(t, {}, {}, {});
  // 4 CPU nodes + 4 GPUs, each against every memory, default allocator.
  EXPECT_EQ(cases.size(), 8 * t.memories.size());
  std::set<std::string> pus;
  for (const auto& c : cases) pus.insert(c.pu);
  EXPECT_EQ(pus.count("cpus"), 0u);
  const auto every = all_chase_cases(t, {"gpu0"}, {"gpu0"}, {"all"});
  std::set<std::string> allocs;
  for (const auto& c : every) allocs.insert(alloc_name(c.alloc));
  EXPECT_EQ(allocs, (std::set<std::string>{"device", "managed"}));
  EXPECT_THROW(all_chase_cases(t, {"cpus"}, {}, {}), UsageError);
}

TEST(ChasePlan, CacheLevelsFromSysfsAndGpuFacts) {
  const Topology t = fixture("gh200_quad");
  const ChaseCase c = make_chase_case(t, "cpu3", -1, "", "");
  const auto caches = chase_caches(t, c, kFixtures + "/gh200_quad");
  ASSERT_GE(caches.size(), 3u);
  EXPECT_EQ(caches.front().level, "L1d");
  EXPECT_EQ(caches.front().bytes, 64 * KiB);
  EXPECT_EQ(caches.back().level, "L3");
  EXPECT_EQ(caches.back().bytes, 116736 * KiB);
  EXPECT_EQ(caches.back().source, "sysfs");
  const auto gpu = chase_caches(t, make_chase_case(t, "gpu0", -1, "", ""), kFixtures + "/gh200_quad");
  ASSERT_EQ(gpu.size(), 2u);
  EXPECT_EQ(gpu[0].level, "L1");
  EXPECT_EQ(gpu[0].source, "table");
  EXPECT_EQ(gpu[1].bytes, 52428800u);
  EXPECT_EQ(gpu[1].source, "cuda");
  // The sweep reaches 4 x the largest cache, and at least 1 GiB.
  EXPECT_EQ(default_max_size(caches), 1 * GiB);
  EXPECT_EQ(default_max_size({{"x", "L3", 300 * MiB, "sysfs"}}), 2 * GiB);
}

TEST(PingPongPlan, EveryPairOnceWithSelfPairsAndSkipReasons) {
  const Topology t = fixture("x86_h100");
  const auto cases = pingpong_cases(t, {}, {}, {});
  // Agents cpu0, gpu0: pairs (cpu0,cpu0), (cpu0,gpu0), (gpu0,gpu0).
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& c : cases) pairs.insert({c.a.name, c.b.name});
  EXPECT_EQ(pairs.size(), 3u);
  for (const auto& c : cases) {
    if (c.a.name == "cpu0" && c.b.name == "cpu0") EXPECT_NE(c.a.cpu, c.b.cpu);
    if (c.a.name == "cpu0" && c.b.name == "gpu0" && c.mem == "numa0" && c.alloc == Alloc::Pinned) EXPECT_TRUE(c.skip_reason.empty());
    if (c.b.name == "gpu0" && c.mem == "numa0" && c.alloc == Alloc::Numa) EXPECT_NE(c.skip_reason.find("pageable"), std::string::npos);
    if (c.a.name == "cpu0" && c.mem == "gpu0" && c.alloc == Alloc::Device) EXPECT_FALSE(c.skip_reason.empty());
    if (c.a.name == "gpu0" && c.mem == "gpu0" && c.alloc == Alloc::Device) EXPECT_TRUE(c.skip_reason.empty());
    EXPECT_FALSE(c.mem == "gpu0" && (c.alloc == Alloc::Numa || c.alloc == Alloc::Pinned));  // not cases at all
  }
}

TEST(PingPongPlan, GraceHopperAgentsShareMemoryThroughAts) {
  const Topology t = fixture("gh200_quad");
  const auto cases = pingpong_cases(t, {"cpu0", "gpu1"}, {"numa0"}, {"numa"});
  ASSERT_EQ(cases.size(), 3u);
  for (const auto& c : cases) EXPECT_TRUE(c.skip_reason.empty()) << c.a.name << "-" << c.b.name << ": " << c.skip_reason;
  // Each case is named by the links of both agents' paths to the flag (pair_via).
  std::map<std::string, std::string> via;
  for (const auto& c : cases) via[c.a.name + "-" + c.b.name] = c.via;
  EXPECT_EQ(via["cpu0-cpu0"], "local");
  EXPECT_EQ(via["cpu0-gpu1"], "nvlink+c2c");  // gpu1 reaches numa0 over NVLink to gpu0, then gpu0's C2C
  EXPECT_EQ(via["gpu1-gpu1"], "nvlink+c2c");
  EXPECT_EQ(pair_via(t, "gpu0", "gpu1", "gpu0"), "nvlink");
  EXPECT_EQ(pair_via(t, "cpu0", "gpu0", "numa0"), "c2c");
  EXPECT_EQ(pair_via(t, "cpu0", "cpu1", "numa0"), "interconnect");
  EXPECT_EQ(pair_via(t, "cpu0", "gpu0", "nothing"), "");
  EXPECT_THROW(pingpong_cases(t, {"cpu9"}, {}, {}), UsageError);
  EXPECT_THROW(pingpong_cases(t, {}, {"numa99"}, {}), UsageError);
  EXPECT_THROW(pingpong_cases(t, {}, {}, {"magic"}), UsageError);
}

TEST(CpuPingPong, TwoThreadsExchangeExactlyAndStampEverySuccess) {
  alignas(4096) static uint8_t page[4096] = {};
  const uint64_t n = 20000;
  std::vector<uint64_t> ticks(n);
  uint64_t done_b = 0;
  std::thread b([&] { done_b = cpu::pingpong(page, 1, 0, n, 10, nullptr); });
  const uint64_t done_a = cpu::pingpong(page, 0, 1, n, 10, ticks.data());
  b.join();
  EXPECT_EQ(done_a, n);
  EXPECT_EQ(done_b, n);
  EXPECT_EQ(page[0], 0);
  for (uint64_t i = 1; i < n; ++i) ASSERT_GE(ticks[i], ticks[i - 1]);
}

TEST(CpuPingPong, AMissingPartnerTimesOut) {
  alignas(4096) static uint8_t page[4096] = {};
  // Nobody turns the flag back: the second exchange waits, and gives up after the timeout.
  EXPECT_EQ(cpu::pingpong(page, 0, 1, 5, 1, nullptr), 1u);
}
