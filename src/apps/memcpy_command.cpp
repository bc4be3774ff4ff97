// `mempath memcpy`: host<->device transfer bandwidth and latency (docs/cli.md).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "apps/driver.hpp"
#include "apps/memcpy_d2d_runner.hpp"
#include "apps/memcpy_runner.hpp"
#include "apps/plan_print.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/memcpy_plan.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/text_table.hpp"
#include "core/units.hpp"
#include "gpu/gpu_api.hpp"

namespace mempath {
namespace {

constexpr Repetitions kRepetitions = {10, 2};
constexpr Repetitions kLatencyRepetitions = {1000, 100};  // --latency: small transfers, many more

// --alloc's help: memcpy_allocs as kinds.def names them, the default first, pageable memory said so.
std::string alloc_help() {
  std::string text = "host buffer: ";
  for (const Alloc a : memcpy_allocs())
    text += std::string(a == memcpy_allocs().front() ? "" : ", ") + alloc_name(a) +
            (a == memcpy_allocs().front() ? " (default)" : alloc_info(a).pageable ? " (pageable)" : "");
  return text;
}

std::vector<OptionSpec> memcpy_option_specs() {
  return {
      {"gpu", "LIST", "GPUs, each in turn: N or gpuN, a comma list, or all (default gpu0; "
                      "d2d: the GPUs whose pairs are measured, default all)"},
      {"all-gpus", "", "every GPU to/from its own host buffer at once"},
      {"mem", "LIST", "host buffer's NUMA node: numaN, a comma list, or all host nodes "
                      "(default: each GPU's nearest host node; d2d staged: "
                      "the staging node, default the source GPU's nearest)"},
      {"cpu-numa", "N", "bind the issuing thread to NUMA node N (default: the GPU's nearest host node)"},
      {"alloc", "LIST", alloc_help()},
      {"direction", "LIST", "h2d, d2h, bidir (both at once on two streams); default all three; "
                            "or GPU<->GPU: d2d (every ordered pair), d2d-bidir (both ways)"},
      {"engine", "LIST", "ce (cudaMemcpyAsync, copy engines), sm (a copy kernel); default both; "
                         "d2d also staged (through pinned host memory), default all"},
      {"chunk", "SIZE", "d2d staged: bytes per pipeline chunk (default 16MiB)"},
      {"size", "SIZE", "bytes per transfer (default 512MiB)"},
      {"sweep", "", "transfer sizes 4KiB .. --max-size (powers of two) and the saturation size"},
      {"max-size", "SIZE", "largest size of --sweep (default 4GiB; lowered to what fits)"},
      {"latency", "", "host-observed cudaMemcpyAsync + cudaStreamSynchronize, 4B .. 1MiB"},
      {"reps", "N", "timed repetitions (default " + std::to_string(kRepetitions.reps) + "; --latency " +
                        std::to_string(kLatencyRepetitions.reps) + ")"},
      {"warmup", "N", "untimed repetitions first (default " + std::to_string(kRepetitions.warmup) + "; --latency " +
                          std::to_string(kLatencyRepetitions.warmup) + ")"},
  };
}

MemcpyRequest request_from(const Options& opts) {
  MemcpyRequest r;
  r.gpus = opts.list("gpu");
  r.all_gpus = opts.flag("all-gpus");
  r.mems = opts.list("mem");
  r.cpu_numa = static_cast<int>(opts.integer("cpu-numa", -1, 0));
  r.allocs = opts.list("alloc");
  r.directions = opts.list("direction");
  r.engines = opts.list("engine");
  if (auto v = opts.get("size")) r.size = parse_size(*v);  // refuses 0
  r.sweep = opts.flag("sweep");
  if (auto v = opts.get("max-size")) r.max_size = parse_size(*v);
  r.latency = opts.flag("latency");
  if (auto v = opts.get("chunk")) r.chunk = parse_size(*v);  // refuses 0
  return r;
}

std::string ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// One repetition's numbers: the parts (one per stream) and, with several, their total.
struct Measured {
  std::vector<Row> sample_rows;
  std::vector<double> total_gbps, total_s, h2d_gbps, d2h_gbps;
  std::vector<double> fwd_gbps, rev_gbps;  // d2d: gpus[0] -> gpus[1] and back
  uint64_t bytes = 0;
  size_t reps = 0;
};

Measured measure(const MemcpyCase& c, const MemcpyOutcome& o, const Row& common) {
  Measured m;
  if (o.status != "ok" || o.parts.empty()) return m;
  m.reps = o.parts.front().seconds.size();
  for (const auto& p : o.parts) m.bytes += p.bytes;
  for (size_t r = 0; r < m.reps; ++r) {
    double total = 0, h2d = 0, d2h = 0, fwd = 0, rev = 0;
    for (const auto& p : o.parts) {
      const double t = p.seconds[r];
      const double gbps = static_cast<double>(p.bytes) / t / 1e9;
      total += gbps;
      if (p.direction == "d2d") (p.gpu == c.gpus.front() ? fwd : rev) += gbps;
      else (p.direction == "h2d" ? h2d : d2h) += gbps;
      Row row = common;
      row["rep"] = static_cast<int64_t>(r);
      row["gpu"] = static_cast<int64_t>(p.gpu);
      row["host_numa"] = static_cast<int64_t>(p.host_numa);
      row["part"] = p.direction;
      row["dst_gpu"] = static_cast<int64_t>(p.dst_gpu);
      row["bytes"] = static_cast<int64_t>(p.bytes);
      row["time_s"] = t;
      row["bandwidth_GBps"] = gbps;
      m.sample_rows.push_back(row);
    }
    // Several streams at once: the total is the sum of their bandwidths; its time_s is
    // the time the total bytes take at that rate (docs/schema.md).
    const double total_s = static_cast<double>(m.bytes) / (total * 1e9);
    if (o.parts.size() > 1) {
      Row row = common;
      row["rep"] = static_cast<int64_t>(r);
      row["gpu"] = static_cast<int64_t>(c.all_gpus ? -1 : c.gpus.front());
      row["host_numa"] = static_cast<int64_t>(c.host_numa());
      row["part"] = std::string("total");
      row["dst_gpu"] = static_cast<int64_t>(c.dst_gpu);
      row["bytes"] = static_cast<int64_t>(m.bytes);
      row["time_s"] = total_s;
      row["bandwidth_GBps"] = total;
      m.sample_rows.push_back(row);
    }
    m.total_gbps.push_back(total);
    m.total_s.push_back(o.parts.size() > 1 ? total_s : o.parts.front().seconds[r]);
    if (c.direction == "h2d" || c.direction == "bidir") m.h2d_gbps.push_back(h2d);
    if (c.direction == "d2h" || c.direction == "bidir") m.d2h_gbps.push_back(d2h);
    if (c.d2d()) m.fwd_gbps.push_back(fwd);
    if (c.direction == "d2d-bidir") m.rev_gbps.push_back(rev);
  }
  return m;
}

class MemcpyBenchmark : public Benchmark {
 public:
  MemcpyBenchmark()
      : Benchmark({"memcpy",
                   "host<->device transfers: copy engine and SM copies, size sweep, latency",
                   "Host<->device transfers: copy-engine and SM copies, h2d/d2h/bidirectional, size sweep, "
                   "small-transfer latency; GPU<->GPU peer and staged copies (--direction d2d) (docs/cli.md)."}) {}
  std::vector<OptionSpec> options() const override { return memcpy_option_specs(); }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    if (!plan_only) require_cuda_build("'mempath memcpy' needs a CUDA build (rebuild where nvcc is found)");
    topo_ = &topo;
    rates_ = model::rates_of(topo);
    const MemcpyRequest request = request_from(opts);
    const Repetitions r = read_repetitions(opts, request.latency ? kLatencyRepetitions : kRepetitions);
    settings_.reps = r.reps, settings_.warmup = r.warmup;
    cases_ = plan_memcpy(topo, request);
    // The largest size of each buffer group: a sweep allocates its buffers once.
    for (const auto& c : cases_) capacity_[c.buffer_key()] = std::max(capacity_[c.buffer_key()], c.size);
  }
  size_t cases() const override { return cases_.size(); }
  // The keys of the case's MEMPATH line that the plan knows.
  PlanFields plan_fields(size_t i) const override {
    const MemcpyCase& c = cases_[i];
    PlanFields f = {{"mode", c.mode}, {"gpu", c.d2d() ? std::to_string(c.gpus.front()) : c.gpu_label()}};
    if (c.d2d()) f.push_back({"dst_gpu", std::to_string(c.dst_gpu)});
    f.insert(f.end(), {{"host_numa", std::to_string(c.host_numa())}, {"cpu_numa", std::to_string(c.cpu_numa)},
                       {"alloc", alloc_name(c.alloc)}, {"direction", c.direction}, {"engine", c.engine},
                       {"size", std::to_string(c.size)}, {"via", c.via}, {"timing", c.timing}});
    if (c.engine == "staged") f.push_back({"chunk", std::to_string(c.chunk)});
    return f;
  }
  // The runners record the plan's skips themselves (with the case's buffers and parts).
  std::string skip_reason(size_t) const override { return ""; }
  bool plan_skips(size_t i) const override { return !cases_[i].skip_reason.empty(); }
  // Modelled: a buffer group's buffers made by its first case (two of the case's allocator
  // and two of device memory per GPU); per case the host side checked, and warm-up, timed
  // and cool-down transfers each a call plus its bytes at the route's rate (pageable and
  // managed memory at the pageable rate, a staged GPU<->GPU copy at half the rate: it
  // crosses two links), the GPUs of --all-gpus at once; each timed transfer's row saved.
  double expected_seconds(size_t i) const override {
    const MemcpyCase& c = cases_[i];
    const double size = static_cast<double>(c.size), gpus = static_cast<double>(c.gpus.size());
    const double streams = c.direction == "bidir" || c.direction == "d2d-bidir" ? 2 : 1;
    double total = model::kCaseOverheadS + 2 * model::verify_s(gpus * streams * size, c.alloc);
    if (first_of_buffer_group(i)) {
      const double buffers = 2 * gpus * static_cast<double>(capacity_.at(c.buffer_key()));
      total += model::setup_s(buffers, c.d2d() ? Alloc::Device : c.alloc) + model::setup_s(buffers, Alloc::Device);
    }
    double gbps = host_blocking_copy(c.alloc, c.engine) || c.alloc == Alloc::System || c.alloc == Alloc::Managed
                      ? model::kPageableCopyGBps
                      : model::path_gbps(rates_, PuKind::Gpu, c.via);
    if (c.engine == "staged") gbps /= 2;
    // (Concurrent streams' few cool-down copies are left to the model's slack.)
    return total + (settings_.warmup + settings_.reps) * (model::kCopyCallS + model::seconds(streams * size, gbps)) +
           settings_.reps * model::kTransferRowS;
  }
  void print_plan(size_t i) const override { mempath::print_plan(name(), plan_fields(i), cases_[i].skip_reason); }

