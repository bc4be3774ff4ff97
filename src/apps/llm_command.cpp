// `mempath llm`: the batch-1 decode of a Llama-style model with random weights of its real
// shapes (nothing downloaded), with the weights in each memory asked for, or with a share of
// the layers offloaded to host memory and reached three ways: read in place (zero-copy, UVA,
// ATS), streamed ahead into a ring of the GPU's own memory by the copy engines inside the
// step's CUDA graph, or vLLM's way (PyTorch's own kernels reading the offloaded tensors on
// demand, run by the referee); tokens/s against each way's bound from the same case's
// measured paths. PyTorch is only the referee (src/llm/referee.py): it checks the tokens
// teacher-forced, and runs the `default` placement (its own allocator) and vLLM's way
// (docs/cli.md, docs/methodology.md "LLM decode").
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "apps/benchmark.hpp"
#include "apps/common_options.hpp"
#include "core/allocators.hpp"
#include "core/duration_model.hpp"
#include "core/error.hpp"
#include "core/guards.hpp"
#include "core/kinds.hpp"
#include "core/llm_model.hpp"
#include "core/options.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "gpu/gpu_api.hpp"
#include "gpu/llm_api.hpp"

namespace mempath {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The GPU memory a decode needs beside its weights, ring and KV cache: the CUDA context's
// share, the graph, the activations and logits. Generous on purpose: a case that passes the
// check must not fail for want of memory halfway.
constexpr uint64_t kWorkingBytes = 1ULL << 30;
constexpr uint64_t kRateBytes = 1ULL << 30;  // read to measure a memory's rate
// What the plan adds (s): the referee's start (a Python process importing PyTorch and making
// its CUDA context), a graph's capture; the fused decode's share of its bound.
constexpr double kRefereeStartS = 5.0, kCaptureS = 0.5, kDecodeEfficiency = 0.85;

const char* const kWays[] = {"in-place", "streamed", "vllm"};

// Where a part of the model lies: an allocator on a memory, or why the GPU cannot read it there.
struct Where {
  Alloc alloc = Alloc::Device;
  std::string mem, via, skip;
};

struct LlmCase {
  std::string placement;   // hbm, host, default, ...; "offload" for the offload sweep
  std::string way;         // "" (a placement), in-place, streamed, vllm
  Where weights;           // all weights (placement), or the resident ones (offload)
  int64_t offloaded = 0;   // the last layers in `offload`
  Where offload;
  std::string skip;
};

struct Rates {
  double hbm = kNaN, offload = kNaN, h2d = kNaN, kv = kNaN, weights = kNaN;
};

struct LlmOutcome {
  std::vector<double> seconds;
  int timed_steps = 0;
  std::vector<int> tokens;
  bool graph = false;
  std::string graph_why, weight_placement, decode_mode = "fused";
  Rates rates;
  int64_t ring = 0;
  int64_t peak_small = -1, peak_large = -1;
  double bound_step_s = kNaN;
  double empty_launch_s = 0;
};

std::string self_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// A file of the referee's beside the binary: in the build tree (build/ next to src/), or
// under the install prefix (bin/ next to share/ and lib/).
std::string beside(const std::string& in_build, const std::string& installed) {
  const std::string dir = self_dir();
  for (const std::string& p : {dir + "/" + in_build, dir + "/../" + installed})
    if (access(p.c_str(), R_OK) == 0) return p;
  return dir + "/" + in_build;
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs the referee; its one JSON line, or throws with its last line.
std::string referee(const std::string& python, const std::vector<std::string>& args) {
  std::string cmd = quoted(python) + " " + quoted(beside("../src/llm/referee.py", "share/mempath/llm/referee.py"));
  for (const auto& a : args) cmd += " " + quoted(a);
  cmd += " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot start the referee (" + python + ")");
  std::string out, line;
  char buf[4096];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int status = pclose(p);
  std::istringstream lines(out);
  std::string json, last;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.front() == '{') json = line;
    if (!line.empty()) last = line;
  }
  if (status != 0 || json.empty())
    throw std::runtime_error("the referee failed: " + (last.empty() ? "no output" : last));
  return json;
}

// The number after "key": in a flat JSON object; a list of numbers for a list.
std::vector<double> json_numbers(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return {};
  size_t i = json.find(':', at) + 1;
  while (i < json.size() && json[i] == ' ') ++i;
  std::vector<double> out;
  const bool list = json[i] == '[';
  if (list) ++i;
  while (i < json.size()) {
    char* end = nullptr;
    const double v = std::strtod(json.c_str() + i, &end);
    if (end == json.c_str() + i) break;
    out.push_back(v);
    i = static_cast<size_t>(end - json.c_str());
    while (i < json.size() && (json[i] == ' ' || json[i] == ',')) ++i;
    if (!list || json[i] == ']') break;
  }
  return out;
}

std::string json_text(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return "";
  const size_t start = json.find('"', json.find(':', at)) + 1;
  std::string out;
  for (size_t i = start; i < json.size() && json[i] != '"'; ++i) out += json[i] == '\\' ? json[++i] : json[i];
  return out;
}

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

