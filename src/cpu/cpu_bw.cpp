#include "cpu/cpu_bw.hpp"

#include <atomic>
#include <cstring>

#include "core/numa_policy.hpp"
#include "cpu/thread_team.hpp"

namespace mempath::cpu {

BwRun run_bw(const Isa& isa, const std::vector<int>& cpus, Op op, const void* src, void* dst,
             size_t bytes, int passes, int warmup, int reps, uint8_t fill,
             const std::function<void()>& on_start, const std::function<void()>& on_end) {
  ThreadTeam team(cpus);
  const int n = team.size();
  // Whole pages of the size the node runs per thread (64 KiB on Alps): no shared page.
  const size_t page = page_size();
  std::vector<uint64_t> sums(n);
  uint64_t word = 0;
  auto kernel = [&](int i, int count) {
    size_t begin, end;
    page_slice(bytes, i, count, page, &begin, &end);
    const char* s = static_cast<const char*>(src) + begin;
    char* d = static_cast<char*>(dst) + begin;
    uint64_t sum = 0;
    for (int p = 0; p < passes; ++p) {
      if (op == Op::Read) sum += isa.read(s, end - begin);
      else if (op == Op::Write) isa.write(d, end - begin, word);
      else isa.copy(d, s, end - begin);
    }
    sums[i] = sum;
  };
  // A copy's destination is cleared after the warm-up (untimed, by the same threads, so
  // the pages stay where they are): the data check then proves the timed copies ran.
  auto clear_dst = [&](int i, int count) {
    size_t begin, end;
    page_slice(bytes, i, count, page, &begin, &end);
    std::memset(static_cast<char*>(dst) + begin, 0, end - begin);
  };
  BwRun run;
  if (on_start) on_start();
  for (int r = 0; r < warmup + reps; ++r) {
    if (op == Op::Copy && warmup > 0 && r == warmup) team.run(clear_dst);
    word = 0x0202020202020202ULL + static_cast<uint64_t>(r);  // each write distinct
    const double t = team.run(kernel);
    if (r >= warmup) run.seconds.push_back(t);
  }
  if (on_end) on_end();
  // Data check (untimed): the read sum is what the fill implies, written/copied words
  // are what the last repetition stored.
  if (op == Op::Read) {
    uint64_t total = 0;
    for (uint64_t s : sums) total += s;
    const uint64_t expected = (bytes / 8) * word_of(fill) * static_cast<uint64_t>(passes);
    run.verified = total == expected;
    if (!run.verified) run.detail = "read sum differs from the buffer's known content";
    return run;
  }
  const uint64_t expect = op == Op::Write ? word : word_of(fill);
  std::atomic<uint64_t> bad{0};
  team.run([&](int i, int count) {
    size_t begin, end;
    page_slice(bytes / 8 * 8, i, count, page, &begin, &end);
    const uint64_t* d = static_cast<const uint64_t*>(dst);
    uint64_t local = 0;
    for (size_t k = begin / 8; k < end / 8; ++k) local += d[k] != expect;
    bad += local;
  });
  run.verified = bad == 0;
  if (!run.verified) run.detail = std::to_string(bad.load()) + " of " + std::to_string(bytes / 8) +
                                  " words hold the wrong value after " +
                                  (op == Op::Write ? "write" : "copy");
  return run;
}

}  // namespace mempath::cpu
