// Node identity in the provenance (issue 11, fleet acceptance): a fleet report and its
// history follow a GPU by its UUID, so the attribute must be spelled as nvidia-smi and
// CUDA_VISIBLE_DEVICES spell it, and be present (empty) where the node has no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <variant>

#include "core/provenance.hpp"
#include "gpu/gpu_api.hpp"

namespace mempath {
namespace {

gpu::Uuid counting_uuid() {
  gpu::Uuid u{};
  for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<unsigned char>(i * 17);
  return u;
}

TEST(GpuUuid, SpelledAsNvidiaSmiDoes) {
  EXPECT_EQ(gpu_uuid_text(counting_uuid()), "GPU-00112233-4455-6677-8899-aabbccddeeff");
}

TEST(GpuUuid, ListIsCommaSeparatedInGpuOrder) {
  gpu::Uuid zero{};
  EXPECT_EQ(gpu_uuid_list({}), "");
  EXPECT_EQ(gpu_uuid_list({counting_uuid(), zero}),
            "GPU-00112233-4455-6677-8899-aabbccddeeff,GPU-00000000-0000-0000-0000-000000000000");
}

TEST(Provenance, RecordsOneUuidPerVisibleGpu) {
  const auto attrs = collect_provenance(discover(), {"mempath", "topo"});
  ASSERT_TRUE(attrs.count("gpu_uuids"));
  const std::string uuids = std::get<std::string>(attrs.at("gpu_uuids"));
  const int gpus = gpu::device_count();
  if (gpus == 0) {
    EXPECT_EQ(uuids, "");  // CPU-only build or node: present and empty, never missing
  } else {
    EXPECT_EQ(static_cast<int>(std::count(uuids.begin(), uuids.end(), ',')) + 1, gpus);
    EXPECT_EQ(uuids.rfind("GPU-", 0), 0u);
  }
}

}  // namespace
}  // namespace mempath
