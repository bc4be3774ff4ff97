/* What each NVML query of a conditions reading costs (src/core/nvml.cpp; issue 40): the
 * median and maximum of 30 calls of each, per GPU, on the node it runs on.
 *
 *   gcc -O2 tests/perf/nvml_cost.c -ldl -o nvml_cost && ./nvml_cost [LIBRARY]
 *
 * LIBRARY defaults to libnvidia-ml.so.1. One line per query: "gpuN QUERY median_us max_us rc". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*Fn)();
static void* lib;
static Fn get(const char* name) { return (Fn)dlsym(lib, name); }

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

#define REPS 30
#define TIME(gpu, label, call)                                            \
  do {                                                                    \
    double t[REPS];                                                       \
    int rc = 0;                                                           \
    for (int r = 0; r < REPS; ++r) {                                      \
      double a = now_us();                                                \
      rc = (call);                                                        \
      t[r] = now_us() - a;                                                \
    }                                                                     \
    qsort(t, REPS, sizeof t[0], cmp);                                     \
    printf("gpu%d %-28s %9.1f %9.1f %d\n", gpu, label, t[REPS / 2], t[REPS - 1], rc); \
  } while (0)

int main(int argc, char** argv) {
  lib = dlopen(argc > 1 ? argv[1] : "libnvidia-ml.so.1", RTLD_NOW);
  if (!lib) return printf("%s\n", dlerror()), 1;
  double a = now_us();
  int rc = get("nvmlInit_v2")();
  printf("init %.1f us rc %d\n", now_us() - a, rc);
  unsigned count = 0;
  if (!get("nvmlDeviceGetCount_v2")) return printf("no nvmlDeviceGetCount_v2\n"), 1;
  get("nvmlDeviceGetCount_v2")(&count);
  for (unsigned g = 0; g < count; ++g) {
    void* d = NULL;
    get("nvmlDeviceGetHandleByIndex_v2")(g, &d);
    unsigned u, v, w, x;
    int i, j;
    unsigned long long ull, vt[2];
    struct {
      unsigned id, scope;
      long long ts, lat;
      int type, ret;
      unsigned long long value;
    } f[4] = {{53}, {60}, {39}, {46}};
    TIME(g, "pstate", get("nvmlDeviceGetPerformanceState")(d, &i));
    TIME(g, "clock_sm", get("nvmlDeviceGetClockInfo")(d, 1, &u));
    TIME(g, "clock_mem", get("nvmlDeviceGetClockInfo")(d, 2, &u));
    TIME(g, "app_clock_sm", get("nvmlDeviceGetApplicationsClock")(d, 1, &u));
    TIME(g, "event_reasons", get("nvmlDeviceGetCurrentClocksEventReasons")(d, &ull));
    TIME(g, "power", get("nvmlDeviceGetPowerUsage")(d, &u));
    TIME(g, "power_limit", get("nvmlDeviceGetEnforcedPowerLimit")(d, &u));
    TIME(g, "energy", get("nvmlDeviceGetTotalEnergyConsumption")(d, &ull));
    TIME(g, "temperature", get("nvmlDeviceGetTemperature")(d, 0, &u));
    TIME(g, "pcie_gen", get("nvmlDeviceGetCurrPcieLinkGeneration")(d, &u));
    TIME(g, "pcie_width", get("nvmlDeviceGetCurrPcieLinkWidth")(d, &u));
    for (unsigned p = 0; p < 6; ++p) {
      char label[32];
      snprintf(label, sizeof label, "violation_%u", p);
      TIME(g, label, get("nvmlDeviceGetViolationStatus")(d, p, vt));
    }
    TIME(g, "ecc_corrected", get("nvmlDeviceGetTotalEccErrors")(d, 0, 0, &ull));
    TIME(g, "ecc_uncorrected", get("nvmlDeviceGetTotalEccErrors")(d, 1, 0, &ull));
    TIME(g, "retired_pending", get("nvmlDeviceGetRetiredPagesPendingStatus")(d, &i));
    TIME(g, "remapped_rows", get("nvmlDeviceGetRemappedRows")(d, &u, &v, &w, &x));
    TIME(g, "nvlink_state_0", get("nvmlDeviceGetNvLinkState")(d, 0, &j));
    TIME(g, "field_values_4", get("nvmlDeviceGetFieldValues")(d, 4, f));
    struct {
      unsigned id, scope;
      long long ts, lat;
      int type, ret;
      unsigned long long value;
    } p[6] = {{74}, {75}, {76}, {77}, {79}, {83}};
    TIME(g, "field_values_policies", get("nvmlDeviceGetFieldValues")(d, 5, p));
    for (int k = 0; k < 5; ++k) printf("  field %u ret %d type %d value %llu\n", p[k].id, p[k].ret, p[k].type, p[k].value);
    TIME(g, "field_value_energy", get("nvmlDeviceGetFieldValues")(d, 1, p + 5));
    printf("  field 83 ret %d value %llu\n", p[5].ret, p[5].value);
    TIME(g, "app_clock_target", get("nvmlDeviceGetClock")(d, 1, 1, &u));
  }
  get("nvmlShutdown")();
  return 0;
}
