#include "core/allocators.hpp"

#include <numa.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/numa_policy.hpp"
#include "core/device_runtime.hpp"

namespace mempath {
namespace {

constexpr int kSetupThreads = 8;

int parse_index(const std::string& mem, const std::string& prefix) {
  if (mem.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoi(mem.substr(prefix.size()));
  } catch (...) {
    return -1;
  }
}

// Fills host-mapped memory from threads placed on `numa`, so first-touch allocators put
// their pages there.
void fill_from_node(const Topology& topo, void* ptr, size_t bytes, int numa, uint8_t value) {
  const auto cpus = setup_cpus(topo, numa);
  const int count = static_cast<int>(std::max<size_t>(1, std::min<size_t>(kSetupThreads, cpus.empty() ? 4 : cpus.size())));
  const size_t page = page_size();  // a page is touched by one thread (64 KiB on Alps)
  run_on_threads(count, cpus, numa, [&](int i, int n) {
    size_t begin, end;
    page_slice(bytes, i, n, page, &begin, &end);
    std::memset(static_cast<char*>(ptr) + begin, value, end - begin);
  });
}

}  // namespace

uint64_t free_bytes(const std::string& mem) {
  if (const int n = parse_index(mem, "numa"); n >= 0) {
    // One memory node: the kernel's MemAvailable counts the page cache it would drop; the
    // node's MemFree does not (and on some VMs reports a fraction of the machine).
    if (numa_num_configured_nodes() == 1) {
      std::ifstream meminfo("/proc/meminfo");
      unsigned long long kib = 0;
      for (std::string line; std::getline(meminfo, line);)
        if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) return kib * 1024;
    }
    long long free = 0;
    numa_node_size64(n, &free);
    return free > 0 ? static_cast<uint64_t>(free) : 0;
  }
  size_t free = 0, total = 0;
  gpu::mem_info(parse_index(mem, "gpu"), &free, &total);
  return free;
}

std::vector<int> setup_cpus(const Topology& topo, int numa) {
  const NumaNode* node = topo.find_numa(numa);
  if (node && !node->cpus.empty()) return node->cpus;
  // A node of a socket numa=fake split: the socket's CPUs.
  if (node && node->socket >= 0 && node->socket != numa) return setup_cpus(topo, node->socket);
  if (node && node->gpu >= 0) {
    const GpuInfo* g = topo.find_gpu(node->gpu);
    if (g && g->host_numa >= 0) {
      const NumaNode* host = topo.find_numa(g->host_numa);
      if (host) return host->cpus;
    }
  }
  return {};
}

Buffer::Buffer(Alloc alloc, std::string mem, size_t bytes) : mem_(std::move(mem)), kind_(alloc), bytes_(bytes) {}

Buffer::~Buffer() {
  if (!ptr_) return;
  try {
    if (registered_) gpu::unregister_host(ptr_);
    switch (kind_) {
      case Alloc::System: munmap(ptr_, bytes_); break;
      case Alloc::Numa: case Alloc::Registered: numa_free(ptr_, bytes_); break;
      case Alloc::Device: gpu::free_device(ptr_); break;
      case Alloc::Managed: gpu::free_managed(ptr_); break;
      case Alloc::Pinned: gpu::free_pinned(ptr_); break;
    }
  } catch (...) {
    // Freeing must not throw out of a destructor; the process is ending the case anyway.
  }
}

