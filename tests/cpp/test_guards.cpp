#include <gtest/gtest.h>

#include "core/guards.hpp"

using namespace mempath;

TEST(Guards, GpuIntervalNearAnEmptyLaunchIsRejected) {
  EXPECT_EQ(gpu_timing_problem(1e-3, 3e-6), "");
  const std::string p = gpu_timing_problem(20e-6, 3e-6);
  EXPECT_NE(p.find("empty launch"), std::string::npos);
  EXPECT_NE(p.find("raise --size"), std::string::npos);
}

TEST(Guards, ShortCpuRepetitionIsRejected) {
  EXPECT_EQ(cpu_timing_problem(1e-3), "");
  EXPECT_NE(cpu_timing_problem(10e-6), "");
}

TEST(Guards, CacheResidentSizeIsRejected) {
  EXPECT_EQ(cache_problem(1ULL << 30, 32ULL << 20, 4), "");
  const std::string p = cache_problem(64ULL << 20, 32ULL << 20, 4);
  EXPECT_NE(p.find("at least 128MiB"), std::string::npos);
  EXPECT_NE(p.find("--in-cache"), std::string::npos);
}
