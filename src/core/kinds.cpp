#include "core/kinds.hpp"

#include <algorithm>

namespace mempath {

std::string alloc_list(const std::vector<Alloc>& allocs) {
  std::string s;
  for (Alloc a : allocs) s += (s.empty() ? "" : ", ") + std::string(alloc_name(a));
  return s;
}

std::vector<Alloc> parse_allocs(const std::vector<std::string>& names, const std::string& option,
                                const std::vector<Alloc>& valid) {
  const std::vector<Alloc>& allowed = valid.empty() ? all_allocs() : valid;
  std::vector<Alloc> out;
  for (const auto& name : names) {
    const auto it = std::find_if(allowed.begin(), allowed.end(), [&](Alloc a) { return name == alloc_name(a); });
    if (it == allowed.end()) throw UsageError("invalid --" + option + " '" + name + "'; valid: " + alloc_list(allowed));
    out.push_back(*it);
  }
  return out;
}

}  // namespace mempath
