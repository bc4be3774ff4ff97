#pragma once
// Allocator, memory and processor kinds as values, with the properties the code asks of
// them. The rows are in core/kinds.def, shared with analysis/results/kinds.py. Names are only for
// the CLI, result files and JSON; code compares kinds and asks the descriptor. Every
// helper accepts a name or a kind (x_kind(x), x_name(x)), so code holding either compiles.
#include <array>
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

#define MEMPATH_ALLOC(e, name, api, letter, a, b, c, d, f, g) AllocInfo{Alloc::e, name, api, letter, a, b, c, d, f, g},
#define MEMPATH_MEM(...)
#define MEMPATH_PU(...)
inline constexpr AllocInfo kAllocTable[] = {
#include "core/kinds.def"
};
#undef MEMPATH_ALLOC
#undef MEMPATH_MEM
#define MEMPATH_ALLOC(...)
#define MEMPATH_MEM(e, name, numa) MemKindInfo{MemKind::e, name, numa},
inline constexpr MemKindInfo kMemKindTable[] = {
#include "core/kinds.def"
};
#undef MEMPATH_MEM
#undef MEMPATH_PU
#define MEMPATH_MEM(...)
#define MEMPATH_PU(e, name) PuKindInfo{PuKind::e, name},
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
inline const AllocInfo& alloc_info(Alloc a) { return kAllocTable[static_cast<size_t>(a)]; }
inline const AllocInfo& alloc_info(const std::string& name) {
  return kinds_detail::by_name(kAllocTable, name, "allocator");
}
inline Alloc alloc_kind(Alloc a) { return a; }
inline Alloc alloc_kind(const std::string& name) { return alloc_info(name).kind; }
inline const char* alloc_name(Alloc a) { return alloc_info(a).name; }
inline const std::string& alloc_name(const std::string& name) { return name; }

inline const MemKindInfo& mem_kind_info(MemKind k) { return kMemKindTable[static_cast<size_t>(k)]; }
inline const MemKindInfo& mem_kind_info(const std::string& name) {
  return kinds_detail::by_name(kMemKindTable, name, "memory kind");
}
inline MemKind mem_kind(MemKind k) { return k; }
inline MemKind mem_kind(const std::string& name) { return mem_kind_info(name).kind; }
inline const char* mem_kind_name(MemKind k) { return mem_kind_info(k).name; }
inline const std::string& mem_kind_name(const std::string& name) { return name; }

inline const PuKindInfo& pu_kind_info(PuKind k) { return kPuKindTable[static_cast<size_t>(k)]; }
inline const PuKindInfo& pu_kind_info(const std::string& name) {
  return kinds_detail::by_name(kPuKindTable, name, "processor kind");
}
inline PuKind pu_kind(PuKind k) { return k; }
inline PuKind pu_kind(const std::string& name) { return pu_kind_info(name).kind; }
inline const char* pu_kind_name(PuKind k) { return pu_kind_info(k).name; }
inline const std::string& pu_kind_name(const std::string& name) { return name; }

// Every allocator in table order: the order paths and listings use.
inline constexpr std::array<Alloc, std::size(kAllocTable)> all_allocs() {
  std::array<Alloc, std::size(kAllocTable)> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = kAllocTable[i].kind;
  return out;
}

}  // namespace mempath
