// cuBLAS GEMM through dlopen: the handful of entry points mempath needs, resolved once.
// Each timed sample is calls_per_rep cublasGemmEx calls between two events on the handle's
// stream, divided by that count.
#include <cublas_api.h>
#include <cuda_fp16.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "core/gemm_model.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/events.cuh"
#include "gpu/gemm_api.hpp"
#include "gpu/tiles.cuh"

namespace mempath::gpu {
namespace {

struct Cublas {
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*get_version)(cublasHandle_t, int*) = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  std::string error;
};

const Cublas& cublas() {
  static Cublas lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = nullptr;
    std::string tried;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
      tried += std::string(tried.empty() ? "" : "; ") + dlerror();
    }
    if (!h) {
      lib.error = "cuBLAS not found (" + tried + ")";
      return;
    }
    auto get = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, symbol));
      if (!fn && lib.error.empty()) lib.error = std::string("cuBLAS lacks ") + symbol;
    };
    get(lib.create, "cublasCreate_v2");
    get(lib.destroy, "cublasDestroy_v2");
    get(lib.set_stream, "cublasSetStream_v2");
    get(lib.set_math_mode, "cublasSetMathMode");
    get(lib.get_version, "cublasGetVersion_v2");
    get(lib.gemm_ex, "cublasGemmEx");
  });
  if (!lib.error.empty()) throw Unsupported(lib.error);
  return lib;
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(status));
}

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, bool operand_b) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double v = operand_b ? static_cast<double>((i * 5 + 1) % 13 - 6) / 8.0
                               : static_cast<double>((i * 7 + 3) % 17 - 8) / 8.0;
    p[i] = static_cast<T>(v);
  }
}

template <typename T>
void fill_typed(int gpu, void* p, int64_t n, bool operand_b, bool on_gpu) {
  if (on_gpu) {
    use_device(gpu);
    fill_kernel<T><<<1024, 256>>>(static_cast<T*>(device_address(p)), n, operand_b);
    cuda_check(cudaGetLastError(), "gemm fill");
    cuda_check(cudaDeviceSynchronize(), "gemm fill");
    return;
  }
  T* q = static_cast<T*>(p);
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<T>(operand_b ? gemm_b_value(i) : gemm_a_value(i));
}

struct Handle {
  const Cublas& lib;
  cublasHandle_t h = nullptr;
  cudaStream_t stream = nullptr;
  explicit Handle(const Cublas& l) : lib(l) {
    check(lib.create(&h), "cublasCreate");
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(lib.set_stream(h, stream), "cublasSetStream");
  }
  ~Handle() {
    if (stream) cudaStreamSynchronize(stream);
    if (h) lib.destroy(h);
    if (stream) cudaStreamDestroy(stream);
  }
};

}  // namespace

GemmDevice gemm_device(int gpu) {
  use_device(gpu);
  GemmDevice d;
  cuda_check(cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, gpu), "cc");
  cuda_check(cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, gpu), "cc");
  cuda_check(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, gpu), "SM count");
  cuda_check(cudaDeviceGetAttribute(&d.sm_clock_khz, cudaDevAttrClockRate, gpu), "SM clock");
  return d;
}

void gemm_fill(int gpu, const std::string& dtype, void* p, int64_t elements, bool operand_b, bool on_gpu) {
  if (dtype == "fp16") fill_typed<__half>(gpu, p, elements, operand_b, on_gpu);
  else if (dtype == "fp64") fill_typed<double>(gpu, p, elements, operand_b, on_gpu);
  else fill_typed<float>(gpu, p, elements, operand_b, on_gpu);
}

