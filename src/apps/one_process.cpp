// mempath's Processes (apps/processes.hpp): this process runs every case and writes.
#include <unistd.h>

#include "apps/plan_print.hpp"
#include "apps/processes.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/result_run.hpp"

namespace mempath {
namespace {

std::vector<OptionSpec> with_progress_options(std::vector<OptionSpec> specs) {
  specs.push_back({"progress", "", "[case/total] and time left on stderr (default: if a terminal)"});
  specs.push_back({"no-progress", "", "never show the progress counter"});
  return specs;
}

class LocalOutput final : public RunOutput {
 public:
  LocalOutput(const Options& opts, const std::string& name, const Topology& topo, const std::vector<std::string>& argv)
      : run_(opts, name, topo, argv) {}
  ResultFile* file() override { return &run_.file(); }
  Watchdog& watchdog() override { return run_.watchdog(); }
  void on_timeout(std::function<void()> f) override { run_.on_timeout(std::move(f)); }
  void save() override {
    run_.file().set_attribute("end_time", utc_now_iso8601());
    run_.file().checkpoint();
  }

 private:
  ResultRun run_;
};

class OneProcess final : public Processes {
 public:
  std::string program() const override { return "mempath"; }
  std::vector<OptionSpec> options(std::vector<OptionSpec> own, const std::string& name) const override {
    return with_progress_options(with_from_option(with_run_options(std::move(own), name)));
  }
  bool shows_progress(const Options& opts) const override {
    if (opts.flag("progress") && opts.flag("no-progress"))
      throw UsageError("--progress and --no-progress exclude each other");
    if (opts.flag("progress")) return true;
    return !opts.flag("no-progress") && isatty(STDERR_FILENO);
  }
  ResultFile* conditions_record(ResultFile* file, const Topology&) override { return file; }
  void conditions_done(ResultFile*) override {}
  Topology start(const Options& opts) override { return planning_topology(opts); }
  std::unique_ptr<RunOutput> open(const Options& opts, const std::string& name, const Topology& topo,
                                  const std::vector<std::string>& argv,
                                  const std::map<std::string, Attribute>& attributes) override {
    auto out = std::make_unique<LocalOutput>(opts, name, topo, argv);
    for (const auto& [key, value] : attributes) out->file()->set_attribute(key, value);
    return out;
  }
  Outcome agree(Outcome mine) override { return mine; }
  void escaped(const std::exception&) override {}
  int exit_code(const Tally& tally) override { return tally.failed ? kExitFailed : kExitOk; }
};

}  // namespace

Processes& one_process() {
  static OneProcess processes;
  return processes;
}

}  // namespace mempath
