// Degraded and split layouts (#33): a quad GH200 whose driver fenced a GPU
// (tests/fixtures/gh200_quad_gpu_fenced) and a Grace split by numa=fake.
#include <gtest/gtest.h>

#include <string>

#include "core/duration_model.hpp"
#include "core/topology.hpp"

using namespace mempath;

namespace {

Topology fixture(const std::string& name) { return load_snapshot(std::string(MEMPATH_FIXTURES_DIR) + "/" + name); }

}  // namespace

TEST(FencedGpu, ThreeGh200sOfAQuadKeepTheQuadsNvlinkPerPair) {
  const Topology quad = fixture("gh200_quad"), fenced = fixture("gh200_quad_gpu_fenced");
  ASSERT_EQ(fenced.gpus.size(), 3u);
  // Was 375 / 2 peers: the fenced GPU's links were spread over the survivors.
  EXPECT_DOUBLE_EQ(model::rates_of(fenced).nvlink_gbps, model::rates_of(quad).nvlink_gbps);
  EXPECT_DOUBLE_EQ(model::rates_of(quad).nvlink_gbps, model::kNvlinkGpuGBps / 3);
}

TEST(FencedGpu, TheFencedGpusGraceStaysAndItsHbmNodeIsEmpty) {
  const Topology t = fixture("gh200_quad_gpu_fenced");
  for (const char* pu : {"cpu0", "cpu1", "cpu2", "cpu3", "gpu0", "gpu1", "gpu2"}) EXPECT_NE(t.find_pu(pu), nullptr) << pu;
  EXPECT_EQ(t.find_pu("gpu3"), nullptr);
  EXPECT_EQ(t.find_mem("numa20"), nullptr);  // never onlined, named by no GPU: an empty node
  EXPECT_EQ(t.find_numa(20)->kind, "empty");
  // CUDA renumbers: gpu2 is superchip 3's GPU.
  EXPECT_EQ(t.find_gpu(2)->host_numa, 3);
  EXPECT_EQ(t.find_gpu(2)->hbm_numa, 28);
  EXPECT_EQ(t.find_path("gpu2", "gpu0")->via, "nvlink");
  // The Grace without its GPU is reached over the GPU's own C2C, then the Grace interconnect.
  EXPECT_EQ(t.find_path("gpu0", "numa2")->via, "c2c+interconnect");
  EXPECT_EQ(t.find_path("gpu2", "numa0")->via, "nvlink+c2c");
}
