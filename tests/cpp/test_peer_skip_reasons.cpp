// Skip reasons name the real cause (#33): on a dual GH200 workstation without peer access
// between its GPUs (tests/fixtures/gh200_dual), every case in which one GPU touches the
// other's device memory is skipped "no peer access from GPU a to GPU b", never with the
// allocator sentence of whichever allocator comes first in the table.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/bw_plan.hpp"
#include "core/chase_plan.hpp"
#include "core/memcpy_plan.hpp"
#include "core/pingpong_plan.hpp"
#include "core/atomics_plan.hpp"
#include "core/topology.hpp"

using namespace mempath;

namespace {

Topology fixture(const std::string& name) { return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name); }

std::string peer(int a, int b) { return "no peer access from GPU " + std::to_string(a) + " to GPU " + std::to_string(b); }

// gpuN -> N, anything else -> -1.
int gpu_of(const std::string& name) { return name.rfind("gpu", 0) == 0 ? std::stoi(name.substr(3)) : -1; }

BwSettings settings() {
  BwSettings s;
  s.size = 1ULL << 30;
  s.in_cache = true;
  return s;
}

}  // namespace

TEST(PeerSkipReasons, DualGh200PathsToThePeerGpuNameTheMissingPeerAccess) {
  const Topology t = fixture("gh200_dual");
  for (const auto& [g, h] : std::vector<std::pair<int, int>>{{0, 1}, {1, 0}}) {
    const Path* p = t.find_path("gpu" + std::to_string(g), "gpu" + std::to_string(h));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->allocs.empty());
    ASSERT_EQ(p->skipped.size(), 6u);
    // Peer access first: whatever the allocator, the path needs peer access it does not have.
    for (const auto& s : p->skipped) EXPECT_EQ(s.reason, peer(g, h)) << alloc_name(s.alloc);
    EXPECT_EQ(alloc_problem(t, "gpu" + std::to_string(g), "gpu" + std::to_string(h), std::nullopt), peer(g, h));
  }
}

TEST(PeerSkipReasons, DualGh200BandwidthCasesOnThePeerGpu) {
  const Topology t = fixture("gh200_dual");
  // A read or write of the peer's device memory with the path's (missing) default allocator.
  const BwCase read = make_case(t, Op::Read, "gpu0", "gpu1", "", "", -1, "grid", settings());
  EXPECT_FALSE(read.alloc);
  EXPECT_EQ(read.skip_reason, peer(0, 1));
  // An allocator given on the command line: still the missing peer access first.
  EXPECT_EQ(make_case(t, Op::Write, "gpu1", "gpu0", "", "pinned", -1, "grid", settings()).skip_reason, peer(1, 0));
  EXPECT_EQ(make_case(t, Op::Read, "gpu0", "gpu1", "", "device", -1, "grid", settings()).skip_reason, peer(0, 1));
  // GPU-to-GPU copies: own memory to the peer's, and host memory to the peer's.
  EXPECT_EQ(make_case(t, Op::Copy, "gpu0", "gpu0", "gpu1", "", -1, "grid", settings()).skip_reason, peer(0, 1));
  EXPECT_EQ(make_case(t, Op::Copy, "gpu0", "numa0", "gpu1", "", -1, "grid", settings()).skip_reason, peer(0, 1));
  EXPECT_EQ(make_case(t, Op::Copy, "gpu1", "gpu0", "numa1", "", -1, "grid", settings()).skip_reason, peer(1, 0));

  // The whole plan (`bw --all`): every GPU case that touches the other GPU's memory.
  BwFilters f;
  f.pu_kinds = {"gpu"};
  int seen = 0;
  for (const auto& c : all_cases(t, f, settings())) {
    const int g = gpu_of(c.pu), src = gpu_of(c.mem), dst = gpu_of(c.dst_mem);
    const int other = src >= 0 && src != g ? src : dst >= 0 && dst != g ? dst : -1;
    if (other < 0) continue;
    ++seen;
    EXPECT_EQ(c.skip_reason, peer(g, other)) << c.pu << " " << c.mem << " -> " << c.dst_mem << " " << alloc_name(c.alloc);
  }
  EXPECT_GT(seen, 20);
}

TEST(PeerSkipReasons, DualGh200ChasePingpongAtomicsAndPeerCopies) {
  const Topology t = fixture("gh200_dual");
  const ChaseCase chase = make_chase_case(t, "gpu0", -1, "gpu1", "");
  EXPECT_EQ(chase.skip_reason, peer(0, 1));
  for (const auto& c : all_chase_cases(t, {"gpu1"}, {"gpu0"}, {"all"})) EXPECT_EQ(c.skip_reason, peer(1, 0)) << alloc_name(c.alloc);

  int seen = 0;
  for (const auto& c : pingpong_cases(t, {}, {}, {})) {
    const int m = gpu_of(c.mem);
    if (m < 0) continue;
    for (const Agent* a : {&c.a, &c.b})
      if (a->gpu >= 0 && a->gpu != m) {
        ++seen;
        EXPECT_EQ(c.skip_reason.rfind("no peer access from GPU ", 0), 0u) << c.a.name << " " << c.b.name << " " << c.mem;
      }
  }
  EXPECT_GT(seen, 0);

  AtomicsFilters af;
  af.all = true;
  af.mems = {"gpu1"};
  af.pus = {"gpu0"};
  for (const auto& c : atomics_cases(t, af)) EXPECT_EQ(c.skip_reason, peer(0, 1)) << alloc_name(c.alloc);

  MemcpyRequest r;
  r.directions = {"d2d", "d2d-bidir"};
  r.engines = {"ce", "sm"};
  r.size = 64ULL << 20;
  for (const auto& c : plan_memcpy(t, r)) EXPECT_EQ(c.skip_reason, peer(c.gpus[0], c.gpus[1]));
}

TEST(PeerSkipReasons, WherePeerAccessIsNotTheProblemTheAllocatorIsNamed) {
  // Own memory with an allocator that cannot place it: the allocator's sentence.
  const Topology dual = fixture("gh200_dual");
  EXPECT_EQ(make_case(dual, Op::Read, "gpu0", "gpu0", "", "pinned", -1, "grid", settings()).skip_reason,
            "system, numa, pinned and registered buffers are NUMA-node memory, not cudaMalloc memory");
  // With NVLink peers (quad GH200) the peer's memory runs; a host allocator there is refused for itself.
  const Topology quad = fixture("gh200_quad");
  EXPECT_EQ(make_case(quad, Op::Read, "gpu0", "gpu1", "", "", -1, "grid", settings()).skip_reason, "");
  EXPECT_EQ(make_case(quad, Op::Read, "gpu0", "gpu1", "", "pinned", -1, "grid", settings()).skip_reason,
            "system, numa, pinned and registered buffers are NUMA-node memory, not cudaMalloc memory");
}
