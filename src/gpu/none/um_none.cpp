#include "core/error.hpp"
#include "gpu/um_api.hpp"

namespace mempath::gpu {
double memset_burst(int, void*, size_t, int, int) {
  throw Unsupported("this mempath build has no CUDA support");
}
std::vector<double> inplace_update_runs(int, void*, size_t, int) {
  throw Unsupported("this mempath build has no CUDA support");
}
}  // namespace mempath::gpu
