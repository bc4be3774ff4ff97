#include "core/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mempath::nvml {
namespace {

// The NVML ABI as nvml.h declares it (only what mempath calls): return codes and enums are
// ints, handles pointers.
using Return = int;
using Device = void*;
constexpr Return kSuccess = 0;
constexpr unsigned kClockSm = 1, kClockMem = 2;  // nvmlClockType_t
constexpr unsigned kEccCorrected = 0, kEccUncorrected = 1, kVolatile = 0;
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
// nvmlPerfPolicyType_t
constexpr unsigned kPolicyPower = 0, kPolicyThermal = 1, kPolicySyncBoost = 2, kPolicyBoardLimit = 3,
                   kPolicyReliability = 5;
// nvmlNvLinkErrorCounter_t
constexpr unsigned kLinkReplay = 0, kLinkRecovery = 1, kLinkCrcFlit = 2, kLinkCrcData = 3;
// Field ids (nvml.h NVML_FI_DEV_*): totals over every link, and the C2C link count.
constexpr unsigned kFieldCrcFlitTotal = 39, kFieldCrcDataTotal = 46, kFieldReplayTotal = 53,
                   kFieldRecoveryTotal = 60, kFieldC2cLinkCount = 170;
// NVML_FI_DEV_PERF_POLICY_*: the violation time (ns, as nvmlViolationTime_t's) of a policy.
constexpr unsigned kFieldPolicyPower = 74, kFieldPolicyThermal = 75, kFieldPolicySyncBoost = 76,
                   kFieldPolicyBoardLimit = 77, kFieldPolicyReliability = 79;

struct ViolationTime {
  unsigned long long reference_time;
  unsigned long long violation_time;  // ns
};

union Value {
  double d;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  int si;
  unsigned short us;
};
struct FieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;  // nvmlValueType_t: 0 double, 1 uint, 2 ulong, 3 ulonglong, 4 slonglong, 5 sint, 6 ushort
  Return nvml_return;
  Value value;
};

}  // namespace

// Every entry point mempath calls; a symbol this library lacks is null and its query unknown.
struct Library::Api {
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*driver_version)(char*, unsigned) = nullptr;
  Return (*nvml_version)(char*, unsigned) = nullptr;
  Return (*by_uuid)(const char*, Device*) = nullptr;
  Return (*count)(unsigned*) = nullptr;
  Return (*by_index)(unsigned, Device*) = nullptr;
  Return (*uuid)(Device, char*, unsigned) = nullptr;
  Return (*name)(Device, char*, unsigned) = nullptr;
  Return (*clock)(Device, unsigned, unsigned*) = nullptr;
  Return (*max_clock)(Device, unsigned, unsigned*) = nullptr;
  Return (*app_clock)(Device, unsigned, unsigned*) = nullptr;
  Return (*default_app_clock)(Device, unsigned, unsigned*) = nullptr;
  Return (*event_reasons)(Device, unsigned long long*) = nullptr;
  Return (*pstate)(Device, int*) = nullptr;
  Return (*power)(Device, unsigned*) = nullptr;
  Return (*power_limit)(Device, unsigned*) = nullptr;
  Return (*default_power_limit)(Device, unsigned*) = nullptr;
  Return (*temperature)(Device, int, unsigned*) = nullptr;
  Return (*pcie_gen)(Device, unsigned*) = nullptr;
  Return (*pcie_width)(Device, unsigned*) = nullptr;
  Return (*pcie_max_gen)(Device, unsigned*) = nullptr;
  Return (*pcie_max_width)(Device, unsigned*) = nullptr;
  Return (*violation)(Device, unsigned, ViolationTime*) = nullptr;
  Return (*ecc_errors)(Device, unsigned, unsigned, unsigned long long*) = nullptr;
  Return (*ecc_mode)(Device, int*, int*) = nullptr;
  Return (*retired_pending)(Device, int*) = nullptr;
  Return (*remapped_rows)(Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  Return (*persistence)(Device, int*) = nullptr;
  Return (*compute_mode)(Device, int*) = nullptr;
  Return (*mig_mode)(Device, unsigned*, unsigned*) = nullptr;
  Return (*nvlink_state)(Device, unsigned, int*) = nullptr;
  Return (*nvlink_errors)(Device, unsigned, unsigned, unsigned long long*) = nullptr;
  Return (*field_values)(Device, int, FieldValue*) = nullptr;

  std::string error(Return r) const {
    const char* text = error_string ? error_string(r) : nullptr;
    return text && *text ? std::string(text) : "NVML error " + std::to_string(r);
  }
};

