#pragma once
// Allocator, memory and processor kinds as values, with the properties the code asks of
// them. The rows are in core/kinds.def, shared with analysis/results/kinds.py. Names are only
// for the edges: options are parsed into kinds (x_kind(name), parse_allocs), result files,
// summary lines and JSON name them (x_name(kind)); in between, code holds and compares kinds.
// The X-macros take a row's leading columns and ignore any a later column adds.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace mempath {

#define MEMPATH_ALLOC(e, ...) e,
#define MEMPATH_MEM(...)
#define MEMPATH_PU(...)
enum class Alloc {
#include "core/kinds.def"
};
#undef MEMPATH_ALLOC
#undef MEMPATH_MEM
#define MEMPATH_ALLOC(...)
#define MEMPATH_MEM(e, ...) e,
enum class MemKind {
#include "core/kinds.def"
};
#undef MEMPATH_MEM
#undef MEMPATH_PU
#define MEMPATH_MEM(...)
#define MEMPATH_PU(e, ...) e,
enum class PuKind {
#include "core/kinds.def"
};
#undef MEMPATH_ALLOC
#undef MEMPATH_MEM
#undef MEMPATH_PU

struct AllocInfo {
  Alloc kind;
  const char* name;
  const char* api;
  char letter;
  bool gpu_owned, pageable, page_locked, host_touched, gpu_memory, needs_cuda;
};
struct MemKindInfo {
  MemKind kind;
  const char* name;
  bool numa_node;
};
struct PuKindInfo {
  PuKind kind;
  const char* name;
};

#define MEMPATH_ALLOC(e, name, api, letter, a, b, c, d, f, g, ...) AllocInfo{Alloc::e, name, api, letter, a, b, c, d, f, g},
#define MEMPATH_MEM(...)
#define MEMPATH_PU(...)
inline constexpr AllocInfo kAllocTable[] = {
#include "core/kinds.def"
};
#undef MEMPATH_ALLOC
#undef MEMPATH_MEM
#define MEMPATH_ALLOC(...)
#define MEMPATH_MEM(e, name, numa, ...) MemKindInfo{MemKind::e, name, numa},
inline constexpr MemKindInfo kMemKindTable[] = {
#include "core/kinds.def"
};
#undef MEMPATH_MEM
#undef MEMPATH_PU
#define MEMPATH_MEM(...)
#define MEMPATH_PU(e, name, ...) PuKindInfo{PuKind::e, name},
inline constexpr PuKindInfo kPuKindTable[] = {
#include "core/kinds.def"
};
#undef MEMPATH_ALLOC
#undef MEMPATH_MEM
#undef MEMPATH_PU

// The names of a table's rows in order, as a list and as "a, b, c" for messages.
template <class Info, size_t N>
std::vector<std::string> kind_names(const Info (&table)[N]) {
  std::vector<std::string> names;
  for (const auto& row : table) names.push_back(row.name);
  return names;
}
template <class Info, size_t N>
std::string kind_list(const Info (&table)[N]) {
  std::string s;
  for (const auto& row : table) s += (s.empty() ? "" : ", ") + std::string(row.name);
  return s;
}

namespace kinds_detail {
// The row of a name; UsageError (one line, the valid names) for anything else.
template <class Info, size_t N>
const Info& by_name(const Info (&table)[N], const std::string& name, const char* what) {
  for (const auto& row : table)
    if (name == row.name) return row;
  throw UsageError("unknown " + std::string(what) + " '" + name + "'; valid: " + kind_list(table));
}
}  // namespace kinds_detail

// Rows are in enum order (the X-macros above build both), so a kind indexes its row.
// x_info(name) and x_kind(name) parse a name: UsageError (one line, the valid names) for
// anything else.
inline const AllocInfo& alloc_info(Alloc a) { return kAllocTable[static_cast<size_t>(a)]; }
inline const AllocInfo& alloc_info(const std::string& name) {
  return kinds_detail::by_name(kAllocTable, name, "allocator");
}
inline Alloc alloc_kind(const std::string& name) { return alloc_info(name).kind; }
inline const char* alloc_name(Alloc a) { return alloc_info(a).name; }
// A planned case's allocator, none where its path has none (its skip reason says why).
inline const char* alloc_name(const std::optional<Alloc>& a) { return a ? alloc_name(*a) : "none"; }

inline const MemKindInfo& mem_kind_info(MemKind k) { return kMemKindTable[static_cast<size_t>(k)]; }
inline const MemKindInfo& mem_kind_info(const std::string& name) {
  return kinds_detail::by_name(kMemKindTable, name, "memory kind");
}
inline MemKind mem_kind(const std::string& name) { return mem_kind_info(name).kind; }
inline const char* mem_kind_name(MemKind k) { return mem_kind_info(k).name; }

inline const PuKindInfo& pu_kind_info(PuKind k) { return kPuKindTable[static_cast<size_t>(k)]; }
inline const PuKindInfo& pu_kind_info(const std::string& name) {
  return kinds_detail::by_name(kPuKindTable, name, "processor kind");
}
inline PuKind pu_kind(const std::string& name) { return pu_kind_info(name).kind; }
inline const char* pu_kind_name(PuKind k) { return pu_kind_info(k).name; }

// Every allocator in table order: the order paths and listings use.
inline const std::vector<Alloc>& all_allocs() {
  static const std::vector<Alloc> every = [] {
    std::vector<Alloc> out;
    for (const auto& row : kAllocTable) out.push_back(row.kind);
    return out;
  }();
  return every;
}

// The allocators an option names, in its order: "invalid --OPTION 'x'; valid: a, b" (the
// `valid` ones, every allocator by default) for a name outside them. A command's own
// `valid` is its order of listing.
std::vector<Alloc> parse_allocs(const std::vector<std::string>& names, const std::string& option = "alloc",
                                const std::vector<Alloc>& valid = {});
// "a, b, c": the names of `allocs`, for messages.
std::string alloc_list(const std::vector<Alloc>& allocs);

}  // namespace mempath
