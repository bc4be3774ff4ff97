#include "core/pingpong_plan.hpp"
#include "core/kinds.hpp"

#include <algorithm>

#include "core/allocators.hpp"
#include "core/error.hpp"
#include "core/options.hpp"

namespace mempath {
namespace {

bool listed(const std::vector<std::string>& filter, const std::string& x) {
  return filter.empty() || std::find(filter.begin(), filter.end(), x) != filter.end();
}

}  // namespace

std::vector<PingPongCase> pingpong_cases(const Topology& topo, const std::vector<std::string>& pus,
                                         const std::vector<std::string>& mems,
                                         const std::vector<std::string>& allocs) {
  std::vector<std::string> agent_names;
  for (const auto& p : topo.processors)
    if (p.name != "cpus") agent_names.push_back(p.name);
  for (const auto& x : pus)
    if (std::find(agent_names.begin(), agent_names.end(), x) == agent_names.end())
      throw UsageError("unknown agent '" + x + "' for pingpong; valid: " + join(agent_names));
  for (const auto& x : mems)
    if (!topo.find_mem(x)) throw UsageError("unknown memory '" + x + "'; valid: " + join(topo.mem_names()));
  const std::vector<Alloc> asked = parse_allocs(allocs);

  std::vector<Agent> agents;
  for (const auto& p : topo.processors) {
    if (p.name == "cpus" || !listed(pus, p.name)) continue;
    Agent a{p.name, p.kind, p.kind == PuKind::Cpu && !p.cpus.empty() ? p.cpus.front() : -1, p.gpu};
    agents.push_back(a);
  }
  std::stable_partition(agents.begin(), agents.end(), [](const Agent& a) { return a.kind == PuKind::Cpu; });

  std::vector<PingPongCase> out;
  for (size_t i = 0; i < agents.size(); ++i) {
    for (size_t j = i; j < agents.size(); ++j) {
      Agent a = agents[i], b = agents[j];
      std::string pair_problem;
      if (i == j && a.kind == PuKind::Cpu) {
        const Processor* p = topo.find_pu(a.name);
        if (p->cpus.size() < 2) pair_problem = a.name + " has one CPU; a ping-pong within it needs two";
        else b.cpu = p->cpus[1];  // the next physical core (cpus list physical cores first)
      }
      if (a.kind == PuKind::Cpu && a.cpu < 0) pair_problem = a.name + " has no CPUs";
      for (const auto& m : topo.memories) {
        if (!listed(mems, m.name)) continue;
        for (const Alloc alloc : asked.empty() ? pingpong_allocators() : asked) {
          if (!alloc_fits_memory(m, alloc)) continue;
          PingPongCase c{a, b, m.name, alloc, pair_via(topo, a.name, b.name, m.name), pair_problem};
          // A GPU agent without peer access to the flag's GPU first: that is the cause even
          // where the other agent, a CPU, could not map cudaMalloc memory either (#33).
          if (c.skip_reason.empty()) c.skip_reason = peer_problem(topo, a.name, m.name);
          if (c.skip_reason.empty()) c.skip_reason = peer_problem(topo, b.name, m.name);
          if (c.skip_reason.empty()) c.skip_reason = alloc_problem(topo, a.name, m.name, alloc);
          if (c.skip_reason.empty()) c.skip_reason = alloc_problem(topo, b.name, m.name, alloc);
          out.push_back(c);
        }
      }
    }
  }
  return out;
}

}  // namespace mempath
