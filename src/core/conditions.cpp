#include "core/conditions.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/families.hpp"
#include "core/json_writer.hpp"

namespace mempath {
namespace fs = std::filesystem;

namespace {

const double kNaN = std::nan("");

// A small procfs or sysfs file, whole; "" where it cannot be read.
std::string slurp(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (8u << 20)) break;  // /proc/stat of thousands of CPUs stays far below
  }
  ::close(fd);
  return text;
}

std::string first_line(const fs::path& p) {
  std::string text = slurp(p);
  const auto end = text.find('\n');
  if (end != std::string::npos) text.resize(end);
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

// A number of a file, or `fallback`.
double number(const fs::path& p, double fallback = kNaN) {
  const std::string text = first_line(p);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() ? v : fallback;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// "0,1" or "all" of a memcpy's `gpu`, or a plain index: GPU numbers.
std::vector<int> gpu_numbers(const std::string& text, const Topology& topo) {
  std::vector<int> out;
  if (text == "all") {
    for (const auto& g : topo.gpus) out.push_back(g.id);
    return out;
  }
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.rfind("gpu", 0) == 0) item = item.substr(3);
    if (!item.empty() && std::all_of(item.begin(), item.end(), ::isdigit)) out.push_back(std::stoi(item));
  }
  return out;
}

bool named_part(const std::string& v) {
  if (v == "cpus") return true;
  for (const char* prefix : {"cpu", "gpu", "numa"}) {
    const size_t n = std::strlen(prefix);
    if (v.size() > n && v.compare(0, n, prefix) == 0 &&
        std::all_of(v.begin() + static_cast<long>(n), v.end(), ::isdigit))
      return true;
  }
  return false;
}

void add_once(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

}  // namespace

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

CaseParts case_parts(const std::vector<std::pair<std::string, std::string>>& fields, const Topology& topo) {
  static const char* const processor_keys[] = {"pu", "a", "b"};
  static const char* const memory_keys[] = {"mem", "dst", "b_mem", "src_mem", "dst_mem", "c_mem"};
  CaseParts parts;
  for (const auto& [key, value] : fields) {
    if (key == "via") parts.via = value;
    const bool processor = std::find_if(std::begin(processor_keys), std::end(processor_keys),
                                        [&](const char* k) { return key == k; }) != std::end(processor_keys);
    const bool memory = std::find_if(std::begin(memory_keys), std::end(memory_keys),
                                     [&](const char* k) { return key == k; }) != std::end(memory_keys);
    if ((processor || memory) && named_part(value)) add_once(processor ? parts.processors : parts.memories, value);
    if (key == "gpu")
      for (int g : gpu_numbers(value, topo)) add_once(parts.processors, "gpu" + std::to_string(g));
    if (key == "dst_gpu")
      for (int g : gpu_numbers(value, topo)) add_once(parts.memories, "gpu" + std::to_string(g));
    if (key == "host_numa" && !value.empty() && std::all_of(value.begin(), value.end(), ::isdigit))
      add_once(parts.memories, "numa" + value);
  }
  return parts;
}

