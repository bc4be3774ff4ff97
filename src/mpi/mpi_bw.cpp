// `mempath-mpi bw`: node-to-node bandwidth with windows of MPI_Isend/MPI_Irecv (issue 5,
// docs/cli.md). Each rank on node 0 talks to the rank with the same local index on node
// 1; all ranks of a node start at one time their node's first rank chose, and a
// repetition ends when the node's last rank is done (the paper's method).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/numa_policy.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "core/results.hpp"
#include "core/scaleout_plan.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "mpi/mpi_commands.hpp"
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace mempath::mpi {
namespace {

const std::vector<ColumnSpec> kSampleColumns = {
    {"case_id", ColumnType::Int, ""}, {"rep", ColumnType::Int, ""},
    {"mode", ColumnType::String, ""}, {"alloc", ColumnType::String, ""},
    {"ppn", ColumnType::Int, ""},     {"size_bytes", ColumnType::Int, "bytes"},
    {"bytes", ColumnType::Int, "bytes"}, {"time_s", ColumnType::Float, "s"},
    {"bandwidth_GBps", ColumnType::Float, "GB/s"},
};
const std::vector<ColumnSpec> kCaseColumns = {
    {"case_id", ColumnType::Int, ""},    {"mode", ColumnType::String, ""},
    {"alloc", ColumnType::String, ""},   {"mem", ColumnType::String, ""},
    {"ppn", ColumnType::Int, ""},        {"pairs", ColumnType::Int, ""},
    {"size_bytes", ColumnType::Int, "bytes"}, {"window", ColumnType::Int, ""},
    {"windows", ColumnType::Int, ""},    {"status", ColumnType::String, ""},
    {"reason", ColumnType::String, ""},  {"reps", ColumnType::Int, ""},
    {"median_GBps", ColumnType::Float, "GB/s"}, {"min_GBps", ColumnType::Float, "GB/s"},
    {"max_GBps", ColumnType::Float, "GB/s"}, {"same_host", ColumnType::Int, ""},
};
const std::vector<ColumnSpec> kRankColumns = {
    {"rank", ColumnType::Int, ""}, {"host", ColumnType::String, ""}, {"node", ColumnType::Int, ""},
    {"local", ColumnType::Int, ""}, {"numa", ColumnType::Int, ""}, {"cpus", ColumnType::String, ""},
};

// Whether this MPI library moves device buffers itself: the compile-time promise and
// the library's own run-time answer (Open MPI's MPIX_Query_cuda_support).
std::string cuda_aware_problem() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  if (MPIX_Query_cuda_support() == 1) return "";
  return "this MPI library was built CUDA-aware but says CUDA support is off at run time";
#else
  return "this MPI library is not CUDA-aware (no MPIX_CUDA_AWARE_SUPPORT): device buffers need one";
#endif
}

struct Rep {
  double seconds = 0;  // the node's last end - the node's common start
};

// One repetition of `windows` windows between this rank and `peer`. Returns this rank's
// end time; `start` is the common start of its node.
double exchange(const Job& job, int peer, bool sender, bool bidir, char* send, char* recv, uint64_t size,
                int windows, double start) {
  std::vector<MPI_Request> req(2 * kMpiWindow);
  const int count = static_cast<int>(size);
  while (MPI_Wtime() < start) {
  }
  for (int w = 0; w < windows; ++w) {
    int n = 0;
    if (bidir || !sender)
      for (int k = 0; k < kMpiWindow; ++k) MPI_Irecv(recv, count, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req[n++]);
    if (bidir || sender)
      for (int k = 0; k < kMpiWindow; ++k) MPI_Isend(send, count, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req[n++]);
    MPI_Waitall(n, req.data(), MPI_STATUSES_IGNORE);
  }
  if (!bidir) {  // the sender's time ends when the receiver confirms it has everything
    char ack = 0;
    if (sender) MPI_Recv(&ack, 1, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(&ack, 1, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
  }
  (void)job;
  return MPI_Wtime();
}

Rep timed_rep(const Job& job, int peer, bool bidir, char* send, char* recv, uint64_t size, int windows) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = 0;
  if (job.local == 0) start = MPI_Wtime() + 1e-3;  // the node's first rank chooses
  MPI_Bcast(&start, 1, MPI_DOUBLE, 0, job.node_comm);
  double end = start;
  if (peer >= 0) end = exchange(job, peer, job.node == 0, bidir, send, recv, size, windows, start);
  double node_end = 0;
  MPI_Allreduce(&end, &node_end, 1, MPI_DOUBLE, MPI_MAX, job.node_comm);
  Rep r;
  r.seconds = node_end - start;
  // Node 0's time, as OSU reports rank 0's: one direction, its senders wait for the last
  // acknowledgement; both directions, its ranks wait for everything they receive.
  MPI_Bcast(&r.seconds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return r;
}

}  // namespace

int cmd_bw(const std::vector<std::string>& args, const std::vector<std::string>& argv, const Job& job) {
  Options opts("bw", "Node-to-node MPI bandwidth, windows of Isend/Irecv between rank pairs (docs/cli.md).",
               {{"mode", "LIST", "uni, bi or both (default uni,bi)"},
                {"alloc", "LIST", "buffer allocators: numa (default), system, pinned, managed, device"},
                {"min-size", "SIZE", "smallest message (default 1B)"},
                {"max-size", "SIZE", "largest message (default 1GiB)"},
                {"reps", "N", "timed repetitions per size (default 5)"},
                {"ppn", "N", "expected ranks per node: the run fails when the job has another count"},
                {"timeout", "SECONDS", "longest a case may take before every rank is ended (default 300)"},
                {"output", "FILE", "HDF5 result file, written by rank 0 (default mempath-mpi-bw-HOST-TIME.h5)"}});
  if (!opts.parse(args)) return kExitOk;
  const auto modes = split_list(opts.get_or("mode", "uni,bi"));
  for (const auto& m : modes)
    if (m != "uni" && m != "bi") throw UsageError("invalid --mode '" + m + "'; valid: uni, bi");
  const auto allocs = split_list(opts.get_or("alloc", "numa"));
  for (const auto& a : allocs)
    if (std::find(allocator_names().begin(), allocator_names().end(), a) == allocator_names().end() || a == "registered")
      throw UsageError("invalid --alloc '" + a + "'; valid: numa, system, pinned, managed, device");
  const uint64_t min_size = opts.has("min-size") ? parse_size(*opts.get("min-size")) : 1;
  const uint64_t max_size = opts.has("max-size") ? parse_size(*opts.get("max-size")) : 1ULL << 30;
  if (max_size < min_size) throw UsageError("--max-size is below --min-size");
  if (max_size > (1ULL << 31) - 1) throw UsageError("--max-size " + format_size(max_size) + " exceeds one MPI message (2 GiB - 1)");
  const int reps = static_cast<int>(opts.integer("reps", 5, 1));
  const double timeout = static_cast<double>(opts.integer("timeout", 300, 1));
  if (job.nodes != 2)
    throw UsageError("bw runs between 2 nodes; this job has ranks on " + std::to_string(job.nodes) +
                     " (valid: ranks on 2 nodes, or on one host where they are split in two halves)");
  int ppn_min = job.local_size, ppn_max = job.local_size;
  MPI_Allreduce(&job.local_size, &ppn_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&job.local_size, &ppn_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (opts.has("ppn") && (ppn_min != opts.integer("ppn", 1, 1) || ppn_max != ppn_min))
    throw UsageError("--ppn " + *opts.get("ppn") + " but the job has " + std::to_string(ppn_min) + ".." +
                     std::to_string(ppn_max) + " ranks per node; valid: launch that many per node (srun --ntasks-per-node)");

  const Topology topo = discover();
  std::vector<int> host_nodes;
  for (const auto& n : topo.numa_nodes)
    if (n.kind == "host" && !n.cpus.empty()) host_nodes.push_back(n.id);
  const int numa = rank_numa(job.local, host_nodes);
  const NumaNode* node = topo.find_numa(numa);
  const std::vector<int> node_cpus = node ? node->cpus : std::vector<int>{};
  std::vector<int> cpus = allowed_of(node_cpus);
  // A launcher that bound the rank inside its node (srun --cpu-bind, taskset) decides; else
  // ranks of a split host, or more ranks than nodes, sharing a node's cores get one each.
  if (cpus.empty()) cpus = node_cpus;
  if (!cpus.empty() && cpus.size() == node_cpus.size()) {
    const int sharing = std::max(1, (job.local_size + static_cast<int>(host_nodes.size()) - 1) / static_cast<int>(host_nodes.size()));
    const int index = job.split_host ? job.rank : job.local / static_cast<int>(host_nodes.size());
    if (sharing > 1 || job.split_host) cpus = {cpus[static_cast<size_t>(index) % cpus.size()]};
  }
  if (!cpus.empty()) pin_this_thread(cpus);
  bind_this_thread_memory(numa);
  const int peer = mpi_partner(job.rank, job.node_of, job.local_of);
  int pairs_local = peer >= 0 && job.node == 0 ? 1 : 0, pairs = 0;
  MPI_Allreduce(&pairs_local, &pairs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  std::string cpu_list;
  for (int c : cpus) cpu_list += (cpu_list.empty() ? "" : ",") + std::to_string(c);
  const auto rank_rows = gather_strings(std::to_string(numa) + "|" + cpu_list, job);
  std::unique_ptr<ResultFile> file;
  if (job.rank == 0) {
    auto attrs = collect_provenance(topo, argv);
    attrs["mpi_ranks"] = static_cast<int64_t>(job.size);
    attrs["mpi_nodes"] = static_cast<int64_t>(job.nodes);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(version, &len);
    attrs["mpi_library"] = std::string(version, strnlen(version, len));
    file = std::make_unique<ResultFile>(opts.get_or("output", default_output_name("mpi-bw", topo.host)), attrs);
    file->table("mpi_bw/samples", kSampleColumns);
    file->table("mpi_bw/cases", kCaseColumns);
    auto& ranks = file->table("mpi_bw/ranks", kRankColumns);
    for (int r = 0; r < job.size; ++r) {
      const auto bar = rank_rows[r].find('|');
      ranks.append({{"rank", static_cast<int64_t>(r)}, {"host", job.hosts[r]}, {"node", static_cast<int64_t>(job.node_of[r])},
                    {"local", static_cast<int64_t>(job.local_of[r])},
                    {"numa", static_cast<int64_t>(std::stoi(rank_rows[r].substr(0, bar)))},
                    {"cpus", rank_rows[r].substr(bar + 1)}});
    }
    file->save();
  }

  Watchdog watchdog = job_watchdog(timeout);
  int64_t id = 0;
  bool any_ran = false;
  std::string first_skip;
  for (const auto& alloc : allocs) {
    // One send and one receive buffer per rank for every size: messages of a window
    // share them, as in OSU's osu_bw.
    std::string reason = alloc == "device" ? cuda_aware_problem() : "";
    std::unique_ptr<Buffer> send, recv;
    std::string mem = alloc == "device" ? "gpu" + std::to_string(job.local) : "numa" + std::to_string(numa);
    if (reason.empty()) {
      try {
        send = allocate(topo, alloc, mem, max_size, 0x5a);
        recv = allocate(topo, alloc, mem, max_size, 0);
      } catch (const std::exception& e) {
        reason = e.what();
      }
    }
    reason = agree_on_reason(reason);
    any_ran = any_ran || reason.empty();
    if (first_skip.empty()) first_skip = reason;
    for (const auto& mode : modes) {
      for (uint64_t size : power_of_two_sizes(min_size, max_size)) {
        const int windows = mpi_windows(size, kMpiWindow);
        std::vector<double> seconds;
        if (reason.empty()) {
          watchdog.arm("bw " + mode + " " + alloc + " " + format_size(size));
          auto* s = static_cast<char*>(send->data());
          auto* r = static_cast<char*>(recv->data());
          timed_rep(job, peer, mode == "bi", s, r, size, 1);  // warm-up: connections, registration
          for (int k = 0; k < reps; ++k) seconds.push_back(timed_rep(job, peer, mode == "bi", s, r, size, windows).seconds);
          watchdog.disarm();
        }
        if (job.rank != 0) continue;
        // Bytes of one repetition: node 0's senders (uni), or both directions (bi).
        const uint64_t bytes = size * kMpiWindow * windows * pairs * (mode == "bi" ? 2 : 1);
        std::vector<double> gbps;
        for (double t : seconds) gbps.push_back(bytes / t / 1e9);
        for (size_t k = 0; k < seconds.size(); ++k)
          file->table("mpi_bw/samples", kSampleColumns)
              .append({{"case_id", id}, {"rep", static_cast<int64_t>(k)}, {"mode", mode}, {"alloc", alloc},
                       {"ppn", static_cast<int64_t>(ppn_max)}, {"size_bytes", static_cast<int64_t>(size)},
                       {"bytes", static_cast<int64_t>(bytes)}, {"time_s", seconds[k]}, {"bandwidth_GBps", gbps[k]}});
        const Summary sum = summarize(gbps);
        const std::string status = reason.empty() ? "ok" : "skipped";
        file->table("mpi_bw/cases", kCaseColumns)
            .append({{"case_id", id}, {"mode", mode}, {"alloc", alloc}, {"mem", alloc == "device" ? "gpu" : "numa"},
                     {"ppn", static_cast<int64_t>(ppn_max)}, {"pairs", static_cast<int64_t>(pairs)},
                     {"size_bytes", static_cast<int64_t>(size)}, {"window", static_cast<int64_t>(kMpiWindow)},
                     {"windows", static_cast<int64_t>(windows)}, {"status", status}, {"reason", reason},
                     {"reps", static_cast<int64_t>(seconds.size())}, {"median_GBps", sum.median},
                     {"min_GBps", sum.min}, {"max_GBps", sum.max}, {"same_host", static_cast<int64_t>(job.split_host)}});
        file->set_attribute("end_time", utc_now_iso8601());
        file->save();
        std::printf("MEMPATH mpi_bw mode=%s alloc=%s ppn=%d pairs=%d size=%llu status=%s", mode.c_str(), alloc.c_str(),
                    ppn_max, pairs, static_cast<unsigned long long>(size), status.c_str());
        if (status == "ok") std::printf(" median_GBps=%.3f min_GBps=%.3f max_GBps=%.3f", sum.median, sum.min, sum.max);
        if (!reason.empty()) std::printf(" reason=\"%s\"", reason.c_str());
        std::printf("\n");
        std::fflush(stdout);
        ++id;
      }
    }
  }
  if (job.rank == 0) std::fprintf(stderr, "mempath-mpi: %lld cases written to %s\n", static_cast<long long>(id), file->path().c_str());
  return exit_code(job, any_ran, first_skip, kExitOk);
}

}  // namespace mempath::mpi
