/* A fake NVML for the tests (docs/testing.md): the entry points mempath's conditions call
 * (src/core/nvml.cpp), answering from a readings file, so that every rule of
 * analysis/model/causes.py is tested on a machine without a GPU. mempath loads it through
 * MEMPATH_NVML_LIBRARY=.../libmempath_fake_nvml.so; the file is MEMPATH_FAKE_NVML.
 *
 * The file, one item a line ('#' starts a comment):
 *   nvml_version 12.580.159.04       nvmlSystemGetNVMLVersion
 *   driver_version 580.159.04        nvmlSystemGetDriverVersion
 *   init 9                           nvmlInit_v2 returns this code (9: Driver Not Loaded)
 *   gpu GPU-dfae42cb-...             a GPU, found by nvmlDeviceGetHandleByUUID and listed by
 *                                    nvmlDeviceGetCount_v2/HandleByIndex_v2 in file order; its keys follow
 *   handle !CODE                     (a GPU's key) nvmlDeviceGetHandleByIndex_v2 returns CODE for it
 *                                    (15: GPU is lost): counted, never opened
 *   KEY VALUE [STEP]                 the value its query gives; STEP is added after each read
 *                                    (a counter that grows while a run reads it)
 *   KEY !CODE                        its query returns NVML error CODE
 * A key the file does not give is Not Supported (3), as on a GPU without that feature.
 * Keys: name, pstate, sm_clock, mem_clock, max_sm_clock, max_mem_clock, app_sm_clock,
 * app_mem_clock, default_app_sm_clock, default_app_mem_clock (MHz), event_reasons,
 * power_mw, power_limit_mw, default_power_limit_mw, energy_mj, temperature, pcie_gen,
 * pcie_width, pcie_max_gen, pcie_max_width, violation_power_ns, violation_thermal_ns,
 * violation_sync_boost_ns, violation_board_limit_ns, violation_reliability_ns,
 * ecc_corrected, ecc_uncorrected (volatile), ecc_mode, retired_pending, remap_corr,
 * remap_unc, remap_pending, remap_failure, persistence, compute_mode, mig, c2c_links, and
 * per NVLink N: nvlink_state.N, nvlink_replay.N, nvlink_recovery.N, nvlink_crc_flit.N,
 * nvlink_crc_data.N (the field values' totals add the links up). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK 0
#define NOT_SUPPORTED 3
#define INVALID_ARGUMENT 2
#define NOT_FOUND 6
#define UNINITIALIZED 1

typedef struct {
  char key[48];
  double value, step;
  int code;
} Entry;

typedef struct {
  char uuid[96];
  char name[96];
  Entry entries[256];
  int count;
} Gpu;

static Gpu gpus[16];
static int gpu_count;
static char nvml_version[64] = "12.0 (fake)";
static char driver_version[64] = "0.0 (fake)";
static int init_code;
static int initialised;

static Entry* find(Gpu* g, const char* key) {
  for (int i = 0; i < g->count; ++i)
    if (strcmp(g->entries[i].key, key) == 0) return &g->entries[i];
  return NULL;
}

/* The value of `key`, stepped after the read; its code where it fails. */
static int get(void* device, const char* key, double* out) {
  if (!initialised) return UNINITIALIZED;
  Entry* e = find((Gpu*)device, key);
  if (!e) return NOT_SUPPORTED;
  if (e->code) return e->code;
  *out = e->value;
  e->value += e->step;
  return OK;
}

static void load(void) {
  const char* path = getenv("MEMPATH_FAKE_NVML");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) return;
  char line[512];
  Gpu* g = NULL;
  while (fgets(line, sizeof line, f)) {
    char* hash = strchr(line, '#');
    if (hash) *hash = 0;
    char key[48] = "", rest[400] = "";
    if (sscanf(line, "%47s %399[^\n]", key, rest) < 1) continue;
    if (strcmp(key, "nvml_version") == 0) snprintf(nvml_version, sizeof nvml_version, "%s", rest);
    else if (strcmp(key, "driver_version") == 0) snprintf(driver_version, sizeof driver_version, "%s", rest);
    else if (strcmp(key, "init") == 0) init_code = atoi(rest);
    else if (strcmp(key, "gpu") == 0 && gpu_count < 16) {
      g = &gpus[gpu_count++];
      sscanf(rest, "%95s", g->uuid);
    } else if (g && strcmp(key, "name") == 0) {
      snprintf(g->name, sizeof g->name, "%s", rest);
      for (size_t n = strlen(g->name); n && g->name[n - 1] == ' '; --n) g->name[n - 1] = 0;
    } else if (g && g->count < 256) {
      Entry* e = &g->entries[g->count++];
      snprintf(e->key, sizeof e->key, "%s", key);
      if (rest[0] == '!') e->code = atoi(rest + 1);
      else if (sscanf(rest, "%lf %lf", &e->value, &e->step) < 1) e->code = INVALID_ARGUMENT;
    }
  }
  fclose(f);
}

