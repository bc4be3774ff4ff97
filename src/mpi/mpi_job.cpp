#include "mpi/mpi_job.hpp"

#include "core/conditions.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/result_reader.hpp"
#include "core/result_run.hpp"
#include "mpi/mpi_plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace mempath::mpi {

namespace {
std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

int g_rank = -1;
bool g_abort_from_any_thread = false;  // MPI_THREAD_MULTIPLE was granted
std::thread::id g_main_thread;
std::atomic<bool> g_finalizing{false};
std::unique_ptr<Watchdog> g_watchdog;
// Rank 0's file while it holds finished cases and no save is under way: the one moment an
// abort may record itself there without racing the main thread or waiting on a stuck write.
std::atomic<ResultFile*> g_abort_record{nullptr};
// The driver's lines of a case group that will not end (JobFile::on_timeout).
std::function<void()> g_on_expiry;

const char* thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  return "MPI_THREAD_MULTIPLE";
}

// Test-only (tests/python/test_mpi.py): MEMPATH_TEST_MPI_THREAD=funneled asks for less
// than MPI_THREAD_MULTIPLE, as a library without it would grant, to exercise the fallback.
int requested_thread_level() {
  const char* test = std::getenv("MEMPATH_TEST_MPI_THREAD");
  return test && std::strcmp(test, "funneled") == 0 ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE;
}

void print_failure(int code, const std::string& why) {
  if (code == kExitUsage)
    std::fprintf(stderr, "mempath-mpi: error: %s%s\n", g_rank ? ("rank " + std::to_string(g_rank) + ": ").c_str() : "",
                 why.c_str());
  else
    std::fprintf(stderr, "mempath-mpi: rank %d: failed: %s\n", g_rank, why.c_str());
  std::fflush(stderr);
}

// The first failing rank's outcome on every rank: that rank prints, every rank throws.
void settle(int code, const std::string& why) {
  int first = code != kExitOk ? g_rank : INT_MAX, chosen = INT_MAX;
  MPI_Allreduce(&first, &chosen, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (chosen == INT_MAX) return;
  MPI_Bcast(&code, 1, MPI_INT, chosen, MPI_COMM_WORLD);
  if (g_rank == chosen) print_failure(code, why);
  throw JobEnd{code};
}
}  // namespace

void start_mpi(int* argc, char*** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, requested_thread_level(), &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  g_main_thread = std::this_thread::get_id();
  g_abort_from_any_thread = provided >= MPI_THREAD_MULTIPLE;
  if (!g_abort_from_any_thread && g_rank == 0)
    std::fprintf(stderr,
                 "mempath-mpi: warning: the MPI library grants %s, not MPI_THREAD_MULTIPLE: a rank past "
                 "--timeout ends itself only, and the other ranks end by their own --timeout or the launcher\n",
                 thread_level_name(provided));
}

void start_plan() { g_rank = 0; }

void finish_mpi() {
  {
    Watchdog::Scope armed(phase_watchdog(), "MPI_Finalize");
    g_finalizing = true;  // MPI_Abort is no longer allowed once finalize began
    MPI_Finalize();
  }
  g_watchdog.reset();
}

int world_rank() { return g_rank; }

void set_phase_limit(double seconds) {
  g_watchdog.reset();  // joins the old thread before the new one starts
  g_watchdog = std::make_unique<Watchdog>(seconds, [seconds](const std::string& what) {
    if (g_on_expiry) g_on_expiry();
    abort_job(what + " ran longer than " + timeout_text(seconds));
  });
}

Watchdog& phase_watchdog() {
  // Before a command parsed its options: timeout_option's default, as if none was given.
  if (!g_watchdog) set_phase_limit(timeout_option(Options("", "", {})));
  return *g_watchdog;
}

void phase(const std::string& what, const std::function<void()>& body) {
  Watchdog::Scope armed(phase_watchdog(), what);
  int code = kExitOk;
  std::string why;
  try {
    body();
  } catch (const UsageError& e) {
    code = kExitUsage, why = e.what();
  } catch (const std::exception& e) {
    code = kExitFailed, why = what + ": " + e.what();
  }
  settle(code, why);
}

std::vector<std::string> gather_strings(const std::string& mine, const Job& job) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(job.size);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> offsets(job.size, 0);
  for (int r = 1; r < job.size; ++r) offsets[r] = offsets[r - 1] + lens[r - 1];
  std::string all(offsets.back() + lens.back(), '\0');
  MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (job.rank != 0) return out;
  for (int r = 0; r < job.size; ++r) out.push_back(all.substr(offsets[r], lens[r]));
  return out;
}

