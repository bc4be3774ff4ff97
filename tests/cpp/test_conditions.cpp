// The conditions of each case (issue 40, core/conditions.hpp): NVML loaded at run time (the
// fake of tests/fake_nvml answering from tests/fake_nvml/readings), absent or failing NVML recorded
// as such, the host read below MEMPATH_SYSFS_ROOT, a case's parts from its plan fields, and
// readings spaced so that they cost at most 1/kReadEvery of a run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <variant>

#include "apps/driver.hpp"
#include "core/conditions.hpp"
#include "core/families.hpp"
#include "core/nvml.hpp"
#include "core/results.hpp"

namespace mempath {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = std::string(MEMPATH_FIXTURES_DIR) + "/../fake_nvml/readings/";
const std::string kHealthyUuid = "GPU-dfae42cb-c058-76fd-fb21-0aeda91051a8";

// MEMPATH_NVML_LIBRARY and MEMPATH_FAKE_NVML for one test (each ctest test is a process of its own).
struct FakeNvml {
  explicit FakeNvml(const std::string& readings, const std::string& library = MEMPATH_FAKE_NVML_LIBRARY) {
    setenv("MEMPATH_NVML_LIBRARY", library.c_str(), 1);
    setenv("MEMPATH_FAKE_NVML", (kFixtures + readings).c_str(), 1);
  }
  ~FakeNvml() {
    unsetenv("MEMPATH_NVML_LIBRARY");
    unsetenv("MEMPATH_FAKE_NVML");
  }
};

std::unique_ptr<nvml::Library> opened() {
  std::string why;
  auto lib = nvml::Library::open(&why);
  EXPECT_TRUE(lib) << why;
  return lib;
}

TEST(Nvml, AMissingLibraryIsASentenceNotAFailure) {
  setenv("MEMPATH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  std::string why;
  EXPECT_FALSE(nvml::Library::open(&why));
  EXPECT_NE(why.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << why;
  unsetenv("MEMPATH_NVML_LIBRARY");
  EXPECT_EQ(nvml::library_path(), "libnvidia-ml.so.1");  // the real one by default
}

TEST(Nvml, AFailingInitIsNamedWithNvmlsWords) {
  const fs::path readings = fs::temp_directory_path() / ("mempath-nvml-init-" + std::to_string(getpid()) + ".txt");
  std::ofstream(readings) << "init 9\n";
  setenv("MEMPATH_NVML_LIBRARY", MEMPATH_FAKE_NVML_LIBRARY, 1);
  setenv("MEMPATH_FAKE_NVML", readings.c_str(), 1);
  std::string why;
  EXPECT_FALSE(nvml::Library::open(&why));
  EXPECT_EQ(why, "nvmlInit_v2: Driver Not Loaded");
  fs::remove(readings);
}

// The real H200's readings (nvidia-smi-q.xml of 2026-11-28): what it gives lands in its
// field, what it says N/A is unknown and named.
TEST(Nvml, ReadsTheHealthyH200) {
  FakeNvml fake("h200_healthy.txt");
  auto lib = opened();
  EXPECT_EQ(lib->describe(), "NVML 13.580.159.04, driver 580.159.04 (" MEMPATH_FAKE_NVML_LIBRARY ")");
  std::string why;
  EXPECT_FALSE(lib->device("GPU-00000000-0000-0000-0000-000000000000", &why));
  EXPECT_NE(why.find("Not Found"), std::string::npos) << why;
  void* gpu = lib->device(kHealthyUuid, &why);
  ASSERT_TRUE(gpu) << why;
  const nvml::GpuFacts f = lib->facts(gpu);
  EXPECT_EQ(f.name, "NVIDIA H200");
  EXPECT_EQ(f.max_sm_clock_mhz, 1980);
  EXPECT_EQ(f.max_mem_clock_mhz, 3201);
  EXPECT_EQ(f.app_sm_clock_mhz, 1980);
  EXPECT_EQ(f.pcie_max_gen, 5);
  EXPECT_EQ(f.pcie_max_width, 16);
  EXPECT_DOUBLE_EQ(f.default_power_limit_w, 700.0);
  EXPECT_EQ(f.persistence, 1);
  EXPECT_EQ(f.mig, 0);
  EXPECT_EQ(f.ecc, 1);
  EXPECT_TRUE(f.nvlinks.empty());  // a PCIe H200: NVML gives no link's state
  EXPECT_EQ(f.c2c_links, -1);
  EXPECT_NE(f.missing.find("nvlink (Not Supported)"), std::string::npos) << f.missing;
  const nvml::GpuReading r = lib->read(gpu, f.nvlinks);
  EXPECT_EQ(r.pstate, 0);
  EXPECT_EQ(r.sm_clock_mhz, 345);
  EXPECT_EQ(r.event_reasons, 1);  // idle
  EXPECT_DOUBLE_EQ(r.power_w, 80.2);
  EXPECT_DOUBLE_EQ(r.power_limit_w, 700.0);
  EXPECT_EQ(r.pcie_gen, 5);
  EXPECT_EQ(r.pcie_width, 16);
  EXPECT_DOUBLE_EQ(r.power_capped_s, 0.0);
  EXPECT_TRUE(std::isnan(r.board_limit_s));
  EXPECT_EQ(r.ecc_uncorrected, 0);
  EXPECT_EQ(r.retirement_pending, -1);
  EXPECT_EQ(r.remap_pending, 0);
  EXPECT_EQ(r.nvlink_active, -1);
  EXPECT_NE(r.missing.find("retirement_pending (Not Supported)"), std::string::npos) << r.missing;
  EXPECT_NE(r.missing.find("board_limit (Not Supported)"), std::string::npos) << r.missing;
}

TEST(Nvml, CountersGrowBetweenReadings) {
  FakeNvml fake("h200_power_capped.txt");
  auto lib = opened();
  std::string why;
  void* gpu = lib->device(kHealthyUuid, &why);
  ASSERT_TRUE(gpu) << why;
  const auto first = lib->read(gpu, {}), second = lib->read(gpu, {});
  EXPECT_DOUBLE_EQ(first.power_capped_s, 5.0);
  EXPECT_DOUBLE_EQ(second.power_capped_s, 5.9);
  EXPECT_EQ(second.event_reasons, 4);  // SW power cap
}

TEST(Nvml, LinksTheirStateAndErrors) {
  FakeNvml fake("h200_nvlink_errors.txt");
  auto lib = opened();
  std::string why;
  void* a = lib->device("GPU-00000000-0000-0000-0000-0000000000a0", &why);
  void* b = lib->device("GPU-00000000-0000-0000-0000-0000000000a1", &why);
  ASSERT_TRUE(a && b) << why;
  const auto links = lib->facts(a).nvlinks;
  EXPECT_EQ(links.size(), 18u);
  const auto first = lib->read(a, links), second = lib->read(a, links);
  EXPECT_EQ(first.nvlink_active, 18);
  EXPECT_EQ(second.nvlink_crc - first.nvlink_crc, 1204);
  EXPECT_EQ(second.nvlink_replay - first.nvlink_replay, 12);
  EXPECT_EQ(first.nvlink_recovery, 0);
  const auto other = lib->read(b, lib->facts(b).nvlinks);
  EXPECT_EQ(other.nvlink_active, 17);
  EXPECT_EQ(other.nvlink_down, "7");
}

TEST(CaseParts, FromTheKeysOfEveryCommandsLine) {
  const Topology topo = load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/x86_2s_4gpu");
  CaseParts bw = case_parts({{"op", "read"}, {"pu", "gpu0"}, {"mem", "numa1"}, {"dst", ""}, {"via", "pcie"}}, topo);
  EXPECT_EQ(join_names(bw.processors), "gpu0");
  EXPECT_EQ(join_names(bw.memories), "numa1");
  EXPECT_EQ(bw.via, "pcie");
  CaseParts memcpy = case_parts({{"gpu", "all"}, {"host_numa", "0"}, {"cpu_numa", "0"}, {"via", "pcie"}}, topo);
  EXPECT_EQ(join_names(memcpy.processors), "gpu0,gpu1,gpu2,gpu3");
  EXPECT_EQ(join_names(memcpy.memories), "numa0");
  CaseParts d2d = case_parts({{"gpu", "1"}, {"dst_gpu", "2"}, {"via", "nvlink"}}, topo);
  EXPECT_EQ(join_names(d2d.processors), "gpu1");
  EXPECT_EQ(join_names(d2d.memories), "gpu2");
  CaseParts pingpong = case_parts({{"a", "cpu0"}, {"b", "gpu3"}, {"a_cpu", "0"}, {"mem", "numa1"}}, topo);
  EXPECT_EQ(join_names(pingpong.processors), "cpu0,gpu3");
  CaseParts gemm = case_parts({{"gpu", "gpu2"}, {"mem", "gpu2"}, {"b_mem", "numa1"}, {"c_mem", "gpu2"}}, topo);
  EXPECT_EQ(join_names(gemm.processors), "gpu2");
  EXPECT_EQ(join_names(gemm.memories), "gpu2,numa1");
}

TEST(Conditions, KernelMemoryOptionsOnly) {
  EXPECT_EQ(kernel_memory_options("BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet iommu=pt numa_balancing=disable "
                                  "init_on_alloc=1 hugepagesz=1G hugepages=16 swiotlb=noforce -- numa=off"),
            "iommu=pt numa_balancing=disable init_on_alloc=1 hugepagesz=1G hugepages=16 swiotlb=noforce");
}

std::string temp_output(const char* tag) {
  const auto p = fs::temp_directory_path() / ("mempath-conditions-" + std::string(tag) + "-" + std::to_string(getpid()) + ".h5");
  fs::remove(p);
  return p.string();
}

// A host tree below MEMPATH_SYSFS_ROOT: two CPU nodes' time, governor and frequency.
fs::path host_tree(const Topology& topo) {
  const fs::path root = fs::temp_directory_path() / ("mempath-sysfs-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "proc/sys/kernel");
  std::ofstream(root / "proc/loadavg") << "3.50 2.00 1.00 5/400 1234\n";
  std::ofstream(root / "proc/sys/kernel/numa_balancing") << "1\n";
  std::ofstream(root / "proc/cmdline") << "ro quiet iommu=pt\n";
  std::ofstream stat(root / "proc/stat");
  stat << "cpu  100 0 0 0 0 0 0 0 0 0\n";
  for (const NumaNode& n : topo.numa_nodes)
    for (int cpu : n.cpus) {
      stat << "cpu" << cpu << " 100 0 50 800 50 0 0 10 0 0\n";
      const fs::path freq = root / "sys/devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "cpufreq";
      fs::create_directories(freq);
      std::ofstream(freq / "scaling_governor") << "powersave\n";
      std::ofstream(freq / "scaling_driver") << "acpi-cpufreq\n";
      std::ofstream(freq / "scaling_cur_freq") << "1200000\n";
      std::ofstream(freq / "cpuinfo_max_freq") << "3500000\n";
    }
  return root;
}

TEST(Conditions, RecordsTheRunTheGpusAndTheHostBelowItsRoot) {
  FakeNvml fake("h200_pcie_x8.txt");
  const Topology topo = load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/x86_h100");
  const fs::path root = host_tree(topo);
  setenv("MEMPATH_SYSFS_ROOT", root.c_str(), 1);
  const std::string path = temp_output("run");
  {
    ResultFile file(path, {{"schema_version", int64_t{1}}});
    Conditions conditions(file, topo, {kHealthyUuid});
    const int64_t start = conditions.last();
    EXPECT_EQ(start, 0);
    conditions.window(7, start, case_parts({{"pu", "gpu0"}, {"mem", "numa0"}, {"via", "pcie"}}, topo));
    conditions.read();
    file.save();
    const Table& gpus = file.table("conditions/gpus", columns_of("conditions/gpus"));
    ASSERT_EQ(gpus.rows(), 2u);
    const Row g = table_row(gpus, 1);
    EXPECT_EQ(std::get<int64_t>(g.at("reading")), 1);
    EXPECT_EQ(std::get<int64_t>(g.at("gpu")), 0);
    EXPECT_EQ(std::get<int64_t>(g.at("pcie_width")), 8);
    EXPECT_EQ(std::get<int64_t>(g.at("sm_clock_mhz")), 1980);
    const Row w = table_row(file.table("conditions/windows", columns_of("conditions/windows")), 0);
    EXPECT_EQ(std::get<int64_t>(w.at("case_id")), 7);
    EXPECT_EQ(std::get<int64_t>(w.at("start")), 0);
    EXPECT_EQ(std::get<int64_t>(w.at("end")), 1);  // the reading taken after it
    EXPECT_EQ(std::get<std::string>(w.at("processors")), "gpu0");
    EXPECT_EQ(std::get<std::string>(w.at("via")), "pcie");
    const Table& cpus = file.table("conditions/cpus", columns_of("conditions/cpus"));
    ASSERT_EQ(cpus.rows(), 2u * topo.numa_nodes.size());
    const Row c = table_row(cpus, 0);
    EXPECT_EQ(std::get<std::string>(c.at("governor")), "powersave");
    EXPECT_DOUBLE_EQ(std::get<double>(c.at("freq_mhz")), 1200.0);
    const double cpus_n = static_cast<double>(std::get<int64_t>(c.at("cpus")));
    EXPECT_NEAR(std::get<double>(c.at("busy_s")), cpus_n * 150 * 0.01, 1e-9);  // USER_HZ 100
    EXPECT_NEAR(std::get<double>(c.at("steal_s")), cpus_n * 10 * 0.01, 1e-9);
    const Row r = table_row(file.table("conditions/readings", columns_of("conditions/readings")), 0);
    EXPECT_DOUBLE_EQ(std::get<double>(r.at("load1")), 3.5);
    EXPECT_EQ(std::get<int64_t>(r.at("running")), 5);
  }
  unsetenv("MEMPATH_SYSFS_ROOT");
  fs::remove_all(root);
  fs::remove(path);
}

TEST(Conditions, NoNvmlIsOneAttributeAndNoGpuRows) {
  setenv("MEMPATH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  const Topology topo = load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/x86_h100");
  const std::string path = temp_output("none");
  ResultFile file(path, {{"schema_version", int64_t{1}}});
  Conditions conditions(file, topo, {kHealthyUuid});
  conditions.read();
  EXPECT_EQ(file.table("conditions/gpus", columns_of("conditions/gpus")).rows(), 0u);
  EXPECT_EQ(file.table("conditions/readings", columns_of("conditions/readings")).rows(), 2u);
  file.save();
  unsetenv("MEMPATH_NVML_LIBRARY");
  fs::remove(path);
}

// Between two cases a reading is taken only once the last is kReadEvery x its cost old.
TEST(Conditions, ReadingsCostAtMostOnePercentOfTheRun) {
  setenv("MEMPATH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  const Topology topo = discover();
  const std::string path = temp_output("spacing");
  ResultFile file(path, {{"schema_version", int64_t{1}}});
  Conditions conditions(file, topo, {});
  const auto t0 = std::chrono::steady_clock::now();
  int read = 0, boundaries = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(300)) {
    ++boundaries;
    read += conditions.between_cases();  // back-to-back "cases" of no time
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(read, boundaries);
  EXPECT_LE(conditions.reading_seconds(), run_s / kReadEvery * 1.5 + 0.002);
  unsetenv("MEMPATH_NVML_LIBRARY");
  fs::remove(path);
}

}  // namespace
}  // namespace mempath
