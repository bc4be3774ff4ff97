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

namespace {
// Rows of bw/samples in the file at `path` as it is on disk.
hsize_t rows_on_disk(const std::string& path) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t ds = H5Dopen2(file, "bw/samples/n", H5P_DEFAULT);
  hid_t space = H5Dget_space(ds);
  hsize_t rows = 0;
  H5Sget_simple_extent_dims(space, &rows, nullptr);
  H5Sclose(space);
  H5Dclose(ds);
  H5Fclose(file);
  return rows;
}
}  // namespace

TEST(ResultFile, ACheckpointRightAfterACostlySaveWaitsAndFinishSavesIt) {
  const std::string path = temp_path("-checkpoint.h5");
  {
    ResultFile f(path, {{"tool", std::string("mempath")}});
    Table& t = f.table("bw/samples", kColumns);
    // Enough strings that one rewrite costs milliseconds: the next checkpoint, at once, waits.
    for (int64_t i = 0; i < 200000; ++i) t.append({{"n", i}, {"x", 1.0}, {"s", std::string("numa0")}});
    f.checkpoint();  // the first save is never put off
    EXPECT_EQ(rows_on_disk(path), 200000u);
    t.append({{"n", int64_t{-1}}, {"x", 1.0}, {"s", std::string("numa0")}});
    f.checkpoint();
    EXPECT_EQ(rows_on_disk(path), 200000u);
    f.finish();
    EXPECT_EQ(rows_on_disk(path), 200001u);
  }
  std::filesystem::remove(path);
}

TEST(ResultFile, UnwritableFolderIsUsageError) {
  EXPECT_THROW(ResultFile("/nonexistent-dir/x.h5", {}), UsageError);
}
