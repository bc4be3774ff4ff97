// Degraded and split layouts (#33): a quad GH200 whose driver fenced a GPU
// (tests/fixtures/gh200_quad_gpu_fenced) and sockets split by numa=fake
// (tests/fixtures/grace_numa_fake, and x86_2s_4gpu split here).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/allocators.hpp"
#include "core/duration_model.hpp"
#include "core/topology.hpp"

using namespace mempath;
namespace fs = std::filesystem;

namespace {

Topology fixture(const std::string& name) { return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name); }

std::vector<int> range(int first, int last) {
  std::vector<int> v;
  for (int i = first; i <= last; ++i) v.push_back(i);
  return v;
}

std::vector<std::string> pu_names(const Topology& t) { return t.pu_names(); }

// x86_2s_4gpu (two sockets, SMT 2, four H100) with each socket split in two by numa=fake:
// nodes 0, 1 list socket 0's CPUs, nodes 2, 3 socket 1's; 10 within a socket, `across`
// between sockets; the driver names GPU 1's nearest node 1 (a part of socket 0) and GPU 3's
// node 3. A temporary copy, removed at the end of the test.
struct SplitTwoSockets {
  fs::path dir;
  explicit SplitTwoSockets(int within = 10)
      : dir(fs::temp_directory_path() / ("mempath_layouts_" + std::to_string(within) + "_" + std::to_string(getpid()))) {
    fs::remove_all(dir);
    fs::copy(fs::path(MEMPATH_FIXTURES_DIR) / "x86_2s_4gpu", dir, fs::copy_options::recursive);
    const fs::path nodes = dir / "sys/devices/system/node";
    fs::remove_all(nodes);
    fs::create_directories(nodes);
    std::ofstream(nodes / "online") << "0-3\n";
    for (int n = 0; n < 4; ++n) {
      const fs::path d = nodes / ("node" + std::to_string(n));
      fs::create_directories(d);
      std::ofstream(d / "cpulist") << (n < 2 ? "0-31,64-95\n" : "32-63,96-127\n");
      std::ofstream(d / "meminfo") << "Node " << n << " MemTotal:  528238356 kB\nNode " << n << " MemFree:  475414520 kB\n";
      std::string row;
      for (int m = 0; m < 4; ++m) row += std::to_string(m == n ? 10 : m / 2 == n / 2 ? within : 21) + (m < 3 ? " " : "\n");
      std::ofstream(d / "distance") << row;
    }
    std::ifstream in(dir / "gpus.txt");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    // GPUs 0, 1 on socket 0, 2, 3 on socket 1 (host_numa 0, 0, 1, 1 in the fixture): node g.
    std::string out;
    int gpu = -1;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("gpu ", 0) == 0) gpu = std::stoi(line.substr(4));
      if (line.rfind("host_numa=", 0) == 0) line = "host_numa=" + std::to_string(gpu);
      out += line + "\n";
    }
    std::ofstream(dir / "gpus.txt") << out;
  }
  ~SplitTwoSockets() { fs::remove_all(dir); }
};

}  // namespace

TEST(FencedGpu, ThreeGh200sOfAQuadKeepTheQuadsNvlinkPerPair) {
  const Topology quad = fixture("gh200_quad"), fenced = fixture("gh200_quad_gpu_fenced");
  ASSERT_EQ(fenced.gpus.size(), 3u);
  // Was 375 / 2 peers: the fenced GPU's links were spread over the survivors.
  EXPECT_DOUBLE_EQ(model::rates_of(fenced).nvlink_gbps, model::rates_of(quad).nvlink_gbps);
  EXPECT_DOUBLE_EQ(model::rates_of(quad).nvlink_gbps, model::kNvlinkGpuGBps / 3);
}

TEST(FencedGpu, TheFencedGpusGraceStaysAndItsHbmNodeIsEmpty) {
  const Topology t = fixture("gh200_quad_gpu_fenced");
  for (const char* pu : {"cpu0", "cpu1", "cpu2", "cpu3", "gpu0", "gpu1", "gpu2"}) EXPECT_NE(t.find_pu(pu), nullptr) << pu;
  EXPECT_EQ(t.find_pu("gpu3"), nullptr);
  EXPECT_EQ(t.find_mem("numa20"), nullptr);  // never onlined, named by no GPU: an empty node
  EXPECT_EQ(t.find_numa(20)->kind, MemKind::Empty);
  // CUDA renumbers: gpu2 is superchip 3's GPU.
  EXPECT_EQ(t.find_gpu(2)->host_numa, 3);
  EXPECT_EQ(t.find_gpu(2)->hbm_numa, 28);
  EXPECT_EQ(t.find_path("gpu2", "gpu0")->via, "nvlink");
  // The Grace without its GPU is reached over the GPU's own C2C, then the Grace interconnect.
  EXPECT_EQ(t.find_path("gpu0", "numa2")->via, "c2c+interconnect");
  EXPECT_EQ(t.find_path("gpu2", "numa0")->via, "nvlink+c2c");
}