namespace {

template <class F>
void bind(void* handle, F*& f, const char* name, const char* fallback = nullptr) {
  f = reinterpret_cast<F*>(dlsym(handle, name));
  if (!f && fallback) f = reinterpret_cast<F*>(dlsym(handle, fallback));
}

// Notes a query NVML did not answer, once per field: "pstate (Not Supported)".
class Missing {
 public:
  explicit Missing(const Library::Api& api) : api_(api) {}
  // True where `r` is success; else the field is named with the reason.
  bool ok(const char* field, Return r) {
    if (r == kSuccess) return true;
    add(field, api_.error(r));
    return false;
  }
  // A query this library does not export.
  bool has(const char* field, const void* f) {
    if (f) return true;
    add(field, "not in this NVML");
    return false;
  }
  void add(const std::string& field, const std::string& why) {
    if (text_.find(field + " (") != std::string::npos) return;
    text_ += (text_.empty() ? "" : ", ") + field + " (" + why + ")";
  }
  const std::string& text() const { return text_; }

 private:
  const Library::Api& api_;
  std::string text_;
};

double seconds_of_ns(unsigned long long ns) { return static_cast<double>(ns) * 1e-9; }

int64_t field_integer(const FieldValue& f) {
  switch (f.value_type) {
    case 0: return static_cast<int64_t>(f.value.d);
    case 1: return f.value.ui;
    case 2: return static_cast<int64_t>(f.value.ul);
    case 3: return static_cast<int64_t>(f.value.ull);
    case 4: return f.value.sll;
    case 5: return f.value.si;
    case 6: return f.value.us;
  }
  return -1;
}

}  // namespace

std::string library_path() {
  const char* chosen = std::getenv("MEMPATH_NVML_LIBRARY");
  return chosen && *chosen ? chosen : "libnvidia-ml.so.1";
}

