#include "core/atomics_plan.hpp"

#include <algorithm>

#include "core/allocators.hpp"
#include "core/bw_plan.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/options.hpp"

namespace mempath {
namespace {

bool listed(const std::vector<std::string>& filter, const std::string& x) {
  return filter.empty() || std::find(filter.begin(), filter.end(), x) != filter.end();
}

}  // namespace

std::vector<AtomicsCase> atomics_cases(const Topology& topo, const AtomicsFilters& f) {
  std::vector<std::string> gpus;
  for (const auto& p : topo.processors)
    if (p.kind == PuKind::Gpu) gpus.push_back(p.name);
  for (const auto& x : f.pus)
    if (std::find(gpus.begin(), gpus.end(), x) == gpus.end())
      throw UsageError("unknown GPU '" + x + "' for atomics; valid: " + (gpus.empty() ? "none on this node" : join(gpus)));
  for (const auto& x : f.mems)
    if (!topo.find_mem(x)) throw UsageError("unknown memory '" + x + "'; valid: " + join(topo.mem_names()));
  const std::vector<Alloc> asked = parse_allocs(f.allocs);

  std::vector<AtomicsCase> out;
  for (const auto& p : topo.processors) {
    if (p.kind != PuKind::Gpu || !listed(f.pus, p.name)) continue;
    for (const auto& m : topo.memories) {
      if (!listed(f.mems, m.name)) continue;
      // Without --all (and without --alloc) one case per path: the allocator bw would use.
      std::vector<Alloc> allocs = asked;
      if (allocs.empty()) {
        if (f.all) {
          allocs = all_allocs();
        } else {
          const std::optional<Alloc> d = default_alloc(topo, p.name, m.name);
          if (!d) continue;
          allocs = {*d};
        }
      }
      for (const Alloc alloc : allocs) {
        if (!alloc_fits_memory(m, alloc)) continue;
        AtomicsCase c{p.name, m.name, alloc, route_via(topo, p.name, m.name, m.name), "", p.gpu};
        c.skip_reason = alloc_problem(topo, p.name, m.name, alloc);
        out.push_back(c);
      }
    }
  }
  return out;
}

uint64_t atomics_expected(uint64_t c, uint64_t counters, uint64_t warps, uint64_t ops, uint64_t launches) {
  if (counters == 0 || c >= counters) return 0;
  const uint64_t warps_on_c = warps / counters + (c < warps % counters ? 1 : 0);
  return warps_on_c * 32 * ops * launches;
}

}  // namespace mempath
