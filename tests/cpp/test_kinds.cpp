// The kinds table (core/kinds.def): names and kinds convert both ways, unknown names are
// one-line UsageErrors, the properties say what the path rules used to spell out, and
// analysis/results/kinds.py reads exactly the table C++ compiles.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/allocators.hpp"
#include "core/json_writer.hpp"
#include "core/kinds.hpp"
#include "core/topology.hpp"

namespace mempath {
namespace {

namespace fs = std::filesystem;

TEST(KindsTable, NamesAndKindsConvertBothWays) {
  for (const AllocInfo& a : kAllocTable) {
    EXPECT_EQ(alloc_kind(std::string(a.name)), a.kind);
    EXPECT_STREQ(alloc_name(a.kind), a.name);
    EXPECT_EQ(&alloc_info(std::string(a.name)), &alloc_info(a.kind));
  }
  for (const MemKindInfo& m : kMemKindTable) EXPECT_EQ(mem_kind(std::string(m.name)), m.kind);
  for (const PuKindInfo& p : kPuKindTable) EXPECT_EQ(pu_kind(std::string(p.name)), p.kind);
  EXPECT_STREQ(mem_kind_name(MemKind::Hbm), "hbm");
  EXPECT_STREQ(pu_kind_name(PuKind::Gpu), "gpu");
  EXPECT_STREQ(alloc_name(std::optional<Alloc>()), "none");  // a planned case whose path has no allocator
}

TEST(KindsTable, AllocatorListsParseInTheirOrderAndNameTheValidOnes) {
  EXPECT_EQ(parse_allocs({"pinned", "numa"}), (std::vector<Alloc>{Alloc::Pinned, Alloc::Numa}));
  EXPECT_TRUE(parse_allocs({}).empty());
  try {
    parse_allocs({"pinned", "device"}, "b-alloc", {Alloc::Pinned, Alloc::System});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "invalid --b-alloc 'device'; valid: pinned, system");
  }
}

TEST(KindsTable, OrderIsWhatPathsAndListingsShow) {
  EXPECT_EQ(allocator_names(), (std::vector<std::string>{"system", "numa", "device", "managed", "pinned", "registered"}));
  EXPECT_EQ(kind_list(kMemKindTable), "host, hbm, device, empty");
  EXPECT_EQ(kind_list(kPuKindTable), "cpu, gpu");
}

TEST(KindsTable, UnknownNamesAreOneLineUsageErrorsListingTheValidOnes) {
  try {
    alloc_kind(std::string("malloc"));
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown allocator 'malloc'; valid: system, numa, device, managed, pinned, registered");
  }
  EXPECT_THROW(mem_kind(std::string("HBM")), UsageError);
  EXPECT_THROW(pu_kind(std::string("")), UsageError);
}

TEST(KindsTable, PropertiesMatchTheAllocatorsApis) {
  // The path rules and the allocator layer decide by these, so each is pinned here.
  EXPECT_TRUE(alloc_info(Alloc::Device).gpu_owned);
  for (Alloc a : {Alloc::System, Alloc::Numa, Alloc::Managed, Alloc::Pinned, Alloc::Registered})
    EXPECT_FALSE(alloc_info(a).gpu_owned) << alloc_name(a);
  for (const AllocInfo& a : kAllocTable) {
    EXPECT_EQ(a.pageable, a.kind == Alloc::System || a.kind == Alloc::Numa) << a.name;
    EXPECT_EQ(a.page_locked, a.kind == Alloc::Pinned || a.kind == Alloc::Registered) << a.name;
    EXPECT_EQ(a.gpu_memory, a.kind == Alloc::Device || a.kind == Alloc::Managed) << a.name;
    EXPECT_EQ(a.needs_cuda, !a.pageable) << a.name;
    EXPECT_EQ(a.host_touched, a.needs_cuda && !a.gpu_owned) << a.name;
  }
  EXPECT_STREQ(alloc_info(Alloc::Pinned).api, "cudaMallocHost");
  EXPECT_FALSE(mem_kind_info(MemKind::Device).numa_node);
}

TEST(KindsTable, FitsMemoryFollowsTheTable) {
  Memory device, host;
  device.kind = MemKind::Device;
  host.kind = MemKind::Host;
  for (const AllocInfo& a : kAllocTable) {
    EXPECT_EQ(alloc_fits_memory(device, a.kind), a.kind == Alloc::Device || a.kind == Alloc::Managed) << a.name;
    EXPECT_EQ(alloc_fits_memory(host, a.kind), a.kind != Alloc::Device) << a.name;
  }
}

// The C++ table as JSON in the form `analysis.results.kinds.rows()` returns.
std::string cpp_table_json() {
  JsonWriter w;
  w.begin_object().key("alloc").begin_array();
  for (const AllocInfo& a : kAllocTable)
    w.begin_object().field("name", a.name).field("api", a.api).field("letter", std::string(1, a.letter))
        .field("gpu_owned", a.gpu_owned).field("pageable", a.pageable).field("page_locked", a.page_locked)
        .field("host_touched", a.host_touched).field("gpu_memory", a.gpu_memory).field("needs_cuda", a.needs_cuda)
        .end_object();
  w.end_array().key("mem").begin_array();
  for (const MemKindInfo& m : kMemKindTable) w.begin_object().field("name", m.name).field("numa_node", m.numa_node).end_object();
  w.end_array().key("pu").begin_array();
  for (const PuKindInfo& p : kPuKindTable) w.begin_object().field("name", p.name).end_object();
  w.end_array().end_object();
  return w.str();
}

// Exit status of Python comparing its reading of `kinds_def` with the C++ table.
int python_agrees(const fs::path& kinds_def) {
  const fs::path json = fs::temp_directory_path() / ("mempath_kinds_" + std::to_string(::getpid()) + ".json");
  std::ofstream(json) << cpp_table_json();
  const std::string cmd = "cd '" + std::string(MEMPATH_SOURCE_ROOT) + "' && '" + MEMPATH_PYTHON +
                          "' -c 'import json, sys; from pathlib import Path; from analysis.results import kinds; "
                          "sys.exit(0 if json.load(open(sys.argv[1])) == kinds.rows(kinds.load(Path(sys.argv[2]))) else 3)' '" +
                          json.string() + "' '" + kinds_def.string() + "'";
  const int status = std::system(cmd.c_str());
  fs::remove(json);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(KindsTable, PythonReadsTheSameTable) {
  if (std::string(MEMPATH_PYTHON).empty()) GTEST_SKIP() << "no Python interpreter found at configure time";
  const fs::path def = fs::path(MEMPATH_SOURCE_ROOT) / "src/core/kinds.def";
  EXPECT_EQ(python_agrees(def), 0);
  // The comparison can fail: a table whose pinned row says pageable is not the C++ one.
  std::ifstream in(def);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string row = "\"cudaMallocHost\", 'P', 0, 0, 1";
  ASSERT_NE(text.find(row), std::string::npos);
  text.replace(text.find(row), row.size(), "\"cudaMallocHost\", 'P', 0, 1, 1");
  const fs::path changed = fs::temp_directory_path() / ("mempath_kinds_" + std::to_string(::getpid()) + ".def");
  std::ofstream(changed) << text;
  EXPECT_EQ(python_agrees(changed), 3);
  fs::remove(changed);
}

}  // namespace
}  // namespace mempath
