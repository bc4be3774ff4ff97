// The allocator layer decides by the kinds table: an unknown allocator is a one-line
// UsageError before anything is allocated, huge pages only for pageable allocators, and
// a host buffer knows its kind and where its pages are.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/topology.hpp"

namespace mempath {
namespace {

// Names become kinds where they are read (options, the LLM allocator's calls): allocate
// takes a kind, so an unknown name never gets that far.
TEST(Allocators, UnknownAllocatorNameIsAUsageErrorNamingTheValidOnes) {
  try {
    alloc_kind("malloc");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown allocator 'malloc'; valid: system, numa, device, managed, pinned, registered");
  }
}

TEST(Allocators, HugePagesOnlyForPageableAllocators) {
  const Topology topo = discover();
  try {
    allocate(topo, Alloc::Pinned, "numa" + std::to_string(topo.numa_nodes.front().id), 4096, 0, true);
    FAIL() << "no error";
  } catch (const Unsupported& e) {
    EXPECT_STREQ(e.what(), "huge pages are requested with madvise for system and numa memory, not pinned");
  }
}

TEST(Allocators, HostBufferKnowsItsKindAndPlacement) {
  const Topology topo = discover();
  const int node = topo.numa_nodes.front().id;
  for (const Alloc alloc : {Alloc::System, Alloc::Numa}) {
    auto buf = allocate(topo, alloc, "numa" + std::to_string(node), 1 << 20, 0x5a);
    EXPECT_EQ(buf->kind(), alloc);
    EXPECT_EQ(static_cast<unsigned char*>(buf->data())[(1 << 20) - 1], 0x5a);
    const std::string where = placement(*buf);
    EXPECT_TRUE(where == "numa" + std::to_string(node) || where == "unknown") << where;
  }
}

// The rule's cases: the same file tests/python/test_placement.py checks the analysis with.
TEST(Allocators, DrawnUnderFollowsTheOnePlacementRule) {
  const std::string fixtures = MEMPATH_FIXTURES_DIR;
  std::ifstream in(fixtures + "/placement_cases.txt");
  ASSERT_TRUE(in) << fixtures << "/placement_cases.txt";
  std::map<std::string, Topology> topologies;
  size_t cases = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string x; fields >> x;) f.push_back(x == "''" ? "" : x);
    ASSERT_EQ(f.size(), 5u) << line;
    if (!topologies.count(f[0])) topologies[f[0]] = load_snapshot(fixtures + "/" + f[0]);
    const Topology& topo = topologies[f[0]];
    const Alloc alloc = alloc_kind(f[2]);
    EXPECT_EQ(drawn_under(topo, f[1], alloc, f[3]), f[4]) << line;
    EXPECT_EQ(placed_as_named(topo, f[3], f[1], alloc), f[4] == f[1]) << line;
    ++cases;
  }
  EXPECT_GT(cases, 20u);
}

TEST(Allocators, PlacedColumnSaysNothingForACaseThatDidNotRun) {
  EXPECT_EQ(placed_column("ok", true), 1);
  EXPECT_EQ(placed_column("ok", false), 0);
  EXPECT_EQ(placed_column("skipped", true), -1);
}

}  // namespace
}  // namespace mempath