std::unique_ptr<Library> Library::open(std::string* why) {
  std::unique_ptr<Library> lib(new Library());
  lib->path_ = library_path();
  lib->handle_ = dlopen(lib->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char* error = dlerror();
    *why = error ? error : lib->path_ + ": cannot be loaded";
    return nullptr;
  }
  lib->api_ = std::make_unique<Api>();
  Api& a = *lib->api_;
  void* h = lib->handle_;
  bind(h, a.init, "nvmlInit_v2", "nvmlInit");
  bind(h, a.shutdown, "nvmlShutdown");
  bind(h, a.error_string, "nvmlErrorString");
  bind(h, a.driver_version, "nvmlSystemGetDriverVersion");
  bind(h, a.nvml_version, "nvmlSystemGetNVMLVersion");
  bind(h, a.by_uuid, "nvmlDeviceGetHandleByUUID");
  bind(h, a.count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  bind(h, a.by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  bind(h, a.uuid, "nvmlDeviceGetUUID");
  bind(h, a.name, "nvmlDeviceGetName");
  bind(h, a.clock, "nvmlDeviceGetClockInfo");
  bind(h, a.max_clock, "nvmlDeviceGetMaxClockInfo");
  bind(h, a.app_clock, "nvmlDeviceGetApplicationsClock");
  bind(h, a.default_app_clock, "nvmlDeviceGetDefaultApplicationsClock");
  bind(h, a.event_reasons, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(h, a.pstate, "nvmlDeviceGetPerformanceState");
  bind(h, a.power, "nvmlDeviceGetPowerUsage");
  bind(h, a.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  bind(h, a.default_power_limit, "nvmlDeviceGetPowerManagementDefaultLimit");
  bind(h, a.temperature, "nvmlDeviceGetTemperature");
  bind(h, a.pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
  bind(h, a.pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
  bind(h, a.pcie_max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
  bind(h, a.pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
  bind(h, a.violation, "nvmlDeviceGetViolationStatus");
  bind(h, a.ecc_errors, "nvmlDeviceGetTotalEccErrors");
  bind(h, a.ecc_mode, "nvmlDeviceGetEccMode");
  bind(h, a.retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  bind(h, a.remapped_rows, "nvmlDeviceGetRemappedRows");
  bind(h, a.persistence, "nvmlDeviceGetPersistenceMode");
  bind(h, a.compute_mode, "nvmlDeviceGetComputeMode");
  bind(h, a.mig_mode, "nvmlDeviceGetMigMode");
  bind(h, a.nvlink_state, "nvmlDeviceGetNvLinkState");
  bind(h, a.nvlink_errors, "nvmlDeviceGetNvLinkErrorCounter");
  bind(h, a.field_values, "nvmlDeviceGetFieldValues");
  if (!a.init) {
    *why = lib->path_ + " exports no nvmlInit_v2: not an NVML library";
    return nullptr;  // the destructor closes it (api_ has no shutdown to call yet)
  }
  const Return r = a.init();
  if (r != kSuccess) {
    *why = "nvmlInit_v2: " + a.error(r);
    a.shutdown = nullptr;  // nothing to shut down
    return nullptr;
  }
  return lib;
}

Library::~Library() {
  if (api_ && api_->shutdown) api_->shutdown();
  if (handle_) dlclose(handle_);
}

std::string Library::describe() const {
  char nvml[96] = "", driver[96] = "";
  if (!api_->nvml_version || api_->nvml_version(nvml, sizeof nvml) != kSuccess) std::strcpy(nvml, "?");
  if (!api_->driver_version || api_->driver_version(driver, sizeof driver) != kSuccess) std::strcpy(driver, "?");
  return "NVML " + std::string(nvml) + ", driver " + driver + " (" + path_ + ")";
}

std::vector<std::string> Library::uuids(std::string* why) const {
  std::vector<std::string> out;
  unsigned n = 0;
  if (!api_->count || !api_->by_index || !api_->uuid) {
    *why = "this NVML cannot list its GPUs (nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetUUID)";
    return out;
  }
  if (const Return r = api_->count(&n); r != kSuccess) {
    *why = "nvmlDeviceGetCount_v2: " + api_->error(r);
    return out;
  }
  for (unsigned i = 0; i < n; ++i) {
    Device d = nullptr;
    char text[96] = "";
    Return r = api_->by_index(i, &d);
    if (r == kSuccess) r = api_->uuid(d, text, sizeof text);
    if (r != kSuccess) {  // a GPU NVML counts but cannot open (lost, fallen off the bus)
      *why += (why->empty() ? "" : "; ") + ("NVML GPU " + std::to_string(i) + ": ") + api_->error(r);
      text[0] = '\0';
    }
    out.emplace_back(text);
  }
  return out;
}

void* Library::device(const std::string& uuid, std::string* why) const {
  if (!api_->by_uuid) {
    *why = "nvmlDeviceGetHandleByUUID is not in this NVML";
    return nullptr;
  }
  Device d = nullptr;
  const Return r = api_->by_uuid(uuid.c_str(), &d);
  if (r != kSuccess) {
    *why = "no NVML device of UUID " + uuid + " (" + api_->error(r) + ")";
    return nullptr;
  }
  return d;
}

GpuFacts Library::facts(void* d) const {
  const Api& a = *api_;
  GpuFacts f;
  Missing m(a);
  unsigned u = 0, v = 0;
  int i = 0, j = 0;
  char name[96] = "";
  if (m.has("name", reinterpret_cast<void*>(a.name)) && m.ok("name", a.name(d, name, sizeof name))) f.name = name;
  if (m.has("max_clocks", reinterpret_cast<void*>(a.max_clock))) {
    if (m.ok("max_sm_clock", a.max_clock(d, kClockSm, &u))) f.max_sm_clock_mhz = static_cast<int>(u);
    if (m.ok("max_mem_clock", a.max_clock(d, kClockMem, &u))) f.max_mem_clock_mhz = static_cast<int>(u);
  }
  if (m.has("app_clocks", reinterpret_cast<void*>(a.app_clock))) {
    if (m.ok("app_sm_clock", a.app_clock(d, kClockSm, &u))) f.app_sm_clock_mhz = static_cast<int>(u);
    if (m.ok("app_mem_clock", a.app_clock(d, kClockMem, &u))) f.app_mem_clock_mhz = static_cast<int>(u);
  }
  if (m.has("default_app_clocks", reinterpret_cast<void*>(a.default_app_clock))) {
    if (m.ok("default_app_sm_clock", a.default_app_clock(d, kClockSm, &u))) f.default_app_sm_clock_mhz = static_cast<int>(u);
    if (m.ok("default_app_mem_clock", a.default_app_clock(d, kClockMem, &u))) f.default_app_mem_clock_mhz = static_cast<int>(u);
  }
  if (m.has("pcie_max_gen", reinterpret_cast<void*>(a.pcie_max_gen)) && m.ok("pcie_max_gen", a.pcie_max_gen(d, &u)))
    f.pcie_max_gen = static_cast<int>(u);
  if (m.has("pcie_max_width", reinterpret_cast<void*>(a.pcie_max_width)) &&
      m.ok("pcie_max_width", a.pcie_max_width(d, &u)))
    f.pcie_max_width = static_cast<int>(u);
  if (m.has("default_power_limit", reinterpret_cast<void*>(a.default_power_limit)) &&
      m.ok("default_power_limit", a.default_power_limit(d, &u)))
    f.default_power_limit_w = u / 1000.0;
  if (m.has("persistence", reinterpret_cast<void*>(a.persistence)) && m.ok("persistence", a.persistence(d, &i)))
    f.persistence = i;
  if (m.has("compute_mode", reinterpret_cast<void*>(a.compute_mode)) && m.ok("compute_mode", a.compute_mode(d, &i)))
    f.compute_mode = i;
  if (m.has("mig", reinterpret_cast<void*>(a.mig_mode)) && m.ok("mig", a.mig_mode(d, &u, &v)))
    f.mig = static_cast<int>(u);
  if (m.has("ecc", reinterpret_cast<void*>(a.ecc_mode)) && m.ok("ecc", a.ecc_mode(d, &i, &j))) f.ecc = i;
  // A link is present where NVML gives its state (PCIe GPUs: none, "Not Supported").
  if (m.has("nvlink", reinterpret_cast<void*>(a.nvlink_state))) {
    Return last = kSuccess;
    for (unsigned link = 0; link < kMaxLinks; ++link) {
      const Return r = a.nvlink_state(d, link, &i);
      if (r == kSuccess) f.nvlinks.push_back(static_cast<int>(link));
      else last = r;
    }
    if (f.nvlinks.empty()) m.ok("nvlink", last);
  }
  if (a.field_values) {
    FieldValue c2c{};
    c2c.field_id = kFieldC2cLinkCount;
    if (a.field_values(d, 1, &c2c) == kSuccess && c2c.nvml_return == kSuccess)
      f.c2c_links = static_cast<int>(field_integer(c2c));
  }
  f.missing = m.text();
  return f;
}

GpuReading Library::read(void* d, const std::vector<int>& links) const {
  const Api& a = *api_;
  GpuReading g;
  Missing m(a);
  unsigned u = 0, v = 0, w = 0, x = 0;
  int i = 0;
  unsigned long long ull = 0;
  if (m.has("pstate", reinterpret_cast<void*>(a.pstate)) && m.ok("pstate", a.pstate(d, &i)))
    g.pstate = i >= 0 && i <= 15 ? i : -1;  // 32: unknown
  if (m.has("clocks", reinterpret_cast<void*>(a.clock))) {
    if (m.ok("sm_clock", a.clock(d, kClockSm, &u))) g.sm_clock_mhz = static_cast<int>(u);
    if (m.ok("mem_clock", a.clock(d, kClockMem, &u))) g.mem_clock_mhz = static_cast<int>(u);
  }
  if (m.has("event_reasons", reinterpret_cast<void*>(a.event_reasons)) &&
      m.ok("event_reasons", a.event_reasons(d, &ull)))
    g.event_reasons = static_cast<int64_t>(ull);
  if (m.has("power", reinterpret_cast<void*>(a.power)) && m.ok("power", a.power(d, &u))) g.power_w = u / 1000.0;
  if (m.has("power_limit", reinterpret_cast<void*>(a.power_limit)) && m.ok("power_limit", a.power_limit(d, &u)))
    g.power_limit_w = u / 1000.0;
  if (m.has("temperature", reinterpret_cast<void*>(a.temperature)) && m.ok("temperature", a.temperature(d, 0, &u)))
    g.temperature_c = static_cast<int>(u);
  if (m.has("pcie", reinterpret_cast<void*>(a.pcie_gen)) && m.ok("pcie_gen", a.pcie_gen(d, &u)))
    g.pcie_gen = static_cast<int>(u);
  if (m.has("pcie", reinterpret_cast<void*>(a.pcie_width)) && m.ok("pcie_width", a.pcie_width(d, &u)))
    g.pcie_width = static_cast<int>(u);
  {
    // The five policies' violation times in one batch of field values; a field the driver
    // refuses through nvmlDeviceGetViolationStatus, that policy alone.
    const struct {
      unsigned field, policy;
      const char* name;
      double* out;
    } policies[] = {{kFieldPolicyPower, kPolicyPower, "power_capped", &g.power_capped_s},
                    {kFieldPolicyThermal, kPolicyThermal, "thermal", &g.thermal_s},
                    {kFieldPolicySyncBoost, kPolicySyncBoost, "sync_boost", &g.sync_boost_s},
                    {kFieldPolicyBoardLimit, kPolicyBoardLimit, "board_limit", &g.board_limit_s},
                    {kFieldPolicyReliability, kPolicyReliability, "reliability", &g.reliability_s}};
    FieldValue fields[5]{};
    for (int k = 0; k < 5; ++k) fields[k].field_id = policies[k].field;
    const bool batched = a.field_values && a.field_values(d, 5, fields) == kSuccess;
    for (int k = 0; k < 5; ++k) {
      if (batched && fields[k].nvml_return == kSuccess) {
        *policies[k].out = seconds_of_ns(static_cast<unsigned long long>(field_integer(fields[k])));
        continue;
      }
      ViolationTime t{};
      if (m.has(policies[k].name, reinterpret_cast<void*>(a.violation)) &&
          m.ok(policies[k].name, a.violation(d, policies[k].policy, &t)))
        *policies[k].out = seconds_of_ns(t.violation_time);
    }
  }
  if (m.has("ecc_errors", reinterpret_cast<void*>(a.ecc_errors))) {
    if (m.ok("ecc_corrected", a.ecc_errors(d, kEccCorrected, kVolatile, &ull))) g.ecc_corrected = static_cast<int64_t>(ull);
    if (m.ok("ecc_uncorrected", a.ecc_errors(d, kEccUncorrected, kVolatile, &ull)))
      g.ecc_uncorrected = static_cast<int64_t>(ull);
  }
  if (m.has("retirement_pending", reinterpret_cast<void*>(a.retired_pending)) &&
      m.ok("retirement_pending", a.retired_pending(d, &i)))
    g.retirement_pending = i;
  if (m.has("remapped_rows", reinterpret_cast<void*>(a.remapped_rows)) &&
      m.ok("remapped_rows", a.remapped_rows(d, &u, &v, &w, &x)))
    g.remap_pending = static_cast<int>(w), g.remap_failure = static_cast<int>(x);
  if (!links.empty() && m.has("nvlink", reinterpret_cast<void*>(a.nvlink_state))) {
    int active = 0;
    bool known = true;
    for (int link : links) {
      const Return r = a.nvlink_state(d, static_cast<unsigned>(link), &i);
      if (!m.ok("nvlink_state", r)) {
        known = false;
        continue;
      }
      if (i) ++active;
      else g.nvlink_down += (g.nvlink_down.empty() ? "" : ",") + std::to_string(link);
    }
    if (known) g.nvlink_active = active;
    // Error totals over every link in one call; where a field is refused, the links' own counters summed.
    FieldValue fields[4]{};
    const unsigned ids[4] = {kFieldReplayTotal, kFieldRecoveryTotal, kFieldCrcFlitTotal, kFieldCrcDataTotal};
    for (int k = 0; k < 4; ++k) fields[k].field_id = ids[k];
    const bool batched = a.field_values && a.field_values(d, 4, fields) == kSuccess;
    auto total = [&](int k, unsigned counter) -> int64_t {
      if (batched && fields[k].nvml_return == kSuccess) return field_integer(fields[k]);
      if (!a.nvlink_errors) return -1;
      int64_t sum = 0;
      for (int link : links) {
        if (a.nvlink_errors(d, static_cast<unsigned>(link), counter, &ull) != kSuccess) return -1;
        sum += static_cast<int64_t>(ull);
      }
      return sum;
    };
    g.nvlink_replay = total(0, kLinkReplay);
    g.nvlink_recovery = total(1, kLinkRecovery);
    const int64_t flit = total(2, kLinkCrcFlit), data = total(3, kLinkCrcData);
    g.nvlink_crc = flit < 0 ? -1 : flit + std::max<int64_t>(data, 0);
    if (g.nvlink_replay < 0 || g.nvlink_recovery < 0 || g.nvlink_crc < 0) m.add("nvlink_errors", "not given");
  }
  g.missing = m.text();
  return g;
}

}  // namespace mempath::nvml
