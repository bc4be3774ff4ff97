// `mempath-mpi nccl`: NCCL all-reduce and all-gather, one GPU per rank, with the buffers
// in the GPU's own memory, in host memory, or in another GPU's memory (issue 5;
// docs/cli.md). Bandwidths follow nccl-tests (core/scaleout_plan.hpp).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "core/results.hpp"
#include "core/scaleout_plan.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "gpu/memcpy_api.hpp"
#include "mpi/mpi_commands.hpp"

namespace mempath::mpi {
namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}
void cuda_ok(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(r));
}

const std::vector<ColumnSpec> kCaseColumns = {
    {"case_id", ColumnType::Int, ""},     {"collective", ColumnType::String, ""},
    {"placement", ColumnType::String, ""}, {"alloc", ColumnType::String, ""},
    {"ranks", ColumnType::Int, ""},       {"nodes", ColumnType::Int, ""},
    {"size_bytes", ColumnType::Int, "bytes"}, {"iters", ColumnType::Int, ""},
    {"status", ColumnType::String, ""},   {"reason", ColumnType::String, ""},
    {"time_us", ColumnType::Float, "us"}, {"algbw_GBps", ColumnType::Float, "GB/s"},
    {"busbw_GBps", ColumnType::Float, "GB/s"}, {"verified", ColumnType::Int, ""},
};

struct Placement {
  std::string name, alloc, mem, reason;
};

// Where `placement` puts this rank's buffers: device (its own GPU's memory), host (its
// nearest host node: system-allocated where the GPU reads pageable memory, as on GH200,
// else pinned), peer (the next GPU of the node, through peer access).
Placement place(const Topology& topo, const std::string& placement, int gpu) {
  const GpuInfo* g = topo.find_gpu(gpu);
  Placement p{placement, "", "", ""};
  if (!g) {
    p.reason = "GPU " + std::to_string(gpu) + " does not exist on this node";
  } else if (placement == "device") {
    p.alloc = "device", p.mem = "gpu" + std::to_string(gpu);
  } else if (placement == "host") {
    const int node = g->host_numa >= 0 ? g->host_numa : 0;
    p.alloc = g->pageable_access ? "numa" : "pinned", p.mem = "numa" + std::to_string(node);
  } else if (placement == "peer") {
    const int n = static_cast<int>(topo.gpus.size());
    if (n < 2) p.reason = "peer placement needs a second GPU on the node";
    else p.alloc = "device", p.mem = "gpu" + std::to_string((gpu + 1) % n);
  } else {
    throw UsageError("invalid --placement '" + placement + "'; valid: device, host, peer");
  }
  return p;
}

}  // namespace

