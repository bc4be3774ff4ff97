#include "core/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "core/error.hpp"

namespace mempath {
namespace {

const std::pair<const char*, uint64_t> kSuffixes[] = {
    {"", 1ULL},          {"B", 1ULL},
    {"KiB", 1ULL << 10}, {"MiB", 1ULL << 20}, {"GiB", 1ULL << 30}, {"TiB", 1ULL << 40},
    {"KB", 1000ULL},     {"MB", 1000000ULL},  {"GB", 1000000000ULL}, {"TB", 1000000000000ULL},
};

}  // namespace

uint64_t parse_size(const std::string& text) {
  const std::string valid = "valid: a number with an optional suffix B, KiB, MiB, GiB, TiB, KB, MB, GB, TB (e.g. 4KiB, 1GiB)";
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw UsageError("invalid size '" + text + "'; " + valid);
  double number = 0;
  size_t used = 0;
  try {
    number = std::stod(text.substr(0, i), &used);
  } catch (...) {
    used = 0;
  }
  // "1.5.3KiB" would otherwise be 1.5KiB: the whole number part must parse.
  if (used != i) throw UsageError("invalid size '" + text + "'; " + valid);
  const std::string suffix = text.substr(i);
  for (const auto& [name, factor] : kSuffixes) {
    if (suffix == name) {
      const double bytes = number * static_cast<double>(factor);
      if (bytes < 1 || bytes > 9.0e18 || bytes != std::floor(bytes))
        throw UsageError("size '" + text + "' is not a whole number of bytes >= 1; " + valid);
      return static_cast<uint64_t>(bytes);
    }
  }
  throw UsageError("unknown size suffix '" + suffix + "' in '" + text + "'; " + valid);
}

std::string format_size(uint64_t bytes) {
  const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buf[64];
  if (value == std::floor(value))
    std::snprintf(buf, sizeof buf, "%.0f%s", value, names[unit]);
  else
    std::snprintf(buf, sizeof buf, "%.3g%s", value, names[unit]);
  return buf;
}

std::optional<long long> whole_number(const std::string& text) {
  // stoll alone would take " 5", "+5" and "5\n": the whole token must be the number.
  const size_t digits = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == digits) return std::nullopt;
  for (size_t i = digits; i < text.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  try {
    return std::stoll(text);
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
}

long long parse_int(const std::string& text, const std::string& what) {
  const auto value = whole_number(text);
  if (!value)
    throw UsageError("invalid " + what + " '" + text + "'; valid: a whole number (digits, an optional leading -, "
                     "no spaces, at most 19 digits)");
  return *value;
}

std::vector<uint64_t> power_of_two_sizes(uint64_t lo, uint64_t hi) {
  std::vector<uint64_t> sizes;
  if (lo == 0) lo = 1;
  uint64_t s = 1;
  while (s < lo && s <= (UINT64_MAX >> 1)) s <<= 1;
  for (; s >= lo && s <= hi; s <<= 1) {
    sizes.push_back(s);
    if (s > (UINT64_MAX >> 1)) break;
  }
  return sizes;
}

}  // namespace mempath