std::unique_ptr<Buffer> allocate(const Topology& topo, Alloc alloc, const std::string& mem, size_t bytes,
                                 uint8_t fill, bool huge_pages) {
  auto buf = std::make_unique<Buffer>(alloc, mem, bytes);
  const AllocInfo& a = alloc_info(alloc);
  if (mem == kInterleave) {
    // Pages alternate over every host NUMA node with CPUs (numactl --interleave), first
    // touched by those nodes' cores.
    if (a.kind != Alloc::Numa) throw Unsupported("interleaved pages come from numa_alloc_interleaved: use the numa allocator");
    bitmask* nodes = numa_allocate_nodemask();
    std::vector<int> cpus;
    for (const auto& n : topo.numa_nodes) {
      if (n.kind != MemKind::Host || n.cpus.empty()) continue;
      numa_bitmask_setbit(nodes, static_cast<unsigned>(n.id));
      cpus.insert(cpus.end(), n.cpus.begin(), n.cpus.end());
    }
    void* p = numa_alloc_interleaved_subset(bytes, nodes);
    numa_free_nodemask(nodes);
    if (!p) throw Unsupported("numa_alloc_interleaved_subset(" + std::to_string(bytes) + ") failed");
    buf->ptr_ = p;
    const int count = static_cast<int>(std::max<size_t>(1, std::min<size_t>(kSetupThreads, cpus.size())));
    const size_t page = page_size();
    run_on_threads(count, cpus, -1, [&](int i, int n) {
      size_t begin, end;
      page_slice(bytes, i, n, page, &begin, &end);
      std::memset(static_cast<char*>(p) + begin, fill, end - begin);
    });
    return buf;
  }
  buf->numa_ = parse_index(mem, "numa");
  buf->gpu_ = parse_index(mem, "gpu");
  const Memory* m = topo.find_mem(mem);
  if (!m) throw UsageError("unknown memory '" + mem + "'; valid: " + [&] {
    std::string s;
    for (const auto& n : topo.mem_names()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }());
  const bool on_numa = buf->numa_ >= 0;
  if (huge_pages && !a.pageable)
    throw Unsupported("huge pages are requested with madvise for system and numa memory, not " + std::string(a.name));
  // Before the first touch, so the fault handler can hand out huge pages.
  auto advise = [&](void* p) {
    if (huge_pages && madvise(p, bytes, MADV_HUGEPAGE) != 0)
      throw Unsupported(std::string("madvise(MADV_HUGEPAGE) failed: ") + std::strerror(errno) +
                        " (transparent huge pages disabled?)");
  };
  switch (a.kind) {
    case Alloc::System: {
      if (!on_numa) throw Unsupported("the system allocator places memory on NUMA nodes, not on " + mem);
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw Unsupported("mmap of " + std::to_string(bytes) + " bytes failed");
      buf->ptr_ = p;
      advise(p);
      fill_from_node(topo, p, bytes, buf->numa_, fill);
      break;
    }
    case Alloc::Numa:
    case Alloc::Registered: {
      if (!on_numa) throw Unsupported(std::string(a.name) + " memory is allocated on NUMA nodes, not on " + mem);
      void* p = numa_alloc_onnode(bytes, buf->numa_);
      if (!p) throw Unsupported("numa_alloc_onnode(" + std::to_string(bytes) + ", " +
                                std::to_string(buf->numa_) + ") failed");
      buf->ptr_ = p;
      advise(p);
      fill_from_node(topo, p, bytes, buf->numa_, fill);
      if (a.kind == Alloc::Registered) {
        gpu::register_host(p, bytes);
        buf->registered_ = true;
      }
      break;
    }
    case Alloc::Device:
      if (buf->gpu_ < 0) throw Unsupported("cudaMalloc memory lives on a GPU, not on " + mem);
      buf->ptr_ = gpu::alloc_device(buf->gpu_, bytes);
      gpu::fill(buf->gpu_, buf->ptr_, bytes, fill);
      break;
    case Alloc::Managed:
      buf->ptr_ = gpu::alloc_managed(bytes);
      if (on_numa) {
        fill_from_node(topo, buf->ptr_, bytes, buf->numa_, fill);
      } else {
        gpu::prefetch_managed(buf->ptr_, bytes, buf->gpu_);
        gpu::fill(buf->gpu_, buf->ptr_, bytes, fill);
      }
      break;
    case Alloc::Pinned: {
      if (!on_numa) throw Unsupported("pinned memory is host memory, not " + mem);
      // cudaMallocHost pins (and so places) its pages at once: allocate from a thread whose
      // memory policy is bound to the node.
      std::exception_ptr error;
      run_on_threads(1, setup_cpus(topo, buf->numa_), buf->numa_, [&](int, int) {
        try {
          buf->ptr_ = gpu::alloc_pinned(bytes);
        } catch (...) {
          error = std::current_exception();
        }
      });
      if (error) std::rethrow_exception(error);
      fill_from_node(topo, buf->ptr_, bytes, buf->numa_, fill);
      break;
    }
  }
  return buf;
}

namespace {

// One memory under two names: a GPU's HBM NUMA node and its gpuN (docs/topology.md).
bool same_memory(const Topology& topo, const std::string& a, const std::string& b) {
  auto named = [&](const std::string& name) {
    for (const auto& m : topo.memories)
      if (m.kind == MemKind::Device && m.numa >= 0 && name == "numa" + std::to_string(m.numa)) return m.name;
    return name;
  };
  return named(a) == named(b);
}

// Every share of a placement ("numa0:0.5,numa1:0.5", or one memory) on a node that
// interleaved pages are spread over; a node list without such nodes refutes nothing.
bool on_interleave_nodes(const Topology& topo, const std::string& where) {
  std::vector<std::string> hosts;
  for (const auto& n : topo.numa_nodes)
    if (n.kind == MemKind::Host && !n.cpus.empty()) hosts.push_back("numa" + std::to_string(n.id));
  if (hosts.empty()) return true;
  std::istringstream shares(where);
  for (std::string share; std::getline(shares, share, ',');) {
    const std::string name = share.substr(0, share.find(':'));
    if (std::find(hosts.begin(), hosts.end(), name) == hosts.end()) return false;
  }
  return true;
}

}  // namespace

std::string drawn_under(const Topology& topo, const std::string& mem, Alloc alloc, const std::string& placement) {
  const size_t first = placement.find_first_not_of(" \t"), last = placement.find_last_not_of(" \t");
  const std::string where = first == std::string::npos ? "" : placement.substr(first, last - first + 1);
  // "-" is a summary line's empty field.
  if (where.empty() || where == "unknown" || where == "-") return alloc == Alloc::Managed ? "" : mem;
  if (mem == kInterleave) return on_interleave_nodes(topo, where) ? mem : "";
  if (where.find_first_of(",:;") != std::string::npos) return "";
  if (same_memory(topo, where, mem)) return mem;
  if (!topo.memories.empty() && !topo.find_mem(where)) return "";
  return where;
}

std::string format_placement(const std::vector<int>& status) {
  std::map<int, size_t> counts;
  size_t known = 0;
  for (int s : status) {
    counts[s >= 0 ? s : -1]++;
    if (s >= 0) ++known;
  }
  if (known == 0) return "unknown";
  if (counts.size() == 1) return "numa" + std::to_string(status.front());
  std::string out;
  char buf[32];
  auto add = [&](const std::string& name, size_t n) {
    std::snprintf(buf, sizeof buf, ":%.3g", static_cast<double>(n) / status.size());
    out += (out.empty() ? "" : ",") + name + buf;
  };
  for (const auto& [node, n] : counts)
    if (node >= 0) add("numa" + std::to_string(node), n);
  if (counts.count(-1)) add("unknown", counts[-1]);  // pages not (yet) backed, listed last
  return out;
}

double huge_page_fraction(const Buffer& buffer) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (alloc_info(buffer.kind()).gpu_owned) return nan;
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return nan;
  const uint64_t begin = reinterpret_cast<uintptr_t>(buffer.data()), end = begin + buffer.bytes();
  uint64_t huge = 0;
  bool inside = false, seen = false;
  std::string line;
  while (std::getline(smaps, line)) {
    unsigned long long lo, hi;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo < end && hi > begin;  // a mapping header: does it overlap the buffer?
      seen = seen || inside;
      continue;
    }
    unsigned long long kb;
    if (inside && std::sscanf(line.c_str(), "AnonHugePages: %llu kB", &kb) == 1) huge += kb * 1024;
  }
  return seen ? std::min(1.0, static_cast<double>(huge) / buffer.bytes()) : nan;
}

std::string placement(const Buffer& buffer) {
  if (alloc_info(buffer.kind()).gpu_owned) return "gpu" + std::to_string(buffer.gpu());
  const size_t page = page_size();
  const size_t pages = std::max<size_t>(1, buffer.bytes() / page);
  const size_t samples = std::min<size_t>(pages, 512);
  std::vector<void*> addrs(samples);
  std::vector<int> status(samples, -1);
  for (size_t i = 0; i < samples; ++i)
    addrs[i] = static_cast<char*>(buffer.data()) + (i * pages / samples) * page;
  const long rc = move_pages(0, samples, addrs.data(), nullptr, status.data(), 0);
  // Managed pages that live on a GPU are in no host page table on a machine without HMM,
  // and CUDA has no residency query (its last-prefetch attribute names where pages were
  // sent, not where they are now): such a buffer is honestly "unknown".
  return rc == 0 ? format_placement(status) : "unknown";
}

}  // namespace mempath
