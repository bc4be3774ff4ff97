#pragma once
// STREAM's four kernels on pinned CPU threads, each thread on its own slice of the three
// arrays (as STREAM's static OpenMP schedule), timed per kernel from the common start to
// the last thread's end.
#include <cstddef>
#include <string>
#include <vector>

namespace mempath::cpu {

struct StreamRun {
  std::vector<std::vector<double>> seconds;  // [kernel][rep]: copy, scale, add, triad
  bool verified = false;
  std::string detail;  // why the data check failed
};

// Sets a, b, c to their start values (the team's threads write their own slices), runs
// warmup + reps repetitions of copy, scale, add, triad, then checks every element.
StreamRun run_stream(const std::vector<int>& cpus, double* a, double* b, double* c, size_t n,
                     int warmup, int reps);

}  // namespace mempath::cpu