class LlmBenchmark : public Benchmark {
 public:
  LlmBenchmark()
      : Benchmark({"llm", "LLM decode tokens/s with the weights in each memory, or a share of them offloaded",
                   "The batch-1 decode of a Llama-style model (random weights of its real shapes) with the weights in "
                   "each memory, or the last layers offloaded to host memory and read in place, streamed ahead into "
                   "a ring of the GPU's memory, or read by PyTorch on demand (vLLM's way); tokens/s against each "
                   "way's bound from the case's own measured paths (docs/cli.md)."}) {}

  std::vector<OptionSpec> options() const override {
    std::string models;
    for (const auto& m : llm_models()) models += (models.empty() ? "" : ", ") + m.name;
    std::vector<OptionSpec> specs = {
        {"model", "NAME", models + " (default llama-3.2-1b)"},
        {"dtype", "fp16|bf16", "the weights' type (default bf16)"},
        {"gpu", "N", "the GPU that decodes (default 0)"},
        {"placement", "LIST", "where all weights are: hbm, host, host-remote, peer, default (PyTorch's own "
                              "allocator, run by the referee), ALLOC:MEM (default hbm,host,host-remote,peer; none "
                              "with --offload)"},
        {"offload", "LIST", "the last layers to host memory, per value: a share (25%, 0.25), a size (20GiB: whole "
                            "layers holding it), all, or sweep (0 and every tenth of the layers)"},
        {"offload-to", "PLACEMENT", "where offloaded layers are: ALLOC:MEM (default pinned: the GPU's own host "
                                    "memory, page-locked as vLLM's --cpu-offload-gb has it, which every way reaches; "
                                    "on GH200 also numa:numaN or system:numaN read through ATS, managed:numaN, the "
                                    "other superchip's numaN), host, host-remote"},
        {"way", "LIST", "how offloaded layers are reached: in-place, streamed, vllm (default: all three)"},
        {"ring", "N|auto", "streamed: layers the ring of the GPU's memory holds (default auto: enough to have the "
                           "copies of the resident part's time in flight, from the measured rates)"},
        {"kv-mem", "PLACEMENT", "where the KV cache is: hbm (default), host, ALLOC:MEM"},
        {"prompt-tokens", "N|empty", "N prompt tokens (default 128), or empty: the BOS token alone"},
        {"new-tokens", "N", "tokens generated (default 64; the first is the prompt's)"},
        {"seed", "N", "the weights' and the prompt's seed (default 1234)"},
        {"referee", "PYTHON|none", "the Python with PyTorch that checks the tokens and runs `default` and vLLM's "
                                   "way (default python3; none: no check, those cases skipped)"}};
    append(specs, repetition_options({3, 1}, "decodes"));
    return specs;
  }

  void plan(const Options& opts, const Topology& topo, bool plan_only) override {
    if (!plan_only) require_cuda_build("llm needs a CUDA build");
    topo_ = &topo;
    rates_ = model::rates_of(topo);
    gpu_ = gpu_option(opts, topo).id;
    pu_ = "gpu" + std::to_string(gpu_);
    shape_ = llm_model(opts.get_or("model", "llama-3.2-1b"));
    dtype_ = opts.get_or("dtype", "bf16");
    bytes_ = llm_dtype_bytes(dtype_);
    layout_ = llm_layer_layout(shape_, bytes_);
    const Repetitions r = read_repetitions(opts, {3, 1});
    reps_ = r.reps, warmup_ = r.warmup;
    seed_ = static_cast<uint32_t>(parse_int(opts.get_or("seed", "1234"), "--seed"));
    prompt_text_ = opts.get_or("prompt-tokens", "128");
    prompt_ = llm_prompt(shape_, prompt_text_, seed_);
    new_tokens_ = static_cast<int>(parse_int(opts.get_or("new-tokens", "64"), "--new-tokens"));
    if (new_tokens_ < 5 || new_tokens_ > 65536)
      throw UsageError("invalid --new-tokens " + std::to_string(new_tokens_) + "; valid: 5 .. 65536");
    referee_ = opts.get_or("referee", "python3");
    const std::string ring = opts.get_or("ring", "auto");
    ring_ = ring == "auto" ? 0 : parse_int(ring, "--ring");
    if (ring_ < 0 || (ring != "auto" && ring_ < 1)) throw UsageError("invalid --ring '" + ring + "'; valid: auto or 1 ..");
    kv_ = resolve(opts.get_or("kv-mem", "hbm"), "--kv-mem");
    if (!kv_.skip.empty()) throw UsageError("--kv-mem " + opts.get_or("kv-mem", "") + ": " + kv_.skip);
    const bool offload = opts.has("offload");
    const std::string placements = opts.get_or("placement", offload ? "" : "hbm,host,host-remote,peer");
    for (const auto& name : split_list(placements)) {
      LlmCase c;
      c.placement = name;
      if (name == "default") {
        c.weights = resolve("hbm", "--placement");
        c.skip = c.weights.skip.empty() && referee_ == "none" ? "no referee (--referee none): `default` is "
                                                                "PyTorch's own allocator, run by the referee"
                                                              : c.weights.skip;
      } else {
        c.weights = resolve(name, "--placement");
        c.skip = c.weights.skip;
      }
      cases_.push_back(c);
    }
    if (offload) {
      const Where to = resolve(opts.get_or("offload-to", "pinned:numa" + std::to_string(topo_->find_gpu(gpu_)->host_numa)),
                               "--offload-to");
      std::vector<std::string> ways = opts.has("way") ? opts.list("way") : std::vector<std::string>(std::begin(kWays), std::end(kWays));
      for (const auto& w : ways)
        if (std::find(std::begin(kWays), std::end(kWays), w) == std::end(kWays))
          throw UsageError("invalid --way '" + w + "'; valid: in-place, streamed, vllm");
      // mempath's own ways first, a point's ways together (they share the blocks each point
      // holds); vLLM's way last (its PyTorch needs the GPU's memory those blocks held)
      std::stable_sort(ways.begin(), ways.end(), [](const std::string& a, const std::string& b) {
        return (a == "vllm") < (b == "vllm");
      });
      std::vector<std::pair<int64_t, std::string>> points;
      for (const bool vllm : {false, true})
        for (int64_t k : llm_offload_layers(opts.list("offload"), shape_, bytes_))
          for (const auto& w : ways)
            if ((w == "vllm") == vllm) points.push_back({k, w});
      for (const auto& [k, w] : points) {
          LlmCase c;
          c.placement = "offload", c.way = w, c.offloaded = k, c.offload = to;
          c.weights = resolve("hbm", "--offload");
          c.skip = !c.weights.skip.empty() ? c.weights.skip : k > 0 ? to.skip : "";
          if (c.skip.empty() && w == "streamed" && k > 0 && !alloc_info(to.alloc).page_locked &&
              to.alloc != Alloc::Device)
            c.skip = "streamed from " + std::string(alloc_name(to.alloc)) + " memory: a copy engine's transfer in a "
                     "CUDA graph needs page-locked memory; valid: --offload-to pinned:MEM or registered:MEM";
          if (c.skip.empty() && w == "vllm" && referee_ == "none")
            c.skip = "no referee (--referee none): vLLM's way is PyTorch's, run by the referee";
          cases_.push_back(c);
        }
    }
    if (cases_.empty()) throw UsageError("no case: valid: --placement LIST and/or --offload LIST");
    for (auto& c : cases_)
      if (c.skip.empty()) c.skip = fit_problem(c, plan_only);
  }

