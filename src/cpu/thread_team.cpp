#include "cpu/thread_team.hpp"

#include <algorithm>

#include "core/numa_policy.hpp"
#include "core/timer.hpp"

namespace mempath::cpu {
namespace {

inline void relax(unsigned& spins) {
  // Spin briefly for a tight start, then yield so an oversubscribed node still progresses.
  if (++spins < 4096) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  } else {
    std::this_thread::yield();
  }
}

}  // namespace

ThreadTeam::ThreadTeam(std::vector<int> cpus)
    : cpus_(std::move(cpus)), end_(cpus_.size()), errors_(cpus_.size()) {
  for (int i = 0; i < size(); ++i) threads_.emplace_back(&ThreadTeam::worker, this, i);
}

ThreadTeam::~ThreadTeam() {
  quit_.store(true);
  generation_.fetch_add(1);
  for (auto& t : threads_) t.join();
}

void ThreadTeam::worker(int index) {
  try {
    pin_this_thread(cpus_[index]);
  } catch (...) {
    errors_[index] = std::current_exception();
  }
  unsigned seen = 0;
  for (;;) {
    unsigned spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen) relax(spins);
    seen = generation_.load(std::memory_order_acquire);
    if (quit_.load()) return;
    if (arrived_.fetch_add(1) + 1 == size()) {
      start_ = now_seconds();
      released_.store(seen, std::memory_order_release);
    } else {
      spins = 0;
      while (released_.load(std::memory_order_acquire) != seen) relax(spins);
    }
    if (!errors_[index]) {
      try {
        (*job_)(index, size());
      } catch (...) {
        errors_[index] = std::current_exception();
      }
    }
    end_[index] = now_seconds();
    done_.fetch_add(1, std::memory_order_release);
  }
}

double ThreadTeam::run(const std::function<void(int, int)>& fn) {
  job_ = &fn;
  arrived_.store(0);
  done_.store(0);
  generation_.fetch_add(1, std::memory_order_release);
  unsigned spins = 0;
  while (done_.load(std::memory_order_acquire) != size()) relax(spins);
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
  return *std::max_element(end_.begin(), end_.end()) - start_;
}

}  // namespace mempath::cpu
