#include "core/error.hpp"
#include "gpu/gemm_api.hpp"

namespace mempath::gpu {

GemmDevice gemm_device(int) { throw Unsupported("this mempath build has no CUDA support"); }
void gemm_fill(int, const std::string&, void*, int64_t, bool, bool) {
  throw Unsupported("this mempath build has no CUDA support");
}
GemmRun run_gemm(int, const std::string&, int64_t, const void*, const void*, void*, int, int, bool,
                 const std::vector<std::pair<int64_t, int64_t>>&) {
  throw Unsupported("this mempath build has no CUDA support");
}

}  // namespace mempath::gpu