  size_t cases() const override { return cases_.size(); }
  PlanFields plan_fields(size_t i) const override {
    const LlmCase& c = cases_[i];
    PlanFields f = {{"model", shape_.name}, {"dtype", dtype_}, {"gpu", pu_}, {"placement", c.placement},
                    {"mem", c.weights.mem}, {"alloc", alloc_name(c.weights.alloc)}};
    if (!c.way.empty())
      f.insert(f.end(), {{"way", c.way}, {"offload_layers", std::to_string(c.offloaded)},
                         {"src_mem", c.offload.mem}, {"offload_alloc", alloc_name(c.offload.alloc)}});
    f.push_back({"kv_mem", kv_.mem});
    if (c.skip.empty() && c.placement != "default") {  // the model's bound: the curves a snapshot predicts
      char text[32];
      std::snprintf(text, sizeof text, "%.2f", 1.0 / modelled_step_s(c));
      f.push_back({"modelled_bound_tokens_per_s", text});
    }
    return f;
  }

  // The rates a snapshot's topology gives `c`'s paths (duration_model's peaks), as a run
  // measures them: the copy engines at the offloaded memory's path rate.
  Rates modelled_rates(const LlmCase& c) const {
    Rates r;
    r.hbm = model::path_gbps(rates_, PuKind::Gpu, "local");
    r.weights = c.way.empty() ? model::path_gbps(rates_, PuKind::Gpu, c.weights.via.empty() ? "local" : c.weights.via)
                              : r.hbm;
    r.offload = r.h2d = c.offloaded ? model::path_gbps(rates_, PuKind::Gpu, c.offload.via) : r.hbm;
    if (kv_.mem != pu_) r.kv = model::path_gbps(rates_, PuKind::Gpu, kv_.via);
    return r;
  }

  // The bound step time of `c` at the modelled rates, with the ring the run would choose.
  double modelled_step_s(const LlmCase& c) const {
    const Rates r = modelled_rates(c);
    const double layer = static_cast<double>(layer_param_bytes());
    int64_t ring = 0;
    if (c.way == "streamed" && c.offloaded > 0)
      ring = ring_ ? std::min<int64_t>(ring_, c.offloaded)
                   : llm_default_ring(layer * (shape_.layers - c.offloaded) / (r.hbm * 1e9), c.offloaded, layer, r.h2d);
    const double guess = bound_step_s(c, r, new_tokens_ - 1, ring);
    return bound_step_s(c, r, timed_steps(guess / kDecodeEfficiency), ring);
  }
  std::string skip_reason(size_t i) const override { return cases_[i].skip; }

