#include "core/memcpy_plan.hpp"
#include "core/kinds.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/options.hpp"
#include "core/units.hpp"

namespace mempath {
namespace {

template <class T>
bool contains(const std::vector<T>& items, const typename std::vector<T>::value_type& x) {
  return std::find(items.begin(), items.end(), x) != items.end();
}

std::string ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::vector<std::string> numa_names(const Topology& topo, bool need_cpus) {
  std::vector<std::string> names;
  for (const auto& n : topo.numa_nodes)
    if (need_cpus ? !n.cpus.empty() : n.mem_total_bytes > 0) names.push_back("numa" + std::to_string(n.id));
  return names;
}

// "numa3", "3", "gpu1", "1" -> the index; -1 when it is neither.
int parse_index(const std::string& text, const std::string& prefix) {
  std::string digits = text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
  if (digits.empty() || digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoi(digits);
}

// Values of a list option, each checked against `valid`; `fallback` when empty.
std::vector<std::string> checked(const std::vector<std::string>& given, const std::vector<std::string>& valid,
                                 const std::vector<std::string>& fallback, const std::string& option) {
  if (given.empty()) return fallback;
  for (const auto& v : given)
    if (!contains(valid, v)) throw UsageError("invalid --" + option + " '" + v + "'; valid: " + join(valid));
  std::vector<std::string> out;
  for (const auto& v : given)
    if (!contains(out, v)) out.push_back(v);
  return out;
}

}  // namespace

static int first_host_node(const Topology& topo) {
  for (const auto& n : topo.numa_nodes)
    if (n.kind == MemKind::Host && n.mem_total_bytes > 0) return n.id;
  for (const auto& n : topo.numa_nodes)
    if (!n.cpus.empty()) return n.id;
  return topo.numa_nodes.empty() ? 0 : topo.numa_nodes.front().id;
}

int nearest_host(const Topology& topo, int gpu) {
  const GpuInfo* g = topo.find_gpu(gpu);
  return g && g->host_numa >= 0 ? g->host_numa : first_host_node(topo);
}


std::vector<uint64_t> sweep_sizes(uint64_t max_size) { return power_of_two_sizes(kSweepMinSize, max_size); }
std::vector<uint64_t> latency_sizes() { return power_of_two_sizes(kLatencyMinSize, kLatencyMaxSize); }

int64_t saturation_size(const std::vector<uint64_t>& sizes, const std::vector<double>& gbps, double fraction) {
  double best = -1;
  for (size_t i = 0; i < sizes.size() && i < gbps.size(); ++i)
    if (std::isfinite(gbps[i])) best = std::max(best, gbps[i]);
  if (best < 0) return -1;
  int64_t smallest = -1;
  for (size_t i = 0; i < sizes.size() && i < gbps.size(); ++i)
    if (std::isfinite(gbps[i]) && gbps[i] >= fraction * best &&
        (smallest < 0 || sizes[i] < static_cast<uint64_t>(smallest)))
      smallest = static_cast<int64_t>(sizes[i]);
  return smallest;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * values.size());
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[index];
}

bool buffers_fit(uint64_t size, uint64_t free_host, uint64_t free_device, int host_buffers, int device_buffers) {
  const uint64_t host_room = static_cast<uint64_t>(kHostShare * static_cast<double>(free_host));
  const uint64_t dev_room = free_device > kDeviceReserve ? free_device - kDeviceReserve : 0;
  if (host_buffers > 0 && size * static_cast<uint64_t>(host_buffers) > host_room) return false;
  if (device_buffers > 0 && size * static_cast<uint64_t>(device_buffers) > dev_room) return false;
  return true;
}

uint64_t buffer_capacity(uint64_t capacity, uint64_t free, bool host, bool sweep) {
  const uint64_t free_host = host ? free : 0, free_device = host ? 0 : free;
  const int host_buffers = host ? 1 : 0, device_buffers = host ? 0 : 1;
  if (sweep) return fit_sweep_max(capacity, free_host, free_device, host_buffers, device_buffers);
  return buffers_fit(capacity, free_host, free_device, host_buffers, device_buffers) ? capacity : 0;
}

std::vector<int> host_numa_list(const Topology& topo, const std::vector<std::string>& mems) {
  std::vector<int> nodes;
  for (const auto& text : mems) {
    if (text == "all") {
      for (const auto& n : topo.numa_nodes)
        if (n.kind == MemKind::Host && n.mem_total_bytes > 0) nodes.push_back(n.id);
      continue;
    }
    nodes.push_back(parse_host_numa(topo, text));
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

uint64_t fit_sweep_max(uint64_t max_size, uint64_t free_host, uint64_t free_device, int host_buffers,
                       int device_buffers) {
  uint64_t fit = 0;
  for (uint64_t s : sweep_sizes(max_size)) {
    if (!buffers_fit(s, free_host, free_device, host_buffers, device_buffers)) break;
    fit = s;
  }
  return fit;
}

int memcpy_buffers_per_side(const std::string& direction) { return direction == "bidir" ? 2 : 1; }

int MemcpyCase::host_numa() const {
  for (int n : host_numas)
    if (n != host_numas.front()) return -1;
  return host_numas.empty() ? -1 : host_numas.front();
}

std::string MemcpyCase::gpu_label() const { return all_gpus ? "all" : ints(gpus); }

std::string MemcpyCase::buffer_key() const {
  return mode + "|" + ints(gpus) + "|" + ints(host_numas) + "|" + alloc_name(alloc);
}

std::string MemcpyCase::group_key() const {
  return buffer_key() + "|" + std::to_string(cpu_numa) + "|" + direction + "|" + engine + "|" +
         (sweep ? "sweep" : std::to_string(size));
}

int parse_gpu(const Topology& topo, const std::string& text) {
  const int id = parse_index(text, "gpu");
  if (id < 0 || !topo.find_gpu(id)) throw UsageError(unknown_gpu_text(topo, text, "memcpy", ", all"));
  return id;
}

int parse_host_numa(const Topology& topo, const std::string& text) {
  const int id = parse_index(text, "numa");
  const NumaNode* n = id >= 0 ? topo.find_numa(id) : nullptr;
  if (!n || n->mem_total_bytes <= 0)
    throw UsageError("unknown host memory '" + text + "'" + (n ? " (NUMA node without memory)" : "") +
                     "; valid --mem: " + join(numa_names(topo, false)) + ", all");
  return id;
}

// Copy-engine transfers from or to pageable or managed memory return only when (nearly)
// done, so they cannot wait behind the spin kernel: they are timed on the host. (Managed:
// seen on the H100 box, 2026-11-22, where queued copies held the spin kernel to its timeout.)
bool host_blocking_copy(Alloc alloc, const std::string& engine) {
  return engine == "ce" && (alloc == Alloc::System || alloc == Alloc::Managed);
}

std::string memcpy_skip_reason(const Topology& topo, int gpu, int host_numa, Alloc alloc,
                               const std::string& direction, const std::string& engine, bool all_gpus) {
  const NumaNode* node = topo.find_numa(host_numa);
  const GpuInfo* g = topo.find_gpu(gpu);
  if (!node || !g) return "GPU " + std::to_string(gpu) + " or NUMA node " + std::to_string(host_numa) + " is missing";
  if (alloc_info(alloc).page_locked && node->kind != MemKind::Host)
    return alloc_name(alloc) + std::string(" memory is host memory with CPU page tables; numa") + std::to_string(host_numa) +
           " is not a host node" + (node->gpu >= 0 ? " (it is GPU " + std::to_string(node->gpu) + "'s HBM)" : "");
  if (alloc == Alloc::System && engine == "sm" && !g->pageable_access)
    return "GPU " + std::to_string(gpu) + " cannot access pageable memory (no ATS/HMM): an SM copy needs it, "
           "a copy-engine copy (--engine ce) does not";
  if (host_blocking_copy(alloc, engine) && (direction == "bidir" || all_gpus))
    return "cudaMemcpyAsync from or to " + std::string(alloc_name(alloc)) + " memory blocks the issuing thread, so transfers cannot be "
           "queued to run at once; copy-engine bidir and --all-gpus need pinned or registered memory";
  return "";
}

std::vector<MemcpyCase> plan_memcpy(const Topology& topo, const MemcpyRequest& r) {
  if (topo.gpus.empty()) throw UsageError(no_gpu_text("memcpy"));
  // GPU<->GPU directions have their own planner; they do not mix with host transfers.
  const bool any_d2d = std::any_of(r.directions.begin(), r.directions.end(), is_d2d_direction);
  if (any_d2d) return plan_memcpy_d2d(topo, r);
  if (r.chunk) throw UsageError("--chunk sizes the staged GPU<->GPU copy; add --direction d2d or d2d-bidir");
  if (contains(r.engines, "staged"))
    throw UsageError("--engine staged is a GPU<->GPU copy through host memory; add --direction d2d or d2d-bidir");

  // Options that do not combine.
  if (r.all_gpus && !r.gpus.empty())
    throw UsageError("--all-gpus runs every GPU at once; it does not combine with --gpu");
  if (r.sweep && r.size) throw UsageError("--sweep runs 4KiB .. --max-size; it does not combine with --size");
  if (r.latency) {
    if (r.sweep) throw UsageError("--latency has its own sizes (4B .. 1MiB); it does not combine with --sweep");
    if (r.size) throw UsageError("--latency has its own sizes (4B .. 1MiB); it does not combine with --size");
    if (r.all_gpus) throw UsageError("--latency times one transfer at a time; it does not combine with --all-gpus");
    if (contains(r.directions, "bidir"))
      throw UsageError("--latency times one transfer at a time: valid --direction h2d, d2h (bidir makes no sense)");
    if (contains(r.engines, "sm"))
      throw UsageError("--latency times cudaMemcpyAsync, a copy-engine transfer: --engine sm does not apply");
  }
  if (r.max_size < kSweepMinSize)
    throw UsageError("--max-size " + format_size(r.max_size) + " is below the sweep's first size; valid: at least 4KiB");
  if (r.max_size != kSweepMaxSize && !r.sweep) throw UsageError("--max-size bounds --sweep; add --sweep");

  const auto directions = checked(r.directions, memcpy_directions(),
                                  r.latency ? std::vector<std::string>{"h2d", "d2h"} : memcpy_directions(), "direction");
  const auto engines = checked(r.engines, memcpy_engines(),
                               r.latency ? std::vector<std::string>{"ce"} : memcpy_engines(), "engine");
  std::vector<Alloc> allocs;
  for (const Alloc a : r.allocs.empty() ? std::vector<Alloc>{memcpy_allocs().front()} : parse_allocs(r.allocs, "alloc", memcpy_allocs()))
    if (!contains(allocs, a)) allocs.push_back(a);

  // GPU sets: each GPU alone, or all of them at once.
  std::vector<std::vector<int>> gpu_sets;
  if (r.all_gpus) {
    std::vector<int> all;
    for (const auto& g : topo.gpus) all.push_back(g.id);
    gpu_sets.push_back(all);
  } else if (r.gpus.empty()) {
    gpu_sets.push_back({topo.gpus.front().id});
  } else {
    std::set<int> seen;
    for (const auto& text : r.gpus) {
      if (text == "all") {
        for (const auto& g : topo.gpus)
          if (seen.insert(g.id).second) gpu_sets.push_back({g.id});
        continue;
      }
      const int id = parse_gpu(topo, text);
      if (seen.insert(id).second) gpu_sets.push_back({id});
    }
  }

  // Host nodes: given (one node for every GPU of the set), or each GPU's nearest.
  const std::vector<int> mems = host_numa_list(topo, r.mems);  // empty = nearest

  if (r.cpu_numa >= 0 || r.cpu_numa < -1) {
    const NumaNode* n = topo.find_numa(r.cpu_numa);
    if (!n || n->cpus.empty())
      throw UsageError("--cpu-numa " + std::to_string(r.cpu_numa) + ": " +
                       (n ? "NUMA node without CPUs" : "no such NUMA node") +
                       "; valid: " + join(numa_names(topo, true)));
  }

  // Sizes, and the ones that cannot fit at all on this node.
  std::vector<uint64_t> sizes;
  if (r.latency) sizes = latency_sizes();
  else if (r.sweep) sizes = sweep_sizes(r.max_size);
  else sizes = {r.size ? r.size : kMemcpyDefaultSize};
  if (!r.sweep && !r.latency) {
    const uint64_t size = sizes.front();
    const int per_side = [&] {
      int n = 1;
      for (const auto& d : directions) n = std::max(n, memcpy_buffers_per_side(d));
      return n;
    }();
    for (const auto& set : gpu_sets)
      for (int g : set) {
        const GpuInfo* info = topo.find_gpu(g);
        if (info->memory_bytes > 0 && size * per_side > static_cast<uint64_t>(info->memory_bytes))
          throw UsageError("--size " + format_size(size) + " x " + std::to_string(per_side) + " buffers exceeds GPU " +
                           std::to_string(g) + "'s " + format_size(info->memory_bytes) + " of memory; valid: a smaller --size");
      }
    std::vector<int> nodes = mems;
    if (nodes.empty())
      for (const auto& set : gpu_sets)
        for (int g : set) nodes.push_back(nearest_host(topo, g));
    for (int n : nodes) {
      const NumaNode* node = topo.find_numa(n);
      const uint64_t total = node ? static_cast<uint64_t>(std::max<int64_t>(0, node->mem_total_bytes)) : 0;
      if (total > 0 && size * per_side > total)
        throw UsageError("--size " + format_size(size) + " x " + std::to_string(per_side) + " buffers exceeds numa" +
                         std::to_string(n) + "'s " + format_size(total) + " of memory; valid: a smaller --size");
    }
  }

  std::vector<MemcpyCase> cases;
  const std::vector<int> node_choices = mems.empty() ? std::vector<int>{-1} : mems;
  for (const auto& set : gpu_sets) {
    for (int node : node_choices) {
      std::vector<int> host_numas;
      for (int g : set) host_numas.push_back(node >= 0 ? node : nearest_host(topo, g));
      std::set<std::string> vias;
      std::string via;
      for (size_t i = 0; i < set.size(); ++i) {
        const std::string gpu = "gpu" + std::to_string(set[i]);
        const std::string v = route_via(topo, gpu, "numa" + std::to_string(host_numas[i]), gpu);
        if (vias.insert(v).second) via += (via.empty() ? "" : ",") + v;
      }
      for (const Alloc alloc : allocs)
        for (const auto& direction : directions)
          for (const auto& engine : engines)
            for (uint64_t size : sizes) {
              MemcpyCase c;
              c.mode = r.latency ? "latency" : "bandwidth";
              c.gpus = set;
              c.all_gpus = r.all_gpus;
              c.host_numas = host_numas;
              c.cpu_numa = r.cpu_numa >= 0 ? r.cpu_numa : nearest_host(topo, set.front());
              c.alloc = alloc;
              c.direction = direction;
              c.engine = engine;
              c.via = via;
              c.size = size;
              c.sweep = r.sweep;
              c.timing = r.latency || host_blocking_copy(alloc, engine) ? "host" : "events";
              for (size_t i = 0; i < set.size() && c.skip_reason.empty(); ++i)
                c.skip_reason = memcpy_skip_reason(topo, set[i], host_numas[i], alloc, direction, engine, r.all_gpus);
              cases.push_back(c);
            }
    }
  }
  return cases;
}

}  // namespace mempath
