// `mempath conditions --output FILE --of PID`: the conditions (core/conditions.hpp) of the
// cases of a program that measures itself (the LLM script, src/llm/llm_placement.py), read
// by the same code as mempath's own cases', between cases and never inside one, with PID's
// CPU time (and its descendants') counted as the run's own. The program asks on stdin, one
// line a request, and each is answered "ok" on stdout once done (the program's next case
// waits for it):
//   begin                    a case starts: a reading (unless the last one is recent), the
//                            case's window starts at the last reading
//   end CASE_ID KEY=VALUE... the case ended: its window, its parts from its fields as a
//                            MEMPATH line's (pu=gpu0 mem=numa0), ending at a reading taken
//                            now (unless the last one is recent); FILE saved
//   finish (or end of input) the run's last reading; FILE saved; exit 0
// FILE holds the conditions tables and attributes only (docs/schema.md "Conditions"); the
// program copies them into its own result file. A bad request: one line, exit 2.
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/conditions.hpp"
#include "core/device_runtime.hpp"
#include "core/error.hpp"
#include "core/options.hpp"
#include "core/provenance.hpp"
#include "core/results.hpp"
#include "core/topology.hpp"

namespace mempath {

int cmd_conditions(const std::vector<std::string>& args) {
  Options opts("conditions",
               "Reads the node's conditions between the cases of another program, which asks on stdin "
               "(begin; end CASE_ID KEY=VALUE...; finish) and waits for each \"ok\" (docs/cli.md).",
               {{"output", "FILE", "the conditions file (required; replaced where it exists)"},
                {"of", "PID", "the measuring process: its CPU time and its descendants' count as the run's own"}});
  if (!opts.parse(args)) return kExitOk;
  const auto output = opts.get("output");
  if (!output) throw UsageError("conditions needs --output FILE");
  const long long pid = opts.integer("of", 0, 0);

  const Topology topo = discover();
  std::vector<std::string> uuids;
  if (!topo.gpus.empty())
    for (const auto& uuid : gpu::device_uuids()) uuids.push_back(gpu_uuid_text(uuid));
  ResultFile file(*output,
                  {{"schema_version", kSchemaVersion}, {"tool", std::string("mempath")},
                   {"command", std::string("conditions")}},
                  Existing::Overwrite);
  Conditions conditions(file, topo, uuids, static_cast<int>(pid));
  file.save();
  auto answer = [](const char* word) { std::cout << word << std::endl; };
  answer("ready");

  bool begun = false;
  int64_t start = 0;
  for (std::string line; std::getline(std::cin, line);) {
    std::stringstream in(line);
    std::string request;
    in >> request;
    if (request == "finish") break;
    if (request == "begin") {
      if (begun) conditions.between_cases();
      begun = true;
      start = conditions.last();
    } else if (request == "end") {
      long long case_id = -1;
      in >> case_id;
      if (!in || case_id < 0)
        throw UsageError("conditions: '" + line + "' has no case id; valid: end CASE_ID KEY=VALUE...");
      std::vector<std::pair<std::string, std::string>> fields;
      for (std::string word; in >> word;) {
        const auto eq = word.find('=');
        if (eq == std::string::npos || eq == 0)
          throw UsageError("conditions: '" + word + "' is no KEY=VALUE; valid: end CASE_ID KEY=VALUE...");
        fields.emplace_back(word.substr(0, eq), word.substr(eq + 1));
      }
      conditions.window(case_id, start, case_parts(fields, topo));
      conditions.between_cases();  // the window's end, before whatever the program does next
    } else {
      throw UsageError("conditions: unknown request '" + line + "'; valid: begin, end CASE_ID KEY=VALUE..., finish");
    }
    file.save();
    answer("ok");
  }
  conditions.read();
  file.save();
  file.finish();
  answer("ok");
  return kExitOk;
}

}  // namespace mempath
