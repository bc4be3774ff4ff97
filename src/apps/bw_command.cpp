#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <set>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "apps/bw_runner.hpp"
#include "apps/driver.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/kinds.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/text_table.hpp"
#include "core/units.hpp"

namespace mempath {
namespace {

constexpr Repetitions kRepetitions = {10, 2};

// The case filters shared by `bw --all` and `list`.
std::vector<OptionSpec> filter_option_specs() {
  std::vector<OptionSpec> specs = {
      {"op", "OP", "read, write or copy (with --all: a comma list filter)"},
      {"pu", "PU", "processor: cpuN, cpus, gpuN (default: the first CPU node)"},
      pu_kind_filter_option(),
      {"mem", "MEM", "memory read or written, the source of a copy: numaN or gpuN"},
      {"dst-mem", "MEM", "destination memory of a copy (default: --mem)"},
      {"alloc", "ALLOC", kind_list(kAllocTable)},
      {"threads", "N|sweep", "CPU threads (default: all cores of the PU), or sweep 1,2,4..all; for a GPU "
                               "sweep runs the grid kernel with 1,2,4.. blocks of 512 threads, then its full grid; "
                               "with --all: sweep (default: CPU paths; given: GPU paths too) or all (no sweep)"},
      {"kernel", "grid|block", "GPU kernel: all SMs (default) or one block of 1024 threads "
                               "(with --all a filter; default both)"},
  };
  append(specs, cache_sized_options("buffer"));
  return specs;
}

std::vector<OptionSpec> list_option_specs() {
  auto specs = filter_option_specs();
  specs.push_back({"from", "DIR", "plan against a saved topology snapshot (`mempath topo --save DIR`)"});
  return specs;
}

std::vector<OptionSpec> bw_option_specs() {
  auto specs = filter_option_specs();
  append(specs, repetition_options(kRepetitions));
  specs.insert(specs.end(), {
      {"noise", "PU:MEM|partner", "another processor reads MEM continuously during each case, its bytes "
                                   "counted; partner: the other processor of each case's superchip reads "
                                   "the memory across the link between them (x86: the GPU and its socket)"},
      {"noise-size", "SIZE", "bytes of the noise buffer (default: 8GiB, or half the memory's free bytes "
                             "where less)"},
      {"all", "", "every case this node supports; --op/--pu/--pu-kind/--mem/--alloc filter"},
  });
  return specs;
}

BwSettings settings_from(const Options& opts) {
  BwSettings s;
  if (auto v = opts.get("size")) s.size = parse_size(*v);
  const Repetitions r = read_repetitions(opts, kRepetitions);
  s.reps = r.reps, s.warmup = r.warmup;
  s.in_cache = opts.flag("in-cache");
  return s;
}

uint64_t noise_size_option(const Options& opts) {
  return opts.has("noise-size") ? parse_size(*opts.get("noise-size")) : 0;
}

BwFilters filters_from(const Options& opts) {
  BwFilters f;
  f.ops = opts.list("op");
  f.pus = opts.list("pu");
  f.pu_kinds = opts.list("pu-kind");
  f.mems = opts.list("mem");
  f.allocs = opts.list("alloc");
  f.kernels = opts.list("kernel");
  const std::string threads = opts.get_or("threads", "sweep");
  if (threads != "sweep" && threads != "all")
    throw UsageError("with --all, --threads takes sweep (default) or all, not '" + threads + "'");
  f.thread_sweep = threads == "sweep";
  f.gpu_sweep = opts.has("threads") && threads == "sweep";
  return f;
}

// The cases of one invocation: --all, a thread sweep, or a single case.
std::vector<BwCase> plan(const Topology& topo, const Options& opts, const BwSettings& settings) {
  if (opts.flag("all")) {
    for (const char* single : {"dst-mem"})
      if (opts.has(single)) throw UsageError(std::string("--") + single + " does not combine with --all");
    return all_cases(topo, filters_from(opts), settings);
  }
  if (opts.has("pu-kind")) throw UsageError("--pu-kind filters --all; for one case use --pu");
  const Op op = parse_op(opts.get_or("op", "read"));
  const std::string threads = opts.get_or("threads", "");
  auto one = [&](int t) {
    return make_case(topo, op, opts.get_or("pu", ""), opts.get_or("mem", ""), opts.get_or("dst-mem", ""),
                     opts.get_or("alloc", ""), t, opts.get_or("kernel", ""), settings);
  };
  if (threads != "sweep") return {one(threads.empty() ? -1 : thread_count(threads))};
  const BwCase all = one(-1);
  if (all.pu_kind != PuKind::Cpu) return gpu_grid_sweep(topo, all);
  std::vector<BwCase> cases;
  for (int t : thread_sweep(all.threads)) cases.push_back(one(t));
  return cases;
}

// Modelled (core/duration_model.hpp): its buffers made by their allocators (managed host
// pages a GPU reads move to it first), warm-up and timed repetitions at the path's rate (a
// CPU's limited by its threads, a GPU block's by one block, a grid sweep point's by its
// blocks of 512 threads), the destination checked.
double bw_case_seconds(const model::Rates& rates, const BwCase& c, const BwSettings& s) {
  const double size = static_cast<double>(c.size);
  const bool copy = c.op == Op::Copy;
  double gbps = model::threads_gbps(rates, c.pu_kind, c.via, c.threads);
  if (c.kernel == "block") gbps = std::min(gbps, model::kGpuBlockGBps);
  if (c.blocks > 0) gbps = std::min(gbps, model::kGpuBlockGBps * c.blocks * kSweepBlockThreads / 1024);
  // A GPU's copy across a link reads over one direction of it and writes over the other.
  if (copy && c.pu_kind == PuKind::Gpu && c.via != "local") gbps *= 2;
  const double timed = model::seconds((s.warmup + s.reps) * bw_passes(c) * (copy ? 2 : 1) * size, gbps);
  // A path no allocator serves is skipped; its buffers count as pageable memory.
  const Alloc alloc = c.alloc.value_or(Alloc::System), dst_alloc = c.dst_alloc.value_or(Alloc::System);
  const double made = model::setup_s(size, alloc) + (copy ? model::setup_s(size, dst_alloc) : 0) +
                      model::migration_s(size, c.pu_kind, alloc, c.mem);
  const double check = c.op == Op::Read ? 0 : model::verify_s(size, copy ? dst_alloc : alloc);
  return model::kCaseOverheadS + made + timed + check;
}

std::string dash(const std::string& s) { return s.empty() ? "-" : s; }

class BwBenchmark : public Benchmark {
 public:
  BwBenchmark()
      : Benchmark({"bw",
                   "read/write/copy bandwidth of processor x memory x allocator",
                   "Read, write and copy bandwidth of processor x memory x allocator (docs/cli.md)."}) {}
  std::vector<OptionSpec> options() const override { return bw_option_specs(); }