  // Modelled: the weights made where they lie, the rates measured (three reads of each
  // part), the decode (prompt, probe, warm-up and timed steps at the bound's step time over
  // the fused decode's efficiency); the referee's start where it runs.
  double expected_seconds(size_t i) const override {
    const LlmCase& c = cases_[i];
    const double layer = static_cast<double>(layout_.bytes), moved = static_cast<double>(c.offloaded) * layer;
    const double all = static_cast<double>(llm_step_weight_bytes(shape_, bytes_));
    const double step = modelled_step_s(c) / kDecodeEfficiency;
    const double made = model::setup_s(all - moved, c.way.empty() ? c.weights.alloc : Alloc::Device) +
                        (c.offloaded ? model::setup_s(moved, c.offload.alloc) + moved / (modelled_rates(c).h2d * 1e9) : 0);
    const int steps = timed_steps(step);
    // the prompt once (a position a step), the probe, then the timed repetitions
    const double decode = (static_cast<double>(prompt_.size()) + 3 + (warmup_ + reps_) * steps) * step;
    const bool by_referee = c.placement == "default" || c.way == "vllm";
    const double checked = (i == first_planned() || by_referee) && referee_ != "none" ? kRefereeStartS : 0;
    return model::kCaseOverheadS + made + 3 * step + kCaptureS + decode + checked;
  }

  Outcome run(size_t i) override {
    const LlmCase& c = cases_[i];
    const bool pytorch = c.placement == "default" || c.way == "vllm";
    LlmOutcome o;
    if (pytorch) {
      const Rates rates = decode(c, true).rates;  // its memories' rates, as mempath's own case reads them
      held_.clear();                              // the referee's PyTorch needs the GPU's memory they held
      o = by_referee(c, rates);
    } else {
      o = decode(c);
    }
    Outcome out{"ok", "", o};
    // Every case decodes the same weights and prompt with the same kernels (PyTorch's, vLLM's
    // way, greedy over other rounding): the referee checks the first case's tokens
    // teacher-forced, and each later one must generate exactly them.
    check_tokens(c, o, out);
    // The events bracket a repetition (its steps replayed back to back, their tokens checked):
    // it, not one step, must be far longer than an empty launch.
    if (out.status == "ok" && o.empty_launch_s > 0) {
      const std::string guard = gpu_timing_problem(summarize(o.seconds).median, o.empty_launch_s);
      if (!guard.empty()) out.status = "failed", out.reason = guard;
    }
    out.data = o;
    return out;
  }

  CaseRows rows(size_t i, const Outcome& out, int64_t id) override {
    const LlmCase& c = cases_[i];
    const auto* o = std::any_cast<LlmOutcome>(&out.data);
    const bool ok = out.status == "ok" && o && !o->seconds.empty();
    CaseRows rows;
    std::vector<double> rates;
    if (o)
      for (size_t r = 0; r < o->seconds.size(); ++r) {
        rates.push_back(o->timed_steps / o->seconds[r]);
        if (ok) rows.samples.push_back({{"case_id", id}, {"rep", static_cast<int64_t>(r)}, {"time_s", o->seconds[r]},
                                        {"tokens_per_s", rates.back()}});
      }
    const Summary s = ok ? summarize(rates) : Summary{};
    const double slots = static_cast<double>(prompt_.size()) + (o ? (o->timed_steps + 1) / 2.0 : 0);
    const double kv_bytes = llm_kv_bytes(shape_, slots, bytes_);
    const double bound = o && std::isfinite(o->bound_step_s) ? 1.0 / o->bound_step_s : kNaN;
    const bool offloaded = !c.way.empty();
    const int64_t verified = ok && tokens_ok_ ? 1 : 0;
    rows.cases.push_back({
        {"case_id", id}, {"model", shape_.name}, {"params", static_cast<int64_t>(llm_params(shape_))},
        {"weight_bytes", static_cast<int64_t>(llm_params(shape_) * bytes_)}, {"dtype", dtype_},
        {"placement", c.way.empty() ? c.placement : "offload"}, {"way", c.way},
        {"weight_alloc", c.placement == "default" ? std::string("pytorch") : std::string(alloc_name(c.weights.alloc))},
        {"weight_mem", c.weights.mem}, {"weight_placement", o ? o->weight_placement : ""},
        {"offload_layers", c.offloaded},
        {"offload_bytes", static_cast<int64_t>(c.offloaded * layer_param_bytes())},
        {"offload_alloc", offloaded && c.offloaded ? std::string(alloc_name(c.offload.alloc)) : std::string()},
        {"offload_mem", offloaded && c.offloaded ? c.offload.mem : std::string()},
        {"kv_alloc", std::string(alloc_name(kv_.alloc))}, {"kv_mem", kv_.mem},
        {"ring_slots", o ? o->ring : 0}, {"gpu", static_cast<int64_t>(gpu_)}, {"batch", int64_t{1}},
        {"prompt_tokens", static_cast<int64_t>(prompt_.size())}, {"new_tokens", static_cast<int64_t>(new_tokens_)},
        {"prompt", prompt_text_ == "empty" ? std::string("empty") : std::string("random")},
        {"cuda_graph", static_cast<int64_t>(o && o->graph)}, {"status", out.status}, {"reason", out.reason},
        {"reps", static_cast<int64_t>(ok ? rates.size() : 0)}, {"median_tokens_per_s", s.median},
        {"best_tokens_per_s", s.max}, {"path_GBps", o ? o->rates.weights : kNaN},
        {"path_source", std::string(o ? "measured" : "")}, {"hbm_GBps", o ? o->rates.hbm : kNaN},
        {"offload_GBps", o ? o->rates.offload : kNaN}, {"h2d_GBps", o ? o->rates.h2d : kNaN},
        {"kv_GBps", o ? o->rates.kv : kNaN}, {"bound_tokens_per_s", bound},
        {"fraction_of_bound", ok ? s.median / bound : kNaN}, {"verified", verified},
        {"decode_mode", o ? o->decode_mode : ""}, {"decode_fallback", o ? o->graph_why : ""}, {"path_case", ""},
        {"torch_allocator", c.placement == "default" || c.way == "vllm" ? std::string("caching") : std::string()},
        {"peak_small_bytes", o ? o->peak_small : -1}, {"peak_large_bytes", o ? o->peak_large : -1},
        {"timed_tokens", static_cast<int64_t>(o ? o->timed_steps : 0)},
        {"weight_read_bytes", static_cast<int64_t>(llm_step_weight_bytes(shape_, bytes_))},
        {"kv_read_bytes", static_cast<int64_t>(kv_bytes)}, {"tokens_checked", check_.checked},
        {"tokens_equal", ok ? check_.equal : 0}, {"near_ties", check_.near_ties}, {"tokens_wrong", check_.wrong},
        {"max_margin", check_.max_margin}});
    return rows;
  }

