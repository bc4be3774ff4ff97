#include "core/duration_model.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/kinds.hpp"
#include "core/topology.hpp"

namespace mempath::model {

namespace {

double link_gbps(const Rates& r, PuKind pu_kind, const std::string& link) {
  if (link == "local") return pu_kind == PuKind::Gpu ? r.gpu_local_gbps : r.cpu_socket_gbps;
  if (link == "c2c") return r.c2c_gbps;
  if (link == "nvlink") return r.nvlink_gbps;
  if (link == "interconnect") return r.interconnect_gbps;
  return r.pcie_gbps;  // pcie, peer, spread, unknown, "": the host link
}

std::string format_seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", s);
  return text;
}

}  // namespace

Rates rates_of(const Topology& topo) {
  Rates r;
  bool superchip = false;
  double pcie = 0;
  size_t nvlink_peers = 0;
  for (const auto& g : topo.gpus) {
    superchip = superchip || g.link_type == "c2c";
    const int gen = std::clamp(g.pcie_gen, 0, 5), width = g.pcie_width;
    // The slowest GPU's link counts: the estimate errs long, never short, on a mixed node.
    const double gbps = gen > 0 && width > 0 ? width * kPcieLaneGBps[gen] : 16 * kPcieLaneGBps[4];
    pcie = pcie > 0 ? std::min(pcie, gbps) : gbps;
    nvlink_peers = std::max(nvlink_peers, g.nvlink_peers.size());
  }
  if (pcie > 0) r.pcie_gbps = pcie;
  if (superchip) r.cpu_socket_gbps = kGraceSocketGBps;
  // A GH200 board wires every pair of its superchips by their own links: a GPU the driver
  // fenced leaves its Grace and its idle links, so the links are shared by the board's other
  // superchips (Grace sockets), not by the peers still visible (as analysis/model/peaks.py).
  if (superchip && nvlink_peers > 0) {
    size_t sockets = 0;
    for (const auto& p : topo.processors) sockets += p.kind == PuKind::Cpu && p.numa >= 0;
    if (sockets > 1) nvlink_peers = std::max(nvlink_peers, sockets - 1);
  }
  if (nvlink_peers > 0) r.nvlink_gbps = kNvlinkGpuGBps / static_cast<double>(nvlink_peers);
  return r;
}

double path_gbps(const Rates& rates, PuKind pu_kind, const std::string& via) {
  double gbps = link_gbps(rates, pu_kind, via.empty() ? "" : "local");
  std::stringstream links(via);
  for (std::string link; std::getline(links, link, '+');) gbps = std::min(gbps, link_gbps(rates, pu_kind, link));
  return gbps;
}

double threads_gbps(const Rates& rates, PuKind pu_kind, const std::string& via, int threads) {
  const double gbps = path_gbps(rates, pu_kind, via);
  return pu_kind == PuKind::Cpu ? std::min(gbps, kCpuCoreGBps * std::max(threads, 1)) : gbps;
}

double seconds(double bytes, double gbps) { return bytes / (gbps * 1e9); }

double run_overhead_s(size_t gpus) { return kRunOverheadS + kGpuContextS * static_cast<double>(gpus); }

double setup_s(double bytes, Alloc alloc) {
  switch (alloc) {
    case Alloc::Pinned: return seconds(bytes, kPinnedGBps);
    case Alloc::Registered: return seconds(bytes, kRegisteredGBps);
    case Alloc::Device: return seconds(bytes, kDeviceFillGBps);
    default: return seconds(bytes, kTouchGBps);
  }
}

double verify_s(double bytes, Alloc alloc) {
  return seconds(bytes, alloc == Alloc::Device ? kDeviceFillGBps : kHostVerifyGBps);
}

double migration_s(double bytes, PuKind pu_kind, Alloc alloc, const std::string& mem) {
  const bool moves = pu_kind == PuKind::Gpu && alloc == Alloc::Managed && mem.rfind("gpu", 0) != 0;
  return moves ? seconds(bytes, kMigrateGBps) : 0;
}

double gemm_in_place_s(const Rates& rates, double n, bool tensor16, const std::string& via) {
  const double flop_per_byte = tensor16 ? kGemmInPlaceFlopPerByte16 : kGemmInPlaceFlopPerByte32;
  return seconds(2 * n * n * n / flop_per_byte, path_gbps(rates, PuKind::Gpu, via));
}

std::string expect_line(const std::string& bench, size_t cases, size_t planned, double expected_s) {
  return "EXPECT " + bench + " cases=" + std::to_string(cases) + " planned=" + std::to_string(planned) +
         " skipped=" + std::to_string(cases - planned) + " expected_s=" + format_seconds(expected_s);
}

std::string elapsed_line(const std::string& bench, size_t cases, double elapsed_s, double expected_s) {
  return "ELAPSED " + bench + " cases=" + std::to_string(cases) + " elapsed_s=" + format_seconds(elapsed_s) +
         " expected_s=" + format_seconds(expected_s);
}

}  // namespace mempath::model
