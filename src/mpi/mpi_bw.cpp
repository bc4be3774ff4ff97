// `mempath-mpi bw`: node-to-node bandwidth with windows of MPI_Isend/MPI_Irecv
// (docs/cli.md). Each rank on node 0 talks to the rank with the same local index on node
// 1; all ranks of a node start at one time their node's first rank chose, and a
// repetition ends when the node's last rank is done (the paper's method). With --split
// the sizes are the node's, divided among its ranks (the paper's Fig. 14). Every
// repetition's messages carry a pattern of their own that the receiver checks, untimed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/families.hpp"
#include "core/kinds.hpp"
#include "core/numa_policy.hpp"
#include "core/options.hpp"
#include "core/results.hpp"
#include "core/scaleout_plan.hpp"
#include "core/stats.hpp"
#include "core/summary_line.hpp"
#include "core/units.hpp"
#include "mpi/mpi_commands.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/mpi_plan.hpp"
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace mempath::mpi {
namespace {

// Whether this MPI library moves device buffers itself: the compile-time promise and
// the library's own run-time answer (Open MPI's MPIX_Query_cuda_support).
// A plan (no MPI started) has the compile-time promise only.
std::string cuda_aware_problem(bool planning = false) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (planning || MPIX_Query_cuda_support() == 1) return "";
  return "this MPI library was built CUDA-aware but says CUDA support is off at run time";
#else
  return "this MPI library is not CUDA-aware (no MPIX_CUDA_AWARE_SUPPORT): device buffers need one";
#endif
}

constexpr uint64_t kMaxMessage = (1ULL << 31) - 1;  // an MPI count of MPI_CHAR is an int

// The allocators a rank's buffers may come from, the default first. Registered memory is
// pinned memory to MPI, so it adds no case of its own.
const std::vector<Alloc>& bw_allocs() {
  static const std::vector<Alloc> allocs = {Alloc::Numa, Alloc::System, Alloc::Pinned, Alloc::Managed, Alloc::Device};
  return allocs;
}

// --alloc's help: the names as kinds.def spells them, the default first.
std::string alloc_help() {
  const std::vector<Alloc>& allocs = bw_allocs();
  return "buffer allocators: " + std::string(alloc_name(allocs.front())) + " (default), " +
         alloc_list({allocs.begin() + 1, allocs.end()});
}

struct Plan {
  std::vector<std::string> modes;
  std::vector<Alloc> allocs;
  uint64_t min_size = 1, max_size = 1ULL << 30;
  int reps = 5;
  std::optional<long long> ppn;
  bool split = false;  // sizes are each node's total, split among its ranks (the paper's Fig. 14)
};

Plan parse_plan(const Options& opts) {
  Plan p;
  p.modes = opts.has("mode") ? opts.list("mode") : split_list("uni,bi");
  for (const auto& m : p.modes)
    if (m != "uni" && m != "bi") throw UsageError("invalid --mode '" + m + "'; valid: uni, bi");
  p.allocs = opts.has("alloc") ? parse_allocs(opts.list("alloc"), "alloc", bw_allocs())
                                : std::vector<Alloc>{bw_allocs().front()};
  if (opts.has("min-size")) p.min_size = parse_size(*opts.get("min-size"));
  if (opts.has("max-size")) p.max_size = parse_size(*opts.get("max-size"));
  if (p.max_size < p.min_size) throw UsageError("--max-size is below --min-size");
  p.split = opts.flag("split");
  if (!p.split && p.max_size > kMaxMessage)
    throw UsageError("--max-size " + format_size(p.max_size) + " exceeds one MPI message (2 GiB - 1)");
  p.reps = static_cast<int>(opts.integer("reps", 5, 1, kMaxReps));
  if (opts.has("ppn")) p.ppn = opts.integer("ppn", 1, 1);
  return p;
}

// Bad input in the job's shape; every rank has the layout, so all find the same.
void check_layout(const Job& job, const Plan& plan) {
  if (job.nodes != 2)
    throw UsageError("bw runs between 2 nodes; this job has ranks on " + std::to_string(job.nodes) +
                     " (valid: ranks on 2 nodes, or on one host where they are split in two halves)");
  const auto per_node = ranks_per_node(job.node_of);
  const auto [lo, hi] = std::minmax_element(per_node.begin(), per_node.end());
  // Rank l of node 0 exchanges with rank l of node 1: a rank without a partner would sit out
  // every case while the file and summary lines name the job's full rank count.
  if (*lo != *hi)
    throw UsageError("bw pairs rank l of one node with rank l of the other; this job has " +
                     std::to_string(per_node[0]) + " and " + std::to_string(per_node[1]) +
                     " ranks on its two nodes" +
                     (job.split_host ? " (" + std::to_string(job.size) + " ranks on one host, split in halves)" : "") +
                     ", so " + std::to_string(*hi - *lo) + " would idle; valid: as many ranks on each node" +
                     (job.split_host ? " (an even number on one host)" : " (srun --ntasks-per-node)"));
  if (plan.ppn && (*lo != *plan.ppn || *hi != *lo))
    throw UsageError("--ppn " + std::to_string(*plan.ppn) + " but the job has " + std::to_string(*lo) + ".." +
                     std::to_string(*hi) + " ranks per node; valid: launch that many per node (srun --ntasks-per-node)");
  const int pairs = mpi_pairs(job.node_of, job.local_of);
  const std::string ranks = std::to_string(pairs) + (pairs == 1 ? " rank" : " ranks");
  if (plan.split && split_rank_bytes(plan.max_size, pairs) > kMaxMessage)
    throw UsageError("--max-size " + format_size(plan.max_size) + " split among the node's " + ranks +
                     " exceeds one MPI message (2 GiB - 1) each; valid: at most " +
                     std::to_string(kMaxMessage * static_cast<uint64_t>(pairs)) + " B");
  if (plan.split && split_node_sizes(plan.min_size, plan.max_size, pairs).empty())
    throw UsageError("--split: --max-size " + format_size(plan.max_size) + " leaves less than 1 B for each of the node's " +
                     ranks + "; valid: at least " + std::to_string(pairs) + " B");
}

// Each rank's message sizes: the sweep itself, or the node sizes split among the pairs.
std::vector<uint64_t> rank_sizes_of(const Plan& plan, int pairs) {
  std::vector<uint64_t> rank_sizes;
  for (uint64_t size : plan.split ? split_node_sizes(plan.min_size, plan.max_size, pairs)
                                  : power_of_two_sizes(plan.min_size, plan.max_size))
    rank_sizes.push_back(plan.split ? split_rank_bytes(size, pairs) : size);
  return rank_sizes;
}

struct RankPlace {
  int numa = -1;
  std::vector<int> cpus;
};

// Binds this rank to its host NUMA node and pins it: a launcher that bound the rank inside
// its node (srun --cpu-bind, taskset) decides; else ranks of a split host, or more ranks
// than nodes, sharing a node's cores get one each.
RankPlace place_rank(const Job& job, const Topology& topo) {
  std::vector<int> host_nodes;
  for (const auto& n : topo.numa_nodes)
    if (n.kind == MemKind::Host && !n.cpus.empty()) host_nodes.push_back(n.id);
  RankPlace place;
  place.numa = rank_numa(job.local, host_nodes);
  const NumaNode* node = topo.find_numa(place.numa);
  const std::vector<int> node_cpus = node ? node->cpus : std::vector<int>{};
  place.cpus = allowed_of(node_cpus);
  if (place.cpus.empty()) place.cpus = node_cpus;
  if (!place.cpus.empty() && place.cpus.size() == node_cpus.size()) {
    const int nodes = static_cast<int>(host_nodes.size());
    const int sharing = std::max(1, (job.local_size + nodes - 1) / nodes);
    const int index = job.split_host ? job.rank : job.local / nodes;
    if (sharing > 1 || job.split_host) place.cpus = {place.cpus[static_cast<size_t>(index) % place.cpus.size()]};
  }
  if (!place.cpus.empty()) pin_this_thread(place.cpus);
  bind_this_thread_memory(place.numa);
  return place;
}

// This rank's side of the pairs' exchange.
struct Exchange {
  int peer = -1;  // -1: no partner on the other node
  bool bidir = false, sender = false;
  char* send = nullptr;
  char* recv = nullptr;
  bool checked = false;  // buffers the host can read and write (not device memory)
  bool sends() const { return peer >= 0 && (bidir || sender); }
  bool receives() const { return peer >= 0 && (bidir || !sender); }
};

// Test-only (tests/python/test_mpi.py, docs/cli.md): MEMPATH_TEST_CORRUPT_RECV=1 flips a
// received byte, to prove that the data check catches what the network could do.
bool corrupt_for_test() {
  static const bool on = [] {
    const char* v = std::getenv("MEMPATH_TEST_CORRUPT_RECV");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// One repetition of `windows` windows between this rank and its peer. Returns this rank's
// end time; `start` is the common start of its node.
double exchange(const Exchange& x, uint64_t size, int windows, double start) {
  std::vector<MPI_Request> req(2 * kMpiWindow);
  const int count = static_cast<int>(size);
  while (MPI_Wtime() < start) {
  }
  for (int w = 0; w < windows; ++w) {
    int n = 0;
    if (x.receives())
      for (int k = 0; k < kMpiWindow; ++k) MPI_Irecv(x.recv, count, MPI_CHAR, x.peer, 1, MPI_COMM_WORLD, &req[n++]);
    if (x.sends())
      for (int k = 0; k < kMpiWindow; ++k) MPI_Isend(x.send, count, MPI_CHAR, x.peer, 1, MPI_COMM_WORLD, &req[n++]);
    MPI_Waitall(n, req.data(), MPI_STATUSES_IGNORE);
  }
  if (!x.bidir) {  // the sender's time ends when the receiver confirms it has everything
    char ack = 0;
    if (x.sender) MPI_Recv(&ack, 1, MPI_CHAR, x.peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(&ack, 1, MPI_CHAR, x.peer, 2, MPI_COMM_WORLD);
  }
  return MPI_Wtime();
}

// What this rank received in repetition `rep` against what its peer sent: "" or the
// first difference. Every message of the repetition lands in the one receive buffer
// that was cleared before it, so the buffer must hold the repetition's pattern.
std::string check_received(const Exchange& x, uint64_t size, int rep) {
  if (!x.checked || !x.receives()) return "";
  if (corrupt_for_test()) x.recv[size / 2] ^= 0x01;
  const uint64_t at = pattern_mismatch(x.recv, size, pattern_tag(x.peer, size, rep));
  if (at == size) return "";
  return "received data differ from what rank " + std::to_string(x.peer) + " sent: byte " + std::to_string(at) +
         " of a " + format_size(size) + " message, " +
         (rep == 0 ? std::string("warm-up") : "repetition " + std::to_string(rep));
}

struct Rep {
  double seconds = 0;   // the node's last end - the node's common start
  std::string failure;  // this rank's data check
};

Rep timed_rep(const Job& job, const Exchange& x, uint64_t size, int windows, int rep) {
  if (x.checked && x.sends()) fill_pattern(x.send, size, pattern_tag(job.rank, size, rep));
  if (x.checked && x.receives()) std::memset(x.recv, 0, size);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = 0;
  if (job.local == 0) start = MPI_Wtime() + 1e-3;  // the node's first rank chooses
  MPI_Bcast(&start, 1, MPI_DOUBLE, 0, job.node_comm);
  double end = start;
  if (x.peer >= 0) end = exchange(x, size, windows, start);
  double node_end = 0;
  MPI_Allreduce(&end, &node_end, 1, MPI_DOUBLE, MPI_MAX, job.node_comm);
  Rep r;
  r.seconds = node_end - start;
  // Node 0's time, as OSU reports rank 0's: one direction, its senders wait for the last
  // acknowledgement; both directions, its ranks wait for everything they receive.
  MPI_Bcast(&r.seconds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  r.failure = check_received(x, size, rep);
  return r;
}

struct CaseResult {
  std::vector<double> seconds;
  std::string failure;  // this rank's first data-check failure
};

// Warm-up (connections, registration; checked too), then `reps` timed repetitions.
CaseResult run_case(const Job& job, const Exchange& x, uint64_t size, int reps) {
  const int windows = mpi_windows(size, kMpiWindow);
  CaseResult c;
  c.failure = timed_rep(job, x, size, 1, 0).failure;
  for (int k = 1; k <= reps; ++k) {
    Rep r = timed_rep(job, x, size, windows, k);
    c.seconds.push_back(r.seconds);
    if (c.failure.empty()) c.failure = r.failure;
  }
  return c;
}

void record_ranks(ResultFile& file, const Job& job, const std::vector<std::string>& rank_rows) {
  auto& ranks = file.table("mpi_bw/ranks", columns_of("mpi_bw/ranks"));
  for (int r = 0; r < job.size; ++r) {
    const auto bar = rank_rows[r].find('|');
    ranks.append({{"rank", static_cast<int64_t>(r)}, {"host", job.hosts[r]}, {"node", static_cast<int64_t>(job.node_of[r])},
                  {"local", static_cast<int64_t>(job.local_of[r])},
                  {"numa", static_cast<int64_t>(std::stoi(rank_rows[r].substr(0, bar)))},
                  {"cpus", rank_rows[r].substr(bar + 1)}});
  }
}

struct Case {
  Alloc alloc;
  std::string mode;
  uint64_t size;  // each rank's message
};

class MpiBw final : public Benchmark {
 public:
  MpiBw()
      : Benchmark({"bw", "node-to-node bandwidth: windows of MPI_Isend/MPI_Irecv, uni- and bidirectional",
                   "Node-to-node MPI bandwidth, windows of Isend/Irecv between rank pairs (docs/cli.md)."},
                  "mpi_bw") {}

  std::vector<OptionSpec> options() const override {
    return {{"mode", "LIST", "uni, bi or both (default uni,bi)"},
            {"alloc", "LIST", alloc_help()},
            {"min-size", "SIZE", "smallest message (default 1B)"},
            {"max-size", "SIZE", "largest message (default 1GiB)"},
            {"reps", "N", "timed repetitions per size (default 5)"},
            {"ppn", "N", "expected ranks per node: the run fails when the job has another count"},
            {"split", "",
             "sizes are each node's total, split equally among its ranks (the paper's Fig. 14); "
             "without it each rank sends the size"}};
  }

  // The job's layout, checked alike on every rank (or, with --from, the layout the launcher
  // would make, checked as the run checks it); then this rank's place and the cases.
  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    plan_ = parse_plan(opts);
    topo_ = &topo;
    if (plan_only) {
      // Without --ppn a plan has one rank per node, as MempathMpiBandwidth's first parameter.
      const PlannedJob planned = planned_job(opts, topo, 2, [&](const Topology&) { return plan_.ppn ? int(*plan_.ppn) : 1; });
      const MpiLayout layout = planned_layout(planned.ranks, planned.nodes, true);
      job_.size = planned.ranks, job_.nodes = layout.nodes, job_.split_host = layout.split_host;
      job_.node_of = layout.node_of, job_.local_of = layout.local_of;
      check_layout(job_, plan_);
    } else {
      refuse_plan_shape(opts);
      job_ = running_job();
      phase("checking the job", [&] { check_layout(job_, plan_); });
      phase("placing the rank", [&] { place_ = place_rank(job_, topo); });
    }
    // Device buffers need a CUDA-aware MPI: known skips (a plan has the build's promise only).
    device_problem_ = cuda_aware_problem(plan_only);
    pairs_ = mpi_pairs(job_.node_of, job_.local_of);
    const auto per_node = ranks_per_node(job_.node_of);
    ppn_ = *std::max_element(per_node.begin(), per_node.end());
    rank_sizes_ = rank_sizes_of(plan_, pairs_);
    cases_.clear();
    for (const Alloc alloc : plan_.allocs)
      for (const auto& mode : plan_.modes)
        for (uint64_t size : rank_sizes_) cases_.push_back({alloc, mode, size});
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const Case& c = cases_[i];
    return {{"mode", c.mode}, {"alloc", alloc_name(c.alloc)}, {"ppn", std::to_string(ppn_)}, {"pairs", std::to_string(pairs_)},
            {"size", std::to_string(c.size)}, {"split", plan_.split ? "1" : "0"},
            {"node_size", std::to_string(c.size * static_cast<uint64_t>(pairs_))}};
  }
  std::string skip_reason(size_t i) const override {
    return alloc_info(cases_[i].alloc).gpu_owned ? device_problem_ : "";
  }
  double expected_seconds(size_t i) const override {
    return mpi_bw_case_s(cases_[i].size, pairs_, cases_[i].mode == "bi", plan_.reps, job_.split_host);
  }
  // Per allocator its two buffers of the largest message, then every case.
  Expectation expectation(const Topology&) const override {
    const ScaleoutExpectation e = mpi_bw_expectation(plan_.allocs, plan_.modes, rank_sizes_, plan_.reps, pairs_,
                                                     job_.split_host, device_problem_);
    return {e.planned, e.seconds};
  }

  void prepare() override {
    std::string cpu_list;
    for (int c : place_.cpus) cpu_list += (cpu_list.empty() ? "" : ",") + std::to_string(c);
    Watchdog::Scope armed(phase_watchdog(), "gathering the ranks");
    rank_rows_ = gather_strings(std::to_string(place_.numa) + "|" + cpu_list, job_);
  }
  std::map<std::string, Attribute> attributes() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(version, &len);
    return {{"mpi_ranks", static_cast<int64_t>(job_.size)}, {"mpi_nodes", static_cast<int64_t>(job_.nodes)},
            {"mpi_machines", static_cast<int64_t>(job_.machines)},
            {"mpi_library", std::string(version, strnlen(version, len))}};
  }
  void begin(ResultFile& file) override { record_ranks(file, job_, rank_rows_); }

  // One send and one receive buffer per rank for every size of an allocator: messages of a
  // window share them, as in OSU's osu_bw.
  void setup(size_t i) override {
    const Alloc alloc = cases_[i].alloc;
    if (alloc != buffers_of_) {
      buffers_of_ = alloc;
      send_.reset(), recv_.reset();
      unready_.clear();
      const std::string mem = alloc_info(alloc).gpu_owned ? "gpu" + std::to_string(job_.local)
                                                          : "numa" + std::to_string(place_.numa);
      try {
        send_ = allocate(*topo_, alloc, mem, rank_sizes_.back(), 0x5a);
        recv_ = allocate(*topo_, alloc, mem, rank_sizes_.back(), 0);
      } catch (const std::exception& e) {
        unready_ = e.what();
      }
    }
    if (!unready_.empty()) throw Unsupported(unready_);
  }
  Outcome run(size_t i) override {
    const Case& c = cases_[i];
    // Device memory is not checked: the host cannot fill or read it here.
    const Exchange x{mpi_partner(job_.rank, job_.node_of, job_.local_of), c.mode == "bi", job_.node == 0,
                     static_cast<char*>(send_->data()), static_cast<char*>(recv_->data()),
                     !alloc_info(c.alloc).gpu_owned};
    CaseResult r = run_case(job_, x, c.size, plan_.reps);
    return {r.failure.empty() ? "ok" : "failed", r.failure, std::move(r.seconds)};
  }

  CaseRows rows(size_t i, const Outcome& o, int64_t id) override {
    const Case& c = cases_[i];
    const auto* timed = std::any_cast<std::vector<double>>(&o.data);
    const std::vector<double> seconds = timed ? *timed : std::vector<double>{};
    // Bytes of one repetition: node 0's senders (uni), or both directions (bi).
    const int windows = mpi_windows(c.size, kMpiWindow);
    const uint64_t bytes = c.size * kMpiWindow * windows * pairs_ * (c.mode == "bi" ? 2 : 1);
    const auto node_bytes = static_cast<int64_t>(c.size * pairs_);  // one message of every pair: the node's size
    const bool gpu_owned = alloc_info(c.alloc).gpu_owned;
    CaseRows out;
    std::vector<double> gbps;
    for (double t : seconds) gbps.push_back(bytes / t / 1e9);
    for (size_t k = 0; k < seconds.size(); ++k)
      out.samples.push_back({{"case_id", id}, {"rep", static_cast<int64_t>(k)}, {"mode", c.mode}, {"alloc", alloc_name(c.alloc)},
                             {"ppn", static_cast<int64_t>(ppn_)}, {"size_bytes", static_cast<int64_t>(c.size)},
                             {"bytes", static_cast<int64_t>(bytes)}, {"time_s", seconds[k]},
                             {"bandwidth_GBps", gbps[k]}, {"node_bytes", node_bytes}});
    const Summary sum = summarize(gbps);
    out.cases.push_back({{"case_id", id}, {"mode", c.mode}, {"alloc", alloc_name(c.alloc)},
                         {"mem", std::string(gpu_owned ? "gpu" : "numa")}, {"ppn", static_cast<int64_t>(ppn_)},
                         {"pairs", static_cast<int64_t>(pairs_)}, {"size_bytes", static_cast<int64_t>(c.size)},
                         {"window", static_cast<int64_t>(kMpiWindow)}, {"windows", static_cast<int64_t>(windows)},
                         {"status", o.status}, {"reason", o.reason}, {"reps", static_cast<int64_t>(seconds.size())},
                         {"median_GBps", sum.median}, {"min_GBps", sum.min}, {"max_GBps", sum.max},
                         {"same_host", static_cast<int64_t>(job_.split_host)},
                         {"verified", static_cast<int64_t>(!gpu_owned && o.status == "ok")},
                         {"split", static_cast<int64_t>(plan_.split)}, {"node_bytes", node_bytes}});
    return out;
  }
  std::vector<SummaryField> summary_fields(const Row&) const override {
    return {field("mode"), field("alloc"), field("ppn"), field("pairs"), field("size", "size_bytes"), field("split"),
            field("node_size", "node_bytes"), field("status"), metric("median_GBps", 3), metric("min_GBps", 3),
            metric("max_GBps", 3)};
  }

 private:
  Plan plan_;
  Job job_;
  RankPlace place_;
  const Topology* topo_ = nullptr;
  std::string device_problem_;
  int pairs_ = 1, ppn_ = 1;
  std::vector<uint64_t> rank_sizes_;
  std::vector<Case> cases_;
  std::vector<std::string> rank_rows_;
  std::optional<Alloc> buffers_of_;  // the allocator of the buffers
  std::string unready_;              // why they could not be had
  std::unique_ptr<Buffer> send_, recv_;
};

}  // namespace

std::unique_ptr<Benchmark> make_bw() { return std::make_unique<MpiBw>(); }

}  // namespace mempath::mpi