int nvmlInit_v2(void) {
  load();
  if (init_code) return init_code;
  initialised = 1;
  return OK;
}
int nvmlShutdown(void) {
  initialised = 0;
  gpu_count = 0;
  return OK;
}

const char* nvmlErrorString(int r) {
  switch (r) {
    case OK: return "Success";
    case UNINITIALIZED: return "Uninitialized";
    case INVALID_ARGUMENT: return "Invalid Argument";
    case NOT_SUPPORTED: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case NOT_FOUND: return "Not Found";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char* out, unsigned n) { snprintf(out, n, "%s", driver_version); return OK; }
int nvmlSystemGetNVMLVersion(char* out, unsigned n) { snprintf(out, n, "%s", nvml_version); return OK; }

int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (!initialised) return UNINITIALIZED;
  for (int i = 0; i < gpu_count; ++i)
    if (strcmp(gpus[i].uuid, uuid) == 0) {
      *device = &gpus[i];
      return OK;
    }
  return NOT_FOUND;
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  if (!initialised) return UNINITIALIZED;
  *count = (unsigned)gpu_count;
  return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (!initialised) return UNINITIALIZED;
  if (index >= (unsigned)gpu_count) return INVALID_ARGUMENT;
  Entry* e = find(&gpus[index], "handle");
  if (e && e->code) return e->code;
  *device = &gpus[index];
  return OK;
}

int nvmlDeviceGetUUID(void* d, char* out, unsigned n) {
  if (!initialised) return UNINITIALIZED;
  snprintf(out, n, "%s", ((Gpu*)d)->uuid);
  return OK;
}

int nvmlDeviceGetName(void* d, char* out, unsigned n) {
  snprintf(out, n, "%s", ((Gpu*)d)->name);
  return OK;
}

#define UINT_QUERY(fn, key)                   \
  int fn(void* d, unsigned* out) {            \
    double v = 0;                             \
    int r = get(d, key, &v);                  \
    if (r == OK) *out = (unsigned)v;          \
    return r;                                 \
  }
UINT_QUERY(nvmlDeviceGetPowerUsage, "power_mw")
UINT_QUERY(nvmlDeviceGetEnforcedPowerLimit, "power_limit_mw")
UINT_QUERY(nvmlDeviceGetPowerManagementDefaultLimit, "default_power_limit_mw")
UINT_QUERY(nvmlDeviceGetCurrPcieLinkGeneration, "pcie_gen")
UINT_QUERY(nvmlDeviceGetCurrPcieLinkWidth, "pcie_width")
UINT_QUERY(nvmlDeviceGetMaxPcieLinkGeneration, "pcie_max_gen")
UINT_QUERY(nvmlDeviceGetMaxPcieLinkWidth, "pcie_max_width")

#define INT_QUERY(fn, key)                    \
  int fn(void* d, int* out) {                 \
    double v = 0;                             \
    int r = get(d, key, &v);                  \
    if (r == OK) *out = (int)v;               \
    return r;                                 \
  }
INT_QUERY(nvmlDeviceGetPerformanceState, "pstate")
INT_QUERY(nvmlDeviceGetRetiredPagesPendingStatus, "retired_pending")
INT_QUERY(nvmlDeviceGetPersistenceMode, "persistence")
INT_QUERY(nvmlDeviceGetComputeMode, "compute_mode")

#define ULL_QUERY(fn, key)                     \
  int fn(void* d, unsigned long long* out) {   \
    double v = 0;                              \
    int r = get(d, key, &v);                   \
    if (r == OK) *out = (unsigned long long)v; \
    return r;                                  \
  }
ULL_QUERY(nvmlDeviceGetTotalEnergyConsumption, "energy_mj")
ULL_QUERY(nvmlDeviceGetCurrentClocksEventReasons, "event_reasons")

static const char* clock_key(unsigned type, const char* prefix, char* buf, size_t n) {
  snprintf(buf, n, "%s%s", prefix, type == 1 ? "sm_clock" : type == 2 ? "mem_clock" : "graphics_clock");
  return buf;
}
#define CLOCK_QUERY(fn, prefix)                               \
  int fn(void* d, unsigned type, unsigned* out) {             \
    char key[48];                                             \
    double v = 0;                                             \
    int r = get(d, clock_key(type, prefix, key, sizeof key), &v); \
    if (r == OK) *out = (unsigned)v;                          \
    return r;                                                 \
  }
CLOCK_QUERY(nvmlDeviceGetClockInfo, "")
CLOCK_QUERY(nvmlDeviceGetMaxClockInfo, "max_")
CLOCK_QUERY(nvmlDeviceGetApplicationsClock, "app_")
CLOCK_QUERY(nvmlDeviceGetDefaultApplicationsClock, "default_app_")

