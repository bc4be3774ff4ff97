// `mempath-mpi nccl`: NCCL all-reduce and all-gather, one GPU per rank, with the buffers
// in the GPU's own memory (cudaMalloc or system-allocated on GH200's HBM node), in host
// memory, in another GPU's memory, or in another superchip's host memory (the
// paper's Figs. 18/19; docs/cli.md). Placements, sizes and bandwidths (nccl-tests') are
// planned in core/scaleout_plan.hpp. Every element of every result is checked, untimed,
// against what the collective must give.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <memory>
#include <sstream>

#include "core/allocators.hpp"
#include "core/duration_model.hpp"
#include "core/kinds.hpp"
#include "core/error.hpp"
#include "core/families.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "core/summary_line.hpp"
#include "core/result_run.hpp"
#include "core/results.hpp"
#include "core/scaleout_plan.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "gpu/memcpy_api.hpp"
#include "mpi/mpi_commands.hpp"
#include "mpi/mpi_plan.hpp"

namespace mempath::mpi {
namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}
void cuda_ok(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(r));
}

// Host memory the checks stage through: 16 MiB, whatever the buffer size.
constexpr uint64_t kStageFloats = 4ULL << 20;

// Rank `rank`'s input: nccl_input, written through a host stage (any memory).
void fill_input(void* in, uint64_t elements, int rank) {
  std::vector<float> stage(std::min(elements, kStageFloats));
  for (uint64_t at = 0; at < elements; at += kStageFloats) {
    const uint64_t n = std::min(kStageFloats, elements - at);
    for (uint64_t i = 0; i < n; ++i) stage[i] = nccl_input(rank, at + i);
    cuda_ok(cudaMemcpy(static_cast<float*>(in) + at, stage.data(), n * sizeof(float), cudaMemcpyDefault),
            "cudaMemcpy (input)");
  }
}

// The first of `elements` output elements that differs from expected(i), as text; "".
template <class Expected>
std::string first_wrong_element(const void* out, uint64_t elements, Expected expected) {
  std::vector<float> stage(std::min(elements, kStageFloats));
  for (uint64_t at = 0; at < elements; at += kStageFloats) {
    const uint64_t n = std::min(kStageFloats, elements - at);
    cuda_ok(cudaMemcpy(stage.data(), static_cast<const float*>(out) + at, n * sizeof(float), cudaMemcpyDefault),
            "cudaMemcpy (check)");
    for (uint64_t i = 0; i < n; ++i) {
      const float want = expected(at + i);
      if (stage[i] == want) continue;
      std::ostringstream why;
      why << "result element " << at + i << " of " << elements << " is " << stage[i] << ", expected " << want;
      return why.str();
    }
  }
  return "";
}

struct Collective {
  std::string name;
  uint64_t size;        // nccl-tests' size: the all-reduce buffer, or the gathered (output) buffer
  uint64_t rank_bytes;  // each rank's input
  int ranks;
  uint64_t count() const { return rank_bytes / sizeof(float); }
  uint64_t out_elements() const { return size / sizeof(float); }
};

std::string check_result(const Collective& c, const void* out) {
  if (c.name == "allreduce")
    return first_wrong_element(out, c.out_elements(), [&](uint64_t i) { return nccl_allreduce_expected(c.ranks, i); });
  const uint64_t count = c.count();
  return first_wrong_element(out, c.out_elements(), [count](uint64_t i) { return nccl_allgather_expected(count, i); });
}

struct Gpu {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
};

struct CaseResult {
  double us = -1;       // the slowest rank's time per collective
  std::string failure;  // agreed by every rank: the first rank's wrong element
};