  void plan(const Options& opts, const Topology& topo, bool) override {
    topo_ = &topo;
    rates_ = model::rates_of(topo);
    settings_ = settings_from(opts);
    cases_ = mempath::plan(topo, opts, settings_);
    if (cases_.empty()) throw UsageError("the filters select no case on this node; see 'mempath list'");
    noise_text_ = opts.get_or("noise", "");
    plan_noise(topo, noise_text_, noise_size_option(opts), cases_);
    // A noise buffer is set up once, by the first case that reads it.
    std::set<std::string> seen;
    first_noise_use_.assign(cases_.size(), false);
    for (size_t i = 0; i < cases_.size(); ++i)
      if (!cases_[i].noise.empty() && cases_[i].skip_reason.empty())
        first_noise_use_[i] = seen.insert(cases_[i].noise.buffer_key()).second;
    all_ = opts.flag("all");
  }
  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const BwCase& c = cases_[i];
    PlanFields f = {{"op", op_name(c.op)},
            {"pu", c.pu},
            {"mem", c.mem},
            {"dst", c.dst_mem},
            {"alloc", alloc_name(c.alloc)},
            {"kernel", c.kernel},
            {"threads", std::to_string(c.threads)},
            {"size", std::to_string(c.size)},
            {"via", c.via}};
    if (c.pu_kind == PuKind::Gpu) f.push_back({"blocks", std::to_string(c.kernel == "block" ? 1 : c.blocks > 0 ? c.blocks : -1)});
    if (!noise_text_.empty()) f.push_back({"noise", noise_label(c)});
    return f;
  }
  std::string skip_reason(size_t i) const override { return cases_[i].skip_reason; }
  double expected_seconds(size_t i) const override {
    const double noise = first_noise_use_[i] ? model::setup_s(static_cast<double>(cases_[i].noise.size), Alloc::Numa) : 0;
    return bw_case_seconds(rates_, cases_[i], settings_) + noise;
  }

