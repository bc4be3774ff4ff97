// `mempath-mpi bw`: node-to-node bandwidth with windows of MPI_Isend/MPI_Irecv
// (docs/cli.md). Each rank on node 0 talks to the rank with the same local index on node
// 1; all ranks of a node start at one time their node's first rank chose, and a
// repetition ends when the node's last rank is done (the paper's method). With --split
// the sizes are the node's, divided among its ranks (the paper's Fig. 14). Every
// repetition's messages carry a pattern of their own that the receiver checks, untimed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "core/allocators.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/families.hpp"
#include "core/kinds.hpp"
#include "core/numa_policy.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "core/result_run.hpp"
#include "core/results.hpp"
#include "core/scaleout_plan.hpp"
#include "core/stats.hpp"
#include "core/summary_line.hpp"
#include "core/units.hpp"
#include "mpi/mpi_commands.hpp"
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

struct Plan {
  std::vector<std::string> modes, allocs;
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
  p.allocs = opts.has("alloc") ? opts.list("alloc") : split_list("numa");
  for (const auto& a : p.allocs)
    if (std::find(allocator_names().begin(), allocator_names().end(), a) == allocator_names().end() ||
        alloc_kind(a) == Alloc::Registered)
      throw UsageError("invalid --alloc '" + a + "'; valid: numa, system, pinned, managed, device");
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

// `bw --from SNAPSHOT`: the job's layout as the launcher would make it, checked as the run
// checks it, then its cases and the model's expectation (mpi_plan.hpp).
int plan_bw(const PlannedJob& planned, const Plan& plan) {
  const MpiLayout layout = planned_layout(planned.ranks, planned.nodes, true);
  Job job;
  job.size = planned.ranks, job.nodes = layout.nodes, job.split_host = layout.split_host;
  job.node_of = layout.node_of, job.local_of = layout.local_of;
  check_layout(job, plan);
  const int pairs = mpi_pairs(job.node_of, job.local_of);
  const auto per_node = ranks_per_node(job.node_of);
  const int ppn = *std::max_element(per_node.begin(), per_node.end());
  const std::vector<uint64_t> rank_sizes = rank_sizes_of(plan, pairs);
  const std::string device_problem = cuda_aware_problem(true);
  for (const auto& alloc : plan.allocs)
    for (const auto& mode : plan.modes)
      for (uint64_t size : rank_sizes)
        print_plan_line("mpi_bw",
                        {{"mode", mode}, {"alloc", alloc}, {"ppn", std::to_string(ppn)}, {"pairs", std::to_string(pairs)},
                         {"size", std::to_string(size)}, {"split", plan.split ? "1" : "0"},
                         {"node_size", std::to_string(size * static_cast<uint64_t>(pairs))}},
                        alloc_info(alloc).gpu_owned ? device_problem : "");
  print_expectation("mpi_bw", mpi_bw_expectation(plan.allocs, plan.modes, rank_sizes, plan.reps, pairs,
                                                 job.split_host, device_problem));
  return kExitOk;
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
    if (mem_kind(n.kind) == MemKind::Host && !n.cpus.empty()) host_nodes.push_back(n.id);
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
  std::string failure;  // agreed by every rank: the first rank's data-check failure
};

// Warm-up (connections, registration; checked too), then `reps` timed repetitions, all
// under the watchdog; the data check's outcome is agreed before the watchdog is disarmed.
CaseResult run_case(const Job& job, const Exchange& x, uint64_t size, int reps, const std::string& what) {
  Watchdog::Scope armed(phase_watchdog(), what);
  const int windows = mpi_windows(size, kMpiWindow);
  CaseResult c;
  std::string mine = timed_rep(job, x, size, 1, 0).failure;
  for (int k = 1; k <= reps; ++k) {
    Rep r = timed_rep(job, x, size, windows, k);
    c.seconds.push_back(r.seconds);
    if (mine.empty()) mine = r.failure;
  }
  c.failure = agree_on_reason(mine);
  return c;
}

struct CaseRow {
  int64_t id;
  std::string mode, alloc, status, reason;
  int ppn, pairs;
  uint64_t size;  // each rank's message
  bool same_host, verified, split;
};

// Rank 0: the case's rows and its summary line.
void record_case(ResultFile& file, const CaseRow& c, const std::vector<double>& seconds) {
  // Bytes of one repetition: node 0's senders (uni), or both directions (bi).
  const int windows = mpi_windows(c.size, kMpiWindow);
  const uint64_t bytes = c.size * kMpiWindow * windows * c.pairs * (c.mode == "bi" ? 2 : 1);
  const auto node_bytes = static_cast<int64_t>(c.size * c.pairs);  // one message of every pair: the node's size
  std::vector<double> gbps;
  for (double t : seconds) gbps.push_back(bytes / t / 1e9);
  for (size_t k = 0; k < seconds.size(); ++k)
    file.table("mpi_bw/samples", columns_of("mpi_bw/samples"))
        .append({{"case_id", c.id}, {"rep", static_cast<int64_t>(k)}, {"mode", c.mode}, {"alloc", c.alloc},
                 {"ppn", static_cast<int64_t>(c.ppn)}, {"size_bytes", static_cast<int64_t>(c.size)},
                 {"bytes", static_cast<int64_t>(bytes)}, {"time_s", seconds[k]}, {"bandwidth_GBps", gbps[k]},
                 {"node_bytes", node_bytes}});
  const Summary sum = summarize(gbps);
  const Row row = {{"case_id", c.id}, {"mode", c.mode}, {"alloc", c.alloc},
                   {"mem", std::string(alloc_info(c.alloc).gpu_owned ? "gpu" : "numa")},
                   {"ppn", static_cast<int64_t>(c.ppn)}, {"pairs", static_cast<int64_t>(c.pairs)},
                   {"size_bytes", static_cast<int64_t>(c.size)}, {"window", static_cast<int64_t>(kMpiWindow)},
                   {"windows", static_cast<int64_t>(windows)}, {"status", c.status}, {"reason", c.reason},
                   {"reps", static_cast<int64_t>(seconds.size())}, {"median_GBps", sum.median},
                   {"min_GBps", sum.min}, {"max_GBps", sum.max}, {"same_host", static_cast<int64_t>(c.same_host)},
                   {"verified", static_cast<int64_t>(c.verified)}, {"split", static_cast<int64_t>(c.split)},
                   {"node_bytes", node_bytes}};
  file.table("mpi_bw/cases", columns_of("mpi_bw/cases")).append(row);
  std::printf("%s\n", summary_line("mpi_bw", row,
                                    {field("mode"), field("alloc"), field("ppn"), field("pairs"),
                                     field("size", "size_bytes"), field("split"), field("node_size", "node_bytes"),
                                     field("status"), metric("median_GBps", 3),
                                     metric("min_GBps", 3), metric("max_GBps", 3)})
                           .c_str());
  std::fflush(stdout);
}

std::map<std::string, Attribute> bw_attributes(const Topology& topo, const std::vector<std::string>& argv,
                                               const Job& job) {
  auto attrs = collect_provenance(topo, argv);
  attrs["mpi_ranks"] = static_cast<int64_t>(job.size);
  attrs["mpi_nodes"] = static_cast<int64_t>(job.nodes);
  attrs["mpi_machines"] = static_cast<int64_t>(job.machines);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  attrs["mpi_library"] = std::string(version, strnlen(version, len));
  return attrs;
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

}  // namespace

int cmd_bw(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  const auto started = std::chrono::steady_clock::now();
  Options opts("bw", "Node-to-node MPI bandwidth, windows of Isend/Irecv between rank pairs (docs/cli.md).",
               with_plan_options(with_run_options({{"mode", "LIST", "uni, bi or both (default uni,bi)"},
                                 {"alloc", "LIST", "buffer allocators: numa (default), system, pinned, managed, device"},
                                 {"min-size", "SIZE", "smallest message (default 1B)"},
                                 {"max-size", "SIZE", "largest message (default 1GiB)"},
                                 {"reps", "N", "timed repetitions per size (default 5)"},
                                 {"ppn", "N", "expected ranks per node: the run fails when the job has another count"},
                                 {"split", "",
                                  "sizes are each node's total, split equally among its ranks (the paper's Fig. 14); "
                                  "without it each rank sends the size"}},
                                "mpi-bw")));
  if (!opts.parse(args)) return kExitOk;
  const Plan plan = parse_plan(opts);
  // Without --ppn a plan has one rank per node, as MempathMpiBandwidth's first parameter.
  if (auto planned = planned_job(opts, 2, [&](const Topology&) { return plan.ppn ? static_cast<int>(*plan.ppn) : 1; }))
    return plan_bw(*planned, plan);
  set_phase_limit(timeout_option(opts));

  Job job;
  {
    Watchdog::Scope armed(phase_watchdog(), "start-up");
    job = discover_job();
  }
  phase("checking the job", [&] { check_layout(job, plan); });
  Topology topo;
  RankPlace place;
  phase("placing the rank", [&] {
    topo = discover();
    place = place_rank(job, topo);
  });
  const int peer = mpi_partner(job.rank, job.node_of, job.local_of);
  const int pairs = mpi_pairs(job.node_of, job.local_of);
  const auto per_node = ranks_per_node(job.node_of);
  const int ppn = *std::max_element(per_node.begin(), per_node.end());
  const std::vector<uint64_t> rank_sizes = rank_sizes_of(plan, pairs);
  const uint64_t max_message = rank_sizes.back();
  std::string cpu_list;
  for (int c : place.cpus) cpu_list += (cpu_list.empty() ? "" : ",") + std::to_string(c);
  std::vector<std::string> rank_rows;
  {
    Watchdog::Scope armed(phase_watchdog(), "gathering the ranks");
    rank_rows = gather_strings(std::to_string(place.numa) + "|" + cpu_list, job);
  }
  JobFile file(job, opts, "mpi-bw", topo.host, [&] { return bw_attributes(topo, argv, job); });
  ResultFile* out = file.rank0();
  if (out) {
    out->table("mpi_bw/samples", columns_of("mpi_bw/samples"));
    out->table("mpi_bw/cases", columns_of("mpi_bw/cases"));
    record_ranks(*out, job, rank_rows);  // saved with the first finished case, not before
  }
  // The model's expectation (docs/cli.md, "Expected duration"): device buffers without a
  // CUDA-aware MPI are known to be skipped; every other case is planned.
  const ScaleoutExpectation expected = mpi_bw_expectation(plan.allocs, plan.modes, rank_sizes, plan.reps, pairs,
                                                          job.split_host, cuda_aware_problem());
  const double expected_s = expected.seconds;
  if (out) print_expectation("mpi_bw", expected);

  int64_t id = 0;
  bool any_ran = false, any_failed = false;
  std::string first_skip, first_failure;
  for (const auto& alloc : plan.allocs) {
    // One send and one receive buffer per rank for every size: messages of a window
    // share them, as in OSU's osu_bw.
    const bool on_gpu = alloc_info(alloc).gpu_owned;
    std::string reason = on_gpu ? cuda_aware_problem() : "";
    std::unique_ptr<Buffer> send, recv;
    const std::string mem = on_gpu ? "gpu" + std::to_string(job.local) : "numa" + std::to_string(place.numa);
    if (reason.empty()) {
      try {
        send = allocate(topo, alloc, mem, max_message, 0x5a);
        recv = allocate(topo, alloc, mem, max_message, 0);
      } catch (const std::exception& e) {
        reason = e.what();
      }
    }
    {
      Watchdog::Scope armed(phase_watchdog(), "bw " + alloc + " allocation");
      reason = agree_on_reason(reason);
    }
    any_ran = any_ran || reason.empty();
    if (first_skip.empty()) first_skip = reason;
    for (const auto& mode : plan.modes) {
      for (uint64_t size : rank_sizes) {
        CaseRow row{id, mode, alloc, "skipped", reason, ppn, pairs, size, job.split_host, false, plan.split};
        CaseResult result;
        if (reason.empty()) {
          // Device memory is not checked: the host cannot fill or read it here.
          const Exchange x{peer, mode == "bi", job.node == 0, static_cast<char*>(send->data()),
                           static_cast<char*>(recv->data()), !on_gpu};
          result = run_case(job, x, size, plan.reps, "bw " + mode + " " + alloc + " " + format_size(size));
          row.status = result.failure.empty() ? "ok" : "failed";
          row.reason = result.failure;
          row.verified = x.checked && result.failure.empty();
          any_failed = any_failed || !result.failure.empty();
          if (first_failure.empty()) first_failure = result.failure;
        }
        if (out) record_case(*out, row, result.seconds);
        file.save();
        ++id;
      }
    }
  }
  if (out) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("%s\n", model::elapsed_line("mpi_bw", static_cast<size_t>(id), elapsed, expected_s).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "mempath-mpi: %lld cases written to %s\n", static_cast<long long>(id), out->path().c_str());
    if (any_failed) std::fprintf(stderr, "mempath-mpi: failed: a data check failed (%s)\n", first_failure.c_str());
  }
  return exit_code(job, any_ran, first_skip, any_failed ? kExitFailed : kExitOk);
}

}  // namespace mempath::mpi