  void prepare() override {
    runner_ = std::make_unique<MemcpyRunner>(*topo_);
    d2d_runner_ = std::make_unique<MemcpyD2dRunner>(*topo_);
  }
  Outcome run(size_t i) override {
    const MemcpyCase& c = cases_[i];
    const bool single = cases_.size() == 1;
    MemcpyOutcome o = c.d2d() ? d2d_runner_->run(c, capacity_[c.buffer_key()], settings_, single)
                              : runner_->run(c, capacity_[c.buffer_key()], settings_, single);
    return {o.status, o.reason, o};
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const MemcpyCase& c = cases_[i];
    MemcpyOutcome o;
    if (auto* ran = std::any_cast<MemcpyOutcome>(&out.data)) o = *ran;
    o.status = out.status, o.reason = out.reason;
    Row common = {{"case_id", id}, {"mode", c.mode}, {"cpu_numa", static_cast<int64_t>(c.cpu_numa)},
                  {"alloc", std::string(alloc_name(c.alloc))}, {"direction", c.direction}, {"engine", c.engine},
                  {"size_bytes", static_cast<int64_t>(c.size)}, {"timing", c.timing}};
    Measured m = measure(c, o, common);
    const Summary s = o.status == "ok" ? summarize(m.total_gbps) : Summary{};
    const Summary t = o.status == "ok" ? summarize(m.total_s) : Summary{};
    Row row = common;
    row["gpu"] = static_cast<int64_t>(c.all_gpus ? -1 : c.gpus.front());
    row["gpus"] = ints(c.gpus);
    row["gpu_label"] = c.d2d() ? std::to_string(c.gpus.front()) : c.gpu_label();
    row["all_gpus"] = static_cast<int64_t>(c.all_gpus);
    row["host_numa"] = static_cast<int64_t>(c.host_numa());
    uint64_t bytes = 0;
    for (const auto& p : o.parts) bytes += p.bytes;
    if (bytes == 0)
      bytes = c.d2d() ? c.size * (c.direction == "d2d-bidir" ? 2 : 1)
                      : c.size * c.gpus.size() * (c.direction == "bidir" ? 2 : 1);
    row["bytes"] = static_cast<int64_t>(bytes);
    row["via"] = c.via;
    row["sweep"] = static_cast<int64_t>(c.sweep);
    row["status"] = o.status;
    row["reason"] = o.reason;
    row["reps"] = static_cast<int64_t>(o.status == "ok" ? m.reps : 0);
    row["median_GBps"] = s.median;
    row["min_GBps"] = s.min;
    row["max_GBps"] = s.max;
    row["h2d_median_GBps"] = o.status == "ok" && !m.h2d_gbps.empty() ? summarize(m.h2d_gbps).median : std::nan("");
    row["d2h_median_GBps"] = o.status == "ok" && !m.d2h_gbps.empty() ? summarize(m.d2h_gbps).median : std::nan("");
    row["median_time_s"] = t.median;
    row["p99_time_s"] = o.status == "ok" ? percentile(m.total_s, 99) : std::nan("");
    row["min_time_s"] = t.min;
    row["max_time_s"] = t.max;
    row["sm_threads"] = static_cast<int64_t>(o.sm_threads);
    row["placement"] = o.placement;
    row["verified"] = static_cast<int64_t>(o.verified);
    row["dst_gpu"] = static_cast<int64_t>(c.dst_gpu);
    row["chunk_bytes"] = c.engine == "staged" ? static_cast<int64_t>(c.chunk) : int64_t{-1};
    row["fwd_median_GBps"] = o.status == "ok" && !m.fwd_gbps.empty() ? summarize(m.fwd_gbps).median : std::nan("");
    row["rev_median_GBps"] = o.status == "ok" && !m.rev_gbps.empty() ? summarize(m.rev_gbps).median : std::nan("");
    row["saturation_bytes"] = int64_t{-1};
    return {{row}, m.sample_rows};
  }
  std::vector<SummaryField> summary_fields(const Row& row) const override {
    auto text = [&](const char* k) { return std::get<std::string>(row.at(k)); };
    const std::string direction = text("direction");
    std::vector<SummaryField> f = {field("mode"), field("gpu", "gpu_label")};
    if (is_d2d_direction(direction)) f.push_back(field("dst_gpu"));
    f.insert(f.end(), {field("host_numa"), field("cpu_numa"), field("alloc"), field("direction"), field("engine"),
                       field("size", "size_bytes"), field("via"), field("timing"), field("placement"), field("status")});
    if (text("mode") == "latency") {
      f.insert(f.end(), {metric("median_us", 3, "median_time_s", 1e6), metric("p99_us", 3, "p99_time_s", 1e6),
                         metric("min_us", 3, "min_time_s", 1e6), metric("max_us", 3, "max_time_s", 1e6)});
    } else {
      f.insert(f.end(), {metric("median_GBps", 2), metric("min_GBps", 2), metric("max_GBps", 2)});
      if (direction == "bidir") f.insert(f.end(), {metric("h2d_median_GBps", 2), metric("d2h_median_GBps", 2)});
      if (direction == "d2d-bidir") f.insert(f.end(), {metric("fwd_median_GBps", 2), metric("rev_median_GBps", 2)});
      if (text("engine") == "staged") f.push_back(metric("chunk", -1, "chunk_bytes"));
      f.push_back(metric("saturation_bytes"));
    }
    f.push_back(metric("reps"));
    return f;
  }