// Warm-up, then the output cleared (so the check proves the timed collectives wrote it)
// and `iters` timed collectives; then every element checked. All under the watchdog.
CaseResult run_case(const Gpu& g, const Collective& c, Buffer& in, Buffer& out, int warmup, int iters,
                    const std::string& what) {
  Watchdog::Scope armed(phase_watchdog(), what);
  auto run = [&] {
    if (c.name == "allreduce")
      nccl_check(ncclAllReduce(in.data(), out.data(), c.count(), ncclFloat, ncclSum, g.comm, g.stream), "ncclAllReduce");
    else
      nccl_check(ncclAllGather(in.data(), out.data(), c.count(), ncclFloat, g.comm, g.stream), "ncclAllGather");
  };
  for (int k = 0; k < warmup; ++k) run();
  const size_t out_bytes = c.out_elements() * sizeof(float);
  if (alloc_info(out.kind()).gpu_memory) {
    cuda_ok(cudaMemsetAsync(out.data(), 0, out_bytes, g.stream), "cudaMemsetAsync (output)");
  } else {
    // Host memory is cleared by the host: cudaMemset may not reach pageable memory (no
    // ATS/HMM), as a GPU write to it did not in allocmatrix.
    cuda_ok(cudaStreamSynchronize(g.stream), "warm-up collectives");
    std::memset(out.data(), 0, out_bytes);
  }
  cuda_ok(cudaEventRecord(g.e0, g.stream), "cudaEventRecord");
  for (int k = 0; k < iters; ++k) run();
  cuda_ok(cudaEventRecord(g.e1, g.stream), "cudaEventRecord");
  cuda_ok(cudaEventSynchronize(g.e1), "collective");
  float ms = 0;
  cuda_ok(cudaEventElapsedTime(&ms, g.e0, g.e1), "cudaEventElapsedTime");
  const double mine = ms * 1e3 / iters;
  CaseResult r;
  MPI_Allreduce(&mine, &r.us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  r.failure = agree_on_reason(check_result(c, out.data()));
  return r;
}

struct CaseRow {
  int64_t id;
  std::string coll, placement, alloc, mem, via, status, reason;
  int ranks, hosts, iters;
  uint64_t size, rank_bytes;
  double us;
};

// Rank 0: the case's row and its summary line.
void record_case(ResultFile& file, const CaseRow& c) {
  const double algbw = c.us > 0 ? c.size / (c.us * 1e-6) / 1e9 : std::nan("");
  const double busbw = algbw * busbw_factor(c.coll, c.ranks);
  const Row row = {{"case_id", c.id}, {"collective", c.coll}, {"placement", c.placement}, {"alloc", c.alloc},
                   {"ranks", static_cast<int64_t>(c.ranks)}, {"nodes", static_cast<int64_t>(c.hosts)},
                   {"size_bytes", static_cast<int64_t>(c.size)}, {"iters", static_cast<int64_t>(c.iters)},
                   {"status", c.status}, {"reason", c.reason}, {"time_us", c.us > 0 ? c.us : std::nan("")},
                   {"algbw_GBps", algbw}, {"busbw_GBps", busbw}, {"verified", static_cast<int64_t>(c.status == "ok")},
                   {"mem", c.mem}, {"via", c.via}, {"rank_bytes", static_cast<int64_t>(c.rank_bytes)}};
  file.table("nccl/cases", columns_of("nccl/cases")).append(row);
  std::printf("%s\n", summary_line("nccl", row,
                                    {field("coll", "collective"), field("placement"), field("alloc"), field("mem"),
                                     field("ranks"), field("nodes"), field("size", "size_bytes"),
                                     field("rank_size", "rank_bytes"), field("status"), metric("time_us", 2),
                                     metric("algbw_GBps", 2), metric("busbw_GBps", 2)})
                           .c_str());
  std::fflush(stdout);
}

// Bad input in this rank's node (no GPU, more ranks than GPUs): found per node, so agreed.
int check_gpus(const Job& job, const Topology& topo) {
  const int gpus = static_cast<int>(topo.gpus.size());
  if (gpus == 0) throw UsageError("nccl needs GPUs; this node has none");
  if (job.local_size > gpus)
    throw UsageError(std::to_string(job.local_size) + " ranks on a node with " + std::to_string(gpus) +
                     " GPUs; valid: at most one rank per GPU");
  return job.split_host ? job.rank : job.local;
}

Gpu start_nccl(const Job& job, int gpu) {
  Gpu g;
  ncclUniqueId id{};
  phase("NCCL unique id", [&] {
    cuda_ok(cudaSetDevice(gpu), "cudaSetDevice");
    if (job.rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  });
  // A rank whose ncclCommInitRank fails ends the job (MPI_Abort); one that hangs, the watchdog.
  Watchdog::Scope armed(phase_watchdog(), "NCCL start-up");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  nccl_check(ncclCommInitRank(&g.comm, job.size, id, job.rank), "ncclCommInitRank");
  cuda_ok(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_ok(cudaEventCreate(&g.e0), "cudaEventCreate");
  cuda_ok(cudaEventCreate(&g.e1), "cudaEventCreate");
  return g;
}

}  // namespace

int cmd_nccl(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  const auto started = std::chrono::steady_clock::now();
  Options opts("nccl", "NCCL all-reduce and all-gather with the buffers in each memory (docs/cli.md).",
               nccl_option_specs());
  if (!opts.parse(args)) return kExitOk;
  const NcclSettings settings = nccl_settings(opts);
  if (opts.has("from")) return plan_nccl(opts, settings);
  planned_job(opts, 1, nullptr);  // --plan-* without --from: bad input
  const auto& colls = settings.colls;
  const auto& placements = settings.placements;
  const NcclSizes& sizes = settings.sizes;
  const int iters = settings.iters, warmup = settings.warmup;
  set_phase_limit(timeout_option(opts));

  Job job;
  {
    Watchdog::Scope armed(phase_watchdog(), "start-up");
    job = discover_job();
  }
  Topology topo;
  int gpu = 0;
  phase("checking the GPUs", [&] {
    topo = discover();
    gpu = check_gpus(job, topo);
  });
  const int hosts = job.split_host ? 1 : job.nodes;  // collectives span hosts, not halves
  std::vector<NcclCase> cases;
  phase("planning the sizes", [&] {
    cases = nccl_cases(colls, sizes, job.size);
    if (cases.empty())
      throw UsageError("--max-size " + format_size(sizes.max_size) + " leaves no buffer with 4 B for each of the " +
                       std::to_string(job.size) + " ranks; valid: at least " + std::to_string(4 * job.size) + " B");
  });
  const Gpu g = start_nccl(job, gpu);
  // The GPUs the ranks ran on, by UUID: ranks of several nodes on one machine may share one
  // (a test cluster's nodes), which makes the collective a functional result.
  int distinct_gpus = 0;
  {
    const auto uuids = gpu::device_uuids();
    const std::string mine = gpu < static_cast<int>(uuids.size()) ? gpu_uuid_text(uuids[gpu]) : "";
    std::vector<std::string> all = gather_strings(mine, job);
    if (job.rank == 0 && std::none_of(all.begin(), all.end(), [](const std::string& u) { return u.empty(); })) {
      std::sort(all.begin(), all.end());
      distinct_gpus = static_cast<int>(std::unique(all.begin(), all.end()) - all.begin());
    }
  }
  JobFile file(job, opts, "mpi-nccl", topo.host, [&] {
    auto attrs = collect_provenance(topo, argv);
    int version = 0;
    ncclGetVersion(&version);
    attrs["nccl_version"] = static_cast<int64_t>(version);
    attrs["mpi_ranks"] = static_cast<int64_t>(job.size);
    attrs["mpi_nodes"] = static_cast<int64_t>(hosts);
    attrs["mpi_machines"] = static_cast<int64_t>(job.machines);
    attrs["mpi_gpus"] = static_cast<int64_t>(distinct_gpus);
    return attrs;
  });
  ResultFile* out_file = file.rank0();
  // One input and one output per placement, as large as the largest case needs.
  uint64_t in_bytes = 0, out_bytes = 0;
  for (const auto& c : cases) in_bytes = std::max(in_bytes, c.rank_bytes), out_bytes = std::max(out_bytes, c.size);
  // The model's expectation, from rank 0's view of its GPU (docs/cli.md, "Expected duration").
  const ScaleoutExpectation expected = nccl_expectation(topo, gpu, placements, cases, job.size, hosts, warmup, iters);
  const double expected_s = expected.seconds;
  if (out_file) {
    out_file->table("nccl/cases", columns_of("nccl/cases"));
    print_expectation("nccl", expected);
  }

  int64_t case_id = 0;
  bool any_ran = false, any_failed = false;
  std::string first_skip, first_failure;
  for (const auto& pname : placements) {
    NcclPlacement p = nccl_placement(topo, pname, gpu);
    std::unique_ptr<Buffer> in, out;
    if (p.reason.empty()) {
      try {
        if (pname == "peer") gpu::enable_peer_access(gpu, std::stoi(p.mem.substr(3)));
        in = allocate(topo, p.alloc, p.mem, in_bytes, 1);
        out = allocate(topo, p.alloc, p.mem, out_bytes, 0);
      } catch (const std::exception& e) {
        p.reason = e.what();
      }
    }
    cuda_ok(cudaSetDevice(gpu), "cudaSetDevice");
    if (in) fill_input(in->data(), in_bytes / sizeof(float), job.rank);
    std::string reason;
    {
      Watchdog::Scope armed(phase_watchdog(), "nccl " + pname + " allocation");
      reason = agree_on_reason(p.reason);
    }
    any_ran = any_ran || reason.empty();
    if (first_skip.empty()) first_skip = reason;
    for (const auto& c : cases) {
      CaseRow row{case_id, c.collective, pname, p.alloc, p.mem, p.via, "skipped", reason,
                  job.size, hosts, iters, c.size, c.rank_bytes, -1};
      if (reason.empty()) {
        const CaseResult r = run_case(g, {c.collective, c.size, c.rank_bytes, job.size}, *in, *out, warmup, iters,
                                      "nccl " + c.collective + " " + pname + " " + format_size(c.size));
        row.us = r.us;
        row.status = r.failure.empty() ? "ok" : "failed";
        row.reason = r.failure;
        any_failed = any_failed || !r.failure.empty();
        if (first_failure.empty()) first_failure = r.failure;
      }
      if (out_file) record_case(*out_file, row);
      file.save();
      ++case_id;
    }
  }
  {
    Watchdog::Scope armed(phase_watchdog(), "NCCL shut-down");
    ncclCommDestroy(g.comm);
  }
  if (out_file) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("%s\n", model::elapsed_line("nccl", static_cast<size_t>(case_id), elapsed, expected_s).c_str());
    std::fflush(stdout);
    if (any_failed) std::fprintf(stderr, "mempath-mpi: failed: a result check failed (%s)\n", first_failure.c_str());
  }
  return exit_code(job, any_ran, first_skip, any_failed ? kExitFailed : kExitOk);
}

}  // namespace mempath::mpi
