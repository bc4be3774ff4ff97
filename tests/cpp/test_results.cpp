#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/error.hpp"
#include "core/results.hpp"

using namespace mempath;

namespace {
const std::vector<ColumnSpec> kColumns = {
    {"n", ColumnType::Int, ""}, {"x", ColumnType::Float, "s"}, {"s", ColumnType::String, ""}};

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::to_string(getpid()) + name)).string();
}
}  // namespace

TEST(Table, RejectsRowsThatDoNotMatchTheColumns) {
  Table t(kColumns);
  t.append({{"n", int64_t{1}}, {"x", 2.0}, {"s", std::string("a")}});
  EXPECT_EQ(t.rows(), 1u);
  EXPECT_THROW(t.append({{"n", int64_t{1}}, {"x", 2.0}}), std::logic_error);
  EXPECT_THROW(t.append({{"n", 1.0}, {"x", 2.0}, {"s", std::string("a")}}), std::logic_error);
  EXPECT_THROW(t.append({{"n", int64_t{1}}, {"x", 2.0}, {"q", std::string("a")}}), std::logic_error);
  EXPECT_EQ(t.rows(), 1u);
}

TEST(ResultFile, SavesAtomicallyAndReadsBack) {
  const std::string path = temp_path("-results.h5");
  ResultFile f(path, {{"tool", std::string("mempath")}});
  f.table("bw/samples", kColumns)
      .append({{"n", int64_t{7}}, {"x", std::nan("")}, {"s", std::string("numa0")}});
  f.save();
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  int64_t version = 0;
  hid_t attr = H5Aopen(file, "schema_version", H5P_DEFAULT);
  H5Aread(attr, H5T_NATIVE_INT64, &version);
  H5Aclose(attr);
  EXPECT_EQ(version, kSchemaVersion);
  int64_t n = 0;
  hid_t ds = H5Dopen2(file, "bw/samples/n", H5P_DEFAULT);
  ASSERT_GE(ds, 0);
  H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &n);
  H5Dclose(ds);
  H5Fclose(file);
  EXPECT_EQ(n, 7);
  std::filesystem::remove(path);
}

TEST(ResultFile, UnwritableFolderIsUsageError) {
  EXPECT_THROW(ResultFile("/nonexistent-dir/x.h5", {}), UsageError);
}