  // Each case is saved when it ends; a group (the sizes of one sweep) learns its
  // saturation size, and is printed, once all of its sizes ran.
  std::string group(size_t i) const override { return cases_[i].group_key(); }
  bool end_group(Table& table, const std::vector<size_t>& rows) override {
    const Row first = table_row(table, rows.front());
    if (!std::get<int64_t>(first.at("sweep")) || std::get<std::string>(first.at("mode")) != "bandwidth") return false;
    std::vector<uint64_t> sizes;
    std::vector<double> medians;
    for (size_t r : rows) {
      const Row row = table_row(table, r);
      sizes.push_back(static_cast<uint64_t>(std::get<int64_t>(row.at("size_bytes"))));
      medians.push_back(std::get<double>(row.at("median_GBps")));
    }
    const int64_t saturation = saturation_size(sizes, medians);
    for (size_t r : rows) table.set(r, "saturation_bytes", saturation);
    return true;
  }
  // The copy engines' bandwidth per GPU and direction at the largest size measured (a
  // sweep's smaller sizes are latency-bound), the cell the best over allocators and nodes.
  void print_tables(const Table& cases) const override {
    Pivot table;
    for (size_t r = 0; r < cases.rows(); ++r) {
      const Row row = table_row(cases, r);
      const auto text = [&](const char* k) { return std::get<std::string>(row.at(k)); };
      if (text("mode") != "bandwidth" || text("engine") != "ce") continue;
      const std::string gpu = text("gpu_label"), direction = text("direction");
      table.add(gpu == "all" ? gpu : "gpu" + gpu,
                is_d2d_direction(direction) ? direction + ">gpu" + std::to_string(std::get<int64_t>(row.at("dst_gpu")))
                                            : direction,
                text("status"), std::get<double>(row.at("median_GBps")),
                static_cast<double>(std::get<int64_t>(row.at("size_bytes"))));
    }
    if (table.empty()) return;
    std::printf("\n%s", table.format("memcpy: median GB/s of the copy engines (ce) at the largest size, per GPU "
                                     "(row) and direction (column); - not run, fail failed",
                                     "gpu\\dir").c_str());
    std::fflush(stdout);
  }

 private:
  const Topology* topo_ = nullptr;
  model::Rates rates_;
  MemcpySettings settings_;
  std::vector<MemcpyCase> cases_;
  std::map<std::string, uint64_t> capacity_;
  std::unique_ptr<MemcpyRunner> runner_;
  std::unique_ptr<MemcpyD2dRunner> d2d_runner_;

  // Whether case i allocates its buffers: the previous case that ran used other ones.
  bool first_of_buffer_group(size_t i) const {
    for (size_t j = i; j-- > 0;)
      if (!plan_skips(j)) return cases_[j].buffer_key() != cases_[i].buffer_key();
    return true;
  }
};

}  // namespace

std::unique_ptr<Benchmark> make_memcpy() { return std::make_unique<MemcpyBenchmark>(); }

}  // namespace mempath
