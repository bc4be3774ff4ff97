#include "core/result_run.hpp"

#include "core/provenance.hpp"

namespace mempath {

std::vector<OptionSpec> with_run_options(std::vector<OptionSpec> specs, const std::string& bench) {
  specs.push_back({"output", "FILE", "HDF5 result file (default mempath-" + bench + "-HOST-TIME-PID.h5); "
                                     "an existing file is refused unless --overwrite"});
  specs.push_back({"overwrite", "", "replace an existing --output (once the first case has finished)"});
  specs.push_back({"timeout", "SECONDS", "longest one case may run before the run ends with the "
                                         "finished cases saved (default 900; 0: no limit)"});
  return specs;
}

double timeout_option(const Options& opts, double fallback) {
  return static_cast<double>(opts.integer("timeout", static_cast<long long>(fallback), 0, 7 * 24 * 3600));
}

ResultRun::ResultRun(const Options& opts, const std::string& bench, const Topology& topo,
                     const std::vector<std::string>& argv)
    : file_(opts.get_or("output", default_output_name(bench, topo.host)), collect_provenance(topo, argv),
            opts.flag("overwrite") ? Existing::Overwrite : Existing::Refuse),
      watchdog_(timeout_option(opts), [this, seconds = timeout_option(opts)](const std::string& what) {
        if (on_timeout_) on_timeout_();
        file_.abandon(what + " ran longer than " + timeout_text(seconds));
      }) {}

}  // namespace mempath
