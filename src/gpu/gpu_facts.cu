// GPU facts for the topology (gpus.txt keys, docs/topology.md) from the CUDA runtime and
// the GPU's PCI device in sysfs. A fact that cannot be queried keeps its default; nothing
// here aborts, so `mempath topo` works on a node whose driver is broken or absent.
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <string>

#include "core/topology.hpp"
#include "gpu/gpu_api.hpp"

namespace mempath {
namespace {

// Attribute value, or `fallback` when the runtime does not know it (older driver).
int attribute(cudaDeviceAttr attr, int gpu, int fallback) {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, attr, gpu) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls start clean
    return fallback;
  }
  return v;
}

// "0000:1b:00.0": lowercase as sysfs names it, 4-digit domain (the runtime may print 8).
std::string pci_bus_id(int gpu) {
  char buf[64] = {};
  if (cudaDeviceGetPCIBusId(buf, sizeof buf, gpu) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  std::string id = buf;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id.erase(0, colon - 4);
  return id;
}

std::string sysfs_pci(const std::string& bdf, const char* file) {
  std::ifstream in("/sys/bus/pci/devices/" + bdf + "/" + file);
  std::string line;
  std::getline(in, line);
  return line;
}

// "32.0 GT/s PCIe" -> 5: one generation per doubling of the transfer rate from 2.5 GT/s.
int pcie_gen(const std::string& speed) {
  try {
    const double gts = std::stod(speed);
    if (gts < 2.0) return 0;
    return 1 + static_cast<int>(std::lround(std::log2(gts / 2.5)));
  } catch (...) {
    return 0;
  }
}

int to_int_or(const std::string& s, int fallback) {
  try {
    return std::stoi(s);
  } catch (...) {
    return fallback;
  }
}

void query_numa(GpuInfo* g) {
  const int config = attribute(cudaDevAttrNumaConfig, g->id, cudaDeviceNumaConfigNone);
  if (config == cudaDeviceNumaConfigNumaNode) {
    g->numa_config = "numa_node";
    g->hbm_numa = attribute(cudaDevAttrNumaId, g->id, -1);
  }
  g->host_numa = attribute(cudaDevAttrHostNumaId, g->id, -1);
  if (g->host_numa < 0 && !g->pci_bus_id.empty())
    g->host_numa = to_int_or(sysfs_pci(g->pci_bus_id, "numa_node"), -1);
}

void query_link(GpuInfo* g) {
  // Grace Hopper: HBM is a NUMA node and the GPU walks the CPU's page tables over C2C.
  if (g->numa_config == "numa_node" && g->host_page_tables) {
    g->link_type = "c2c";
    return;
  }
  g->link_type = "pcie";
  if (g->pci_bus_id.empty()) return;
  g->pcie_gen = pcie_gen(sysfs_pci(g->pci_bus_id, "max_link_speed"));
  g->pcie_width = to_int_or(sysfs_pci(g->pci_bus_id, "max_link_width"), 0);
}

void query_peers(GpuInfo* g, int count) {
  for (int h = 0; h < count; ++h) {
    if (h == g->id) continue;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, g->id, h) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (!can) continue;
    g->peers.push_back(h);
    // Native peer atomics only exist over NVLink, so they tell NVLink from PCIe P2P.
    int atomics = 0;
    if (cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, g->id, h) != cudaSuccess)
      cudaGetLastError();
    else if (atomics == 1)
      g->nvlink_peers.push_back(h);
  }
}

GpuInfo query_gpu(int id, int count) {
  GpuInfo g;
  g.id = id;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, id) == cudaSuccess) {
    g.model = prop.name;
    g.cc = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    g.sm_count = prop.multiProcessorCount;
    g.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    g.l2_bytes = prop.l2CacheSize;
  } else {
    cudaGetLastError();
  }
  g.pci_bus_id = pci_bus_id(id);
  g.pageable_access = attribute(cudaDevAttrPageableMemoryAccess, id, 0) == 1;
  g.host_page_tables = attribute(cudaDevAttrPageableMemoryAccessUsesHostPageTables, id, 0) == 1;
  g.concurrent_managed = attribute(cudaDevAttrConcurrentManagedAccess, id, 0) == 1;
  query_numa(&g);
  query_link(&g);
  query_peers(&g, count);
  return g;
}

}  // namespace

std::vector<GpuInfo> query_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: a CPU-only node
    return {};
  }
  std::vector<GpuInfo> gpus;
  for (int id = 0; id < count; ++id) gpus.push_back(query_gpu(id, count));
  return gpus;
}

}  // namespace mempath

namespace mempath::gpu {

std::vector<Uuid> device_uuids() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  std::vector<Uuid> uuids(count, Uuid{});
  for (int id = 0; id < count; ++id) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, id) != cudaSuccess) {
      cudaGetLastError();  // keep the zero UUID: the list stays aligned with GPU indices
      continue;
    }
    std::copy(prop.uuid.bytes, prop.uuid.bytes + 16, uuids[id].begin());
  }
  return uuids;
}

}  // namespace mempath::gpu