  void prepare() override { noise_buffers_ = std::make_unique<NoiseBuffers>(*topo_); }
  Outcome run(size_t i) override {
    CaseOutcome o = run_case(*topo_, cases_[i], settings_, noise_buffers_.get());
    return {o.status, o.reason, o};
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const BwCase& c = cases_[i];
    CaseOutcome o;
    if (auto* measured = std::any_cast<CaseOutcome>(&out.data)) o = *measured;
    else o = unrun_outcome(c, out.status, out.reason);
    std::vector<double> gbps;
    for (double t : o.seconds) gbps.push_back(static_cast<double>(o.bytes_per_rep) / t / 1e9);
    const Summary s = o.status == "ok" ? summarize(gbps) : Summary{};
    Row common = {{"case_id", id}, {"op", std::string(op_name(c.op))},
                  {"pu", c.pu}, {"pu_kind", std::string(pu_kind_name(c.pu_kind))}, {"mem", c.mem}, {"dst_mem", c.dst_mem},
                  {"alloc", std::string(alloc_name(c.alloc))},
                  {"dst_alloc", std::string(c.op == Op::Copy ? alloc_name(c.dst_alloc) : "")}, {"kernel", o.kernel},
                  {"threads", static_cast<int64_t>(o.threads)},
                  {"size_bytes", static_cast<int64_t>(c.size)},
                  {"bytes", static_cast<int64_t>(o.bytes_per_rep)}, {"noise", noise_label(c)},
                  {"blocks", static_cast<int64_t>(o.blocks)}};
    CaseRows out_rows;
    if (o.status == "ok") {
      for (size_t r = 0; r < o.seconds.size(); ++r) {
        Row row = common;
        row["rep"] = static_cast<int64_t>(r);
        row["time_s"] = o.seconds[r];
        row["bandwidth_GBps"] = gbps[r];
        out_rows.samples.push_back(row);
      }
    }
    Row row = common;
    row["via"] = c.via;
    row["status"] = o.status;
    row["reason"] = o.reason;
    row["reps"] = static_cast<int64_t>(o.status == "ok" ? o.seconds.size() : 0);
    row["passes"] = static_cast<int64_t>(o.passes);
    row["median_GBps"] = s.median;
    row["min_GBps"] = s.min;
    row["max_GBps"] = s.max;
    row["placement"] = o.placement;
    row["dst_placement"] = o.dst_placement;
    row["placed"] = placed_column(o.status, o.status == "ok" && placed_as_named(*topo_, o.placement, c.mem, *c.alloc) &&
                                                (c.dst_mem.empty() || placed_as_named(*topo_, o.dst_placement, c.dst_mem, *c.dst_alloc)));
    row["verified"] = static_cast<int64_t>(o.verified);
    row["cache_resident"] = static_cast<int64_t>(c.in_cache);
    const bool noise_ran = o.status == "ok" && o.noise_seconds > 0;
    row["noise_size_bytes"] = static_cast<int64_t>(c.noise.empty() ? -1 : static_cast<int64_t>(c.noise.size));
    row["noise_threads"] = static_cast<int64_t>(o.noise_threads);
    row["noise_bytes"] = static_cast<int64_t>(noise_ran ? o.noise_bytes : 0);
    row["noise_time_s"] = noise_ran ? o.noise_seconds : kNaN;
    row["noise_GBps"] = noise_ran ? static_cast<double>(o.noise_bytes) / o.noise_seconds / 1e9 : kNaN;
    out_rows.cases.push_back(row);
    return out_rows;
  }
  // GPU lines name their blocks, lines of a case with noise its reader and what it read.
  std::vector<SummaryField> summary_fields(const Row& row) const override {
    const bool gpu = pu_kind(std::get<std::string>(row.at("pu_kind"))) == PuKind::Gpu;
    const bool noise = !std::get<std::string>(row.at("noise")).empty();
    std::vector<SummaryField> f = {field("op"), field("pu"), field("mem"), field("dst", "dst_mem"), field("alloc"),
                                   field("kernel"), field("threads")};
    if (gpu) f.push_back(field("blocks"));
    f.insert(f.end(), {field("size", "size_bytes"), field("via")});
    if (noise) f.push_back(field("noise"));
    f.insert(f.end(), {field("placement"), field("placed"), field("status"), metric("median_GBps", 2),
                       metric("min_GBps", 2), metric("max_GBps", 2)});
    if (noise) f.push_back(metric("noise_GBps", 2));
    f.push_back(metric("reps"));
    return f;
  }
  // nvbandwidth's view of `--all`: one processor x memory matrix per op, each cell the
  // best median of the path's cases (any allocator, kernel or thread count).
  void print_tables(const Table& cases) const override {
    if (!all_) return;
    PivotByKey matrices;  // by op
    for (size_t r = 0; r < cases.rows(); ++r) {
      const Row row = table_row(cases, r);
      const auto text = [&](const char* column) { return std::get<std::string>(row.at(column)); };
      const std::string dst = text("dst_mem");
      const std::string memory = text("mem") + (dst.empty() || dst == text("mem") ? "" : ">" + dst);
      matrices[text("op")].add(text("pu"), memory, status_shown(row), std::get<double>(row.at("median_GBps")));
    }
    for (const auto& op : matrices.keys())
      std::printf("\n%s", matrices.at(op).format("bw " + op + ": median GB/s, best case per processor (row) "
                                                     "and memory (column) whose pages stayed there; - none, fail failed",
                                                 "pu\\mem").c_str());
    std::fflush(stdout);
  }

