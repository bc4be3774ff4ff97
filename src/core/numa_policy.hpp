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

// The page size the node runs: sysconf(_SC_PAGESIZE), 4 KiB on x86, 64 KiB on the Grace
// kernels of CSCS Alps (read once).
size_t page_size();

// The bytes [begin, end) of a `bytes`-long buffer that worker `index` of `count` handles:
// whole pages of `page` bytes (the last chunk ends with the buffer), so no two threads
// share a page: each thread's first touch places its own pages and no cache line is
// shared. The CPU kernels and the first-touch fills pass page_size(); tests inject others.
void page_slice(size_t bytes, int index, int count, size_t page, size_t* begin, size_t* end);

}  // namespace mempath
