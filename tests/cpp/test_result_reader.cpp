// The result reader on hostile and foreign files (issue 22): each is one UsageError, never a
// hang or a crash, and text that is not UTF-8 comes back as valid UTF-8 (\xNN).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "core/error.hpp"
#include "core/result_reader.hpp"
#include "core/results.hpp"

using namespace mempath;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (std::to_string(getpid()) + "-reader-" + name)).string();
}

// A valid result file with one table, then `edit` on it with the HDF5 C API.
std::string crafted(const std::string& name, const std::function<void(hid_t)>& edit) {
  const std::string path = temp_path(name);
  {
    ResultFile f(path, {{"tool", std::string("mempath")}});
    Table& t = f.table("bw/cases", {{"n", ColumnType::Int, ""}, {"reason", ColumnType::String, ""}});
    t.append({{"n", int64_t{1}}, {"reason", std::string("ok")}});
    f.save();
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  edit(file);
  H5Fclose(file);
  return path;
}

// The UsageError's message, or "" when read_run did not throw one.
std::string refusal(const std::string& path) {
  try {
    read_run(path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

void set_int(hid_t object, const char* name, int64_t value) {
  H5Adelete(object, name);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(object, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, H5T_NATIVE_INT64, &value);
  H5Aclose(attr);
  H5Sclose(space);
}

hid_t utf8_string() {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return type;
}

void set_text(hid_t object, const char* name, const char* bytes) {
  H5Adelete(object, name);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t type = utf8_string();
  const hid_t attr = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, type, &bytes);
  H5Aclose(attr);
  H5Tclose(type);
  H5Sclose(space);
}

}  // namespace

TEST(ResultReader, SoftLinkCycleIsRefusedNotFollowed) {
  const std::string path = crafted("soft.h5", [](hid_t f) { H5Lcreate_soft("/bw", f, "bw/loop", H5P_DEFAULT, H5P_DEFAULT); });
  EXPECT_NE(refusal(path).find("bw/loop is a soft link"), std::string::npos) << refusal(path);
  std::filesystem::remove(path);
}

TEST(ResultReader, HardLinkCycleIsRefusedNotACrash) {
  const std::string path = crafted("hard.h5", [](hid_t f) { H5Lcreate_hard(f, "/bw", f, "bw/cases/again", H5P_DEFAULT, H5P_DEFAULT); });
  EXPECT_NE(refusal(path).find("bw/cases/again links to an object already reached"), std::string::npos) << refusal(path);
  std::filesystem::remove(path);
  const std::string root = crafted("root.h5", [](hid_t f) { H5Lcreate_hard(f, "/", f, "bw/top", H5P_DEFAULT, H5P_DEFAULT); });
  EXPECT_NE(refusal(root).find("bw/top links to an object already reached"), std::string::npos) << refusal(root);
  std::filesystem::remove(root);
}

TEST(ResultReader, ExternalLinkIsRefused) {
  const std::string path = crafted("ext.h5", [](hid_t f) { H5Lcreate_external("/etc/x.h5", "/", f, "bw/x", H5P_DEFAULT, H5P_DEFAULT); });
  EXPECT_NE(refusal(path).find("bw/x is an external link"), std::string::npos) << refusal(path);
  std::filesystem::remove(path);
}

TEST(ResultReader, OtherSchemaVersionsAndForeignFilesAreRefusedFirst) {
  const std::string newer = crafted("v2.h5", [](hid_t f) { set_int(f, "schema_version", 2); });
  EXPECT_NE(refusal(newer).find("schema_version 2 is not supported; this mempath reads schema_version 1"),
            std::string::npos) << refusal(newer);
  std::filesystem::remove(newer);
  const std::string foreign = crafted("foreign.h5", [](hid_t f) {
    H5Adelete(f, "schema_version");
    H5Lcreate_soft("/nowhere", f, "bw/dangling", H5P_DEFAULT, H5P_DEFAULT);  // not reached: identity first
  });
  EXPECT_NE(refusal(foreign).find("no schema_version attribute, so not a mempath result file"), std::string::npos)
      << refusal(foreign);
  std::filesystem::remove(foreign);
  const std::string other = crafted("tool.h5", [](hid_t f) { set_text(f, "tool", "netcdf"); });
  EXPECT_NE(refusal(other).find("tool attribute is not 'mempath'"), std::string::npos) << refusal(other);
  std::filesystem::remove(other);
}

TEST(ResultReader, AnArrayAttributeIsRefusedNotOverrun) {
  const std::string path = crafted("array.h5", [](hid_t f) {
    const hsize_t n = 64;
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t attr = H5Acreate2(f, "page_size", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    std::vector<int64_t> values(n, 7);
    H5Awrite(attr, H5T_NATIVE_INT64, values.data());
    H5Aclose(attr);
    H5Sclose(space);
  });
  EXPECT_NE(refusal(path).find("attribute page_size is not one value"), std::string::npos) << refusal(path);
  std::filesystem::remove(path);
}

TEST(ResultReader, TextThatIsNotUtf8ComesBackEscaped) {
  const std::string path = crafted("text.h5", [](hid_t f) {
    set_text(f, "host", "node\xff\n-1");
    H5Lcreate_hard(f, "bw/cases", f, "bw/c\xc0\xafses", H5P_DEFAULT, H5P_DEFAULT);
    H5Ldelete(f, "bw/cases", H5P_DEFAULT);
  });
  const StoredRun run = read_run(path);
  EXPECT_EQ(std::get<std::string>(run.attributes.at("host")), "node\\xff\n-1");
  ASSERT_EQ(run.tables.count("bw/c\\xc0\\xafses"), 1u);
  std::filesystem::remove(path);
}

TEST(ResultReader, ValidUtf8IsPythonsBackslashReplace) {
  EXPECT_EQ(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(valid_utf8("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\\xc0\\xaf");          // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80x"), "\\xed\\xa0\\x80x");  // a surrogate
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(valid_utf8("\xe2\x82"), "\\xe2\\x82");          // cut short
  EXPECT_EQ(valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_EQ(printable("two\nlines\x7f"), "two\\x0alines\\x7f");
}

TEST(ResultReader, ReadsAFileHeldInMemory) {
  const std::string path = crafted("image.h5", [](hid_t) {});
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const StoredRun run = read_run_image(bytes.data(), bytes.size(), "image");
  EXPECT_EQ(run.tables.at("bw/cases").rows(), 1u);
  EXPECT_THROW(read_run_image(bytes.data(), bytes.size() / 2, "half"), UsageError);
  EXPECT_THROW(read_run_image("not hdf5", 8, "text"), UsageError);
  EXPECT_THROW(read_run_image(nullptr, 0, "empty"), UsageError);
  std::filesystem::remove(path);
}
