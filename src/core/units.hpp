#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mempath {

// "4KiB", "1GiB", "512MB", "4096" -> bytes. Throws UsageError naming the valid forms.
uint64_t parse_size(const std::string& text);
// 1073741824 -> "1GiB", 1536 -> "1.5KiB": exact for powers of two, for humans otherwise.
std::string format_size(uint64_t bytes);
// Strict integer parsing for option values: the whole token is an optional '-' and
// digits (no spaces, no '+'), within long long; throws UsageError naming the option.
long long parse_int(const std::string& text, const std::string& what);
// The same rule without the error: nothing for anything else.
std::optional<long long> whole_number(const std::string& text);

// Powers of two from `lo` to `hi` inclusive (lo rounded up, hi down to a power of two);
// empty when none lies in between.
std::vector<uint64_t> power_of_two_sizes(uint64_t lo, uint64_t hi);

}  // namespace mempath
