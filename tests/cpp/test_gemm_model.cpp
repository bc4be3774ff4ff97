// `mempath gemm`'s arithmetic: sizes from bytes, the peak model against NVIDIA's published
// figures, and the host prediction of C that the data check compares with.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/gemm_model.hpp"

using namespace mempath;

TEST(GemmModel, SizeFromBytesIsTheLargestMultipleOf8ThatFits) {
  // The paper's 4 GB matrices, its sizes rounded down to a multiple of 8 (Section IV-A).
  for (const char* dtype : {"fp16", "tf32", "fp32", "fp64"}) {
    const uint64_t bytes = 4ULL << 30, element = static_cast<uint64_t>(gemm_element_bytes(dtype));
    const int64_t n = gemm_size_for_bytes(dtype, bytes);
    EXPECT_EQ(n % 8, 0) << dtype;
    EXPECT_LE(static_cast<uint64_t>(n) * n * element, bytes) << dtype;
    EXPECT_GT(static_cast<uint64_t>(n + 8) * (n + 8) * element, bytes) << dtype;
  }
  EXPECT_EQ(gemm_size_for_bytes("fp16", 4ULL << 30), 46336);  // sqrt(2^31) = 46340.95
  EXPECT_EQ(gemm_size_for_bytes("fp64", 4ULL << 30), 23168);  // 23170.48; a multiple of 256 was 23040
  EXPECT_EQ(gemm_size_for_bytes("fp64", 8ULL * 1024 * 1024), 1024);  // exact squares stay
  EXPECT_EQ(gemm_size_for_bytes("fp64", 8ULL * 1024 * 1024 - 1), 1016);  // one byte short: next multiple down
  EXPECT_THROW(gemm_element_bytes("fp8"), UsageError);
}

TEST(GemmModel, SizesRoundDownToAMultipleOf8) {
  EXPECT_EQ(gemm_round_size(1000), 1000);
  EXPECT_EQ(gemm_round_size(1001), 1000);
  EXPECT_EQ(gemm_round_size(1007), 1000);
  EXPECT_EQ(gemm_round_size(65536), 65536);
  EXPECT_EQ(gemm_round_size(71), 64);
}

TEST(GemmModel, PeaksReproducePublishedFigures) {
  // H100 SXM: 132 SMs; 989.4 TFLOP/s fp16 dense at 1.83 GHz, 66.9 fp64 tensor at 1.98 GHz.
  EXPECT_NEAR(gemm_peak_tflops(9, 0, 132, 1830000, "fp16"), 989.4, 0.5);
  EXPECT_NEAR(gemm_peak_tflops(9, 0, 132, 1830000, "tf32"), 494.7, 0.5);
  EXPECT_NEAR(gemm_peak_tflops(9, 0, 132, 1980000, "fp64"), 66.9, 0.1);
  // A100: 108 SMs at 1.41 GHz: 312 fp16, 19.5 fp64.
  EXPECT_NEAR(gemm_peak_tflops(8, 0, 108, 1410000, "fp16"), 312.0, 0.5);
  EXPECT_NEAR(gemm_peak_tflops(8, 0, 108, 1410000, "fp64"), 19.5, 0.1);
  EXPECT_TRUE(std::isnan(gemm_peak_tflops(7, 0, 80, 1530000, "fp16")));  // unknown: never invented
}

TEST(GemmModel, PredictedElementsAreExactSumsAndTheToleranceCatchesAnError) {
  const int64_t n = 64;
  std::vector<double> a(n * n), b(n * n);
  for (int64_t i = 0; i < n * n; ++i) a[i] = gemm_a_value(i), b[i] = gemm_b_value(i);
  for (int64_t v : {0, 5, 63}) {
    double c = 0;
    for (int64_t k = 0; k < n; ++k) c += a[v + k * n] * b[k + 7 * n];
    EXPECT_DOUBLE_EQ(gemm_expected(n, v, 7), c);
  }
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(std::fmod(gemm_a_value(i) * 8, 1.0), 0.0);  // eighths: exact in fp16
  const double want = gemm_expected(n, 3, 4);
  EXPECT_TRUE(gemm_close("fp32", want, want));
  EXPECT_FALSE(gemm_close("fp32", want + 0.125, want));  // one wrong product
  EXPECT_TRUE(gemm_close("fp16", want * (1 + 4e-4), want));  // fp16 output rounding
  EXPECT_FALSE(gemm_close("fp16", want + 1.0, want));
}

TEST(GemmModel, TheSweepStopsWhereAnOperandReadOverALinkIsFlat) {
  // Issue 39: a link-bound GEMM's TFLOP/s are flat from 4096-8192 on (docs/results), so the
  // sweep measures what Fig. 16 draws and no more: to 32768 in the GPU's own memory, to
  // 8192 where A or B stays across a link.
  EXPECT_EQ(gemm_sweep_sizes(false), (std::vector<int64_t>{1024, 2048, 4096, 8192, 16384, 32768}));
  EXPECT_EQ(gemm_sweep_sizes(true), (std::vector<int64_t>{1024, 2048, 4096, 8192}));
  EXPECT_FALSE(gemm_read_over_link("local", Alloc::Device));    // its HBM
  EXPECT_FALSE(gemm_read_over_link("local", Alloc::Numa));      // its HBM as a NUMA node (GH200)
  EXPECT_FALSE(gemm_read_over_link("c2c", Alloc::Managed));     // pages that migrate to it
  EXPECT_TRUE(gemm_read_over_link("c2c", Alloc::Numa));         // the superchip's LPDDR, in place
  EXPECT_TRUE(gemm_read_over_link("pcie", Alloc::Pinned));      // host memory over PCIe
  EXPECT_TRUE(gemm_read_over_link("nvlink", Alloc::Device));    // a peer's HBM
  EXPECT_TRUE(gemm_read_over_link("nvlink+c2c", Alloc::Numa));  // another superchip's LPDDR
}