  std::vector<SummaryField> summary_fields(const Row&) const override {
    return {field("model"),     field("dtype"),         field("gpu"),        field("placement"),
            field("way"),       field("offload_layers"), field("offload_mem"), field("kv_mem"),
            field("ring_slots"), field("status"),       metric("median_tokens_per_s", 2),
            metric("bound_tokens_per_s", 2),            metric("fraction_of_bound", 3),
            field("verified")};
  }

 private:
  struct TokenCheck {
    int64_t checked = 0, equal = 0, near_ties = 0, wrong = 0;
    double max_margin = kNaN;
  };

  // A placement name as an allocator on a memory of this node, and why the GPU cannot read it there.
  Where resolve(const std::string& name, const std::string& option) const {
    const GpuInfo& g = *topo_->find_gpu(gpu_);
    Where w;
    auto check = [&](Alloc alloc, const std::string& mem) {
      w.alloc = alloc, w.mem = mem;
      const Path* path = topo_->find_path(pu_, mem);
      w.via = path ? path->via : "";
      w.skip = path ? alloc_problem(*topo_, pu_, mem, alloc) : pu_ + " has no path to " + mem;
      return w;
    };
    // Host memory the GPU reads: through ATS where it reads pageable memory, else pinned.
    auto host = [&](const std::string& mem) {
      const Path* path = topo_->find_path(pu_, mem);
      const bool ats = path && std::find(path->allocs.begin(), path->allocs.end(), Alloc::Numa) != path->allocs.end();
      return check(ats ? Alloc::Numa : Alloc::Pinned, mem);
    };
    if (name == "hbm") return check(Alloc::Device, pu_);
    if (name == "host") return host("numa" + std::to_string(g.host_numa));
    if (name == "host-remote") {
      for (const auto& n : topo_->numa_nodes)
        if (n.kind == MemKind::Host && !n.cpus.empty() && n.id != g.host_numa) return host("numa" + std::to_string(n.id));
      w.mem = "", w.skip = "one host NUMA node: no remote host memory";
      return w;
    }
    if (name == "peer") {
      for (const auto& p : topo_->gpus)
        if (p.id != gpu_) return check(Alloc::Device, "gpu" + std::to_string(p.id));
      w.mem = "", w.skip = "one GPU: no peer memory";
      return w;
    }
    const size_t colon = name.find(':');
    if (colon != std::string::npos) {
      const std::string alloc = name.substr(0, colon), mem = name.substr(colon + 1);
      if (!topo_->find_mem(mem))
        throw UsageError(option + " " + name + ": no memory " + mem + "; valid: " + join(topo_->mem_names()));
      return check(alloc_kind(alloc), mem);
    }
    throw UsageError("invalid " + option + " '" + name + "'; valid: hbm, host, host-remote, peer" +
                     (option == "--placement" ? ", default" : "") + ", ALLOC:MEM");
  }

  uint64_t layer_param_bytes() const {
    const uint64_t h = shape_.hidden, kv = shape_.kv_dim(), in = shape_.intermediate;
    return ((h + 2 * kv) * h + h * h + 3 * in * h + 2 * h) * bytes_;
  }
  uint64_t kv_cache_bytes() const {
    return static_cast<uint64_t>(llm_kv_bytes(shape_, static_cast<double>(prompt_.size() + new_tokens_), bytes_));
  }
  uint64_t other_bytes() const {  // embed, norm, head
    return llm_embed_bytes(shape_, bytes_) + llm_head_bytes(shape_, bytes_) + shape_.hidden * bytes_;
  }