int cmd_nccl(const std::vector<std::string>& args, const std::vector<std::string>& argv, const Job& job) {
  Options opts("nccl", "NCCL all-reduce and all-gather with the buffers in each memory (docs/cli.md).",
               {{"coll", "LIST", "allreduce, allgather (default both)"},
                {"placement", "LIST", "device (default), host, peer"},
                {"min-size", "SIZE", "smallest buffer (default 1KiB)"},
                {"max-size", "SIZE", "largest buffer (default 1GiB)"},
                {"iters", "N", "timed collectives per size (default 20)"},
                {"warmup", "N", "untimed collectives per size first (default 5)"},
                {"timeout", "SECONDS", "longest a case may take before every rank is ended (default 300)"},
                {"output", "FILE", "HDF5 result file, written by rank 0 (default mempath-mpi-nccl-HOST-TIME.h5)"}});
  if (!opts.parse(args)) return kExitOk;
  const auto colls = split_list(opts.get_or("coll", "allreduce,allgather"));
  for (const auto& c : colls) busbw_factor(c, 2);  // validates the name
  const auto placements = split_list(opts.get_or("placement", "device"));
  const uint64_t min_size = opts.has("min-size") ? parse_size(*opts.get("min-size")) : 1024;
  const uint64_t max_size = opts.has("max-size") ? parse_size(*opts.get("max-size")) : 1ULL << 30;
  if (max_size < min_size) throw UsageError("--max-size is below --min-size");
  const int iters = static_cast<int>(opts.integer("iters", 20, 1));
  const int warmup = static_cast<int>(opts.integer("warmup", 5, 0));
  const double timeout = static_cast<double>(opts.integer("timeout", 300, 1));
  const Topology topo = discover();
  const int gpus = static_cast<int>(topo.gpus.size());
  if (gpus == 0) throw UsageError("nccl needs GPUs; this node has none");
  if (job.local_size > gpus)
    throw UsageError(std::to_string(job.local_size) + " ranks on a node with " + std::to_string(gpus) +
                     " GPUs; valid: at most one rank per GPU");
  for (const auto& p : placements) place(topo, p, 0);  // validates the names on every rank
  const int gpu = job.split_host ? job.rank : job.local;
  const int hosts = job.split_host ? 1 : job.nodes;  // collectives span hosts, not halves
  cuda_ok(cudaSetDevice(gpu), "cudaSetDevice");

  ncclUniqueId id;
  if (job.rank == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  nccl_check(ncclCommInitRank(&comm, job.size, id, job.rank), "ncclCommInitRank");
  cudaStream_t stream;
  cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t e0, e1;
  cuda_ok(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_ok(cudaEventCreate(&e1), "cudaEventCreate");

  std::unique_ptr<ResultFile> file;
  if (job.rank == 0) {
    auto attrs = collect_provenance(topo, argv);
    int version = 0;
    ncclGetVersion(&version);
    attrs["nccl_version"] = static_cast<int64_t>(version);
    attrs["mpi_ranks"] = static_cast<int64_t>(job.size);
    attrs["mpi_nodes"] = static_cast<int64_t>(hosts);
    file = std::make_unique<ResultFile>(opts.get_or("output", default_output_name("mpi-nccl", topo.host)), attrs);
    file->table("nccl/cases", kCaseColumns);
    file->save();
  }
  Watchdog watchdog = job_watchdog(timeout);
  int64_t case_id = 0;
  bool any_ran = false, any_failed = false;
  std::string first_skip;
  for (const auto& pname : placements) {
    Placement p = place(topo, pname, gpu);
    // all-gather's output holds every rank's part: the largest buffer is the output.
    std::unique_ptr<Buffer> in, out;
    if (p.reason.empty()) {
      try {
        if (pname == "peer") gpu::enable_peer_access(gpu, std::stoi(p.mem.substr(3)));
        in = allocate(topo, p.alloc, p.mem, max_size, 1);
        out = allocate(topo, p.alloc, p.mem, max_size, 0);
      } catch (const std::exception& e) {
        p.reason = e.what();
      }
    }
    cudaSetDevice(gpu);
    const std::string reason = agree_on_reason(p.reason);
    any_ran = any_ran || reason.empty();
    if (first_skip.empty()) first_skip = reason;
    for (const auto& coll : colls) {
      for (uint64_t size : power_of_two_sizes(std::max<uint64_t>(min_size, 4 * job.size), max_size)) {
        // nccl-tests' size: the all-reduce buffer, or the gathered (output) buffer.
        const size_t count = coll == "allreduce" ? size / 4 : size / 4 / job.size;
        double us = -1;
        bool verified = false;
        if (reason.empty()) {
          watchdog.arm("nccl " + coll + " " + pname + " " + format_size(size));
          auto run = [&] {
            if (coll == "allreduce")
              nccl_check(ncclAllReduce(in->data(), out->data(), count, ncclFloat, ncclSum, comm, stream), "ncclAllReduce");
            else
              nccl_check(ncclAllGather(in->data(), out->data(), count, ncclFloat, comm, stream), "ncclAllGather");
          };
          for (int k = 0; k < warmup; ++k) run();
          cuda_ok(cudaEventRecord(e0, stream), "cudaEventRecord");
          for (int k = 0; k < iters; ++k) run();
          cuda_ok(cudaEventRecord(e1, stream), "cudaEventRecord");
          cuda_ok(cudaEventSynchronize(e1), "collective");
          float ms = 0;
          cudaEventElapsedTime(&ms, e0, e1);
          const double mine = ms * 1e3 / iters;
          MPI_Allreduce(&mine, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);  // the slowest rank
          watchdog.disarm();
          // Inputs are bytes 0x01 (floats 2.369e-38): all-reduce sums n of them, all-gather copies.
          float first = 0, expected = 0;
          std::memcpy(&expected, std::vector<uint8_t>(4, 1).data(), 4);
          if (coll == "allreduce") expected *= job.size;
          cuda_ok(cudaMemcpy(&first, out->data(), 4, cudaMemcpyDefault), "cudaMemcpy");
          int ok = first == expected, all_ok = 0;
          MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
          verified = all_ok == 1;
        }
        if (job.rank != 0) continue;
        const std::string status = !reason.empty() ? "skipped" : verified ? "ok" : "failed";
        any_failed = any_failed || status == "failed";
        const double algbw = us > 0 ? size / (us * 1e-6) / 1e9 : std::nan("");
        const double busbw = algbw * busbw_factor(coll, job.size);
        file->table("nccl/cases", kCaseColumns)
            .append({{"case_id", case_id}, {"collective", coll}, {"placement", pname}, {"alloc", p.alloc},
                     {"ranks", static_cast<int64_t>(job.size)}, {"nodes", static_cast<int64_t>(hosts)},
                     {"size_bytes", static_cast<int64_t>(size)}, {"iters", static_cast<int64_t>(iters)},
                     {"status", status}, {"reason", reason.empty() && !verified ? "result check failed" : reason},
                     {"time_us", us > 0 ? us : std::nan("")}, {"algbw_GBps", algbw}, {"busbw_GBps", busbw},
                     {"verified", static_cast<int64_t>(verified)}});
        file->set_attribute("end_time", utc_now_iso8601());
        file->save();
        std::printf("MEMPATH nccl coll=%s placement=%s ranks=%d nodes=%d size=%llu status=%s", coll.c_str(),
                    pname.c_str(), job.size, hosts, static_cast<unsigned long long>(size), status.c_str());
        if (status == "ok") std::printf(" time_us=%.2f algbw_GBps=%.2f busbw_GBps=%.2f", us, algbw, busbw);
        if (!reason.empty()) std::printf(" reason=\"%s\"", reason.c_str());
        std::printf("\n");
        std::fflush(stdout);
        ++case_id;
      }
    }
  }
  ncclCommDestroy(comm);
  int failed = any_failed;  // rank 0 judged the results; every rank exits alike
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return exit_code(job, any_ran, first_skip, failed ? kExitFailed : kExitOk);
}

}  // namespace mempath::mpi
