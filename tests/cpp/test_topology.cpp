// Topology: the reference snapshots in tests/fixtures/ enumerate the processors, memories
// and paths of docs/topology.md; gpus.txt and cpulists parse; snapshots of this machine
// load back as the live node.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/bw_plan.hpp"
#include "core/error.hpp"
#include "core/memcpy_plan.hpp"
#include "core/topology.hpp"

using namespace mempath;
namespace fs = std::filesystem;

namespace {

using Names = std::vector<std::string>;

Topology fixture(const std::string& name) { return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name); }

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The allocators' names, so a failure says them.
Names names(const std::vector<Alloc>& allocs) {
  Names out;
  for (Alloc a : allocs) out.push_back(alloc_name(a));
  return out;
}

// The path, failing the test (not crashing) when it is missing.
const Path& path(const Topology& t, const std::string& pu, const std::string& mem) {
  static const Path none;
  const Path* p = t.find_path(pu, mem);
  EXPECT_NE(p, nullptr) << pu << " -> " << mem;
  return p ? *p : none;
}

std::string reason(const Path& p, const std::string& alloc) {
  for (const auto& s : p.skipped)
    if (alloc_name(s.alloc) == alloc) return s.reason;
  return "";
}

// Every path names each of the six allocators exactly once, as runnable or skipped.
void expect_allocators_partitioned(const Topology& t) {
  const Names all = {"system", "numa", "device", "managed", "pinned", "registered"};
  EXPECT_EQ(t.paths.size(), t.processors.size() * t.memories.size());
  for (const auto& p : t.paths) {
    Names seen = names(p.allocs);
    for (const auto& s : p.skipped) {
      seen.push_back(alloc_name(s.alloc));
      EXPECT_FALSE(s.reason.empty()) << p.pu << "->" << p.mem << " " << alloc_name(s.alloc);
    }
    std::sort(seen.begin(), seen.end());
    Names expected = all;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(seen, expected) << p.pu << "->" << p.mem;
  }
}

// A one-node snapshot (4 CPUs without topology files, one cache level) in a temporary
// folder, removed again at the end of the test; tests break one file of it.
struct MiniSnapshot {
  fs::path dir;
  explicit MiniSnapshot(const std::string& tag)
      : dir(fs::temp_directory_path() / ("mempath_topo_" + tag + "_" + std::to_string(getpid()))) {
    fs::remove_all(dir);
    const fs::path node = dir / "sys/devices/system/node/node0";
    const fs::path cache = dir / "sys/devices/system/cpu/cpu0/cache/index0";
    fs::create_directories(node);
    fs::create_directories(cache);
    std::ofstream(dir / "sys/devices/system/node/online") << "0\n";
    std::ofstream(node / "cpulist") << "0-3\n";
    std::ofstream(node / "meminfo") << "Node 0 MemTotal:  1024 kB\nNode 0 MemFree:  512 kB\n";
    std::ofstream(node / "distance") << "10\n";
    std::ofstream(cache / "level") << "1\n";
    std::ofstream(cache / "type") << "Data\n";
    std::ofstream(cache / "size") << "32K\n";
    std::ofstream(cache / "shared_cpu_list") << "0\n";
  }
  ~MiniSnapshot() { fs::remove_all(dir); }
};

}  // namespace

// ---------------------------------------------------------------------------------------
// Parsers

