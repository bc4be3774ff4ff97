#include "core/error.hpp"
#include "gpu/atomics_api.hpp"

namespace mempath::gpu {

uint64_t atomics_warps(int) { throw Unsupported("this mempath build has no CUDA support"); }

AtomicsRun run_atomics(int, void*, uint64_t, uint64_t, AtomicScope, int, int, bool) {
  throw Unsupported("this mempath build has no CUDA support");
}

}  // namespace mempath::gpu
