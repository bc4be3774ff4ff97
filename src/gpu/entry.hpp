#pragma once
// The one seam of a build without CUDA for the GPU families (gpu/none/gpu_none.cpp is the
// runtime's): a family's header declares each entry point with MEMPATH_GPU_ENTRY. Where
// CUDA is built its .cu defines them; elsewhere the same line is an inline body that
// throws Unsupported (MEMPATH_GPU_ENTRY_OR: answers `fallback`), so a family needs no stub
// file of its own. A CPU-only build lists no GPU, so no planned case reaches one.
#include "core/error.hpp"

namespace mempath::gpu {

[[noreturn]] inline void no_cuda() {
  throw Unsupported("this mempath build has no CUDA support (rebuild where nvcc is found)");
}

}  // namespace mempath::gpu

#if MEMPATH_HAVE_CUDA
#define MEMPATH_GPU_ENTRY(ret, name, params) ret name params;
#define MEMPATH_GPU_ENTRY_OR(ret, name, params, fallback) ret name params;
#else
#define MEMPATH_GPU_ENTRY(ret, name, params) \
  inline ret name params { no_cuda(); }
#define MEMPATH_GPU_ENTRY_OR(ret, name, params, fallback) \
  inline ret name params { return fallback; }
#endif