// numa=fake=4 on one Grace: four nodes that each list the socket's 72 CPUs, 10 apart. Was
// four sockets (cpu0..cpu3 and cpus: 288 cores, 4 x 114 MiB LLC) joined by the socket
// interconnect.
TEST(NumaFake, AGraceSplitInFourIsOneSocketWithItsMemoryLocal) {
  const Topology t = fixture("grace_numa_fake");
  EXPECT_EQ(pu_names(t), (std::vector<std::string>{"cpu0"}));
  const Processor& cpu = *t.find_pu("cpu0");
  EXPECT_EQ(cpu.cores, 72);
  EXPECT_EQ(cpu.cpus, range(0, 71));
  EXPECT_EQ(cpu.cache_bytes, 116736LL * 1024);  // one Grace L3
  for (int n = 0; n < 4; ++n) {
    const std::string mem = "numa" + std::to_string(n);
    ASSERT_NE(t.find_mem(mem), nullptr) << mem;
    EXPECT_EQ(t.find_mem(mem)->kind, MemKind::Host);
    EXPECT_EQ(t.find_path("cpu0", mem)->via, "local") << mem;
    EXPECT_EQ(t.find_numa(n)->socket, 0);
    EXPECT_EQ(t.find_numa(n)->cpus.empty(), n > 0);
    EXPECT_EQ(setup_cpus(t, n), cpu.cpus) << "first touch of " << mem << " by the socket's CPUs";
  }
  const std::string json = t.to_json();
  EXPECT_NE(json.find("\"socket\":0"), std::string::npos);
  EXPECT_NE(t.to_text().find("numa0 (one socket: numa0,numa1,numa2,numa3), 72 cores"), std::string::npos) << t.to_text();
}

TEST(NumaFake, TwoSplitSocketsStayTwoSocketsWithTheInterconnectBetween) {
  const SplitTwoSockets snap;
  const Topology t = load_snapshot(snap.dir.string());
  EXPECT_EQ(pu_names(t), (std::vector<std::string>{"cpu0", "cpu2", "cpus", "gpu0", "gpu1", "gpu2", "gpu3"}));
  EXPECT_EQ(t.find_pu("cpu0")->cores, 32);
  EXPECT_EQ(t.find_pu("cpu0")->cpus.size(), 64u);
  EXPECT_EQ(t.find_pu("cpus")->cores, 64);
  EXPECT_EQ(t.find_path("cpu0", "numa1")->via, "local");
  EXPECT_EQ(t.find_path("cpu0", "numa3")->via, "interconnect");
  EXPECT_EQ(t.find_path("cpu2", "numa3")->via, "local");
  // A GPU's nearest node in a split socket is the socket's (the driver named node 1, 3).
  EXPECT_EQ(t.find_gpu(1)->host_numa, 0);
  EXPECT_EQ(t.find_gpu(3)->host_numa, 2);
  EXPECT_EQ(t.find_path("gpu1", "numa1")->via, "pcie");
  EXPECT_EQ(t.find_path("gpu1", "numa3")->via, "pcie+interconnect");
  EXPECT_EQ(t.find_path("cpu0", "gpu1")->via, "pcie");
  EXPECT_EQ(t.find_path("cpu2", "gpu1")->via, "interconnect+pcie");
}

// Shared CPUs alone do not make one socket: a distance above the local one keeps the nodes
// apart, as sysfs shows them.
TEST(NumaFake, NodesThatShareCpusFartherThanLocalStayApart) {
  const SplitTwoSockets snap(12);
  const Topology t = load_snapshot(snap.dir.string());
  EXPECT_NE(t.find_pu("cpu1"), nullptr);
  EXPECT_EQ(t.find_path("cpu0", "numa1")->via, "interconnect");
  EXPECT_EQ(t.find_numa(1)->socket, 1);
}

// The other fixtures have one node per socket: each its own.
TEST(NumaFake, EveryOtherFixtureKeepsOneSocketPerCpuNode) {
  for (const char* name : {"x86_h100", "x86_2s_4gpu", "gh200_single", "gh200_dual", "gh200_quad", "gh200_quad_gpu_fenced"}) {
    const Topology t = fixture(name);
    for (const auto& n : t.numa_nodes) EXPECT_EQ(n.socket, n.cpus.empty() ? -1 : n.id) << name << " node " << n.id;
  }
}
