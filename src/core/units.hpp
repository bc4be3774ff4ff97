#pragma once
#include <cstdint>
#include <string>

namespace mempath {

// "4KiB", "1GiB", "512MB", "4096" -> bytes. Throws UsageError naming the valid forms.
uint64_t parse_size(const std::string& text);
// 1073741824 -> "1GiB", 1536 -> "1.5KiB": exact for powers of two, for humans otherwise.
std::string format_size(uint64_t bytes);
// Strict integer parsing for option values; throws UsageError naming the option.
long long parse_int(const std::string& text, const std::string& what);

}  // namespace mempath
