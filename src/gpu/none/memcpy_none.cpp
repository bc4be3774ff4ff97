// CPU-only build: host<->device transfers are not available (memcpy_api.hpp).
#include "core/error.hpp"
#include "gpu/memcpy_api.hpp"

namespace mempath::gpu {
namespace {
[[noreturn]] void no_cuda() { throw Unsupported("this mempath build has no CUDA support (rebuild where nvcc is found)"); }
}  // namespace

CopyRun run_copies(const std::vector<CopyStream>&, int, int, int) { no_cuda(); }
std::vector<double> time_sync_copies(int, CopyDir, void*, const void*, size_t, int, int) { no_cuda(); }
uint64_t count_device_byte_mismatches(int, const void*, size_t, uint8_t) { no_cuda(); }
void set_device_bytes(int, void*, size_t, uint8_t) { no_cuda(); }
void enable_peer_access(int, int) { no_cuda(); }
CopyRun run_staged(const std::vector<StagedStream>&, int, int, int) { no_cuda(); }
}  // namespace mempath::gpu
