// `mempath-mpi nccl`: NCCL all-reduce and all-gather, one GPU per rank, with the buffers
// in the GPU's own memory (cudaMalloc or system-allocated on GH200's HBM node), in host
// memory, in another GPU's memory, or in another superchip's host memory (the
// paper's Figs. 18/19; docs/cli.md). The cases, rows and lines are nccl_cases.hpp's; this
// runs them. Every element of every result is checked, untimed, against what the
// collective must give.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <memory>
#include <sstream>

#include "core/allocators.hpp"
#include "core/kinds.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/results.hpp"
#include "core/scaleout_plan.hpp"
#include "gpu/memcpy_api.hpp"
#include "mpi/mpi_commands.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/nccl_cases.hpp"

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
  std::string failure;  // this rank's first wrong element
};

// Warm-up, then the output cleared (so the check proves the timed collectives wrote it)
// and `iters` timed collectives; then every element checked.
CaseResult run_case(const Gpu& g, const Collective& c, Buffer& in, Buffer& out, int warmup, int iters) {
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
  r.failure = check_result(c, out.data());
  return r;
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

// The GPUs the ranks ran on, by UUID (rank 0; 0 where one is unknown): ranks of several
// nodes on one machine may share one (a test cluster's nodes), which makes the collective
// a functional result.
int distinct_gpus(const Job& job, int gpu) {
  const auto uuids = gpu::device_uuids();
  const std::string mine = gpu < static_cast<int>(uuids.size()) ? gpu_uuid_text(uuids[gpu]) : "";
  std::vector<std::string> all = gather_strings(mine, job);
  if (job.rank != 0 || std::any_of(all.begin(), all.end(), [](const std::string& u) { return u.empty(); })) return 0;
  std::sort(all.begin(), all.end());
  return static_cast<int>(std::unique(all.begin(), all.end()) - all.begin());
}

class Nccl final : public NcclCases {
 public:
  ~Nccl() override {
    if (!g_.comm) return;
    in_.reset(), out_.reset();
    Watchdog::Scope armed(phase_watchdog(), "NCCL shut-down");
    ncclCommDestroy(g_.comm);
  }
  void prepare() override {
    g_ = start_nccl(running_job(), gpu_);
    distinct_gpus_ = distinct_gpus(running_job(), gpu_);
  }
  std::map<std::string, Attribute> attributes() const override {
    int version = 0;
    ncclGetVersion(&version);
    return {{"nccl_version", static_cast<int64_t>(version)}, {"mpi_ranks", static_cast<int64_t>(ranks_)},
            {"mpi_nodes", static_cast<int64_t>(hosts_)},
            {"mpi_machines", static_cast<int64_t>(running_job().machines)},
            {"mpi_gpus", static_cast<int64_t>(distinct_gpus_)}};
  }
  // The placement's input and output, as large as its largest case needs, kept for its
  // cases: a placement that cannot have them is skipped, one whose input could not be
  // written fails.
  void setup(size_t i) override {
    if (placement_index(i) != ready_) {
      ready_ = placement_index(i);
      in_.reset(), out_.reset();
      unready_.clear(), broken_.clear();
      const NcclPlacement& p = placement(i);
      try {
        if (p.name == "peer") gpu::enable_peer_access(gpu_, std::stoi(p.mem.substr(3)));
        in_ = allocate(*topo_, *p.alloc, p.mem, in_bytes_, 1);
        out_ = allocate(*topo_, *p.alloc, p.mem, out_bytes_, 0);
      } catch (const std::exception& e) {
        unready_ = e.what();
      }
      try {
        cuda_ok(cudaSetDevice(gpu_), "cudaSetDevice");
        if (in_) fill_input(in_->data(), in_bytes_ / sizeof(float), running_job().rank);
      } catch (const std::exception& e) {
        broken_ = e.what();
      }
    }
    if (!unready_.empty()) throw Unsupported(unready_);
    if (!broken_.empty()) throw std::runtime_error(broken_);
  }
  Outcome run(size_t i) override {
    const NcclCase& c = size(i);
    const CaseResult r = run_case(g_, {c.collective, c.size, c.rank_bytes, ranks_}, *in_, *out_, warmup_, iters_);
    return {r.failure.empty() ? "ok" : "failed", r.failure, r.us};
  }

 private:
  Gpu g_;
  int distinct_gpus_ = 0;
  size_t ready_ = static_cast<size_t>(-1);  // the placement whose buffers are allocated
  std::string unready_, broken_;            // why they could not be had, or filled
  std::unique_ptr<Buffer> in_, out_;
};

}  // namespace

std::unique_ptr<Benchmark> make_nccl() { return std::make_unique<Nccl>(); }

}  // namespace mempath::mpi
