#pragma once
// Allocator kinds as values, not strings: the names are only for the CLI and the result
// files. H2 (issue 14) turns this into the one descriptor table; until then these are the
// helpers every layer may call, written so that code passing either a name or a kind
// compiles (alloc_kind(x) and alloc_name(x) accept both).
#include <string>

#include "core/error.hpp"

namespace mempath {

enum class Alloc { System, Numa, Device, Managed, Pinned, Registered };

inline const char* alloc_name(Alloc a) {
  switch (a) {
    case Alloc::System: return "system";
    case Alloc::Numa: return "numa";
    case Alloc::Device: return "device";
    case Alloc::Managed: return "managed";
    case Alloc::Pinned: return "pinned";
    case Alloc::Registered: return "registered";
  }
  return "?";
}
inline const std::string& alloc_name(const std::string& name) { return name; }

// UsageError (one line, the valid names) for anything else.
inline Alloc alloc_kind(const std::string& name) {
  for (Alloc a : {Alloc::System, Alloc::Numa, Alloc::Device, Alloc::Managed, Alloc::Pinned, Alloc::Registered})
    if (name == alloc_name(a)) return a;
  throw UsageError("unknown allocator '" + name + "'; valid: system, numa, device, managed, pinned, registered");
}
inline Alloc alloc_kind(Alloc a) { return a; }

}  // namespace mempath