std::string kernel_memory_options(const std::string& cmdline) {
  // Options that change how memory is placed, mapped, cleared or translated, and which
  // cores the kernel keeps or idles: what a memory benchmark's figure may depend on.
  static const char* const keys[] = {
      "numa", "numa_balancing", "iommu", "intel_iommu", "amd_iommu", "iommu.passthrough", "iommu.strict",
      "init_on_alloc", "init_on_free", "transparent_hugepage", "hugepages", "hugepagesz", "default_hugepagesz",
      "hugetlb_free_vmemmap", "mem", "memmap", "memhp_default_state", "movablecore", "kernelcore",
      "page_alloc.shuffle", "swiotlb", "isolcpus", "nohz_full", "processor.max_cstate", "intel_idle.max_cstate",
      "idle", "cpufreq.default_governor", "intel_pstate", "amd_pstate"};
  std::string out;
  std::stringstream in(cmdline);
  for (std::string word; in >> word;) {
    if (word == "--") break;  // what follows goes to init
    const std::string key = word.substr(0, word.find('='));
    if (std::find_if(std::begin(keys), std::end(keys), [&](const char* k) { return key == k; }) != std::end(keys))
      out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

// The host side: the CPU NUMA nodes (sockets) of the topology and the files read for them.
struct Conditions::Host {
  fs::path root;
  struct Node {
    int numa;
    std::vector<int> cpus;
    std::vector<int> sampled;  // up to 4 cores whose current frequency is read
  };
  std::vector<Node> nodes;
  std::map<int, size_t> node_of_cpu;
  double tick_s = 0.01;
};

struct Conditions::Gpu {
  int index;
  void* device;  // null: NVML has no such GPU
  std::vector<int> links;
};

namespace {

fs::path cpu_file(const fs::path& root, int cpu, const char* name) {
  return root / "sys/devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "cpufreq" / name;
}

std::string host_json(const Conditions::Host& h) {
  JsonWriter w;
  w.begin_object();
  const int first = h.nodes.empty() || h.nodes.front().cpus.empty() ? 0 : h.nodes.front().cpus.front();
  w.field("cpufreq_driver", first_line(cpu_file(h.root, first, "scaling_driver")));
  w.key("cpu_nodes").begin_array();
  for (const auto& n : h.nodes) {
    const int cpu = n.cpus.empty() ? 0 : n.cpus.front();
    auto mhz = [&](const char* name) { return number(cpu_file(h.root, cpu, name)) / 1000.0; };
    w.begin_object().field("numa", n.numa).field("governor", first_line(cpu_file(h.root, cpu, "scaling_governor")))
        .field("min_mhz", mhz("scaling_min_freq")).field("max_mhz", mhz("scaling_max_freq"))
        .field("cpuinfo_max_mhz", mhz("cpuinfo_max_freq")).end_object();
  }
  w.end_array();
  w.field("thp_defrag", first_line(h.root / "sys/kernel/mm/transparent_hugepage/defrag"));
  const double balancing = number(h.root / "proc/sys/kernel/numa_balancing");
  w.key("numa_balancing");
  if (std::isfinite(balancing)) w.value(static_cast<long long>(balancing));
  else w.null();
  w.key("hugepages").begin_object();
  std::error_code ec;
  std::vector<std::string> sizes;
  for (const auto& entry : fs::directory_iterator(h.root / "sys/kernel/mm/hugepages", ec))
    sizes.push_back(entry.path().filename().string());
  std::sort(sizes.begin(), sizes.end());
  for (const auto& name : sizes) {
    const double count = number(h.root / "sys/kernel/mm/hugepages" / name / "nr_hugepages");
    w.key(name.rfind("hugepages-", 0) == 0 ? name.substr(10) : name);
    if (std::isfinite(count)) w.value(static_cast<long long>(count));
    else w.null();
  }
  w.end_object();
  w.field("kernel_memory_options", kernel_memory_options(first_line(h.root / "proc/cmdline")));
  return w.end_object().str();
}

// `cuda`: whether CUDA sees the GPU (false: one only NVML lists, numbered after CUDA's).
void facts_json(JsonWriter& w, int gpu, const std::string& uuid, const nvml::GpuFacts& f, bool cuda = true) {
  w.begin_object().field("gpu", gpu).field("uuid", uuid).field("name", f.name).field("cuda", cuda ? 1 : 0);
  w.key("max_sm_clock_mhz").id_or_null(f.max_sm_clock_mhz).key("max_mem_clock_mhz").id_or_null(f.max_mem_clock_mhz);
  w.key("default_app_sm_clock_mhz").id_or_null(f.default_app_sm_clock_mhz);
  w.key("default_app_mem_clock_mhz").id_or_null(f.default_app_mem_clock_mhz);
  w.key("app_sm_clock_mhz").id_or_null(f.app_sm_clock_mhz).key("app_mem_clock_mhz").id_or_null(f.app_mem_clock_mhz);
  w.key("pcie_max_gen").id_or_null(f.pcie_max_gen).key("pcie_max_width").id_or_null(f.pcie_max_width);
  w.field("default_power_limit_w", f.default_power_limit_w);
  w.key("persistence").id_or_null(f.persistence).key("compute_mode").id_or_null(f.compute_mode);
  w.key("mig").id_or_null(f.mig).key("ecc").id_or_null(f.ecc);
  w.key("nvlinks").array(f.nvlinks).key("c2c_links").id_or_null(f.c2c_links);
  w.field("missing", f.missing).end_object();
}

}  // namespace

std::string host_root() {
  const char* root = std::getenv("MEMPATH_SYSFS_ROOT");
  return root && *root ? root : "/";
}

std::string boot_id() { return first_line(fs::path(host_root()) / "proc/sys/kernel/random/boot_id"); }

Conditions::Conditions(ResultFile& file, const Topology& topo, const std::vector<std::string>& gpu_uuids)
    : file_(file), topo_(topo), host_(std::make_unique<Host>()), t0_(std::chrono::steady_clock::now()) {
  host_->root = host_root();
  const long tick = sysconf(_SC_CLK_TCK);
  host_->tick_s = tick > 0 ? 1.0 / static_cast<double>(tick) : 0.01;
  for (const NumaNode& n : topo.numa_nodes) {
    if (n.cpus.empty()) continue;
    Host::Node node{n.id, n.cpus, {}};
    std::vector<int> sorted = n.cpus;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < std::min<size_t>(4, sorted.size()); ++k)
      node.sampled.push_back(sorted[k * sorted.size() / std::min<size_t>(4, sorted.size())]);
    for (int cpu : n.cpus) host_->node_of_cpu.emplace(cpu, host_->nodes.size());
    host_->nodes.push_back(std::move(node));
  }
  for (const char* table : {"conditions/windows", "conditions/readings", "conditions/cpus", "conditions/gpus"})
    file_.table(table, columns_of(table));
  file_.set_attribute("host_conditions", host_json(*host_));

  std::string why;
  const auto opening = std::chrono::steady_clock::now();
  nvml_ = nvml::Library::open(&why);
  char opened[48];
  std::snprintf(opened, sizeof opened, "; opened in %.3f s", seconds_since(opening));
  JsonWriter facts;
  facts.begin_array();
  if (nvml_) {
    std::string text = nvml_->describe();
    file_.set_attribute("nvml", text.insert(text.size() - 1, opened));
    for (size_t g = 0; g < topo.gpus.size(); ++g) {
      const std::string uuid = g < gpu_uuids.size() ? gpu_uuids[g] : "";
      std::string missing;
      void* device = uuid.empty() ? nullptr : nvml_->device(uuid, &missing);
      nvml::GpuFacts f;
      if (device) f = nvml_->facts(device);
      else f.missing = uuid.empty() ? "no UUID from CUDA" : missing;
      facts_json(facts, topo.gpus[g].id, uuid, f);
      gpus_.push_back({topo.gpus[g].id, device, f.nvlinks});
    }
    // The GPUs NVML lists and CUDA does not (lost to CUDA, a CPU-only build, a broken
    // driver): their conditions are read all the same, so that a health check names what
    // is wrong with a GPU the node cannot use (slurm/healthcheck.sh).
    int next = 0;
    for (const Gpu& g : gpus_) next = std::max(next, g.index + 1);
    std::string listed;
    for (const std::string& uuid : nvml_->uuids(&listed)) {
      if (!uuid.empty() && std::find(gpu_uuids.begin(), gpu_uuids.end(), uuid) != gpu_uuids.end()) continue;
      std::string missing = uuid.empty() ? listed : "";
      void* device = uuid.empty() ? nullptr : nvml_->device(uuid, &missing);
      nvml::GpuFacts f;
      if (device) f = nvml_->facts(device);
      else f.missing = missing;
      facts_json(facts, next, uuid, f, false);
      gpus_.push_back({next++, device, f.nvlinks});
    }
  } else {
    file_.set_attribute("nvml", "NVML not available: " + why);
  }
  file_.set_attribute("gpu_conditions", facts.end_array().str());
  read();
}

Conditions::~Conditions() = default;

bool Conditions::between_cases() {
  if (seconds_since(last_end_) < kReadEvery * last_cost_s_) return false;
  read();
  return true;
}

void Conditions::read() {
  const auto started = std::chrono::steady_clock::now();
  const int64_t id = readings_;
  // The host: load, the process's own CPU time, each CPU node's time split and frequency.
  std::stringstream load(slurp(host_->root / "proc/loadavg"));
  double load1 = kNaN;
  std::string runnable;
  load >> load1 >> runnable >> runnable >> runnable;
  if (!load) load1 = kNaN;
  int64_t running = -1;
  if (const auto slash = runnable.find('/'); slash != std::string::npos) running = std::atoll(runnable.c_str());
  // The run's own CPU time: this process's and its finished children's (`mempath llm`'s
  // referee: PyTorch's CPU time is the run's, never another user's load).
  auto cpu_s = [](int who) {
    rusage u{};
    getrusage(who, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  };
  const double self_s = cpu_s(RUSAGE_SELF) + cpu_s(RUSAGE_CHILDREN);

  struct Times {
    double busy = 0, idle = 0, steal = 0;
    bool seen = false;
  };
  std::vector<Times> times(host_->nodes.size());
  {
    std::stringstream stat(slurp(host_->root / "proc/stat"));
    for (std::string line; std::getline(stat, line);) {
      if (line.compare(0, 3, "cpu") != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3])))
        continue;
      std::stringstream in(line.substr(3));
      int cpu = -1;
      unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
      in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
      const auto node = host_->node_of_cpu.find(cpu);
      if (node == host_->node_of_cpu.end()) continue;
      Times& t = times[node->second];
      t.busy += static_cast<double>(user + nice + system + irq + softirq) * host_->tick_s;
      t.idle += static_cast<double>(idle + iowait) * host_->tick_s;
      t.steal += static_cast<double>(steal) * host_->tick_s;
      t.seen = true;
    }
  }
  Table& cpus = file_.table("conditions/cpus", columns_of("conditions/cpus"));
  for (size_t k = 0; k < host_->nodes.size(); ++k) {
    const Host::Node& n = host_->nodes[k];
    double sum = 0;
    int known = 0;
    for (int cpu : n.sampled) {
      const double khz = number(cpu_file(host_->root, cpu, "scaling_cur_freq"));
      if (std::isfinite(khz)) sum += khz, ++known;
    }
    const Times& t = times[k];
    cpus.append({{"reading", id}, {"numa", static_cast<int64_t>(n.numa)},
                 {"cpus", static_cast<int64_t>(n.cpus.size())},
                 {"busy_s", t.seen ? t.busy : kNaN}, {"idle_s", t.seen ? t.idle : kNaN},
                 {"steal_s", t.seen ? t.steal : kNaN},
                 {"governor", first_line(cpu_file(host_->root, n.cpus.front(), "scaling_governor"))},
                 {"freq_mhz", known ? sum / known / 1000.0 : kNaN}});
  }
  // Each GPU through NVML.
  Table& gpus = file_.table("conditions/gpus", columns_of("conditions/gpus"));
  for (const Gpu& g : gpus_) {
    nvml::GpuReading r;
    if (g.device) r = nvml_->read(g.device, g.links);
    else r.missing = "every field (NVML has no such GPU)";
    gpus.append({{"reading", id}, {"gpu", static_cast<int64_t>(g.index)},
                 {"pstate", static_cast<int64_t>(r.pstate)},
                 {"sm_clock_mhz", static_cast<int64_t>(r.sm_clock_mhz)},
                 {"mem_clock_mhz", static_cast<int64_t>(r.mem_clock_mhz)},
                 {"event_reasons", r.event_reasons}, {"power_w", r.power_w}, {"power_limit_w", r.power_limit_w},
                 {"temperature_c", static_cast<int64_t>(r.temperature_c)},
                 {"pcie_gen", static_cast<int64_t>(r.pcie_gen)}, {"pcie_width", static_cast<int64_t>(r.pcie_width)},
                 {"power_capped_s", r.power_capped_s}, {"thermal_s", r.thermal_s},
                 {"sync_boost_s", r.sync_boost_s}, {"board_limit_s", r.board_limit_s},
                 {"reliability_s", r.reliability_s}, {"ecc_corrected", r.ecc_corrected},
                 {"ecc_uncorrected", r.ecc_uncorrected},
                 {"retirement_pending", static_cast<int64_t>(r.retirement_pending)},
                 {"remap_pending", static_cast<int64_t>(r.remap_pending)},
                 {"remap_failure", static_cast<int64_t>(r.remap_failure)},
                 {"nvlink_active", static_cast<int64_t>(r.nvlink_active)}, {"nvlink_down", r.nvlink_down},
                 {"nvlink_replay", r.nvlink_replay}, {"nvlink_recovery", r.nvlink_recovery},
                 {"nvlink_crc", r.nvlink_crc}, {"missing", r.missing}});
  }
  last_end_ = std::chrono::steady_clock::now();
  last_cost_s_ = std::chrono::duration<double>(last_end_ - started).count();
  spent_s_ += last_cost_s_;
  file_.table("conditions/readings", columns_of("conditions/readings"))
      .append({{"reading", id}, {"time_s", std::chrono::duration<double>(started - t0_).count()},
               {"read_s", last_cost_s_}, {"load1", load1}, {"running", running}, {"self_cpu_s", self_s}});
  ++readings_;
}

void Conditions::window(int64_t case_id, int64_t start, const CaseParts& parts) {
  file_.table("conditions/windows", columns_of("conditions/windows"))
      .append({{"case_id", case_id}, {"start", start}, {"end", readings_},
               {"processors", join_names(parts.processors)}, {"memories", join_names(parts.memories)},
               {"via", parts.via}});
}

}  // namespace mempath
