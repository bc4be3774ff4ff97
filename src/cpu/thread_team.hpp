#pragma once
// Pinned worker threads that start a timed region together: time = last end - common
// start, where the common start is taken by the last thread to arrive, just before it
// releases the others (docs/design.md, Conventions).
#include <atomic>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace mempath::cpu {

class ThreadTeam {
 public:
  explicit ThreadTeam(std::vector<int> cpus);  // one thread per CPU, pinned to it
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  // Runs fn(index, size) on every thread; returns seconds from the common start to the
  // last thread's end. Rethrows the first exception a thread raised.
  double run(const std::function<void(int, int)>& fn);
  int size() const { return static_cast<int>(cpus_.size()); }

 private:
  void worker(int index);
  std::vector<int> cpus_;
  std::vector<std::thread> threads_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<unsigned> generation_{0};
  std::atomic<unsigned> released_{0};
  std::atomic<int> arrived_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> quit_{false};
  double start_ = 0;
  std::vector<double> end_;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace mempath::cpu