int nvmlDeviceGetTemperature(void* d, int sensor, unsigned* out) {
  double v = 0;
  if (sensor != 0) return INVALID_ARGUMENT;
  int r = get(d, "temperature", &v);
  if (r == OK) *out = (unsigned)v;
  return r;
}

typedef struct {
  unsigned long long reference_time, violation_time;
} ViolationTime;
int nvmlDeviceGetViolationStatus(void* d, unsigned policy, ViolationTime* out) {
  static const char* keys[] = {"violation_power_ns", "violation_thermal_ns", "violation_sync_boost_ns",
                               "violation_board_limit_ns", "violation_low_utilization_ns",
                               "violation_reliability_ns"};
  double v = 0;
  if (policy > 5) return INVALID_ARGUMENT;
  int r = get(d, keys[policy], &v);
  if (r == OK) out->reference_time = 0, out->violation_time = (unsigned long long)v;
  return r;
}

int nvmlDeviceGetTotalEccErrors(void* d, unsigned type, unsigned counter, unsigned long long* out) {
  double v = 0;
  if (counter != 0) return NOT_SUPPORTED; /* volatile only */
  int r = get(d, type == 0 ? "ecc_corrected" : "ecc_uncorrected", &v);
  if (r == OK) *out = (unsigned long long)v;
  return r;
}

int nvmlDeviceGetEccMode(void* d, int* current, int* pending) {
  double v = 0;
  int r = get(d, "ecc_mode", &v);
  if (r == OK) *current = *pending = (int)v;
  return r;
}

int nvmlDeviceGetRemappedRows(void* d, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failure) {
  double a = 0, b = 0, c = 0, e = 0;
  int r = get(d, "remap_pending", &c);
  if (r != OK) return r;
  get(d, "remap_corr", &a), get(d, "remap_unc", &b), get(d, "remap_failure", &e);
  *corr = (unsigned)a, *unc = (unsigned)b, *pending = (unsigned)c, *failure = (unsigned)e;
  return OK;
}

int nvmlDeviceGetMigMode(void* d, unsigned* current, unsigned* pending) {
  double v = 0;
  int r = get(d, "mig", &v);
  if (r == OK) *current = *pending = (unsigned)v;
  return r;
}

int nvmlDeviceGetNvLinkState(void* d, unsigned link, int* active) {
  char key[48];
  double v = 0;
  snprintf(key, sizeof key, "nvlink_state.%u", link);
  int r = get(d, key, &v);
  if (r == OK) *active = (int)v;
  return r;
}

static const char* counter_names[] = {"nvlink_replay", "nvlink_recovery", "nvlink_crc_flit", "nvlink_crc_data"};
int nvmlDeviceGetNvLinkErrorCounter(void* d, unsigned link, unsigned counter, unsigned long long* out) {
  char key[48];
  double v = 0;
  if (counter > 3) return NOT_SUPPORTED;
  snprintf(key, sizeof key, "%s.%u", counter_names[counter], link);
  int r = get(d, key, &v);
  if (r == OK) *out = (unsigned long long)v;
  return r;
}

typedef struct {
  unsigned field_id, scope_id;
  long long timestamp, latency_usec;
  int value_type, nvml_return;
  union {
    double d;
    unsigned long long ull;
  } value;
} FieldValue;

/* The totals of the NVLink error counters over the present links, the C2C link count and the
 * clock limits' violation times (NVML_FI_DEV_PERF_POLICY_*, ns). */
int nvmlDeviceGetFieldValues(void* d, int count, FieldValue* values) {
  if (!initialised) return UNINITIALIZED;
  for (int i = 0; i < count; ++i) {
    FieldValue* f = &values[i];
    int counter = f->field_id == 53 ? 0 : f->field_id == 60 ? 1 : f->field_id == 39 ? 2 : f->field_id == 46 ? 3 : -1;
    f->value_type = 3;
    f->nvml_return = NOT_SUPPORTED;
    const char* single = f->field_id == 170 ? "c2c_links" : f->field_id == 74 ? "violation_power_ns"
                         : f->field_id == 75 ? "violation_thermal_ns" : f->field_id == 76 ? "violation_sync_boost_ns"
                         : f->field_id == 77 ? "violation_board_limit_ns" : f->field_id == 79 ? "violation_reliability_ns"
                         : NULL;
    if (single) {
      double v = 0;
      f->nvml_return = get(d, single, &v);
      f->value.ull = (unsigned long long)v;
      continue;
    }
    if (counter < 0) continue;
    unsigned long long sum = 0;
    int present = 0;
    for (unsigned link = 0; link < 18; ++link) {
      int active = 0;
      unsigned long long one = 0;
      if (nvmlDeviceGetNvLinkState(d, link, &active) != OK) continue;
      ++present;
      if (nvmlDeviceGetNvLinkErrorCounter(d, link, (unsigned)counter, &one) == OK) sum += one;
    }
    if (present) f->nvml_return = OK, f->value.ull = sum;
  }
  return OK;
}
