#include "core/scaleout_plan.hpp"

#include <algorithm>
#include <cstring>

#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/options.hpp"
#include "core/units.hpp"

namespace mempath {

int mpi_windows(uint64_t size, int window) {
  const uint64_t per_window = std::max<uint64_t>(1, size) * static_cast<uint64_t>(window);
  const uint64_t target = 256ULL << 20;
  return static_cast<int>(std::clamp<uint64_t>(target / per_window, 2, 100));
}

int mpi_partner(int rank, const std::vector<int>& node_of, const std::vector<int>& local_of) {
  const int peer_node = node_of[rank] == 0 ? 1 : 0;
  for (size_t r = 0; r < node_of.size(); ++r)
    if (node_of[r] == peer_node && local_of[r] == local_of[rank]) return static_cast<int>(r);
  return -1;
}

std::vector<int> ranks_per_node(const std::vector<int>& node_of) {
  std::vector<int> count;
  for (int node : node_of) {
    if (node >= static_cast<int>(count.size())) count.resize(node + 1, 0);
    ++count[node];
  }
  return count;
}

int mpi_pairs(const std::vector<int>& node_of, const std::vector<int>& local_of) {
  int pairs = 0;
  for (size_t r = 0; r < node_of.size(); ++r)
    pairs += node_of[r] == 0 && mpi_partner(static_cast<int>(r), node_of, local_of) >= 0;
  return pairs;
}

namespace {
uint64_t mix(uint64_t x) {  // splitmix64's finaliser: nearby tags give unrelated words
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t pattern_tag(int sender, uint64_t size, int rep) {
  return mix(mix(static_cast<uint64_t>(sender)) ^ mix(size + 1) ^ static_cast<uint64_t>(rep));
}

// Word j is mix(tag) ^ j: unique per offset within a message; the tail takes the first
// bytes of the next word. Words are copied with memcpy: buffers need not be aligned.
void fill_pattern(void* buf, uint64_t bytes, uint64_t tag) {
  auto* out = static_cast<unsigned char*>(buf);
  const uint64_t base = mix(tag), words = bytes / 8;
  for (uint64_t j = 0; j < words; ++j) {
    const uint64_t w = base ^ j;
    std::memcpy(out + 8 * j, &w, 8);
  }
  const uint64_t tail = base ^ words;
  std::memcpy(out + 8 * words, &tail, bytes % 8);
}

uint64_t pattern_mismatch(const void* buf, uint64_t bytes, uint64_t tag) {
  const auto* in = static_cast<const unsigned char*>(buf);
  const uint64_t base = mix(tag), words = bytes / 8;
  for (uint64_t j = 0; j < words; ++j) {
    uint64_t w = 0;
    std::memcpy(&w, in + 8 * j, 8);
    if (w != (base ^ j)) {
      const uint64_t want = base ^ j;
      for (uint64_t b = 0;; ++b)
        if (in[8 * j + b] != reinterpret_cast<const unsigned char*>(&want)[b]) return 8 * j + b;
    }
  }
  const uint64_t tail = base ^ words;
  for (uint64_t b = 0; b < bytes % 8; ++b)
    if (in[8 * words + b] != reinterpret_cast<const unsigned char*>(&tail)[b]) return 8 * words + b;
  return bytes;
}

float nccl_input(int rank, uint64_t element) {
  return static_cast<float>((element + static_cast<uint64_t>(rank)) % 8 + 1);
}

float nccl_allreduce_expected(int ranks, uint64_t element) {
  // The sum over ranks of nccl_input: whole rounds of 1..8 plus the remainder.
  const uint64_t n = static_cast<uint64_t>(ranks);
  float sum = static_cast<float>((n / 8) * 36);
  for (uint64_t r = 0; r < n % 8; ++r) sum += nccl_input(static_cast<int>(r), element);
  return sum;
}

float nccl_allgather_expected(uint64_t count, uint64_t pos) {
  return nccl_input(static_cast<int>(pos / count), pos % count);
}

int rank_numa(int local_rank, const std::vector<int>& host_numa_ids) {
  if (host_numa_ids.empty()) return -1;
  return host_numa_ids[static_cast<size_t>(local_rank) % host_numa_ids.size()];
}

const std::vector<std::string>& nccl_collectives() {
  static const std::vector<std::string> names = {"allreduce", "allgather"};
  return names;
}

double busbw_factor(const std::string& collective, int ranks) {
  const double n = ranks;
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "allgather") return (n - 1) / n;
  throw UsageError("invalid collective '" + collective + "'; valid: " + join(nccl_collectives()));
}

uint64_t split_rank_bytes(uint64_t node_bytes, int pairs) {
  return pairs > 0 ? node_bytes / static_cast<uint64_t>(pairs) : 0;
}

std::vector<uint64_t> split_node_sizes(uint64_t min_node, uint64_t max_node, int pairs) {
  const uint64_t lo = std::max<uint64_t>(min_node, static_cast<uint64_t>(std::max(pairs, 1)));
  if (lo > max_node) return {};
  return power_of_two_sizes(lo, max_node);
}

const std::vector<std::string>& nccl_placement_names() {
  static const std::vector<std::string> names = {"device", "hbm-system", "host", "peer", "peer-host"};
  return names;
}

void check_nccl_placement_name(const std::string& name) {
  const auto& names = nccl_placement_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw UsageError("invalid --placement '" + name + "'; valid: " + join(names));
}

NcclPlacement nccl_placement(const Topology& topo, const std::string& name, int gpu) {
  check_nccl_placement_name(name);
  NcclPlacement p{name, std::nullopt, "", "", ""};
  const GpuInfo* g = topo.find_gpu(gpu);
  if (!g) {
    p.reason = "GPU " + std::to_string(gpu) + " does not exist on this node";
    return p;
  }
  const std::string pu = "gpu" + std::to_string(gpu);
  const int n = static_cast<int>(topo.gpus.size());
  if (name == "device") {
    p.alloc = Alloc::Device, p.mem = pu;
  } else if (name == "hbm-system") {
    if (g->hbm_numa < 0) {
      p.reason = pu + "'s memory is no NUMA node: system-allocated HBM needs a node whose HBM the kernel "
                 "manages, as GH200's";
      return p;
    }
    p.alloc = Alloc::Numa, p.mem = "numa" + std::to_string(g->hbm_numa);
  } else if (name == "host") {
    p.alloc = g->pageable_access ? Alloc::Numa : Alloc::Pinned, p.mem = "numa" + std::to_string(std::max(g->host_numa, 0));
  } else if (name == "peer") {
    if (n < 2) {
      p.reason = "peer placement needs a second GPU on the node";
      return p;
    }
    p.alloc = Alloc::Device, p.mem = "gpu" + std::to_string(topo.gpus[(gpu + 1) % n].id);
  } else {  // peer-host
    if (!g->pageable_access) {
      p.reason = "peer-host puts the buffers in another superchip's memory, which needs a GPU that reads "
                 "system-allocated memory (GH200's ATS); " + pu + " does not";
      return p;
    }
    for (int k = 1; k < n && p.mem.empty(); ++k) {
      const GpuInfo& other = topo.gpus[(gpu + k) % n];
      if (other.host_numa >= 0 && other.host_numa != g->host_numa) p.mem = "numa" + std::to_string(other.host_numa);
    }
    if (p.mem.empty()) {
      p.reason = "no other superchip: every GPU's host memory is numa" + std::to_string(g->host_numa);
      return p;
    }
    p.alloc = Alloc::Numa;
  }
  p.reason = alloc_problem(topo, pu, p.mem, p.alloc);
  p.via = p.reason.empty() ? route_via(topo, pu, p.mem, p.mem) : "";
  return p;
}

std::vector<NcclCase> nccl_cases(const std::vector<std::string>& collectives, const NcclSizes& sizes, int ranks) {
  const uint64_t n = static_cast<uint64_t>(std::max(ranks, 1));
  std::vector<NcclCase> cases;
  auto add = [&](const std::string& coll, uint64_t rank_bytes) {
    rank_bytes -= rank_bytes % sizeof(float);
    if (rank_bytes == 0) return;
    cases.push_back({coll, coll == "allreduce" ? rank_bytes : rank_bytes * n, rank_bytes});
  };
  for (const auto& coll : collectives) {
    busbw_factor(coll, 2);  // validates the name
    if (sizes.paper) {
      add(coll, coll == "allreduce" ? kPaperAllReduceBytes : kPaperAllGatherRankBytes);
    } else if (sizes.per_rank) {
      add(coll, *sizes.per_rank);
    } else {
      // nccl-tests' sizes, 4 B per rank at least; an all-gather's parts are equal floats.
      for (uint64_t size : power_of_two_sizes(std::max<uint64_t>(sizes.min_size, 4 * n), sizes.max_size))
        add(coll, coll == "allreduce" ? size : size / n);
    }
  }
  return cases;
}

double mpi_bw_case_s(uint64_t rank_bytes, int pairs, bool bidir, int reps, bool same_host) {
  const int windows = mpi_windows(rank_bytes, kMpiWindow);
  const double dirs = bidir ? 2 : 1, p = std::max(pairs, 1);
  // Halves of one host copy through shared memory, a core per pair; nodes share a network.
  const double node_gbps = same_host ? model::kCpuCoreGBps * p : model::kNetworkGBps;
  double s = model::kCaseOverheadS;
  for (int rep = 0; rep <= reps; ++rep) {
    const double messages = (rep == 0 ? 1 : windows) * static_cast<double>(kMpiWindow) * dirs;
    const double transfer = model::seconds(messages * static_cast<double>(rank_bytes) * p, node_gbps);
    // Untimed: the senders' pattern, the receivers' clear and check, a barrier and a broadcast.
    s += std::max(transfer, messages * model::kMpiMessageS) + model::setup_s(2.0 * rank_bytes, Alloc::System) +
         model::verify_s(static_cast<double>(rank_bytes), Alloc::System) + 4 * model::kRoundTripS;
  }
  return s;
}

double nccl_case_s(const NcclCase& c, int ranks, int nodes, const std::string& via, const std::string& gpu_link,
                   int warmup, int iters, bool host_output) {
  // busbw's bytes, at least the buffer once (one rank copies its input to its output),
  // at the slower of the buffers' path and the links between the ranks.
  const double moved = static_cast<double>(c.size) * std::max(busbw_factor(c.collective, ranks), 1.0);
  // A rank sees no topology of the other nodes: the generic rates of Rates{}.
  const model::Rates rates;
  double gbps = model::path_gbps(rates, PuKind::Gpu, via);
  if (ranks > 1) gbps = std::min(gbps, nodes > 1 ? model::kNetworkGBps : model::path_gbps(rates, PuKind::Gpu, gpu_link));
  // The check copies the output back through the rank's pageable stage and compares every
  // element on the host; host output is cleared by the host first.
  const double out = static_cast<double>(c.size);
  const double check = model::seconds(out, model::kNcclCheckGBps) + (host_output ? model::setup_s(out, Alloc::System) : 0.0);
  return model::kCaseOverheadS + (warmup + iters) * (model::seconds(moved, gbps) + model::kCollectiveS) + check;
}

double nccl_setup_s(uint64_t in_bytes, uint64_t out_bytes, Alloc alloc) {
  return model::setup_s(static_cast<double>(in_bytes + out_bytes), alloc) +
         model::seconds(static_cast<double>(in_bytes), model::kNcclCheckGBps);
}

MpiLayout planned_layout(int ranks, int nodes, bool split_one_host) {
  if (ranks < 1 || nodes < 1)
    throw UsageError("a planned job needs at least one rank and one node; valid: --plan-ranks N --plan-nodes M, "
                     "N >= M >= 1");
  if (nodes > ranks)
    throw UsageError("--plan-nodes " + std::to_string(nodes) + " with --plan-ranks " + std::to_string(ranks) +
                     " leaves a node without a rank; valid: at least as many ranks as nodes");
  MpiLayout l;
  l.node_of.resize(ranks), l.local_of.resize(ranks);
  if (split_one_host && nodes == 1 && ranks > 1) {  // discover_job's halves
    l.split_host = true, l.nodes = 2;
    int count[2] = {0, 0};
    for (int r = 0; r < ranks; ++r) {
      const int node = r < (ranks + 1) / 2 ? 0 : 1;
      l.node_of[r] = node, l.local_of[r] = count[node]++;
    }
    return l;
  }
  // Block distribution: the first ranks % nodes nodes hold one rank more.
  const int base = ranks / nodes, extra = ranks % nodes;
  int r = 0;
  for (int node = 0; node < nodes; ++node)
    for (int k = 0; k < base + (node < extra ? 1 : 0); ++k, ++r) l.node_of[r] = node, l.local_of[r] = k;
  l.nodes = nodes;
  return l;
}

ScaleoutExpectation mpi_bw_expectation(const std::vector<Alloc>& allocs, const std::vector<std::string>& modes,
                                       const std::vector<uint64_t>& rank_sizes, int reps, int pairs, bool same_host,
                                       const std::string& device_problem) {
  ScaleoutExpectation e;
  e.cases = allocs.size() * modes.size() * rank_sizes.size();
  const uint64_t max_message = rank_sizes.empty() ? 0 : *std::max_element(rank_sizes.begin(), rank_sizes.end());
  for (const Alloc alloc : allocs) {
    if (alloc_info(alloc).gpu_owned && !device_problem.empty()) {
      e.seconds += model::kCaseOverheadS * static_cast<double>(modes.size() * rank_sizes.size());  // written, skipped
      continue;
    }
    e.seconds += model::setup_s(2.0 * static_cast<double>(max_message), Alloc::System);
    for (const auto& mode : modes)
      for (uint64_t size : rank_sizes) e.seconds += mpi_bw_case_s(size, pairs, mode == "bi", reps, same_host);
    e.planned += modes.size() * rank_sizes.size();
  }
  return e;
}

ScaleoutExpectation nccl_expectation(const Topology& topo, int gpu, const std::vector<std::string>& placements,
                                     const std::vector<NcclCase>& cases, int ranks, int hosts, int warmup, int iters) {
  ScaleoutExpectation e;
  e.cases = placements.size() * cases.size();
  // One input and one output per placement, as large as the largest case needs.
  uint64_t in_bytes = 0, out_bytes = 0;
  for (const auto& c : cases) in_bytes = std::max(in_bytes, c.rank_bytes), out_bytes = std::max(out_bytes, c.size);
  const GpuInfo* own = topo.find_gpu(gpu);
  const std::string gpu_link = own && !own->nvlink_peers.empty() ? "nvlink" : "pcie";
  e.seconds = model::kNcclInitS;
  for (const auto& name : placements) {
    const NcclPlacement p = nccl_placement(topo, name, gpu);
    if (!p.reason.empty()) {
      e.seconds += model::kCaseOverheadS * static_cast<double>(cases.size());  // written, skipped
      continue;
    }
    e.seconds += nccl_setup_s(in_bytes, out_bytes, *p.alloc);
    for (const auto& c : cases)
      e.seconds += nccl_case_s(c, ranks, hosts, p.via, gpu_link, warmup, iters, !alloc_info(*p.alloc).gpu_memory);
    e.planned += cases.size();
  }
  return e;
}

}  // namespace mempath
