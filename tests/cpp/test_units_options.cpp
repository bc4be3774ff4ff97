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