  // Why a case does not fit the memories it uses (free bytes on a live node, total in a
  // snapshot), or "".
  std::string fit_problem(const LlmCase& c, bool plan_only) const {
    std::map<std::string, uint64_t> need;
    const uint64_t layers = static_cast<uint64_t>(layout_.bytes) * shape_.layers;
    if (c.way.empty()) {
      need[c.weights.mem] += layers + other_bytes();
    } else {
      need[pu_] += layout_.bytes * (shape_.layers - c.offloaded) + other_bytes();
      if (c.offloaded) need[c.offload.mem] += layout_.bytes * c.offloaded;
      if (c.way == "streamed" && c.offloaded) need[pu_] += layout_.bytes * std::min<int64_t>(2, c.offloaded);
    }
    need[kv_.mem] += kv_cache_bytes();
    need[pu_] += kWorkingBytes;
    for (const auto& [mem, bytes] : need) {
      const Memory* m = topo_->find_mem(mem);
      if (!m) continue;
      const uint64_t have = plan_only ? static_cast<uint64_t>(m->bytes) : free_bytes(mem);
      if (bytes > have)
        return "does not fit: " + format_size(bytes) + " of weights" + (mem == pu_ ? ", ring, KV cache and working memory" : "") +
               " on " + mem + ", which has " + format_size(have) + (plan_only ? "" : " free") +
               (c.way.empty() ? "; valid: --offload the layers that do not fit" : "; valid: offload more layers");
    }
    return "";
  }

  size_t first_planned() const {
    for (size_t i = 0; i < cases_.size(); ++i)
      if (cases_[i].skip.empty()) return i;
    return cases_.size();
  }

  int timed_steps(double step_s) const {
    const int most = new_tokens_ - 1;
    if (step_s * most <= 2.0) return most;
    return std::min(most, std::max(8, static_cast<int>(std::ceil(2.0 / step_s))));
  }

  // The weights of `c` made where they lie, the rates measured, the decode (not with
  // `rates_only`: PyTorch's cases, held to the bound of the memories they read).
  LlmOutcome decode(const LlmCase& c, bool rates_only = false) {
    LlmOutcome o;
    const int d = dtype_ == "fp16" ? 0 : 1;
    const uint64_t embed = llm_embed_bytes(shape_, bytes_), head = llm_head_bytes(shape_, bytes_);
    const Where& base = c.weights;
    // embed | norm | head in one block of the base memory
    const uint64_t norm_at = (embed + kLlmAlign - 1) / kLlmAlign * kLlmAlign;
    const uint64_t head_at = norm_at + (shape_.hidden * bytes_ + kLlmAlign - 1) / kLlmAlign * kLlmAlign;
    auto fill = [&](const Buffer& b, uint64_t at, uint32_t tensor, int64_t first, int64_t rows, int64_t cols,
                    bool ones) {
      gpu::llm_fill(gpu_, d, static_cast<char*>(b.data()) + at, first, rows, cols, seed_, tensor, llm_scale(cols),
                    ones, b.gpu() >= 0);
    };
    const int64_t h = shape_.hidden, kv = shape_.kv_dim(), in = shape_.intermediate;
    const Buffer* top = held(-1, base, head_at + head, [&](const Buffer& b) {
      fill(b, 0, kLlmEmbedTensor, 0, shape_.vocab, h, false);
      fill(b, norm_at, kLlmNormTensor, 0, 1, h, true);
      if (head) fill(b, head_at, kLlmHeadTensor, 0, shape_.vocab, h, false);
    });
    std::vector<const Buffer*> blocks;
    const int64_t first_off = shape_.layers - (c.way.empty() ? 0 : c.offloaded);
    for (int64_t l = 0; l < shape_.layers; ++l)
      blocks.push_back(held(l, l >= first_off ? c.offload : base, layout_.bytes, [&](const Buffer& b) {
        const uint64_t row = static_cast<uint64_t>(h) * bytes_;
        fill(b, layout_.qkv, llm_tensor(shape_, l, LlmPart::Q), 0, h, h, false);
        fill(b, layout_.qkv + h * row, llm_tensor(shape_, l, LlmPart::K), 0, kv, h, false);
        fill(b, layout_.qkv + (h + kv) * row, llm_tensor(shape_, l, LlmPart::V), 0, kv, h, false);
        fill(b, layout_.o, llm_tensor(shape_, l, LlmPart::O), 0, h, h, false);
        fill(b, layout_.gu, llm_tensor(shape_, l, LlmPart::Gate), 0, in, h, false);
        fill(b, layout_.gu + in * row, llm_tensor(shape_, l, LlmPart::Up), 0, in, h, false);
        fill(b, layout_.down, llm_tensor(shape_, l, LlmPart::Down), 0, h, in, false);
        fill(b, layout_.n1, llm_tensor(shape_, l, LlmPart::N1), 0, 1, h, true);
        fill(b, layout_.n2, llm_tensor(shape_, l, LlmPart::N2), 0, 1, h, true);
      }));
    const Buffer* kcache = held(-2, kv_, kv_cache_bytes() / 2, [](const Buffer&) {});
    const Buffer* vcache = held(-3, kv_, kv_cache_bytes() / 2, [](const Buffer&) {});
    o.weight_placement = placement(*blocks.front());
    // The rates: each memory's weights read as the decode reads them; a streamed layer's copy.
    std::vector<std::pair<const void*, uint64_t>> resident, moved;
    const uint64_t read_top = head ? head_at + head : head_at;  // a tied lm_head is the embedding: read whole
    resident.push_back({static_cast<char*>(top->data()) + (head ? head_at : 0), head ? head : read_top});
    for (int64_t l = 0; l < shape_.layers; ++l)
      (l >= first_off ? moved : resident).push_back({blocks[l]->data(), layout_.bytes});
    // A memory's rate from its first GiB (the plateau, far beyond any cache), so that reading
    // tens of GB offloaded over PCIe costs no more than a step or two.
    auto gbps = [&](const std::vector<std::pair<const void*, uint64_t>>& parts) {
      std::vector<std::pair<const void*, uint64_t>> read;
      uint64_t bytes = 0;
      for (const auto& [p, n] : parts) {
        const uint64_t take = std::min<uint64_t>(n, (kRateBytes - bytes) / 16 * 16);
        if (take == 0) break;
        read.push_back({p, take});
        bytes += take;
      }
      return bytes / gpu::llm_read_seconds(gpu_, read, 2) / 1e9;
    };
    if (c.way.empty()) {  // a placement: all its weights in one memory
      o.rates.weights = gbps(resident);
      if (base.mem == pu_) o.rates.hbm = o.rates.weights;
    } else {
      o.rates.weights = o.rates.hbm = gbps(resident);
      if (!moved.empty()) {
        o.rates.offload = gbps(moved);
        o.rates.h2d = layout_.bytes / gpu::llm_copy_seconds(gpu_, moved.front().first, layout_.bytes, 3) / 1e9;
      }
    }
    if (kcache->gpu() != gpu_) o.rates.kv = gbps({{kcache->data(), kcache->bytes() / 16 * 16}});
    if (rates_only) return o;
    const double layer = static_cast<double>(layer_param_bytes());
    if (c.way == "streamed" && c.offloaded > 0) {  // the ring: from the rates, before the run
      const double before = layer * (shape_.layers - c.offloaded) / (o.rates.hbm * 1e9);
      o.ring = ring_ ? std::min<int64_t>(ring_, c.offloaded) : llm_default_ring(before, c.offloaded, layer, o.rates.h2d);
    }
    std::unique_ptr<Buffer> ring;
    if (o.ring > 0) {
      const uint64_t need = o.ring * layout_.bytes + kWorkingBytes;
      if (need > free_bytes(pu_))
        throw Unsupported("a ring of " + std::to_string(o.ring) + " layers (" + format_size(o.ring * layout_.bytes) +
                          ") does not fit beside the resident weights on " + pu_ + " (" + format_size(free_bytes(pu_)) +
                          " free); valid: --ring N of fewer layers, or offload more");
      ring = allocate(*topo_, Alloc::Device, pu_, o.ring * layout_.bytes, 0);
    }
    gpu::LlmDecodeSpec spec;
    spec.gpu = gpu_, spec.dtype = d, spec.shape = shape_, spec.layout = layout_;
    spec.embed = top->data();
    spec.norm = static_cast<char*>(top->data()) + norm_at;
    spec.head = head ? static_cast<char*>(top->data()) + head_at : top->data();
    for (int64_t l = 0; l < shape_.layers; ++l)
      spec.layers.push_back({blocks[l]->data(), c.way == "streamed" && l >= first_off});
    spec.ring = ring ? ring->data() : nullptr;
    spec.ring_slots = o.ring;
    spec.k_cache = kcache->data(), spec.v_cache = vcache->data();
    spec.prompt = prompt_;
    spec.new_tokens = new_tokens_;
    spec.warmup = warmup_, spec.reps = reps_;
    const gpu::LlmDecodeRun r = gpu::run_llm_decode(spec);
    o.seconds = r.seconds, o.timed_steps = r.timed_steps, o.tokens = r.tokens;
    o.graph = r.graph, o.graph_why = r.graph_why, o.empty_launch_s = r.empty_launch_s;
    o.bound_step_s = bound_step_s(c, o.rates, o.timed_steps, o.ring);
    return o;
  }

