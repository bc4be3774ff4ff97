// GPU<->GPU cases of `mempath memcpy --direction d2d,d2d-bidir` (docs/cli.md): which GPU
// pairs, which engines, which of them the node cannot run and why. Pure planning: nothing
// here touches a GPU, so it is tested on the reference topologies.
#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/memcpy_plan.hpp"
#include "core/options.hpp"
#include "core/units.hpp"

namespace mempath {
namespace {

bool contains(const std::vector<std::string>& items, const std::string& x) {
  return std::find(items.begin(), items.end(), x) != items.end();
}

bool contains_int(const std::vector<int>& items, int x) {
  return std::find(items.begin(), items.end(), x) != items.end();
}

std::string gpu_str(int g) { return "GPU " + std::to_string(g); }

std::string gpu_name(int g) { return "gpu" + std::to_string(g); }

// The copy engine or SM kernel of the source GPU moves the data (as topology.cpp names
// routes); without peer access there is no route for a peer copy.
std::string peer_via(const Topology& topo, int src, int dst) {
  if (!d2d_peer_reason(topo, src, dst).empty()) return "none";
  return route_via(topo, gpu_name(src), gpu_name(src), gpu_name(dst));
}

// One GPU's leg to or from the staging node.
std::string stage_via(const Topology& topo, int gpu, int node) {
  return route_via(topo, gpu_name(gpu), gpu_name(gpu), "numa" + std::to_string(node));
}

std::vector<std::string> checked(const std::vector<std::string>& given, const std::vector<std::string>& valid,
                                 const std::vector<std::string>& fallback, const std::string& option,
                                 const std::string& hint) {
  if (given.empty()) return fallback;
  for (const auto& v : given)
    if (!contains(valid, v)) throw UsageError("invalid --" + option + " '" + v + "' with GPU<->GPU copies; valid: " +
                                              join(valid) + hint);
  std::vector<std::string> out;
  for (const auto& v : given)
    if (!contains(out, v)) out.push_back(v);
  return out;
}

}  // namespace

std::vector<std::pair<int, int>> d2d_pairs(std::vector<int> gpus, bool bidir) {
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  std::vector<std::pair<int, int>> pairs;
  for (int g : gpus)
    for (int h : gpus)
      if (g != h && (!bidir || g < h)) pairs.emplace_back(g, h);
  return pairs;
}

std::string d2d_peer_reason(const Topology& topo, int gpu, int peer) {
  const GpuInfo* g = topo.find_gpu(gpu);
  if (g && contains_int(g->peers, peer)) return "";
  return "no peer access from " + gpu_str(gpu) + " to " + gpu_str(peer);
}

std::vector<MemcpyCase> plan_memcpy_d2d(const Topology& topo, const MemcpyRequest& r) {
  if (topo.gpus.empty()) throw UsageError(no_gpu_text("memcpy"));
  for (const auto& d : r.directions)
    if (!is_d2d_direction(d))
      throw UsageError("--direction " + d + " is a host transfer; GPU<->GPU directions (d2d, d2d-bidir) do not "
                       "combine with h2d, d2h, bidir: run them separately");
  if (r.all_gpus)
    throw UsageError("--all-gpus does not combine with --direction d2d: GPU pairs come from --gpu (default all)");
  if (r.latency) throw UsageError("--latency times host<->device copies; it does not combine with --direction d2d");
  if (!r.allocs.empty())
    throw UsageError("--alloc does not apply to --direction d2d: peer copies use cudaMalloc buffers, staged "
                     "copies pinned host buffers on --mem (default each source GPU's nearest host node)");
  if (r.sweep && r.size) throw UsageError("--sweep runs 4KiB .. --max-size; it does not combine with --size");
  if (r.max_size < kSweepMinSize)
    throw UsageError("--max-size " + format_size(r.max_size) + " is below the sweep's first size; valid: at least 4KiB");
  if (r.max_size != kSweepMaxSize && !r.sweep) throw UsageError("--max-size bounds --sweep; add --sweep");

  const auto directions = checked(r.directions, memcpy_d2d_directions(), memcpy_d2d_directions(), "direction", "");
  const auto engines = checked(r.engines, memcpy_d2d_engines(), memcpy_d2d_engines(), "engine",
                               " (staged: through pinned host memory)");
  const uint64_t chunk = r.chunk ? r.chunk : kStagedChunk;

  // The GPUs taking part (default: all); pairs are formed among them.
  std::vector<int> gpus;
  if (r.gpus.empty()) {
    for (const auto& g : topo.gpus) gpus.push_back(g.id);
  } else {
    for (const auto& text : r.gpus) {
      if (text == "all") {
        for (const auto& g : topo.gpus) gpus.push_back(g.id);
        continue;
      }
      gpus.push_back(parse_gpu(topo, text));
    }
  }
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  if (topo.gpus.size() >= 2 && gpus.size() < 2)
    throw UsageError("--direction d2d copies between two GPUs; --gpu names only gpu" + std::to_string(gpus.front()) +
                     "; valid: two or more of the node's GPUs, or all");

  // Staging nodes: given (--mem), or each source GPU's nearest host node.
  const std::vector<int> mems = host_numa_list(topo, r.mems);
  if (!mems.empty() && !contains(engines, "staged"))
    throw UsageError("--mem places the staging buffers of --engine staged; peer copies (ce, sm) use no host memory");

  if (r.cpu_numa >= 0 || r.cpu_numa < -1) {
    const NumaNode* n = topo.find_numa(r.cpu_numa);
    if (!n || n->cpus.empty()) {
      std::vector<std::string> valid;
      for (const auto& m : topo.numa_nodes)
        if (!m.cpus.empty()) valid.push_back("numa" + std::to_string(m.id));
      throw UsageError("--cpu-numa " + std::to_string(r.cpu_numa) + ": " +
                       (n ? "NUMA node without CPUs" : "no such NUMA node") + "; valid: " + join(valid));
    }
  }

  std::vector<uint64_t> sizes;
  if (r.sweep) sizes = sweep_sizes(r.max_size);
  else sizes = {r.size ? r.size : kMemcpyDefaultSize};
  if (!r.sweep) {
    // Each GPU holds a source and, for d2d-bidir, also a destination buffer.
    const uint64_t size = sizes.front();
    const int per_gpu = contains(directions, "d2d-bidir") ? 2 : 1;
    for (int g : gpus) {
      const GpuInfo* info = topo.find_gpu(g);
      if (info->memory_bytes > 0 && size * per_gpu > static_cast<uint64_t>(info->memory_bytes))
        throw UsageError("--size " + format_size(size) + " x " + std::to_string(per_gpu) + " buffers exceeds GPU " +
                         std::to_string(g) + "'s " + format_size(info->memory_bytes) + " of memory; valid: a smaller --size");
    }
  }

  std::vector<MemcpyCase> cases;
  auto base = [&](const std::string& direction, const std::string& engine, uint64_t size) {
    MemcpyCase c;
    c.mode = "bandwidth";
    c.direction = direction;
    c.engine = engine;
    c.alloc = engine == "staged" ? Alloc::Pinned : Alloc::Device;
    c.size = size;
    c.sweep = r.sweep;
    c.timing = "events";
    c.chunk = engine == "staged" ? std::min(chunk, size) : 0;
    return c;
  };

  // One GPU: no pair. Every requested case is recorded as skipped with the reason.
  if (topo.gpus.size() < 2) {
    const int g = topo.gpus.front().id;
    for (const auto& direction : directions)
      for (const auto& engine : engines)
        for (uint64_t size : sizes) {
          MemcpyCase c = base(direction, engine, size);
          c.gpus = {g};
          c.cpu_numa = r.cpu_numa >= 0 ? r.cpu_numa : nearest_host(topo, g);
          c.skip_reason = "this node has one GPU (gpu" + std::to_string(g) + "): a GPU<->GPU copy needs two";
          cases.push_back(c);
        }
    return cases;
  }

  const std::vector<int> node_choices = mems.empty() ? std::vector<int>{-1} : mems;
  for (const auto& direction : directions) {
    const bool bidir = direction == "d2d-bidir";
    for (const auto& [g, h] : d2d_pairs(gpus, bidir)) {
      for (const auto& engine : engines) {
        const bool staged = engine == "staged";
        // Peer copies do not depend on the staging node: planned once.
        const std::vector<int> nodes = staged ? node_choices : std::vector<int>{-1};
        for (int node : nodes) {
          // Each direction: (source, destination, staging node).
          struct Leg {
            int src, dst, stage;
          };
          std::vector<Leg> legs = {{g, h, node >= 0 ? node : nearest_host(topo, g)}};
          if (bidir) legs.push_back({h, g, node >= 0 ? node : nearest_host(topo, h)});
          for (uint64_t size : sizes) {
            MemcpyCase c = base(direction, engine, size);
            c.gpus = {g, h};
            c.dst_gpu = h;
            c.cpu_numa = r.cpu_numa >= 0 ? r.cpu_numa : nearest_host(topo, g);
            std::string via;
            for (const auto& leg : legs) {
              std::string v;
              if (staged) {
                c.host_numas.push_back(leg.stage);
                v = stage_via(topo, leg.src, leg.stage) + ">numa" + std::to_string(leg.stage) + ">" +
                    stage_via(topo, leg.dst, leg.stage);
              } else {
                v = peer_via(topo, leg.src, leg.dst);
              }
              if (via.find(v) == std::string::npos) via += (via.empty() ? "" : ",") + v;
              if (!c.skip_reason.empty()) continue;
              if (staged)
                c.skip_reason = memcpy_skip_reason(topo, leg.src, leg.stage, Alloc::Pinned, "d2h", "ce", false);
              else
                c.skip_reason = d2d_peer_reason(topo, leg.src, leg.dst);
            }
            c.via = via;
            cases.push_back(c);
          }
        }
      }
    }
  }
  return cases;
}

}  // namespace mempath
