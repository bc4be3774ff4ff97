#include "cpu/stream.hpp"

#include <atomic>

#include "core/numa_policy.hpp"
#include "core/stream_plan.hpp"
#include "cpu/thread_team.hpp"

namespace mempath::cpu {
namespace {

// Plain loops, compiled with the project's flags as STREAM is with its own: the compiler
// vectorises them; nothing here may be skipped because every array is checked afterwards.
void copy(double* __restrict c, const double* __restrict a, size_t n) {
  for (size_t i = 0; i < n; ++i) c[i] = a[i];
}
void scale(double* __restrict b, const double* __restrict c, double s, size_t n) {
  for (size_t i = 0; i < n; ++i) b[i] = s * c[i];
}
void add(double* __restrict c, const double* __restrict a, const double* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
void triad(double* __restrict a, const double* __restrict b, const double* __restrict c, double s, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

}  // namespace

StreamRun run_stream(const std::vector<int>& cpus, double* a, double* b, double* c, size_t n,
                     int warmup, int reps) {
  ThreadTeam team(cpus);
  // The scalar comes from memory the compiler cannot see through.
  volatile double scalar_source = kStreamScalar;
  const double s = scalar_source;
  // Each thread's slice is whole pages of the size the node runs (64 KiB on Alps).
  const size_t page = page_size();
  auto on_slices = [&](auto&& body) {
    return team.run([&](int i, int count) {
      size_t begin, end;
      page_slice(n * sizeof(double), i, count, page, &begin, &end);
      body(begin / sizeof(double), (end - begin) / sizeof(double));
    });
  };
  const StreamValues start;
  on_slices([&](size_t o, size_t len) {
    for (size_t k = o; k < o + len; ++k) a[k] = start.a, b[k] = start.b, c[k] = start.c;
  });
  StreamRun run;
  run.seconds.resize(4);
  for (int r = 0; r < warmup + reps; ++r) {
    const double t[4] = {
        on_slices([&](size_t o, size_t len) { copy(c + o, a + o, len); }),
        on_slices([&](size_t o, size_t len) { scale(b + o, c + o, s, len); }),
        on_slices([&](size_t o, size_t len) { add(c + o, a + o, b + o, len); }),
        on_slices([&](size_t o, size_t len) { triad(a + o, b + o, c + o, s, len); }),
    };
    if (r >= warmup)
      for (int k = 0; k < 4; ++k) run.seconds[k].push_back(t[k]);
  }
  const StreamValues want = stream_values_after(warmup + reps);
  std::atomic<size_t> bad{0};
  on_slices([&](size_t o, size_t len) {
    size_t local = 0;
    for (size_t k = o; k < o + len; ++k)
      local += !stream_close(a[k], want.a) + !stream_close(b[k], want.b) + !stream_close(c[k], want.c);
    bad += local;
  });
  run.verified = bad == 0;
  if (!run.verified)
    run.detail = std::to_string(bad.load()) + " of " + std::to_string(3 * n) +
                 " array elements differ from the values STREAM's recurrence predicts";
  return run;
}

}  // namespace mempath::cpu