Job discover_job() {
  Job job;
  MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &job.size);
  // Every rank needs every host name: gather at 0, then broadcast the joined list. Rank 0
  // alone needs the boot ids (the file's attribute).
  const std::string me = host_name();
  const std::vector<std::string> named = gather_strings(me + "\t" + boot_id(), job);
  std::vector<std::string> hosts, boots;
  for (const auto& n : named) hosts.push_back(n.substr(0, n.find('\t'))), boots.push_back(n.substr(n.find('\t') + 1));
  std::vector<int> reads(job.size, 0);  // rank 0: whether each rank reads its machine's conditions
  if (job.rank == 0) {
    std::vector<std::string> kernels = boots;
    std::sort(kernels.begin(), kernels.end());
    job.machines = kernels.front().empty() ? 0 : static_cast<int>(std::unique(kernels.begin(), kernels.end()) - kernels.begin());
    for (int r = 0; r < job.size && job.machines > 0; ++r)
      reads[r] = std::find(boots.begin(), boots.begin() + r, boots[r]) == boots.begin() + r;
  }
  int mine = 0;
  MPI_Scatter(reads.data(), 1, MPI_INT, &mine, 1, MPI_INT, 0, MPI_COMM_WORLD);
  job.reads_machine = mine != 0;
  std::string joined;
  for (const auto& h : hosts) joined += h + "\n";
  int len = static_cast<int>(joined.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  joined.resize(len);
  MPI_Bcast(joined.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  job.hosts.clear();
  for (size_t at = 0; at < joined.size();) {
    const size_t nl = joined.find('\n', at);
    job.hosts.push_back(joined.substr(at, nl - at));
    at = nl + 1;
  }
  std::vector<std::string> order;  // hosts by their first rank
  for (const auto& h : job.hosts)
    if (std::find(order.begin(), order.end(), h) == order.end()) order.push_back(h);
  job.split_host = order.size() == 1 && job.size > 1;
  job.node_of.resize(job.size);
  job.local_of.resize(job.size);
  std::vector<int> count(std::max<size_t>(order.size(), 2), 0);
  for (int r = 0; r < job.size; ++r) {
    const int node = job.split_host ? (r < (job.size + 1) / 2 ? 0 : 1)
                                    : static_cast<int>(std::find(order.begin(), order.end(), job.hosts[r]) - order.begin());
    job.node_of[r] = node;
    job.local_of[r] = count[node]++;
  }
  job.nodes = job.split_host ? 2 : static_cast<int>(order.size());
  job.node = job.node_of[job.rank];
  job.local = job.local_of[job.rank];
  job.local_size = count[job.node];
  MPI_Comm_split(MPI_COMM_WORLD, job.node, job.local, &job.node_comm);
  return job;
}

Outcome agree_on_outcome(Outcome mine) {
  int first = mine.status != "ok" ? g_rank : INT_MAX, chosen = INT_MAX;
  MPI_Allreduce(&first, &chosen, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (chosen == INT_MAX) return mine;
  std::string said = g_rank == chosen ? mine.status + "\n" + mine.reason : "";
  int len = static_cast<int>(said.size());
  MPI_Bcast(&len, 1, MPI_INT, chosen, MPI_COMM_WORLD);
  said.resize(len);
  MPI_Bcast(said.data(), len, MPI_CHAR, chosen, MPI_COMM_WORLD);
  const size_t nl = said.find('\n');
  mine.status = said.substr(0, nl);
  mine.reason = "rank " + std::to_string(chosen) + ": " + said.substr(nl + 1);
  return mine;
}

int exit_code(const Job& job, bool any_ran, const std::string& first_skip, int code) {
  if (any_ran) return code;
  if (job.rank == 0)
    std::fprintf(stderr, "mempath-mpi: error: no case could run (%s); the skipped cases are in the result file\n",
                 first_skip.c_str());
  return kExitUsage;
}

void abort_job(const std::string& why, int code) {
  std::string kept;
  if (ResultFile* file = g_abort_record.exchange(nullptr)) {
    try {
      file->set_attribute("aborted", why);
      file->save();
      kept = "; the finished cases are in '" + file->path() + "'";
    } catch (const std::exception& e) {
      kept = "; recording the abort in '" + file->path() + "' failed (" + e.what() + ")";
    }
  }
  // MPI_Abort from another thread than main needs MPI_THREAD_MULTIPLE, and none is
  // allowed once MPI_Finalize began: then this rank ends alone.
  const bool may_abort = !g_finalizing && (g_abort_from_any_thread || std::this_thread::get_id() == g_main_thread);
  std::fprintf(stderr, "mempath-mpi: rank %d: %s%s; ending %s\n", g_rank, why.c_str(), kept.c_str(),
               may_abort ? "every rank" : "this rank");
  std::fflush(stdout);
  std::fflush(stderr);
  if (may_abort) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort should not return; make sure nothing waits on us
}

JobFile::JobFile(const Job& job, const Options& opts, const std::string& bench, const std::string& host,
                 const std::function<std::map<std::string, Attribute>()>& attributes) {
  // Only rank 0 can find the output bad; the agreement of the phase tells the others.
  phase("creating the result file", [&] {
    if (job.rank != 0) return;
    file_ = std::make_unique<ResultFile>(opts.get_or("output", default_output_name(bench, host)), attributes(),
                                         opts.flag("overwrite") ? Existing::Overwrite : Existing::Refuse);
  });
}

JobFile::~JobFile() {
  g_abort_record = nullptr;
  g_on_expiry = nullptr;
}

void JobFile::on_timeout(std::function<void()> f) { g_on_expiry = std::move(f); }

void JobFile::save() {
  g_abort_record = nullptr;  // a stuck write must not be written again by the abort
  phase("saving the result file", [&] {
    if (!file_) return;
    file_->set_attribute("end_time", utc_now_iso8601());
    file_->save();
  });
  g_abort_record = file_.get();
}

namespace {

class JobProcesses final : public Processes {
 public:
  std::string program() const override { return "mempath-mpi"; }
  std::vector<OptionSpec> options(std::vector<OptionSpec> own, const std::string& name) const override {
    return with_plan_options(with_run_options(std::move(own), "mpi-" + name));
  }
  // A job's log is no terminal.
  bool shows_progress(const Options&) const override { return false; }
  // Each machine's conditions (one kernel boot id: namespaces and containers are one machine)
  // are read by its lowest rank: the writer's into the job's file, another machine's into a
  // scratch file of its own, handed to the writer at the end (docs/methodology.md).
  ResultFile* conditions_record(ResultFile* file, const Topology& topo) override {
    if (!job_.reads_machine) return nullptr;
    if (file) return file;
    try {
      scratch_path_ = (std::filesystem::temp_directory_path() /
                       ("mempath-mpi-conditions-" + std::to_string(getpid()) + ".h5")).string();
      scratch_ = std::make_unique<ResultFile>(
          scratch_path_, std::map<std::string, Attribute>{{"schema_version", kSchemaVersion},
                                                          {"tool", std::string("mempath")},
                                                          {"host", job_.hosts[job_.rank]},
                                                          {"topology", topo.to_json()}},
          Existing::Overwrite);
    } catch (const std::exception& e) {
      not_recorded(e);
    }
    return scratch_.get();
  }
  void conditions_done(ResultFile* file) override {
    std::string mine;
    if (scratch_) {
      try {
        scratch_->save();
        mine = run_json(read_run(scratch_path_), {"conditions/windows", "conditions/readings", "conditions/cpus",
                                                   "conditions/gpus"});
      } catch (const std::exception& e) {
        not_recorded(e);
      }
      scratch_.reset();
      std::error_code ignored;
      std::filesystem::remove(scratch_path_, ignored);
    }
    std::vector<std::string> each;
    {
      Watchdog::Scope armed(phase_watchdog(), "gathering each machine's conditions");
      each = gather_strings(mine, job_);
    }
    std::string list;
    for (const auto& one : each)
      if (!one.empty()) list += (list.empty() ? "" : ",") + one.substr(0, one.find_last_not_of('\n') + 1);
    if (file && !list.empty()) file->set_attribute("machine_conditions", "[" + list + "]");
  }
  Topology start(const Options& opts) override {
    if (opts.has("from")) return load_snapshot(*opts.get("from"));  // a plan: no MPI started
    set_phase_limit(timeout_option(opts));
    {
      Watchdog::Scope armed(phase_watchdog(), "start-up");
      job_ = discover_job();
    }
    Topology topo;
    phase("discovering the node", [&] { topo = discover(); });
    return topo;
  }
  std::unique_ptr<RunOutput> open(const Options& opts, const std::string& name, const Topology& topo,
                                  const std::vector<std::string>& argv,
                                  const std::map<std::string, Attribute>& attributes) override {
    return std::make_unique<JobFile>(job_, opts, "mpi-" + name, topo.host, [&] {
      auto attrs = collect_provenance(topo, argv);
      for (const auto& [key, value] : attributes) attrs[key] = value;
      return attrs;
    });
  }
  Outcome agree(Outcome mine) override { return agree_on_outcome(std::move(mine)); }
  void escaped(const std::exception& e) override { abort_job(std::string("failed: ") + e.what()); }
  int exit_code(const Tally& tally) override {
    if (tally.failed && job_.rank == 0)
      std::fprintf(stderr, "mempath-mpi: failed: a case failed (%s)\n", tally.first_failure.c_str());
    return mpi::exit_code(job_, tally.ran > 0, tally.first_skip, tally.failed ? kExitFailed : kExitOk);
  }
  const Job& job() const { return job_; }

 private:
  void not_recorded(const std::exception& e) const {
    std::fprintf(stderr, "mempath-mpi: rank %d: note: its machine's conditions are not recorded (%s)\n", job_.rank,
                 e.what());
  }

  Job job_;
  std::unique_ptr<ResultFile> scratch_;  // another machine's conditions, before they go to the writer
  std::string scratch_path_;
};

JobProcesses& the_job() {
  static JobProcesses processes;
  return processes;
}

}  // namespace

Processes& job_processes() { return the_job(); }
const Job& running_job() { return the_job().job(); }

}  // namespace mempath::mpi
