// GPU pointer chase and ping-pong agents (gpu/latency_api.hpp).
#include <cuda/atomic>

#include "gpu/cuda_check.cuh"
#include "gpu/latency_api.hpp"

namespace mempath::gpu {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct ChaseOut {
  uint64_t end, ns, cycles;
};

__global__ void chase_kernel(const void* start, uint64_t steps, ChaseOut* out) {
  const void* p = start;
  const uint64_t t0 = global_ns();
  const long long c0 = clock64();
  uint64_t i = 0;
  for (; i + 8 <= steps; i += 8) {
#pragma unroll
    for (int k = 0; k < 8; ++k) p = *static_cast<const void* const*>(p);
  }
  for (; i < steps; ++i) p = *static_cast<const void* const*>(p);
  // Reading the clocks only after the last load's value is used keeps that load inside
  // the timed interval (a load is waited for at its first use, not at its issue).
  if (p == nullptr) out->end = 1;
  const long long c1 = clock64();
  const uint64_t t1 = global_ns();
  out->end = reinterpret_cast<uint64_t>(p);
  out->ns = t1 - t0;
  out->cycles = static_cast<uint64_t>(c1 - c0);
}

constexpr int kMaxRoles = 2;

struct RoleArgs {
  uint8_t* flag;
  uint8_t from, to;
  uint64_t exchanges;
  long long* stamps;  // clock64 per success, or null
};

struct AgentArgs {
  RoleArgs roles[kMaxRoles];
  uint64_t timeout_ns;
};

struct AgentOut {
  uint64_t successes;
  long long c0, c1;
  uint64_t t0, t1;
};

__global__ void pingpong_kernel(AgentArgs args, AgentOut* out) {
  const RoleArgs r = args.roles[blockIdx.x];
  cuda::atomic_ref<uint8_t, cuda::thread_scope_system> flag(*r.flag);
  AgentOut o{};
  o.t0 = global_ns();
  o.c0 = clock64();
  bool timed_out = false;
  for (uint64_t i = 0; i < r.exchanges && !timed_out; ++i) {
    uint64_t waiting_since = 0;  // read only once a wait is long: see cpu::pingpong
    for (uint32_t tries = 1;; ++tries) {
      uint8_t expected = r.from;
      if (flag.compare_exchange_strong(expected, r.to, cuda::std::memory_order_acq_rel,
                                       cuda::std::memory_order_acquire))
        break;
      if (tries % 1024) continue;
      if (waiting_since == 0) {
        waiting_since = global_ns();
      } else if (global_ns() - waiting_since > args.timeout_ns) {
        timed_out = true;
        break;
      }
    }
    if (timed_out) break;
    if (r.stamps) r.stamps[i] = clock64();
    o.successes = i + 1;
  }
  o.c1 = clock64();
  o.t1 = global_ns();
  out[blockIdx.x] = o;
}

}  // namespace

void upload(int gpu, void* dst, const void* src, size_t bytes) {
  use_device(gpu);
  cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (chain upload)");
}

ChaseRun chase(int gpu, uint64_t start, uint64_t steps) {
  use_device(gpu);
  ChaseOut* out = nullptr;
  cuda_check(cudaMalloc(&out, sizeof(ChaseOut)), "cudaMalloc");
  cudaEvent_t e0, e1;
  cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
  cudaEventRecord(e0);
  chase_kernel<<<1, 1>>>(reinterpret_cast<const void*>(start), steps, out);
  cudaEventRecord(e1);
  ChaseOut host{};
  const cudaError_t status = cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaMemcpy(&host, out, sizeof host, cudaMemcpyDeviceToHost);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(out);
  cuda_check(status, "chase kernel");
  cuda_check(cudaGetLastError(), "chase kernel launch");
  return {host.end, host.ns * 1e-9, static_cast<double>(host.cycles), ms * 1e-3};
}

bool host_native_atomics(int gpu) {
  int v = 0;
  use_device(gpu);
  cuda_check(cudaDeviceGetAttribute(&v, cudaDevAttrHostNativeAtomicSupported, gpu), "cudaDeviceGetAttribute");
  return v != 0;
}

struct PingPongKernel {
  int gpu;
  size_t roles;
  AgentOut* out;
  long long* stamps;
  uint64_t stamp_count;
  int recording;
  cudaStream_t stream;
};

PingPongKernel* start_pingpong(int gpu, const std::vector<PingPongRole>& roles, double timeout_s) {
  if (roles.empty() || roles.size() > kMaxRoles) throw std::invalid_argument("one or two ping-pong roles per GPU");
  use_device(gpu);
  auto* k = new PingPongKernel{gpu, roles.size(), nullptr, nullptr, 0, -1, nullptr};
  AgentArgs args{};
  args.timeout_ns = static_cast<uint64_t>(timeout_s * 1e9);
  for (size_t i = 0; i < roles.size(); ++i) {
    args.roles[i] = {roles[i].flag, roles[i].from, roles[i].to, roles[i].exchanges, nullptr};
    if (roles[i].record) {
      k->recording = static_cast<int>(i);
      k->stamp_count = roles[i].exchanges;
      cuda_check(cudaMalloc(&k->stamps, roles[i].exchanges * sizeof(long long)), "cudaMalloc (stamps)");
      args.roles[i].stamps = k->stamps;
    }
  }
  cuda_check(cudaMalloc(&k->out, kMaxRoles * sizeof(AgentOut)), "cudaMalloc");
  cuda_check(cudaStreamCreateWithFlags(&k->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  pingpong_kernel<<<static_cast<unsigned>(roles.size()), 1, 0, k->stream>>>(args, k->out);
  cuda_check(cudaGetLastError(), "ping-pong kernel launch");
  return k;
}

PingPongOutcome finish_pingpong(PingPongKernel* k) {
  use_device(k->gpu);
  const cudaError_t status = cudaStreamSynchronize(k->stream);
  PingPongOutcome result;
  AgentOut out[kMaxRoles] = {};
  std::vector<long long> stamps(k->stamp_count);
  if (status == cudaSuccess) {
    cudaMemcpy(out, k->out, sizeof out, cudaMemcpyDeviceToHost);
    if (k->stamps) cudaMemcpy(stamps.data(), k->stamps, stamps.size() * sizeof(long long), cudaMemcpyDeviceToHost);
  }
  cudaFree(k->out);
  cudaFree(k->stamps);
  cudaStreamDestroy(k->stream);
  const int recording = k->recording;
  const size_t roles = k->roles;
  delete k;
  cuda_check(status, "ping-pong kernel");
  for (size_t i = 0; i < roles; ++i) result.successes.push_back(out[i].successes);
  if (recording >= 0) {
    const AgentOut& o = out[recording];
    const double ns_per_cycle = o.c1 > o.c0 ? static_cast<double>(o.t1 - o.t0) / (o.c1 - o.c0) : 0;
    for (uint64_t i = 0; i < o.successes; ++i) result.stamps_ns.push_back((stamps[i] - o.c0) * ns_per_cycle);
  }
  return result;
}

}  // namespace mempath::gpu
