#include "core/error.hpp"
#include "gpu/latency_api.hpp"

namespace mempath::gpu {
namespace {
[[noreturn]] void no_cuda() { throw Unsupported("this mempath build has no CUDA support"); }
}  // namespace
void upload(int, void*, const void*, size_t) { no_cuda(); }
ChaseRun chase(int, uint64_t, uint64_t) { no_cuda(); }
bool host_native_atomics(int) { return false; }
PingPongKernel* start_pingpong(int, const std::vector<PingPongRole>&, double) { no_cuda(); }
PingPongOutcome finish_pingpong(PingPongKernel*) { no_cuda(); }
}  // namespace mempath::gpu