  // The time of a step of `c`'s way at `rates` (s): every weight read once where the way
  // reads it, and the KV cache of the timed steps' average position (prompt + (steps + 1) / 2).
  // A placement's KV cache counts at its weights' rate (Fig. 17's bound since issue 39).
  double bound_step_s(const LlmCase& c, const Rates& rates, int timed, int64_t ring) const {
    const double kv = llm_kv_bytes(shape_, static_cast<double>(prompt_.size()) + (timed + 1) / 2.0, bytes_);
    const double all = static_cast<double>(llm_step_weight_bytes(shape_, bytes_));
    if (c.way.empty()) return llm_in_place_step_s({{all + kv, rates.weights}});
    const double kv_s = kv / ((std::isfinite(rates.kv) ? rates.kv : rates.hbm) * 1e9);
    const double layer = static_cast<double>(layer_param_bytes()), moved = layer * c.offloaded;
    if (c.way != "streamed" || c.offloaded == 0)  // in place, and vLLM's way (it reads them on demand)
      return llm_in_place_step_s({{all - moved, rates.hbm}, {moved, rates.offload}}) + kv_s;
    const double tail = all - layer * shape_.layers;  // the final norm and lm_head, after the layers
    const double before = (all - moved - tail) / (rates.hbm * 1e9) + kv_s;
    return llm_streamed_step_s(before, tail / (rates.hbm * 1e9), c.offloaded, layer, rates.hbm, rates.h2d, ring);
  }