 private:
  bool all_ = false;
  const Topology* topo_ = nullptr;
  model::Rates rates_;
  BwSettings settings_;
  std::vector<BwCase> cases_;
  // The noise column: the reader's PU:MEM, or the option itself where a case has none
  // (`partner` on a case the plan skipped for want of one); empty without --noise.
  std::string noise_label(const BwCase& c) const { return c.noise.empty() ? noise_text_ : c.noise.label(); }
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  std::string noise_text_;
  std::vector<bool> first_noise_use_;
  std::unique_ptr<NoiseBuffers> noise_buffers_;
};

}  // namespace

int cmd_list(const std::vector<std::string>& args) {
  Options opts("list", "Lists every `bw --all` case of this node, skipped ones with the reason.",
               list_option_specs());
  if (!opts.parse(args)) return 0;
  const Topology topo = opts.has("from") ? load_snapshot(*opts.get("from")) : discover();
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : all_cases(topo, filters_from(opts), settings_from(opts)))
    rows.push_back({op_name(c.op), c.pu, c.mem, dash(c.dst_mem), alloc_name(c.alloc), dash(c.kernel), std::to_string(c.threads),
                    format_size(c.size), dash(c.via), c.skip_reason.empty() ? "planned" : "skipped", c.skip_reason});
  std::printf("%s", format_text_table({"op", "pu", "mem", "dst", "alloc", "kernel", "threads", "size", "via",
                                       "status", "reason"},
                                      rows, "llllllrrlll").c_str());
  return 0;
}

std::unique_ptr<Benchmark> make_bw() { return std::make_unique<BwBenchmark>(); }

}  // namespace mempath
