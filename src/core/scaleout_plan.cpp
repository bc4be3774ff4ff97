#include "core/scaleout_plan.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/options.hpp"

namespace mempath {

int mpi_windows(uint64_t size, int window) {
  const uint64_t per_window = std::max<uint64_t>(1, size) * static_cast<uint64_t>(window);
  const uint64_t target = 256ULL << 20;
  return static_cast<int>(std::clamp<uint64_t>(target / per_window, 2, 100));
}

int mpi_partner(int rank, const std::vector<int>& node_of, const std::vector<int>& local_of) {
  const int peer_node = node_of[rank] == 0 ? 1 : 0;
  for (size_t r = 0; r < node_of.size(); ++r)
    if (node_of[r] == peer_node && local_of[r] == local_of[rank]) return static_cast<int>(r);
  return -1;
}

int rank_numa(int local_rank, const std::vector<int>& host_numa_ids) {
  if (host_numa_ids.empty()) return -1;
  return host_numa_ids[static_cast<size_t>(local_rank) % host_numa_ids.size()];
}

const std::vector<std::string>& nccl_collectives() {
  static const std::vector<std::string> names = {"allreduce", "allgather"};
  return names;
}

double busbw_factor(const std::string& collective, int ranks) {
  const double n = ranks;
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "allgather") return (n - 1) / n;
  throw UsageError("invalid collective '" + collective + "'; valid: " + join(nccl_collectives()));
}

}  // namespace mempath
