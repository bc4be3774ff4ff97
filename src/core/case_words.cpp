#include "core/case_words.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

#include "core/families.hpp"

namespace mempath {
namespace {

// A cell as Python's str() writes it in the analysis' template: a missing one "None".
std::string cell(const Row& row, const std::string& key) {
  const auto it = row.find(key);
  if (it == row.end()) return "None";
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return std::to_string(*i);
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", std::get<double>(it->second));
  return text;
}

// An integer cell; -1 where it is missing or not a number (an older file's).
int64_t cell_int(const Row& row, const std::string& key) {
  const auto it = row.find(key);
  if (it == row.end()) return -1;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i;
  if (const auto* d = std::get_if<double>(&it->second)) return *d == *d ? static_cast<int64_t>(*d) : -1;
  return -1;
}

bool one_of(const std::string& value, std::initializer_list<const char*> values) {
  return std::any_of(values.begin(), values.end(), [&](const char* v) { return value == v; });
}

bool on_gpu(const Memory* m) { return m && (m->kind == MemKind::Hbm || m->kind == MemKind::Device); }

std::string kind_of(const Topology& topo, const std::string& mem) {
  const std::string word = memory_word(topo, mem);
  return word.empty() ? mem : word;
}

// A processor's `what` on a memory: "gpu2 HBM read" on its own memory, "gpu0 read of numa0
// (LPDDR, pinned)" elsewhere; the allocators a memory's own kind implies left unsaid.
std::string path_words(const Row& row, const Topology& topo, const std::string& what) {
  const std::string pu = cell(row, "pu"), mem = cell(row, "mem"), alloc = cell(row, "alloc");
  std::string kind = kind_of(topo, mem);
  if (!one_of(alloc, {"numa", "device"})) kind += ", " + alloc;
  const bool local = cell(row, "via") == "local";
  if (local && mem.rfind("numa", 0) == 0 && on_gpu(topo.find_mem(mem))) kind += " as " + mem;
  const std::string dst = row.count("dst_mem") ? cell(row, "dst_mem") : "";
  if (what == "copy" && !dst.empty() && dst != mem)
    return pu + " copy " + mem + " (" + kind + ") to " + dst + " (" + kind_of(topo, dst) + ")";
  return local ? pu + " " + kind + " " + what : pu + " " + what + " of " + mem + " (" + kind + ")";
}

std::string memcpy_words(const Row& row) {
  std::vector<std::string> unusual;  // a transfer's usual allocators and copy engine unsaid
  for (const char* c : {"alloc", "engine"})
    if (row.count(c) && !one_of(cell(row, c), {"pinned", "device", "ce"})) unusual.push_back(cell(row, c));
  std::string listed;
  for (const auto& u : unusual) listed += ", " + u;
  const int64_t dst = cell_int(row, "dst_gpu");
  if (dst >= 0)
    return "gpu" + cell(row, "gpu") + " to gpu" + std::to_string(dst) + " copy" +
           (unusual.empty() ? "" : " (" + listed.substr(2) + ")");
  std::string direction = cell(row, "direction");
  std::transform(direction.begin(), direction.end(), direction.begin(), [](unsigned char c) { return std::toupper(c); });
  return "gpu" + cell(row, "gpu") + " " + direction + " copy (numa" + cell(row, "host_numa") + listed + ")";
}

std::string template_words(const std::string& text, const Row& row) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t close = text[i] == '{' ? text.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out += text[i];
      continue;
    }
    out += cell(row, text.substr(i + 1, close - i - 1));
    i = close;
  }
  return out;
}

}  // namespace

bool is_grace(const Topology& topo) {
  std::string model = topo.cpu_model;
  model.erase(0, model.find_first_not_of(" \t"));
  model.erase(model.find_last_not_of(" \t") + 1);
  std::string upper = model;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (!one_of(upper, {"", "UNKNOWN", "?"})) return upper.find("GRACE") != std::string::npos;
  return std::any_of(topo.memories.begin(), topo.memories.end(), [](const Memory& m) { return m.kind == MemKind::Hbm; }) ||
         std::any_of(topo.gpus.begin(), topo.gpus.end(), [](const GpuInfo& g) { return g.link_type == "c2c"; });
}

std::string memory_word(const Topology& topo, const std::string& mem) {
  const Memory* m = topo.find_mem(mem);
  if (on_gpu(m) || (!m && mem.rfind("gpu", 0) == 0)) return "HBM";
  if (m && m->kind == MemKind::Host) return is_grace(topo) ? "LPDDR" : "DDR";
  return "";
}

std::string case_words(const std::string& family, const Row& row, const Topology& topo) {
  if (family == "bw") return path_words(row, topo, cell(row, "op"));
  if (family == "chase") return path_words(row, topo, "latency");
  if (family == "pingpong") {
    const std::string mem = cell(row, "mem"), alloc = cell(row, "alloc");
    return "ping-pong " + cell(row, "a") + "-" + cell(row, "b") + " (" + mem + " " + kind_of(topo, mem) +
           (one_of(alloc, {"numa", "device"}) ? "" : ", " + alloc) + ")";
  }
  if (family == "memcpy") return memcpy_words(row);
  for (const FamilyInfo& f : kFamilyTable)
    if (family == f.name && *f.words) return template_words(f.words, row);
  return family + " case " + cell(row, "case_id");
}

}  // namespace mempath
