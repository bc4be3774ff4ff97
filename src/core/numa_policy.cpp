#include "core/numa_policy.hpp"

#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <thread>

namespace mempath {

void pin_this_thread(int cpu) { pin_this_thread(std::vector<int>{cpu}); }

void pin_this_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    throw std::runtime_error("cannot pin a thread to CPU " + std::to_string(cpus.front()) +
                             " (outside this process's CPU set? check the job's binding)");
}

std::vector<int> allowed_of(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  std::vector<int> out;
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE && CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

void bind_this_thread_memory(int node) {
  if (node < 0) {
    set_mempolicy(MPOL_DEFAULT, nullptr, 0);
    return;
  }
  const unsigned long bits = 8 * sizeof(unsigned long);
  std::vector<unsigned long> mask(node / bits + 1, 0);
  mask[node / bits] |= 1UL << (node % bits);
  if (set_mempolicy(MPOL_BIND, mask.data(), mask.size() * bits + 1) != 0)
    throw std::runtime_error("cannot bind memory to NUMA node " + std::to_string(node));
}

void run_on_threads(int count, const std::vector<int>& cpus, int node,
                    const std::function<void(int, int)>& fn) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(count);
  for (int i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      try {
        if (!cpus.empty()) pin_this_thread(cpus[i % cpus.size()]);
        if (node >= 0) bind_this_thread_memory(node);
        fn(i, count);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void slice(size_t n, int index, int count, size_t align, size_t* begin, size_t* end) {
  const size_t blocks = (n + align - 1) / align;
  const size_t per = blocks / count, extra = blocks % count;
  const size_t first = index * per + std::min<size_t>(index, extra);
  const size_t mine = per + (static_cast<size_t>(index) < extra ? 1 : 0);
  *begin = std::min(n, first * align);
  *end = std::min(n, (first + mine) * align);
}

size_t page_size() {
  static const size_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t{4096};
  }();
  return page;
}

void page_slice(size_t bytes, int index, int count, size_t page, size_t* begin, size_t* end) {
  slice(bytes, index, count, page, begin, end);
}

}  // namespace mempath
