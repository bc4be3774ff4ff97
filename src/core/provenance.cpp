#include "core/provenance.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "build_info.hpp"
#include "core/device_runtime.hpp"

namespace mempath {
namespace {

std::string read_first_line(const std::string& path, const std::string& fallback) {
  std::ifstream in(path);
  std::string line;
  if (in && std::getline(in, line)) return line;
  return fallback;
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?&;|<>()") == std::string::npos) return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string utc_time(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

}  // namespace

std::string utc_now_iso8601() { return utc_time("%Y-%m-%dT%H:%M:%SZ"); }

std::string gpu_uuid_text(const gpu::Uuid& uuid) {
  char buf[48];
  const unsigned char* b = uuid.data();
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

std::string gpu_uuid_list(const std::vector<gpu::Uuid>& uuids) {
  std::string out;
  for (size_t i = 0; i < uuids.size(); ++i) out += (i ? "," : "") + gpu_uuid_text(uuids[i]);
  return out;
}

std::string default_output_name(const std::string& bench, const std::string& host) {
  // The process id too: two runs started in the same second (a job array) get two files.
  return "mempath-" + bench + "-" + host + "-" + utc_time("%Y%m%dT%H%M%S") + "-" + std::to_string(getpid()) + ".h5";
}

std::map<std::string, Attribute> collect_provenance(const Topology& topo,
                                                    const std::vector<std::string>& argv) {
  std::map<std::string, Attribute> a;
  std::string command_line;
  for (size_t i = 0; i < argv.size(); ++i) command_line += (i ? " " : "") + shell_quote(argv[i]);
  utsname uts{};
  uname(&uts);
  a["tool"] = std::string("mempath");
  a["tool_version"] = std::string(build::version);
  a["git_revision"] = std::string(build::git_revision);
  a["build_type"] = std::string(build::build_type);
  a["compiler"] = std::string(build::compiler);
  a["command_line"] = command_line;
  a["host"] = topo.host;
  a["start_time"] = utc_now_iso8601();
  a["end_time"] = utc_now_iso8601();
  a["topology"] = topo.to_json();
  a["kernel_release"] = std::string(uts.release);
  a["arch"] = std::string(uts.machine);
  a["page_size"] = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  a["thp_enabled"] = read_first_line("/sys/kernel/mm/transparent_hugepage/enabled", "unknown");
  a["cpu_governor"] =
      read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "unknown");
  a["cuda_driver_version"] = static_cast<int64_t>(gpu::driver_version());
  a["cuda_runtime_version"] = static_cast<int64_t>(gpu::runtime_version());
  a["gpu_clocks"] = gpu::clocks_json();
  a["gpu_uuids"] = gpu_uuid_list(gpu::device_uuids());
  return a;
}

}  // namespace mempath