  // The block `part` (a layer, -1 the embedding's, -2 and -3 the KV caches) in `w`: the one
  // an earlier case made there, else made (and filled by `made`) after the copy of it held
  // elsewhere is given back. A sweep makes each layer once in each memory it visits, and the
  // weights' values are the same wherever they lie.
  template <typename Fill>
  const Buffer* held(int64_t part, const Where& w, uint64_t bytes, Fill made) {
    const std::string where = std::string(alloc_name(w.alloc)) + ":" + w.mem;
    auto& slot = held_[part];
    if (slot.first != where || !slot.second) {
      slot.second.reset();
      slot.second = allocate(*topo_, w.alloc, w.mem, bytes, 0);
      slot.first = where;
      made(*slot.second);
    }
    return slot.second.get();
  }

  std::vector<std::string> common_args() const {
    return {"--model", shape_.name, "--dtype", dtype_, "--seed", std::to_string(seed_), "--prompt-tokens",
            prompt_text_, "--gpu", std::to_string(gpu_)};
  }

  // `default` and vLLM's way: PyTorch's, in the referee's process.
  LlmOutcome by_referee(const LlmCase& c, const Rates& rates) {
    std::vector<std::string> args = {"time", "--way", c.placement == "default" ? "default" : "vllm"};
    const auto common = common_args();
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), {"--new-tokens", std::to_string(new_tokens_), "--reps", std::to_string(reps_), "--warmup",
                             std::to_string(warmup_), "--decode-lib",
                             beside("libmempath_decode.so", "lib/libmempath_decode.so"), "--placement-lib",
                             beside("libmempath_placement.so", "lib/libmempath_placement.so")});
    if (c.way == "vllm")
      args.insert(args.end(), {"--offload-layers", std::to_string(c.offloaded), "--offload-to",
                               std::string(alloc_name(c.offload.alloc)) + ":" + c.offload.mem});
    const std::string json = referee(referee_, args);
    LlmOutcome o;
    o.seconds = json_numbers(json, "seconds");
    const auto steps = json_numbers(json, "timed_steps");
    o.timed_steps = steps.empty() ? 0 : static_cast<int>(steps[0]);
    for (double t : json_numbers(json, "tokens")) o.tokens.push_back(static_cast<int>(t));
    o.decode_mode = json_text(json, "decode_mode");
    o.graph_why = json_text(json, "decode_fallback");
    o.graph = o.decode_mode != "eager";
    const auto small = json_numbers(json, "peak_small_bytes"), large = json_numbers(json, "peak_large_bytes");
    o.peak_small = small.empty() ? -1 : static_cast<int64_t>(small[0]);
    o.peak_large = large.empty() ? -1 : static_cast<int64_t>(large[0]);
    o.weight_placement = c.placement == "default" ? pu_ : "";
    // The bound: the parts it reads, at the rates measured on the same weights just before.
    o.rates = rates;
    o.bound_step_s = bound_step_s(c, o.rates, o.timed_steps, 0);
    return o;
  }

  void check_tokens(const LlmCase& c, const LlmOutcome& o, Outcome& out) {
    if (o.tokens.empty()) return;
    if (reference_.empty()) {
      if (referee_ == "none") {
        reference_ = o.tokens;
        return;
      }
      std::vector<std::string> args = {"check"};
      const auto common = common_args();
      args.insert(args.end(), common.begin(), common.end());
      args.insert(args.end(), {"--tokens", join_ints(o.tokens)});
      const std::string json = referee(referee_, args);
      auto one = [&](const char* key) {
        const auto v = json_numbers(json, key);
        return v.empty() ? kNaN : v[0];
      };
      check_ = {static_cast<int64_t>(one("tokens_checked")), static_cast<int64_t>(one("tokens_equal")),
                static_cast<int64_t>(one("near_ties")), static_cast<int64_t>(one("tokens_wrong")), one("max_margin")};
      reference_ = o.tokens;
      tokens_ok_ = check_.wrong == 0;
      if (!tokens_ok_)
        out.status = "failed", out.reason = std::to_string(check_.wrong) + " of " + std::to_string(check_.checked) +
                                            " tokens differ from PyTorch's decode (teacher-forced; " +
                                            std::to_string(check_.near_ties) + " near-ties allowed)";
      return;
    }
    const size_t n = std::min(o.tokens.size(), reference_.size());
    size_t same = 0;
    while (same < n && o.tokens[same] == reference_[same]) ++same;
    // PyTorch's own kernels round otherwise: vLLM's way is held to the referee's check alone.
    if (same < n && c.way != "vllm")
      out.status = "failed", out.reason = "token " + std::to_string(same) + " differs from the first case's (" +
                                          std::to_string(o.tokens[same]) + " vs " + std::to_string(reference_[same]) +
                                          "): the same weights and kernels decode the same tokens";
  }

  const Topology* topo_ = nullptr;
  model::Rates rates_;
  int gpu_ = 0, reps_ = 3, warmup_ = 1, new_tokens_ = 64, bytes_ = 2;
  int64_t ring_ = 0;
  uint32_t seed_ = 1234;
  std::string pu_, dtype_, referee_, prompt_text_;
  LlmShape shape_;
  LlmLayerLayout layout_;
  std::vector<int> prompt_;
  Where kv_;
  std::vector<LlmCase> cases_;
  std::map<int64_t, std::pair<std::string, std::unique_ptr<Buffer>>> held_;
  std::vector<int> reference_;
  TokenCheck check_;
  bool tokens_ok_ = true;
};

}  // namespace

std::unique_ptr<Benchmark> make_llm() { return std::make_unique<LlmBenchmark>(); }

}  // namespace mempath
