#include "core/duration_model.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace mempath::model {

namespace {

double link_gbps(const std::string& pu_kind, const std::string& link) {
  if (link == "local") return pu_kind == "gpu" ? kGpuLocalGBps : kCpuLocalGBps;
  if (link == "c2c") return kC2cGBps;
  if (link == "nvlink") return kNvlinkGBps;
  if (link == "interconnect") return kInterconnectGBps;
  return kPcieGBps;  // pcie, peer, spread, unknown, "": the slow guess errs long
}

std::string format_seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", s);
  return text;
}

}  // namespace

double path_gbps(const std::string& pu_kind, const std::string& via) {
  double gbps = link_gbps(pu_kind, via.empty() ? "" : "local");
  std::stringstream links(via);
  for (std::string link; std::getline(links, link, '+');) gbps = std::min(gbps, link_gbps(pu_kind, link));
  return gbps;
}

double threads_gbps(const std::string& pu_kind, const std::string& via, int threads) {
  const double gbps = path_gbps(pu_kind, via);
  return pu_kind == "cpu" ? std::min(gbps, kCpuCoreGBps * std::max(threads, 1)) : gbps;
}

double seconds(double bytes, double gbps) { return bytes / (gbps * 1e9); }
double setup_s(double bytes) { return seconds(bytes, kSetupGBps); }
double gemm_in_place_s(double n, bool tensor16, const std::string& via) {
  const double flop_per_byte = tensor16 ? kGemmInPlaceFlopPerByte16 : kGemmInPlaceFlopPerByte32;
  return seconds(2 * n * n * n / flop_per_byte, path_gbps("gpu", via));
}
double verify_s(double bytes) { return seconds(bytes, kVerifyGBps); }

std::string expect_line(const std::string& bench, size_t cases, size_t planned, double expected_s) {
  return "EXPECT " + bench + " cases=" + std::to_string(cases) + " planned=" + std::to_string(planned) +
         " skipped=" + std::to_string(cases - planned) + " expected_s=" + format_seconds(expected_s);
}

std::string elapsed_line(const std::string& bench, size_t cases, double elapsed_s, double expected_s) {
  return "ELAPSED " + bench + " cases=" + std::to_string(cases) + " elapsed_s=" + format_seconds(elapsed_s) +
         " expected_s=" + format_seconds(expected_s);
}

}  // namespace mempath::model
