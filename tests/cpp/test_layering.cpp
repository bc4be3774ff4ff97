// Dependencies point one way (docs/design.md: core at the bottom): gpu/ implements what core
// declares (core/device_runtime.hpp, query_gpus), so no core file may include gpu/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The include lines of `text` that name a header under gpu/.
std::vector<std::string> gpu_includes(const std::string& text) {
  static const std::regex include(R"(^\s*#\s*include\s*["<]gpu/[^">]*[">])");
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, include)) found.push_back(line);
  return found;
}

TEST(Layering, ScannerFindsGpuIncludesInBothSpellings) {
  EXPECT_EQ(gpu_includes("#include \"gpu/gpu_api.hpp\"\n#include <gpu/x.hpp>\n  # include \"gpu/y.cuh\"\n").size(), 3u);
  EXPECT_TRUE(gpu_includes("#include \"core/device_runtime.hpp\"\n// see gpu/gpu_api.hpp\n").empty());
}

TEST(Layering, NoCoreFileIncludesGpuHeaders) {
  const fs::path core = fs::path(MEMPATH_SOURCE_ROOT) / "src" / "core";
  ASSERT_TRUE(fs::is_directory(core)) << core;
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(core)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path());
    std::ostringstream text;
    text << in.rdbuf();
    ++files;
    for (const auto& line : gpu_includes(text.str())) ADD_FAILURE() << e.path().string() << ": " << line;
  }
  EXPECT_GT(files, 10u);
}

}  // namespace
