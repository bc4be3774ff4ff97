#include "core/error.hpp"
#include "gpu/stream_api.hpp"

namespace mempath::gpu {

StreamRun run_stream(int, double*, double*, double*, size_t, int, int, double, const double[3], const double[3]) {
  throw Unsupported("this mempath build has no CUDA support");
}

}  // namespace mempath::gpu
