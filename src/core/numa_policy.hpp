#pragma once
// Thread placement: pin a thread to a CPU, bind its allocations to a NUMA node, and run
// untimed setup work (first touch, fills, checks) from threads placed that way.
#include <cstddef>
#include <functional>
#include <vector>

namespace mempath {

void pin_this_thread(int cpu);
void pin_this_thread(const std::vector<int>& cpus);
// The CPUs of `cpus` that this process may run on (sched_getaffinity at the call): a
// launcher's binding (srun --cpu-bind, taskset) narrows a rank's NUMA node to these.
std::vector<int> allowed_of(const std::vector<int>& cpus);
// MPOL_BIND of the calling thread to `node` (node < 0: back to the default policy).
void bind_this_thread_memory(int node);

// Runs fn(index, count) on `count` threads, each pinned to cpus[index % cpus.size()]
// (unpinned when cpus is empty) and with its memory bound to `node` (>= 0), and waits.
void run_on_threads(int count, const std::vector<int>& cpus, int node,
                    const std::function<void(int, int)>& fn);

// The slice [begin, end) of n items that worker `index` of `count` handles, aligned to
// `align` items so that vector kernels see whole cache lines.
void slice(size_t n, int index, int count, size_t align, size_t* begin, size_t* end);

}  // namespace mempath