TEST(Topology, ParsesCpulists) {
  EXPECT_EQ(parse_cpulist("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpulist("5\n"), (std::vector<int>{5}));
  EXPECT_EQ(parse_cpulist(""), std::vector<int>{});
  EXPECT_EQ(parse_cpulist("\n"), std::vector<int>{});
  EXPECT_EQ(parse_cpulist("64-65,0-1"), (std::vector<int>{0, 1, 64, 65}));
  EXPECT_EQ(parse_cpulist("65535"), (std::vector<int>{65535}));
}

// Issue #12 (bad input): garbage, reversed ranges and absurd ids are refused with one line
// naming what is valid; "0-99999999" is refused before 10^8 ints are allocated.
TEST(Topology, RejectsWhatIsNotACpulist) {
  for (const char* bad : {"0-1,x,3", "abc", "5-3", "0-99999999", "65536", "1-2-3", "0,,1", "-1", "+3", "0-"}) {
    try {
      parse_cpulist(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find("valid: "), std::string::npos) << what;
    }
  }
}

TEST(Topology, GpusTxtRoundTrips) {
  const std::string text =
      "# comment line\n"
      "gpu 0\n"
      "name=NVIDIA GH200 120GB\n"
      "cc=9.0\n"
      "sm_count=132\n"
      "memory_bytes=102005473280\n"
      "l2_bytes=52428800\n"
      "pci_bus_id=0009:01:00.0\n"
      "numa_config=numa_node        # trailing comment\n"
      "hbm_numa=4\n"
      "host_numa=0\n"
      "link=c2c\n"
      "pcie_gen=0\n"
      "pcie_width=0\n"
      "pageable_access=1\n"
      "host_page_tables=1\n"
      "concurrent_managed=1\n"
      "peers=1,2,3\n"
      "nvlink_peers=1-3\n"
      "future_key=ignored\n"
      "gpu 1\n"
      "name=NVIDIA H100 PCIe\n"
      "link=pcie\n"
      "pcie_gen=5\n"
      "pcie_width=16\n"
      "peers=\n"
      "gpu 2\n"  // gpu 0's peers must be GPUs of the file
      "gpu 3\n";
  const auto gpus = parse_gpus_txt(text);
  ASSERT_EQ(gpus.size(), 4u);
  const GpuInfo& g = gpus[0];
  EXPECT_EQ(g.id, 0);
  EXPECT_EQ(g.model, "NVIDIA GH200 120GB");
  EXPECT_EQ(g.cc, "9.0");
  EXPECT_EQ(g.sm_count, 132);
  EXPECT_EQ(g.memory_bytes, 102005473280LL);
  EXPECT_EQ(g.l2_bytes, 52428800);
  EXPECT_EQ(g.pci_bus_id, "0009:01:00.0");
  EXPECT_EQ(g.numa_config, "numa_node");
  EXPECT_EQ(g.hbm_numa, 4);
  EXPECT_EQ(g.host_numa, 0);
  EXPECT_EQ(g.link_type, "c2c");
  EXPECT_TRUE(g.pageable_access && g.host_page_tables && g.concurrent_managed);
  EXPECT_EQ(g.peers, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(g.nvlink_peers, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(gpus[1].id, 1);
  EXPECT_EQ(gpus[1].pcie_gen, 5);
  EXPECT_EQ(gpus[1].hbm_numa, -1);  // defaults for keys not written
  EXPECT_TRUE(gpus[1].peers.empty());

  // format -> parse -> format is stable, and keeps every field.
  const std::string formatted = format_gpus_txt(gpus);
  EXPECT_EQ(format_gpus_txt(parse_gpus_txt(formatted)), formatted);
  const auto again = parse_gpus_txt(formatted);
  EXPECT_EQ(again[0].memory_bytes, g.memory_bytes);
  EXPECT_EQ(again[0].nvlink_peers, g.nvlink_peers);
  EXPECT_EQ(again[1].pcie_width, 16);

  EXPECT_TRUE(parse_gpus_txt("").empty());
  EXPECT_TRUE(format_gpus_txt({}).find("gpu ") == std::string::npos);
}

// The fixtures' gpus.txt are written in format_gpus_txt's own format (make_fixtures.py).
TEST(Topology, FixtureGpusTxtIsCanonical) {
  for (const char* name : {"x86_h100", "x86_2s_4gpu", "gh200_single", "gh200_dual", "gh200_quad"}) {
    const std::string text = read_file(fs::path(MEMPATH_FIXTURES_DIR) / name / "gpus.txt");
    ASSERT_FALSE(text.empty()) << name;
    EXPECT_EQ(format_gpus_txt(parse_gpus_txt(text)), text) << name;
  }
}

// ---------------------------------------------------------------------------------------
// x86 + one PCIe H100

TEST(TopologyFixture, X86H100) {
  const Topology t = fixture("x86_h100");
  EXPECT_EQ(t.source, "snapshot");
  EXPECT_EQ(t.host, "x86_h100");
  EXPECT_EQ(t.arch, "x86_64");
  EXPECT_EQ(t.cpu_model, "AMD EPYC 9124 16-Core Processor");
  ASSERT_EQ(t.numa_nodes.size(), 1u);
  const NumaNode& n = t.numa_nodes[0];
  EXPECT_EQ(n.kind, MemKind::Host);
  EXPECT_EQ(n.cores, 16);
  EXPECT_EQ(n.cpus.size(), 16u);
  EXPECT_EQ(n.mem_total_bytes, 263578492LL * 1024);
  EXPECT_EQ(n.distances, std::vector<int>{10});
  EXPECT_EQ(n.llc_bytes, 16LL << 20);  // one CCD's L3

  EXPECT_EQ(t.pu_names(), (Names{"cpu0", "gpu0"}));  // one CPU node: no `cpus`
  EXPECT_EQ(t.mem_names(), (Names{"numa0", "gpu0"}));
  EXPECT_EQ(t.find_pu("cpu0")->cache_bytes, 64LL << 20);  // four CCDs of 16 MiB L3
  EXPECT_EQ(t.find_pu("gpu0")->cache_bytes, 52428800);
  EXPECT_EQ(t.find_mem("gpu0")->kind, MemKind::Device);
  EXPECT_EQ(t.find_mem("gpu0")->numa, -1);
  // The driver said -1 (one-node box); the only CPU node is the GPU's host.
  EXPECT_EQ(t.find_gpu(0)->host_numa, 0);

  const Path& g_host = path(t, "gpu0", "numa0");
  EXPECT_EQ(g_host.via, "pcie");
  EXPECT_EQ(names(g_host.allocs), (Names{"managed", "pinned", "registered"}));
  EXPECT_EQ(reason(g_host, "system"), "GPU 0 cannot access pageable memory (no ATS/HMM)");
  EXPECT_EQ(reason(g_host, "numa"), "GPU 0 cannot access pageable memory (no ATS/HMM)");

  const Path& c_dev = path(t, "cpu0", "gpu0");
  EXPECT_EQ(c_dev.via, "pcie");
  EXPECT_EQ(names(c_dev.allocs), Names{"managed"});
  EXPECT_EQ(reason(c_dev, "device"), "cudaMalloc memory is not mapped for CPU access");

  const Path& c_host = path(t, "cpu0", "numa0");
  EXPECT_EQ(c_host.via, "local");
  EXPECT_EQ(names(c_host.allocs), (Names{"system", "numa", "managed", "pinned", "registered"}));

  EXPECT_EQ(path(t, "gpu0", "gpu0").via, "local");
  EXPECT_EQ(names(path(t, "gpu0", "gpu0").allocs), (Names{"device", "managed"}));
  expect_allocators_partitioned(t);
}

// ---------------------------------------------------------------------------------------
// Two x86 sockets, four NVLink H100

TEST(TopologyFixture, X86TwoSocketsFourGpus) {
  const Topology t = fixture("x86_2s_4gpu");
  EXPECT_EQ(t.cpu_model, "Intel(R) Xeon(R) Platinum 8462Y+");
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  for (const auto& n : t.numa_nodes) {
    EXPECT_EQ(n.kind, MemKind::Host);
    EXPECT_EQ(n.cores, 32);
    EXPECT_EQ(n.cpus.size(), 64u);
    EXPECT_EQ(n.llc_bytes, 60LL << 20);
    EXPECT_EQ(n.distances, n.id == 0 ? (std::vector<int>{10, 21}) : (std::vector<int>{21, 10}));
  }
  // Physical cores first, then their SMT siblings.
  const auto& cpus0 = t.find_numa(0)->cpus;
  EXPECT_EQ(cpus0[0], 0);
  EXPECT_EQ(cpus0[31], 31);
  EXPECT_EQ(cpus0[32], 64);
  EXPECT_EQ(t.find_numa(1)->cpus[0], 32);

  EXPECT_EQ(t.pu_names(), (Names{"cpu0", "cpu1", "cpus", "gpu0", "gpu1", "gpu2", "gpu3"}));
  EXPECT_EQ(t.mem_names(), (Names{"numa0", "numa1", "gpu0", "gpu1", "gpu2", "gpu3"}));
  const Processor* all = t.find_pu("cpus");
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(all->cores, 64);
  EXPECT_EQ(all->cpus.size(), 128u);
  EXPECT_EQ(all->numa, -1);
  EXPECT_EQ(all->cache_bytes, 120LL << 20);

  EXPECT_EQ(path(t, "cpu0", "numa1").via, "interconnect");
  // Issue #12 (path names): `cpus` has threads on both sockets, so numa1 is local to half
  // of them only, and a GPU behind one socket is behind the interconnect for the others.
  EXPECT_EQ(path(t, "cpus", "numa1").via, "spread");
  EXPECT_EQ(path(t, "cpus", "gpu2").via, "pcie+spread");
  EXPECT_EQ(path(t, "cpu0", "gpu0").via, "pcie");
  EXPECT_EQ(path(t, "cpu0", "gpu2").via, "interconnect+pcie");  // links in the order crossed
  EXPECT_EQ(path(t, "gpu0", "numa0").via, "pcie");
  EXPECT_EQ(path(t, "gpu0", "numa1").via, "pcie+interconnect");
  EXPECT_EQ(path(t, "gpu2", "numa1").via, "pcie");
  const Path& peer = path(t, "gpu0", "gpu3");
  EXPECT_EQ(peer.via, "nvlink");
  EXPECT_EQ(names(peer.allocs), (Names{"device", "managed"}));
  EXPECT_EQ(reason(path(t, "gpu1", "numa0"), "system"), "GPU 1 cannot access pageable memory (no ATS/HMM)");
  expect_allocators_partitioned(t);
}

// ---------------------------------------------------------------------------------------
// One GH200

TEST(TopologyFixture, Gh200Single) {
  const Topology t = fixture("gh200_single");
  EXPECT_EQ(t.arch, "aarch64");
  EXPECT_EQ(t.cpu_model, "NVIDIA Grace (Neoverse V2)");
  ASSERT_EQ(t.numa_nodes.size(), 9u);
  EXPECT_EQ(t.find_numa(0)->kind, MemKind::Host);
  EXPECT_EQ(t.find_numa(0)->cores, 72);
  EXPECT_EQ(t.find_numa(0)->llc_bytes, 119537664);
  EXPECT_EQ(t.find_numa(1)->kind, MemKind::Hbm);
  EXPECT_EQ(t.find_numa(1)->gpu, 0);
  EXPECT_TRUE(t.find_numa(1)->cpus.empty());
  for (int id = 2; id <= 8; ++id) EXPECT_EQ(t.find_numa(id)->kind, MemKind::Empty) << id;

  EXPECT_EQ(t.pu_names(), (Names{"cpu0", "gpu0"}));
  EXPECT_EQ(t.mem_names(), (Names{"numa0", "numa1", "gpu0"}));
  EXPECT_EQ(t.find_mem("numa1")->kind, MemKind::Hbm);
  EXPECT_EQ(t.find_mem("numa1")->gpu, 0);
  EXPECT_EQ(t.find_mem("gpu0")->numa, 1);
  EXPECT_EQ(t.find_pu("cpu0")->cache_bytes, 119537664);

  const Path& c_hbm = path(t, "cpu0", "numa1");
  EXPECT_EQ(c_hbm.via, "c2c");
  EXPECT_EQ(names(c_hbm.allocs), (Names{"system", "numa"}));
  EXPECT_EQ(reason(c_hbm, "pinned"), "pinned and registered buffers are host memory; numa1 is GPU 0's HBM");
  EXPECT_EQ(reason(c_hbm, "registered"), reason(c_hbm, "pinned"));
  EXPECT_FALSE(reason(c_hbm, "managed").empty());

  const Path& g_host = path(t, "gpu0", "numa0");
  EXPECT_EQ(g_host.via, "c2c");
  EXPECT_EQ(names(g_host.allocs), (Names{"system", "numa", "managed", "pinned", "registered"}));
  EXPECT_EQ(path(t, "gpu0", "numa1").via, "local");
  EXPECT_EQ(names(path(t, "gpu0", "numa1").allocs), (Names{"system", "numa"}));
  EXPECT_EQ(path(t, "cpu0", "gpu0").via, "c2c");
  expect_allocators_partitioned(t);
}

// ---------------------------------------------------------------------------------------
// Dual GH200 workstation: no GPU peer access

TEST(TopologyFixture, Gh200Dual) {
  const Topology t = fixture("gh200_dual");
  ASSERT_EQ(t.numa_nodes.size(), 18u);
  EXPECT_EQ(t.pu_names(), (Names{"cpu0", "cpu1", "cpus", "gpu0", "gpu1"}));
  EXPECT_EQ(t.mem_names(), (Names{"numa0", "numa1", "numa2", "numa10", "gpu0", "gpu1"}));
  EXPECT_EQ(t.find_numa(2)->gpu, 0);
  EXPECT_EQ(t.find_numa(10)->gpu, 1);
  EXPECT_EQ(t.find_numa(3)->kind, MemKind::Empty);

  const Path& dev = path(t, "gpu0", "gpu1");
  EXPECT_TRUE(dev.allocs.empty());
  EXPECT_EQ(reason(dev, "device"), "no peer access from GPU 0 to GPU 1");
  EXPECT_EQ(reason(dev, "managed"), "no peer access from GPU 0 to GPU 1");
  EXPECT_EQ(dev.via, "c2c+interconnect");  // only through the two Graces

  // The other superchip's HBM stays reachable through ATS, over the hosts.
  const Path& hbm = path(t, "gpu0", "numa10");
  EXPECT_EQ(hbm.via, "c2c+interconnect");
  EXPECT_EQ(names(hbm.allocs), (Names{"system", "numa"}));
  EXPECT_EQ(path(t, "cpu1", "numa2").via, "interconnect+c2c");
  EXPECT_EQ(path(t, "cpu1", "numa10").via, "c2c");
  EXPECT_EQ(path(t, "cpus", "numa10").via, "c2c+spread");
  EXPECT_EQ(path(t, "gpu1", "numa0").via, "c2c+interconnect");
  expect_allocators_partitioned(t);

  // A driver that does not report the host node: the Grace nearest the HBM (SLIT) is it.
  auto gpus = t.gpus;
  for (auto& g : gpus) g.host_numa = -1;
  const Topology guessed = build_topology(std::string(MEMPATH_FIXTURES_DIR) + "/gh200_dual", gpus, "snapshot");
  EXPECT_EQ(guessed.find_gpu(0)->host_numa, 0);
  EXPECT_EQ(guessed.find_gpu(1)->host_numa, 1);
}

// ---------------------------------------------------------------------------------------
// Quad GH200 (CSCS Alps)

TEST(TopologyFixture, Gh200QuadAlps) {
  const Topology t = fixture("gh200_quad");
  ASSERT_EQ(t.numa_nodes.size(), 36u);
  EXPECT_EQ(t.pu_names(),
            (Names{"cpu0", "cpu1", "cpu2", "cpu3", "cpus", "gpu0", "gpu1", "gpu2", "gpu3"}));
  EXPECT_EQ(t.mem_names(), (Names{"numa0", "numa1", "numa2", "numa3", "numa4", "numa12", "numa20",
                                  "numa28", "gpu0", "gpu1", "gpu2", "gpu3"}));
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(t.find_numa(4 + 8 * g)->kind, MemKind::Hbm);
    EXPECT_EQ(t.find_numa(4 + 8 * g)->gpu, g);
    EXPECT_EQ(t.find_numa(g)->cores, 72);
    EXPECT_EQ(t.find_gpu(g)->host_numa, g);
  }
  EXPECT_EQ(t.find_numa(5)->kind, MemKind::Empty);
  EXPECT_EQ(t.find_mem("numa5"), nullptr);
  EXPECT_EQ(t.find_pu("cpus")->cores, 288);
  EXPECT_EQ(t.find_pu("cpus")->cache_bytes, 4 * 119537664LL);
  EXPECT_EQ(t.find_numa(0)->distances.size(), 36u);

  const Path& local_hbm = path(t, "cpu0", "numa4");
  EXPECT_EQ(local_hbm.via, "c2c");
  EXPECT_EQ(names(local_hbm.allocs), (Names{"system", "numa"}));
  // Grace traffic to a peer superchip crosses the Grace interconnect, then the peer's C2C.
  EXPECT_EQ(path(t, "cpu0", "numa12").via, "interconnect+c2c");
  EXPECT_EQ(path(t, "cpu0", "numa1").via, "interconnect");
  EXPECT_EQ(path(t, "cpu0", "gpu1").via, "interconnect+c2c");

  const Path& g_host = path(t, "gpu0", "numa0");
  EXPECT_EQ(g_host.via, "c2c");
  EXPECT_TRUE(has(names(g_host.allocs), "system"));
  EXPECT_TRUE(has(names(g_host.allocs), "numa"));
  // Hopper traffic to a peer superchip's LPDDR: NVLink to gpu3, then gpu3's C2C (Alps paper).
  for (int g = 0; g < 4; ++g)
    for (int n = 0; n < 4; ++n)
      EXPECT_EQ(path(t, "gpu" + std::to_string(g), "numa" + std::to_string(n)).via, g == n ? "c2c" : "nvlink+c2c");

  const Path& peer = path(t, "gpu0", "gpu1");
  EXPECT_EQ(peer.via, "nvlink");
  EXPECT_EQ(names(peer.allocs), (Names{"device", "managed"}));
  EXPECT_EQ(path(t, "gpu0", "numa12").via, "nvlink");
  EXPECT_EQ(path(t, "gpu0", "numa4").via, "local");
  expect_allocators_partitioned(t);
}

// Issue #12 (GH200 fidelity): without GPU facts (a CPU-only build's --save, a driver not
// loaded) a GH200 HBM node is recognised by its distances (80 from its Grace, 255 from its
// placeholders, 120 from other GPUs' HBM) as HBM of an unknown GPU, not host memory behind
// the socket interconnect; its link is "unknown", so no peak is invented for it.
TEST(TopologyFixture, Gh200HbmWithoutGpuFactsIsHbmOfAnUnknownGpu) {
  for (const char* name : {"gh200_single", "gh200_quad"}) {
    const Topology t = build_topology(std::string(MEMPATH_FIXTURES_DIR) + "/" + name, {}, "snapshot");
    const int hbm = std::string(name) == "gh200_single" ? 1 : 12;
    const NumaNode* n = t.find_numa(hbm);
    EXPECT_EQ(n->kind, MemKind::Hbm) << name;
    EXPECT_EQ(n->gpu, -1) << name;
    EXPECT_EQ(t.find_numa(0)->kind, MemKind::Host) << name;
    EXPECT_EQ(t.find_numa(hbm + 1)->kind, MemKind::Empty) << name;
    const Path& p = path(t, "cpu0", "numa" + std::to_string(hbm));
    EXPECT_EQ(p.via, "unknown") << name;
    EXPECT_EQ(names(p.allocs), (Names{"system", "numa"})) << name;
    EXPECT_NE(reason(p, "pinned").find("HBM of a GPU"), std::string::npos) << reason(p, "pinned");
    expect_allocators_partitioned(t);
  }
  // Host memory keeps its kind: x86 sockets are 21 apart.
  const Topology x86 = build_topology(std::string(MEMPATH_FIXTURES_DIR) + "/x86_2s_4gpu", {}, "snapshot");
  EXPECT_EQ(x86.find_numa(1)->kind, MemKind::Host);
}

// The real quad GH200 SLIT (numactl/numactl#224) puts every GPU node 255 from every other
// GPU node, other GPUs' HBM included. 255 is a distance like any other here: the GPUs still
// reach each other's HBM over NVLink, and the distances still find each GPU's Grace.
TEST(TopologyFixture, Gh200QuadSlit255BetweenGpuNodesKeepsRoutesAndHostNodes) {
  const Topology t = fixture("gh200_quad");
  EXPECT_EQ(t.find_numa(4)->distances[12], 255);
  EXPECT_EQ(t.find_numa(12)->distances[28], 255);
  EXPECT_EQ(t.find_numa(0)->distances[4], 80);
  EXPECT_EQ(t.find_numa(0)->distances[12], 120);
  for (int g = 0; g < 4; ++g)
    for (int h = 0; h < 4; ++h) {
      if (g == h) continue;
      const Path& p = path(t, "gpu" + std::to_string(g), "numa" + std::to_string(4 + 8 * h));
      EXPECT_EQ(p.via, "nvlink");
      EXPECT_EQ(names(p.allocs), (Names{"system", "numa"}));
    }
  // Without host nodes from the driver, each GPU's Grace is the CPU node nearest its HBM.
  auto gpus = t.gpus;
  for (auto& g : gpus) g.host_numa = -1;
  const Topology guessed = build_topology(std::string(MEMPATH_FIXTURES_DIR) + "/gh200_quad", gpus, "snapshot");
  for (int g = 0; g < 4; ++g) EXPECT_EQ(guessed.find_gpu(g)->host_numa, g);
}

// A GH200 whose driver has not onlined the HBM: node 1 is online with no memory. `topo
// --save` writes it and every --from command reads it back: the GPU keeps its memory, the
// HBM node is offline and every allocator on it is skipped with the reason.
TEST(TopologyFixture, Gh200OfflineHbmRoundTripsAndIsSkipped) {
  const Topology t = fixture("gh200_single_hbm_offline");
  const Memory* hbm = t.find_mem("numa1");
  ASSERT_NE(hbm, nullptr);
  EXPECT_EQ(hbm->kind, MemKind::Hbm);
  EXPECT_EQ(hbm->gpu, 0);
  EXPECT_TRUE(hbm->offline);
  EXPECT_EQ(t.find_mem("gpu0")->bytes, 102005473280LL);
  EXPECT_FALSE(t.find_mem("numa0")->offline);
  for (const char* pu : {"cpu0", "gpu0"}) {
    const Path& p = path(t, pu, "numa1");
    EXPECT_TRUE(p.allocs.empty()) << pu;
    EXPECT_NE(reason(p, "numa").find("numa1 is GPU 0's HBM, offline"), std::string::npos) << reason(p, "numa");
    EXPECT_NE(alloc_problem(t, pu, "numa1", std::nullopt).find("offline"), std::string::npos);
  }
  EXPECT_EQ(names(path(t, "gpu0", "gpu0").allocs), (Names{"device", "managed"}));
  EXPECT_NE(t.to_json().find("\"name\":\"numa1\",\"kind\":\"hbm\",\"numa\":1,\"bytes\":0,\"gpu\":0,\"offline\":true"),
            std::string::npos);
  EXPECT_NE(t.to_text().find("HBM numa1 (offline)"), std::string::npos);

  const fs::path dir = fs::temp_directory_path() / ("mempath_topo_offline_" + std::to_string(getpid()));
  fs::remove_all(dir);
  save_snapshot(dir.string(), std::string(MEMPATH_FIXTURES_DIR) + "/gh200_single_hbm_offline", t.gpus);
  const Topology back = load_snapshot(dir.string());
  fs::remove_all(dir);
  EXPECT_TRUE(back.find_mem("numa1")->offline);
  EXPECT_EQ(back.find_gpu(0)->hbm_numa, 1);
  EXPECT_EQ(back.mem_names(), t.mem_names());
}

// Issue #12 (path names): a copy case is named by the route from source to destination,
// not by its source alone; every planner takes the name from route_via.
TEST(Topology, CopyRoutesNameBothEnds) {
  const Topology quad = fixture("gh200_quad");
  EXPECT_EQ(route_via(quad, "gpu0", "gpu0", "gpu0"), "local");
  EXPECT_EQ(route_via(quad, "gpu0", "gpu0", "gpu1"), "nvlink");
  EXPECT_EQ(route_via(quad, "gpu0", "gpu1", "gpu0"), "nvlink");
  EXPECT_EQ(route_via(quad, "gpu0", "numa0", "gpu0"), "c2c");
  EXPECT_EQ(route_via(quad, "gpu0", "numa0", "gpu1"), "c2c+nvlink");
  EXPECT_EQ(route_via(quad, "cpu0", "numa0", "numa1"), "interconnect");
  EXPECT_EQ(route_via(quad, "cpu0", "numa0", "numa0"), "local");
  EXPECT_EQ(route_via(quad, "cpu0", "numa0", "nothing"), "");

  BwSettings settings;
  const BwCase copy = make_case(quad, Op::Copy, "gpu0", "gpu0", "gpu1", "", -1, "", settings);
  EXPECT_EQ(copy.via, "nvlink");
  const BwCase read = make_case(quad, Op::Read, "gpu0", "gpu1", "", "", -1, "", settings);
  EXPECT_EQ(read.via, "nvlink");
  const BwCase host = make_case(fixture("x86_h100"), Op::Copy, "gpu0", "numa0", "gpu0", "", -1, "", settings);
  EXPECT_EQ(host.via, "pcie");

  MemcpyRequest r;
  r.directions = {"h2d"};
  r.engines = {"ce"};
  r.size = 64 << 20;
  EXPECT_EQ(plan_memcpy(quad, r).front().via, "c2c");
  r.directions = {"d2d"};
  r.gpus = {"0", "1"};
  EXPECT_EQ(plan_memcpy(quad, r).front().via, "nvlink");
}

// The paper's contention pairs (--noise partner) and the noise reader's cores and buffer.
TEST(Topology, PartnerNoisePairsEachSuperchip) {
  const Topology quad = fixture("gh200_quad");
  BwSettings settings;
  NoiseSpec n;
  const BwCase hopper = make_case(quad, Op::Read, "gpu2", "numa2", "", "", -1, "", settings);
  ASSERT_EQ(partner_noise(quad, hopper, &n), "");
  EXPECT_EQ(n.label(), "cpu2:numa20");  // Grace noise on its superchip's HBM
  EXPECT_EQ(n.alloc, Alloc::Numa);
  EXPECT_EQ(n.cpus.size(), 71u);        // 72 cores, one left to the thread driving the GPU
  const BwCase grace = make_case(quad, Op::Write, "cpu3", "numa28", "", "", 8, "", settings);
  ASSERT_EQ(partner_noise(quad, grace, &n), "");
  EXPECT_EQ(n.label(), "gpu3:numa3");   // Hopper noise on its superchip's LPDDR
  EXPECT_TRUE(n.cpus.empty());
  const BwCase all = make_case(quad, Op::Read, "cpus", "numa0", "", "", -1, "", settings);
  EXPECT_NE(partner_noise(quad, all, &n).find("spans every socket"), std::string::npos);

  const Topology x86 = fixture("x86_h100");  // host_numa -1: the only CPU node is the GPU's
  const BwCase gpu = make_case(x86, Op::Read, "gpu0", "gpu0", "", "", -1, "", settings);
  EXPECT_NE(partner_noise(x86, gpu, &n).find("device memory"), std::string::npos);
  const BwCase cpu = make_case(x86, Op::Read, "cpu0", "numa0", "", "", -1, "", settings);
  ASSERT_EQ(partner_noise(x86, cpu, &n), "");
  EXPECT_EQ(n.label(), "gpu0:numa0");
  EXPECT_EQ(n.alloc, Alloc::Registered);     // no ATS: the GPU reads pinned host memory
}

TEST(Topology, NoiseSharesNoCoreWithTheMeasuredThreads) {
  const Topology quad = fixture("gh200_quad");
  BwSettings settings;
  const BwCase eight = make_case(quad, Op::Read, "cpu0", "numa0", "", "", 8, "", settings);
  const NoiseSpec n = parse_noise(quad, "cpu0:numa4", eight);
  ASSERT_EQ(n.cpus.size(), 64u);
  for (int c : n.cpus) EXPECT_EQ(std::count(eight.cpus.begin(), eight.cpus.end(), c), 0) << c;
  const BwCase every = make_case(quad, Op::Read, "cpu0", "numa0", "", "", -1, "", settings);
  EXPECT_THROW(parse_noise(quad, "cpu0:numa4", every), UsageError);
}

TEST(Topology, NoiseBufferIsEightGibWhereItFits) {
  Topology t = fixture("gh200_single");
  NoiseSpec n{"gpu0", "numa0", Alloc::Numa, {}, 0};
  t.memories[0].free_bytes = 100LL << 30;
  ASSERT_EQ(t.memories[0].name, "numa0");
  EXPECT_EQ(noise_size(t, n, 0), 8ULL << 30);
  t.memories[0].free_bytes = (6LL << 30) + 12345;  // half of it, rounded down to 2 MiB
  EXPECT_EQ(noise_size(t, n, 0), 3ULL << 30);
  EXPECT_EQ(noise_size(t, n, 1ULL << 30), 1ULL << 30);
  EXPECT_THROW(noise_size(t, n, (1ULL << 30) + 1), UsageError);
}

// ---------------------------------------------------------------------------------------
// Output

TEST(Topology, JsonHasTheDocumentedShape) {
  const std::string json = fixture("gh200_quad").to_json();
  for (const char* part :
       {"\"host\":\"gh200_quad\"", "\"source\":\"snapshot\"", "\"arch\":\"aarch64\"",
        "\"cpu_model\":\"NVIDIA Grace (Neoverse V2)\"", "\"numa_nodes\":[", "\"kind\":\"empty\"",
        "\"llc_bytes\":119537664", "\"processors\":[", "{\"name\":\"gpu0\",\"kind\":\"gpu\",\"gpu\":0",
        "\"link\":{\"type\":\"c2c\",\"gen\":0,\"width\":0}", "\"hbm_numa\":4", "\"nvlink_peers\":[1,2,3]",
        "\"memories\":[", "{\"name\":\"numa4\",\"kind\":\"hbm\",\"numa\":4,\"bytes\":102005473280,\"gpu\":0,\"offline\":false}",
        "{\"name\":\"gpu0\",\"kind\":\"device\",\"gpu\":0,\"bytes\":102005473280,\"numa\":4}",
        "\"paths\":[", "{\"pu\":\"gpu0\",\"mem\":\"gpu1\",\"via\":\"nvlink\",\"allocs\":[\"device\",\"managed\"]",
        "\"skipped\":[{\"alloc\":"})
    EXPECT_NE(json.find(part), std::string::npos) << part;
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
  // A CPU-less node's GPU is null, the `cpus` processor has no single node.
  const std::string single = fixture("x86_2s_4gpu").to_json();
  EXPECT_NE(single.find("\"name\":\"cpus\",\"kind\":\"cpu\",\"numa\":null"), std::string::npos);
  EXPECT_NE(single.find("\"hbm_numa\":null"), std::string::npos);
}

TEST(Topology, TextNamesProcessorsMemoriesAndSkipReasons) {
  const std::string text = fixture("x86_h100").to_text();
  for (const char* part : {"Processors", "Memories", "Paths", "Skipped", "cpu0", "gpu0", "numa0",
                           "NVIDIA H100 80GB HBM3", "GPU 0 cannot access pageable memory (no ATS/HMM)"})
    EXPECT_NE(text.find(part), std::string::npos) << part;
}

// ---------------------------------------------------------------------------------------
// No GPU, missing folders, the live node

TEST(Topology, WithoutGpusCpuPathsStillListCudaAllocatorsAsSkipped) {
  const std::string root = std::string(MEMPATH_FIXTURES_DIR) + "/x86_2s_4gpu";
  const Topology t = build_topology(root, {}, "snapshot");
  EXPECT_EQ(t.pu_names(), (Names{"cpu0", "cpu1", "cpus"}));
  EXPECT_EQ(t.mem_names(), (Names{"numa0", "numa1"}));
  const Path& p = path(t, "cpu0", "numa0");
  EXPECT_EQ(names(p.allocs), (Names{"system", "numa"}));
  for (const char* a : {"pinned", "registered", "managed"}) EXPECT_EQ(reason(p, a), "no CUDA GPU on this node") << a;
  expect_allocators_partitioned(t);
}

TEST(Topology, MissingSnapshotIsAUsageError) {
  EXPECT_THROW(load_snapshot("/nonexistent/mempath/snapshot"), UsageError);
}

TEST(Topology, MissingCpuTopologyCountsEachCpuAsACore) {
  const MiniSnapshot snap("min");
  const Topology t = load_snapshot(snap.dir.string());
  ASSERT_EQ(t.numa_nodes.size(), 1u);
  EXPECT_EQ(t.numa_nodes[0].cores, 4);
  EXPECT_EQ(t.numa_nodes[0].mem_total_bytes, 1024 * 1024);
  EXPECT_EQ(t.numa_nodes[0].llc_bytes, 32 * 1024);
  EXPECT_EQ(t.cpu_model, "unknown");
  EXPECT_TRUE(t.gpus.empty());  // no gpus.txt
}

// Issue #12 (bad input): each broken snapshot file is a UsageError (exit 2 in the CLI)
// whose one line names the file and what is valid, instead of an empty node and exit 0.
TEST(Topology, BrokenSnapshotFilesAreUsageErrorsNamingTheFile) {
  struct Broken {
    const char* file;     // below the snapshot; "" = remove `remove` instead
    const char* content;
    const char* remove;   // a file to delete
    const char* named;    // the file the message must name
  };
  const Broken cases[] = {
      {"sys/devices/system/node/node0/cpulist", "garbage\n", "", "node0/cpulist"},
      {"sys/devices/system/node/node0/cpulist", "3-0\n", "", "node0/cpulist"},
      {"sys/devices/system/node/node0/cpulist", "0-99999999\n", "", "node0/cpulist"},
      {"sys/devices/system/node/online", "0-99999999\n", "", "node/online"},
      {"sys/devices/system/cpu/cpu0/cache/index0/size", "abc\n", "", "index0/size"},
      {"sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list", "x\n", "", "shared_cpu_list"},
      {"sys/devices/system/node/node0/meminfo", "nothing here\n", "", "node0/meminfo"},
      {"sys/devices/system/node/node0/distance", "10 80\n", "", "node0/distance"},
      {"sys/devices/system/node/node0/distance", "ten\n", "", "node0/distance"},
      {"", "", "sys/devices/system/node/node0/distance", "node0/distance"},
      {"", "", "sys/devices/system/node/node0/cpulist", "node0/cpulist"},
      {"", "", "sys/devices/system/node/node0/meminfo", "node0/meminfo"},
      {"sys/devices/system/node/node0/cpulist", "\n", "", "cpulist"},  // no CPU node at all
      {"gpus.txt", "gpu 0\nhbm_numa=0\n", "", "gpus.txt"},  // numa0 has CPUs, fine; see below
      {"gpus.txt", "gpu 0\nhbm_numa=7\n", "", "gpus.txt"},  // not an online node
      {"gpus.txt", "gpu 0\npeers=1-x\n", "", "gpus.txt"},
  };
  for (const auto& c : cases) {
    const MiniSnapshot snap("bad");
    if (*c.file) std::ofstream(snap.dir / c.file) << c.content;
    if (*c.remove) fs::remove(snap.dir / c.remove);
    const bool valid = std::string(c.content) == "gpu 0\nhbm_numa=0\n";
    if (valid) {
      EXPECT_NO_THROW(load_snapshot(snap.dir.string()));
      continue;
    }
    try {
      load_snapshot(snap.dir.string());
      ADD_FAILURE() << "accepted " << c.file << c.remove << " = " << c.content;
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(c.named), std::string::npos) << what;
      EXPECT_NE(what.find("valid"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

// Issue #22: every GPU fact of gpus.txt is checked; a bad one is refused in one line naming
// the file, the line, the field and its value, and what is valid (these loaded before).
TEST(Topology, BadGpuFactsAreRefusedNamingFileLineFieldAndValue) {
  const std::string good = "gpu 0\nname=NVIDIA H100 80GB HBM3\ncc=9.0\nsm_count=132\nmemory_bytes=85520809984\n"
                           "l2_bytes=52428800\npci_bus_id=0000:19:00.0\nhost_numa=0\nlink=pcie\npcie_gen=5\n"
                           "pcie_width=16\npageable_access=0\nhost_page_tables=0\nconcurrent_managed=1\n";
  struct Bad {
    std::string text;
    const char* named;  // the field or what the message must name, beside the line
    const char* line;
  };
  const Bad cases[] = {
      {"gpu 0\nsm_count=-4\n", "sm_count='-4'", "line 2"},
      {"gpu 0\nsm_count=0\n", "sm_count='0'", "line 2"},
      {"gpu 0\nsm_count= 132x\n", "sm_count='132x'", "line 2"},
      {"gpu 0\ncc=banana\n", "cc='banana'", "line 2"},
      {"gpu 0\ncc=9\n", "cc='9'", "line 2"},
      {"gpu 0\ncc=-1.0\n", "cc='-1.0'", "line 2"},
      {"gpu 0\ncc=9.0.1\n", "cc='9.0.1'", "line 2"},
      {"gpu 0\nmemory_bytes=99999999999999999999999\n", "memory_bytes=", "line 2"},
      {"gpu 0\nmemory_bytes=-1\n", "memory_bytes='-1'", "line 2"},
      {"gpu 0\nl2_bytes=1e9\n", "l2_bytes='1e9'", "line 2"},
      {"gpu 0\nname=bad\x01name\n", "name=", "line 2"},
      {"gpu 0\nname=\xc3\x28\n", "name=", "line 2"},
      {"gpu 0\nlink=nvlink9\n", "link='nvlink9'", "line 2"},
      {"gpu 0\nnuma_config=yes\n", "numa_config='yes'", "line 2"},
      {"gpu 0\nhost_numa=-2\n", "host_numa='-2'", "line 2"},
      {"gpu 0\npcie_width=1000\n", "pcie_width='1000'", "line 2"},
      {"gpu 0\npageable_access=yes\n", "pageable_access='yes'", "line 2"},
      {"gpu 0\npci_bus_id=0000:19:00.0;rm\n", "pci_bus_id=", "line 2"},
      {"gpu 0\nsm_count=132\nsm_count=140\n", "sm_count is given twice", "line 3"},
      {"gpu 0\ngpu 0\n", "gpu 0 is given twice", "line 2"},
      {"gpu -1\n", "gpu -1", "line 1"},
      {"gpu x\n", "gpu x", "line 1"},
      {"sm_count=132\n", "before any `gpu N`", "line 1"},
      {"gpu 0\nthis is not a fact\n", "neither `gpu N` nor key=value", "line 2"},
      {"\x8f\x01\xff\xfe=\x00\x12\n", "neither `gpu N` nor key=value", "line 1"},
      {"gpu 0\npeers=1\n", "names gpu 1 as a peer", "line 2"},
      {"gpu 0\npeers=0\n", "names gpu 0 as a peer", "line 2"},
      {"gpu 0\npeers=\nnvlink_peers=1\ngpu 1\n", "outside its peers", "line 3"},
      {"gpu 0\nhost_numa=5\n", "host_numa=5", "gpus.txt"},  // node5 is not online
  };
  for (const auto& c : cases) {
    const MiniSnapshot snap("gpufacts");
    std::ofstream(snap.dir / "gpus.txt", std::ios::binary) << c.text;
    try {
      load_snapshot(snap.dir.string());
      ADD_FAILURE() << "accepted " << c.text;
    } catch (const UsageError& e) {
      const std::string what = e.what();
      for (const char* part : {"gpus.txt", c.named, c.line, "valid"})
        EXPECT_NE(what.find(part), std::string::npos) << part << " not in: " << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_TRUE(std::all_of(what.begin(), what.end(), [](unsigned char ch) { return ch >= 0x20 && ch < 0x7f; }))
          << "not printable ASCII: " << what;
    }
  }
  const MiniSnapshot snap("gpufacts_good");
  std::ofstream(snap.dir / "gpus.txt") << good << "future_key=whatever it holds\n";
  const Topology t = load_snapshot(snap.dir.string());
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].sm_count, 132);
}

// What save_snapshot writes always loads back: facts not known are left out, never written
// as a 0 the reader refuses.
TEST(Topology, UnknownGpuFactsAreLeftOutOfGpusTxt) {
  GpuInfo g;
  g.id = 0;
  const std::string text = format_gpus_txt({g});
  for (const char* key : {"name=", "cc=", "sm_count=", "memory_bytes=", "l2_bytes="})
    EXPECT_EQ(text.find(key), std::string::npos) << key;
  EXPECT_EQ(parse_gpus_txt(text).size(), 1u);
}

// Issue #22: a snapshot file that is a FIFO (or a folder, or a device) is refused before it
// is read: a FIFO would block `topo --from` forever.
TEST(Topology, SnapshotFilesThatAreNotRegularAreRefused) {
  for (const char* file : {"sys/devices/system/node/node0/cpulist", "gpus.txt", "proc/cpuinfo"}) {
    const MiniSnapshot snap("fifo");
    const fs::path p = snap.dir / file;
    fs::create_directories(p.parent_path());
    fs::remove(p);
    ASSERT_EQ(mkfifo(p.c_str(), 0600), 0) << p;
    try {
      load_snapshot(snap.dir.string());
      ADD_FAILURE() << "accepted a FIFO as " << file;
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file), std::string::npos) << what;
      EXPECT_NE(what.find("is a FIFO; valid: a regular file"), std::string::npos) << what;
    }
  }
  const MiniSnapshot snap("devnode");
  fs::create_symlink("/dev/zero", snap.dir / "gpus.txt");  // endless: refused, not read
  EXPECT_THROW(load_snapshot(snap.dir.string()), UsageError);
}

TEST(Topology, EmptySnapshotFolderIsAUsageError) {
  const fs::path dir = fs::temp_directory_path() / ("mempath_topo_empty_" + std::to_string(getpid()));
  fs::create_directories(dir);
  EXPECT_THROW(load_snapshot(dir.string()), UsageError);
  fs::remove_all(dir);
}

// Fields that are empty on real nodes stay valid: a GH200 HBM node and its MIG placeholder
// nodes have an empty cpulist, the placeholders also no memory.
TEST(Topology, EmptyCpulistsOfHbmAndPlaceholderNodesStayValid) {
  const Topology t = fixture("gh200_single");
  EXPECT_TRUE(t.find_numa(1)->cpus.empty());
  EXPECT_TRUE(t.find_numa(2)->cpus.empty());
  EXPECT_EQ(t.find_numa(2)->mem_total_bytes, 0);
}

TEST(Topology, LiveSnapshotLoadsBackAsTheLiveNode) {
  const Topology live = discover();
  EXPECT_EQ(live.source, "live");
  EXPECT_FALSE(live.host.empty());
  ASSERT_FALSE(live.numa_nodes.empty());

  const fs::path dir = fs::temp_directory_path() / ("mempath_topo_save_" + std::to_string(getpid()));
  fs::remove_all(dir);
  save_snapshot(dir.string());
  EXPECT_TRUE(fs::exists(dir / "gpus.txt"));
  EXPECT_TRUE(fs::exists(dir / "sys/devices/system/node/online"));
  const Topology saved = load_snapshot(dir.string());
  fs::remove_all(dir);

  EXPECT_EQ(saved.source, "snapshot");
  EXPECT_EQ(saved.cpu_model, live.cpu_model);
  EXPECT_EQ(saved.arch, live.arch);
  ASSERT_EQ(saved.numa_nodes.size(), live.numa_nodes.size());
  for (size_t i = 0; i < live.numa_nodes.size(); ++i) {
    const NumaNode& a = live.numa_nodes[i];
    const NumaNode& b = saved.numa_nodes[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.cpus, b.cpus);
    EXPECT_EQ(a.cores, b.cores);
    EXPECT_EQ(a.mem_total_bytes, b.mem_total_bytes);
    EXPECT_EQ(a.distances, b.distances);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.llc_bytes, b.llc_bytes);
  }
  EXPECT_EQ(saved.pu_names(), live.pu_names());
  EXPECT_EQ(saved.mem_names(), live.mem_names());
  EXPECT_EQ(saved.gpus.size(), live.gpus.size());
  for (const auto& p : live.paths) {
    const Path* q = saved.find_path(p.pu, p.mem);
    ASSERT_NE(q, nullptr) << p.pu << "->" << p.mem;
    EXPECT_EQ(q->via, p.via);
    EXPECT_EQ(q->allocs, p.allocs);
  }
}

// MEMPATH_FAKE_LLC_BYTES (tests only, docs/testing.md, #33): the live node's last level is
// that size, a snapshot of it keeps the size, a --from snapshot is never faked, a bad value
// is one UsageError.
TEST(Topology, FakeLastLevelCacheIsTheLiveNodesOnly) {
  struct Unset {
    ~Unset() { unsetenv("MEMPATH_FAKE_LLC_BYTES"); }
  } unset;
  const auto real = cpu_caches("/", 0);
  const Topology quad_before = fixture("gh200_quad");
  setenv("MEMPATH_FAKE_LLC_BYTES", "480MiB", 1);
  const auto faked = cpu_caches("/", 0);
  ASSERT_EQ(faked.size(), real.size());
  if (!real.empty()) {
    EXPECT_EQ(faked.back().bytes, int64_t{480} << 20);
    for (size_t i = 0; i + 1 < real.size(); ++i) EXPECT_EQ(faked[i].bytes, real[i].bytes);
    const Topology live = discover();
    const fs::path dir = fs::temp_directory_path() / ("mempath_fake_llc_" + std::to_string(getpid()));
    fs::remove_all(dir);
    save_snapshot(dir.string());
    const Topology saved = load_snapshot(dir.string());
    fs::remove_all(dir);
    ASSERT_FALSE(live.numa_nodes.empty());
    EXPECT_EQ(live.numa_nodes.front().llc_bytes, int64_t{480} << 20);
    EXPECT_EQ(saved.numa_nodes.front().llc_bytes, int64_t{480} << 20);
  }
  const Topology quad = fixture("gh200_quad");
  EXPECT_EQ(quad.find_pu("cpu0")->cache_bytes, quad_before.find_pu("cpu0")->cache_bytes);
  for (const char* bad : {"lots", "0", "1000", "128GiB"}) {
    setenv("MEMPATH_FAKE_LLC_BYTES", bad, 1);
    EXPECT_THROW(cpu_caches("/", 0), UsageError) << bad;
  }
}
