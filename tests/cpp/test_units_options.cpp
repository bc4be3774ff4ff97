#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"

using namespace mempath;

TEST(Units, ParsesBinaryAndDecimalSuffixes) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("1GiB"), 1ULL << 30);
  EXPECT_EQ(parse_size("1.5MiB"), 3ULL << 19);
  EXPECT_EQ(parse_size("512MB"), 512000000u);
  EXPECT_EQ(parse_size("2B"), 2u);
}

TEST(Units, RejectsBadSizesWithTheValidForms) {
  for (const char* bad : {"", "GiB", "4XB", "-1", "0.3B", "0"}) {
    try {
      parse_size(bad);
      FAIL() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("valid"), std::string::npos) << e.what();
    }
  }
}

TEST(Units, FormatsSizes) {
  EXPECT_EQ(format_size(1ULL << 30), "1GiB");
  EXPECT_EQ(format_size(4096), "4KiB");
  EXPECT_EQ(format_size(1536), "1.5KiB");
  EXPECT_EQ(format_size(100), "100B");
}

TEST(Options, ParsesValuesFlagsAndInlineForms) {
  Options o("bw", "", {{"size", "SIZE", ""}, {"all", "", ""}, {"op", "OP", ""}});
  ASSERT_TRUE(o.parse({"--size", "1GiB", "--all", "--op=copy"}));
  EXPECT_EQ(*o.get("size"), "1GiB");
  EXPECT_TRUE(o.flag("all"));
  EXPECT_EQ(o.choice("op", {"read", "write", "copy"}, "read"), "copy");
}

TEST(Options, UnknownOptionListsTheValidOnes) {
  Options o("bw", "", {{"size", "SIZE", ""}});
  try {
    o.parse({"--sise", "1"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--size"), std::string::npos);
  }
  Options p("bw", "", {{"size", "SIZE", ""}});
  EXPECT_THROW(p.parse({"--size"}), UsageError);
  EXPECT_THROW(p.parse({"stray"}), UsageError);
}

TEST(Options, IntegerBounds) {
  Options o("bw", "", {{"reps", "N", ""}});
  ASSERT_TRUE(o.parse({"--reps", "0"}));
  EXPECT_THROW(o.integer("reps", 10, 1), UsageError);
  Options q("bw", "", {{"reps", "N", ""}});
  ASSERT_TRUE(q.parse({"--reps", "3x"}));
  EXPECT_THROW(q.integer("reps", 10, 1), UsageError);
}

TEST(Stats, MedianMinMax) {
  const Summary odd = summarize({3, 1, 2});
  EXPECT_DOUBLE_EQ(odd.median, 2);
  EXPECT_DOUBLE_EQ(odd.min, 1);
  EXPECT_DOUBLE_EQ(odd.max, 3);
  EXPECT_DOUBLE_EQ(summarize({4, 1, 3, 2}).median, 2.5);
  EXPECT_TRUE(std::isnan(summarize({}).median));
}

// Issue #22: a number is the whole token: " 5" (a quoted shell variable with a space),
// "+5", "5 " and "1e3" were taken by stoll; an overflow is refused, not wrapped.
TEST(Options, NumbersAreWholeTokens) {
  for (const char* bad : {" 5", "5 ", "+5", "5\n", "1e3", "0x10", "-", "99999999999999999999999", "-0"}) {
    Options o("bw", "", {{"reps", "N", ""}});
    o.parse({std::string("--reps=") + bad});
    try {
      o.integer("reps", 10, 0);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("valid: a whole number from 0 to"), std::string::npos) << e.what();
    }
  }
  Options o("bw", "", {{"cpu", "N", ""}});
  ASSERT_TRUE(o.parse({"--cpu", "-1"}));
  EXPECT_EQ(o.integer("cpu", 0, -1), -1);  // a sign is fine where negatives are valid
  EXPECT_THROW(parse_int(" 7", "--size"), UsageError);
  EXPECT_THROW(parse_int("+7", "--size"), UsageError);
  EXPECT_EQ(parse_int("-7", "--size"), -7);
  EXPECT_THROW(thread_count(" 4"), UsageError);
  EXPECT_THROW(parse_size("1.5.3KiB"), UsageError);  // was 1.5KiB
  EXPECT_THROW(parse_size(" 4KiB"), UsageError);
  EXPECT_THROW(parse_size("4KiB "), UsageError);
}

// Issue #22: a value given twice in a list option is measured once, with one note.
TEST(Options, DuplicateListValuesCollapseWithOneNote) {
  Options o("chase", "", {{"pu", "PU", ""}, {"size", "SIZE", ""}, {"mem", "MEM", ""}});
  ASSERT_TRUE(o.parse({"--pu", "cpu1,cpu0,cpu1,cpu1", "--size", "4KiB,4096,8KiB,4KiB", "--mem", "numa0,numa1"}));
  testing::internal::CaptureStderr();
  EXPECT_EQ(o.list("pu"), (std::vector<std::string>{"cpu1", "cpu0"}));
  EXPECT_EQ(o.list("pu"), (std::vector<std::string>{"cpu1", "cpu0"}));  // read twice: noted once
  EXPECT_EQ(o.sizes("size"), (std::vector<uint64_t>{4096, 8192}));
  EXPECT_EQ(o.list("mem"), (std::vector<std::string>{"numa0", "numa1"}));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "mempath: note: --pu cpu1 given 3 times; measured once\n"
                 "mempath: note: --size 4KiB given 3 times; measured once\n");
  Options e("chase", "", {{"size", "SIZE", ""}});
  ASSERT_TRUE(e.parse({"--size", ",,"}));
  EXPECT_THROW(e.sizes("size"), UsageError);
}
