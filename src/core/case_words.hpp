#pragma once
// A case in words, as the report and the fleet say it (analysis/model/case_words.py): the
// progress counter's and the watchdog's text, so that one case is never said two ways
// (issue 50). A family's FAMILY row in core/families.def gives its template of cases
// columns; the families of a path (bw, chase, pingpong, memcpy) are said with the node's
// vocabulary (LPDDR, DDR, HBM) instead. tests/fixtures/case_words_cases.txt holds the cases
// both implementations are tested against.
#include <string>

#include "core/results.hpp"
#include "core/topology.hpp"

namespace mempath {

// Whether the node's CPU is a Grace: by its CPU model; where the topology names none, by a
// GH200's own evidence (a GPU's HBM as a NUMA node, a GPU on NVLink-C2C).
bool is_grace(const Topology& topo);
// What memory `mem` itself is: "LPDDR" (a Grace's host memory), "DDR" (another host's),
// "HBM" (a GPU's, as a NUMA node or as device memory); "" where the topology does not say.
std::string memory_word(const Topology& topo, const std::string& mem);
// Row `row` of `family`'s cases table in a few words ("gpu0 HBM read"); a family of
// neither kind (an older or newer file's) "FAMILY case N". A missing cell reads "None".
std::string case_words(const std::string& family, const Row& row, const Topology& topo);

}  // namespace mempath
