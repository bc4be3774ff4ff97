// The allocator layer decides by the kinds table: an unknown allocator is a one-line
// UsageError before anything is allocated, huge pages only for pageable allocators, and
// a host buffer knows its kind and where its pages are.
#include <gtest/gtest.h>

#include <string>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/topology.hpp"

namespace mempath {
namespace {

TEST(Allocators, UnknownAllocatorIsAUsageErrorNamingTheValidOnes) {
  const Topology topo = discover();
  for (const std::string& mem : {"numa" + std::to_string(topo.numa_nodes.front().id), std::string("interleave")}) {
    try {
      allocate(topo, "malloc", mem, 4096, 0);
      FAIL() << "no error for " << mem;
    } catch (const UsageError& e) {
      EXPECT_STREQ(e.what(), "unknown allocator 'malloc'; valid: system, numa, device, managed, pinned, registered");
    }
  }
}

TEST(Allocators, HugePagesOnlyForPageableAllocators) {
  const Topology topo = discover();
  try {
    allocate(topo, "pinned", "numa" + std::to_string(topo.numa_nodes.front().id), 4096, 0, true);
    FAIL() << "no error";
  } catch (const Unsupported& e) {
    EXPECT_STREQ(e.what(), "huge pages are requested with madvise for system and numa memory, not pinned");
  }
}

TEST(Allocators, HostBufferKnowsItsKindAndPlacement) {
  const Topology topo = discover();
  const int node = topo.numa_nodes.front().id;
  for (const char* alloc : {"system", "numa"}) {
    auto buf = allocate(topo, alloc, "numa" + std::to_string(node), 1 << 20, 0x5a);
    EXPECT_EQ(buf->kind(), alloc_kind(std::string(alloc)));
    EXPECT_EQ(static_cast<unsigned char*>(buf->data())[(1 << 20) - 1], 0x5a);
    const std::string where = placement(*buf);
    EXPECT_TRUE(where == "numa" + std::to_string(node) || where == "unknown") << where;
  }
}

TEST(Allocators, PlacedAsNamedFollowsTheReportsRule) {
  const Topology quad = load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/gh200_quad");
  EXPECT_TRUE(placed_as_named(quad, "numa1", "numa1", "numa"));
  EXPECT_TRUE(placed_as_named(quad, "numa4", "gpu0", "device"));  // gpu0's HBM is NUMA node 4
  EXPECT_TRUE(placed_as_named(quad, "gpu0", "numa4", "numa"));
  EXPECT_FALSE(placed_as_named(quad, "numa12", "gpu0", "device"));
  EXPECT_FALSE(placed_as_named(quad, "numa0:0.5,numa1:0.5", "numa0", "numa"));  // mixed
  EXPECT_TRUE(placed_as_named(quad, "unknown", "numa0", "pinned"));
  EXPECT_FALSE(placed_as_named(quad, "unknown", "numa0", "managed"));  // pulled into a GPU
  EXPECT_FALSE(placed_as_named(quad, "gpu0", "numa0", "managed"));
  EXPECT_TRUE(placed_as_named(quad, "numa0:0.5,numa1:0.5", "interleave", "numa"));  // spread by design
  EXPECT_EQ(placed_column("ok", true), 1);
  EXPECT_EQ(placed_column("ok", false), 0);
  EXPECT_EQ(placed_column("skipped", true), -1);  // a case that did not run says nothing
}

}  // namespace
}  // namespace mempath
