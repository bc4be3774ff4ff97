// mempath atomics, pure logic: the planner's cases and skip reasons on the reference
// topologies, bad names, and the count each counter must end with (the data check).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/atomics_plan.hpp"
#include "core/error.hpp"
#include "core/topology.hpp"

using namespace mempath;

namespace {

Topology fixture(const std::string& name) { return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name); }

const AtomicsCase* find(const std::vector<AtomicsCase>& cases, const std::string& pu, const std::string& mem,
                        const std::string& alloc) {
  for (const auto& c : cases)
    if (c.pu == pu && c.mem == mem && alloc_name(c.alloc) == alloc) return &c;
  return nullptr;
}

}  // namespace

TEST(AtomicsPlan, DefaultIsOneCasePerGpuAndMemoryWithThePathsAllocator) {
  const auto cases = atomics_cases(fixture("x86_h100"), {});
  ASSERT_EQ(cases.size(), 2u);
  ASSERT_NE(find(cases, "gpu0", "gpu0", "device"), nullptr);
  const AtomicsCase* host = find(cases, "gpu0", "numa0", "registered");
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->via, "pcie");
  EXPECT_EQ(host->gpu, 0);
  for (const auto& c : cases) EXPECT_EQ(c.skip_reason, "") << c.mem;
}

TEST(AtomicsPlan, AllAllocatorsSkipPageableMemoryWithoutAts) {
  AtomicsFilters f;
  f.all = true;
  const auto cases = atomics_cases(fixture("x86_h100"), f);
  const AtomicsCase* system = find(cases, "gpu0", "numa0", "system");
  ASSERT_NE(system, nullptr);
  EXPECT_NE(system->skip_reason.find("ATS"), std::string::npos) << system->skip_reason;
  ASSERT_NE(find(cases, "gpu0", "numa0", "pinned"), nullptr);
  EXPECT_EQ(find(cases, "gpu0", "numa0", "pinned")->skip_reason, "");
  // cudaMalloc on a NUMA node is no case at all, not a skipped one.
  EXPECT_EQ(find(cases, "gpu0", "numa0", "device"), nullptr);
}

TEST(AtomicsPlan, Gh200ReachesHostMemoryThroughAtsOverC2c) {
  AtomicsFilters f;
  f.mems = {"numa0"}, f.allocs = {"system"};
  const auto cases = atomics_cases(fixture("gh200_single"), f);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].skip_reason, "");
  EXPECT_EQ(cases[0].via, "c2c");
}

TEST(AtomicsPlan, FiltersSelectGpusAndPeerMemory) {
  AtomicsFilters f;
  f.pus = {"gpu1"}, f.mems = {"gpu0", "gpu1"};
  const auto cases = atomics_cases(fixture("x86_2s_4gpu"), f);
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) EXPECT_EQ(c.pu, "gpu1");
  EXPECT_NE(find(cases, "gpu1", "gpu0", "device"), nullptr);
}

TEST(AtomicsPlan, BadNamesAreUsageErrors) {
  const Topology t = fixture("x86_h100");
  EXPECT_THROW(atomics_cases(t, {{"cpu0"}, {}, {}, false}), UsageError);  // CPUs are not atomics agents here
  EXPECT_THROW(atomics_cases(t, {{"gpu7"}, {}, {}, false}), UsageError);
  EXPECT_THROW(atomics_cases(t, {{}, {"numa9"}, {}, false}), UsageError);
  EXPECT_THROW(atomics_cases(t, {{}, {}, {"malloc"}, false}), UsageError);
}

TEST(AtomicsExpected, WarpsSpreadRoundRobinOverTheCounters) {
  // 10 warps on 4 counters: counters 0 and 1 get 3 warps, 2 and 3 get 2.
  EXPECT_EQ(atomics_expected(0, 4, 10, 5, 2), 3u * 32 * 5 * 2);
  EXPECT_EQ(atomics_expected(1, 4, 10, 5, 2), 3u * 32 * 5 * 2);
  EXPECT_EQ(atomics_expected(3, 4, 10, 5, 2), 2u * 32 * 5 * 2);
  uint64_t total = 0;
  for (uint64_t c = 0; c < 4; ++c) total += atomics_expected(c, 4, 10, 5, 2);
  EXPECT_EQ(total, 10u * 32 * 5 * 2);  // every increment lands on exactly one counter
  EXPECT_EQ(atomics_expected(0, 1, 10, 5, 2), 10u * 32 * 5 * 2);  // --counters 1: all of them
  EXPECT_EQ(atomics_expected(11, 16, 10, 5, 2), 0u);  // more counters than warps: the rest stay 0
}