GemmRun run_gemm(int gpu, const std::string& dtype, int64_t n, const void* a_host, const void* b_host, void* c,
                 int warmup, int reps, bool reps_given, const std::vector<std::pair<int64_t, int64_t>>& probes) {
  const Cublas& lib = cublas();
  use_device(gpu);
  Handle handle(lib);
  GemmRun run;
  check(lib.get_version(handle.h, &run.cublas_version), "cublasGetVersion");
  // Default math: CUBLAS_COMPUTE_32F keeps fp32 off the TF32 tensor cores, tf32 asks for them.
  check(lib.set_math_mode(handle.h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  const void* a = device_address(a_host);
  const void* b = device_address(b_host);
  const cudaDataType type = dtype == "fp16" ? CUDA_R_16F : dtype == "fp64" ? CUDA_R_64F : CUDA_R_32F;
  const cublasComputeType_t compute = dtype == "fp64"   ? CUBLAS_COMPUTE_64F
                                      : dtype == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                        : CUBLAS_COMPUTE_32F;
  const double alpha64 = 1, beta64 = 0;
  const float alpha32 = 1, beta32 = 0;
  const void* alpha = dtype == "fp64" ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = dtype == "fp64" ? static_cast<const void*>(&beta64) : &beta32;
  const int dim = static_cast<int>(n);
  auto call = [&] {
    check(lib.gemm_ex(handle.h, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, alpha, a, type, dim, b, type, dim, beta, c,
                      type, dim, compute, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  };
  for (int w = 0; w < warmup; ++w) call();
  // A small GEMM in HBM takes microseconds, no more than an empty launch: an interval of
  // one call would fail the timing guard. Each timed interval holds enough calls to last
  // kGuardLaunches empty launches, so every size is timed, per call.
  run.empty_launch_s = empty_launch_seconds(handle.stream);
  {
    // Per call from a few back to back (one alone was noisy and long: a 1024 fp16 GEMM then
    // got too few calls), and five times the guard's 10 launches as margin. A first single
    // call that already lasts ten times that interval (a large GEMM, or operands read over
    // a link: seconds each) settles it at one call, without seven more such calls.
    constexpr int kProbeCalls = 8;
    constexpr double kGuardLaunches = 50;
    constexpr double kOneCallSettles = 10;
    const double interval = kGuardLaunches * run.empty_launch_s;
    auto timed = [&](int calls) {
      Events probe(2);
      cuda_check(cudaEventRecord(probe.e[0], handle.stream), "cudaEventRecord");
      for (int k = 0; k < calls; ++k) call();
      cuda_check(cudaEventRecord(probe.e[1], handle.stream), "cudaEventRecord");
      cuda_check(cudaStreamSynchronize(handle.stream), "gemm");
      return probe.seconds(0, 1) / calls;
    };
    double per_call = timed(1);
    if (per_call < kOneCallSettles * interval) per_call = timed(kProbeCalls);
    per_call = std::max(per_call, 1e-9);
    run.calls_per_rep = static_cast<int>(std::clamp(std::ceil(interval / per_call), 1.0, 4096.0));
    reps = gemm_timed_reps(reps, reps_given, per_call * run.calls_per_rep);
  }
  // Calls back to back with an event between intervals: the GPU never waits for the host,
  // so no launch latency falls inside an interval.
  Events ev(static_cast<size_t>(reps) + 1);
  cuda_check(cudaEventRecord(ev.e[0], handle.stream), "cudaEventRecord");
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < run.calls_per_rep; ++k) call();
    cuda_check(cudaEventRecord(ev.e[r + 1], handle.stream), "cudaEventRecord");
  }
  cuda_check(cudaStreamSynchronize(handle.stream), "gemm");
  for (int r = 0; r < reps; ++r) run.seconds.push_back(ev.seconds(r, r + 1) / run.calls_per_rep);
  const size_t bytes = static_cast<size_t>(gemm_element_bytes(dtype));
  for (const auto& [i, j] : probes) {
    unsigned char raw[8] = {};
    cuda_check(cudaMemcpy(raw, static_cast<const char*>(c) + (i + j * n) * bytes, bytes, cudaMemcpyDeviceToHost),
               "probe C");
    double v = 0;
    if (dtype == "fp16") { __half h; std::memcpy(&h, raw, 2); v = __half2float(h); }
    else if (dtype == "fp64") std::memcpy(&v, raw, 8);
    else { float f; std::memcpy(&f, raw, 4); v = f; }
    run.probes.push_back(v);
  }
  return run;
}

}  // namespace mempath::gpu
