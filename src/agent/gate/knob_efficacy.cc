#include "gate/knob_efficacy.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/engine_kernels.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "gate/arm_engines.h"
#include "gate/engine_probe.h"
#include "kernels/registry.h"
#include "trace/trace.h"

namespace recur::gate {
namespace {

constexpr KnobActs kAnyEngine = KnobActs::kEngine | KnobActs::kEngineLoad;
constexpr KnobActs kReaderPlaces = KnobActs::kServe | KnobActs::kTransfer | KnobActs::kPython | KnobActs::kProcess;

// The values a check tries besides the default: every choice; for integers the minimum and half
// the default (or, for a default at the minimum, one above it; never the maximum:
// engine.hybrid.kv_pages' would allocate it).
std::vector<std::string> tried_values(const KnobSpec& k) {
  std::vector<std::string> v;
  switch (k.type) {
    case KnobType::kEnum: v = k.choices; break;
    case KnobType::kBool: v = {"true", "false"}; break;
    case KnobType::kInt: {
      const int64_t def = std::stoll(k.default_value);
      const int64_t lo = int64_t(k.min);
      v = {fmt::format("{}", lo), fmt::format("{}", def > lo ? std::max(lo, def / 2) : std::min<int64_t>(int64_t(k.max), 2 * def + 16))};
      break;
    }
    case KnobType::kFloat: v = {fmt::format("{}", k.min), fmt::format("{}", 2 * std::stod(k.default_value) + 1)}; break;
    case KnobType::kString: break;
  }
  std::erase(v, k.default_value);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// A family ("engine.kv_dtype.layer[]") stands for its members 0..layers-1.
std::vector<std::string> members(const KnobSpec& k, int layers) {
  if (!k.name.ends_with("[]")) return {k.name};
  std::vector<std::string> out;
  for (int l = 0; l < layers; ++l) out.push_back(fmt::format("{}{}]", k.name.substr(0, k.name.size() - 1), l));
  return out;
}

std::string arg_text(const trace::EventTable& t, const trace::Arg& a) {
  switch (a.type) {
    case trace::ArgType::kNull: return "null";
    case trace::ArgType::kBool: return a.b ? "true" : "false";
    case trace::ArgType::kInt: return fmt::format("{}", a.i);
    case trace::ArgType::kUint: return fmt::format("{}", a.u);
    case trace::ArgType::kDouble: return fmt::format("{}", a.d);
    case trace::ArgType::kString: case trace::ArgType::kJson: return std::string(t.strings().str(a.s));
  }
  return "?";
}

// Every zone with its args, one line each, sorted (ranks' threads interleave differently).
std::string zones_text(const trace::EventTable& t, std::string_view only = "") {
  std::vector<std::string> lines;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!only.empty() && t.name(i) != only) continue;
    std::string line(t.name(i));
    for (size_t k = t.args_begin(i); k < t.args_end(i); ++k)
      line += fmt::format(" {}={}", t.strings().str(t.arg(k).key), arg_text(t, t.arg(k)));
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  return fmt::format("{}", fmt::join(lines, "\n"));
}

uint64_t hash_floats(uint64_t h, std::span<const float> x) {
  for (float f : x) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

struct EngineModel {
  std::string name;
  int layers = 0;
  std::unique_ptr<ArmEngines> engines;
  std::map<const Model*, std::string> load_records;  // the "load_model" zone of each instance
};

struct Fingerprint {
  std::string text;
  std::string error;  // the run's error, if any
};

class Checker {
 public:
  Checker(const KnobRegistry& registry, const KnobEfficacyOptions& options) : reg_(registry), options_(options) {}

  Result<std::vector<KnobEfficacyFailure>> run() {
    RECUR_RETURN_IF_ERROR(add_model("llama-q8_0", {.arch = "llama", .dim = 64, .layers = 2, .heads = 4, .kv_heads = 2,
                                                   .ffn = 128, .vocab = 400, .context = 64, .dtype = "q8_0"}));
    RECUR_RETURN_IF_ERROR(add_model("llama-f16", {.arch = "llama", .dim = 64, .layers = 2, .heads = 4, .kv_heads = 2,
                                                  .ffn = 128, .vocab = 400, .context = 64, .dtype = "f16"}));
    RECUR_RETURN_IF_ERROR(add_model("hybrid-moe", {.arch = "hybrid", .dim = 64, .layers = 4, .heads = 4, .kv_heads = 2,
                                                   .ffn = 128, .vocab = 400, .context = 64, .dtype = "f32",
                                                   .pattern = "kkka", .kda_head_dim = 16, .experts = 8,
                                                   .experts_used = 2}));
    // One layer: its BF16 token embedding is what the others lack (kernel.embedding_bf16.variant).
    RECUR_RETURN_IF_ERROR(add_model("llama-bf16", {.arch = "llama", .dim = 64, .layers = 1, .heads = 4, .kv_heads = 2,
                                                   .ffn = 128, .vocab = 400, .context = 64, .dtype = "bf16"}));
    // MLA attention (kernel.mla_decode / mla_prefill): deepseek2 (MoE, softmax scores) and
    // kimi-linear (KDA and MLA layers, sigmoid-scored MoE with a shared expert, a leading dense layer).
    RECUR_RETURN_IF_ERROR(add_model("deepseek2", {.arch = "deepseek2", .dim = 64, .layers = 2, .heads = 4, .ffn = 32,
                                                  .vocab = 400, .context = 64, .dtype = "f32", .experts = 4}));
    RECUR_RETURN_IF_ERROR(add_model("kimi-linear", {.arch = "kimi-linear", .dim = 64, .layers = 3, .heads = 4,
                                                    .ffn = 32, .vocab = 400, .context = 64, .dtype = "f32",
                                                    .pattern = "kak", .kda_head_dim = 16, .experts = 4}));
    // gemma2: the GELU FFN (engine.gelu), soft-capping and the sliding window.
    RECUR_RETURN_IF_ERROR(add_model("gemma2", {.arch = "gemma2", .dim = 64, .layers = 2, .heads = 4, .kv_heads = 2,
                                               .ffn = 128, .vocab = 400, .context = 64, .dtype = "f32"}));
    // Contexts: the defaults, then the defaults plus one engine knob's value; a family's value
    // goes to every member at once (an f16 cache in every layer is where
    // engine.attention.operands acts).
    contexts_.push_back({});
    int most_layers = 0;
    for (const EngineModel& m : models_) most_layers = std::max(most_layers, m.layers);
    for (const KnobSpec* j : reg_.acting_in(kAnyEngine))
      for (const std::string& u : tried_values(*j)) {
        std::map<std::string, std::string> ctx;
        for (const std::string& member : members(*j, most_layers)) ctx[member] = u;
        contexts_.push_back(std::move(ctx));
      }
    for (const KnobSpec* k : reg_.all()) {
      if (!options_.only.empty() && !options_.only.contains(k->name)) continue;
      check(*k);
    }
    for (const std::string& name : engine_reads_) {
      const KnobSpec* k = reg_.find(name);
      if (k == nullptr || acts_in(k->acts, kAnyEngine)) continue;
      if (!options_.only.empty() && !options_.only.contains(k->name)) continue;
      fail(*k, "", fmt::format("the engine reads {} but it is declared to act in {}", name,
                               fmt::join(knob_act_names(k->acts), ", ")));
    }
    return std::move(failures_);
  }

 private:
  Status add_model(std::string name, SyntheticModel m) {
    EngineWorkload w;
    w.model = "synthetic";
    w.synthetic = m;
    RECUR_ASSIGN_OR_RETURN(std::string path, resolve_model_path(w));
    models_.push_back({std::move(name), m.layers, std::make_unique<ArmEngines>(path, 1, reg_), {}});
    return ok_status();
  }

  void fail(const KnobSpec& k, std::string value, std::string why) {
    failures_.push_back({k.name, std::move(value), std::move(why)});
  }

  void check(const KnobSpec& k) {
    if (k.acts == KnobActs::kNone) return fail(k, "", "no declaration of where it acts (KnobSpec::acts)");
    if (acts_in(k.acts, kAnyEngine))
      for (const std::string& v : tried_values(k)) check_engine(k, v);
    if (acts_in(k.acts, kReaderPlaces)) check_reader(k);
    if (acts_in(k.acts, KnobActs::kKernelProbe)) check_kernel_probe(k);
  }

  Config config_of(const std::map<std::string, std::string>& values) {
    Config c(reg_);
    for (const auto& [n, v] : values) (void)c.set(n, v);
    return c;
  }

  // One run of `m` under `run` on the instance loaded for `load`.
  Fingerprint fingerprint(EngineModel& m, const std::map<std::string, std::string>& load,
                          const std::map<std::string, std::string>& run) {
    const std::string key = fmt::format("{}|{}|{}", m.name, fmt::join(load, ","), fmt::join(run, ","));
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    Fingerprint fp;
    Config lc = config_of(load), rc = config_of(run);
    auto load_reads = lc.track_reads();
    auto run_reads = rc.track_reads();
    trace::reset();
    trace::set_enabled(true);
    auto e = m.engines->get(lc);
    trace::set_enabled(false);
    if (!e) {
      fp.error = e.error().message();
    } else {
      if (!m.load_records.contains(e->model)) m.load_records[e->model] = zones_text(trace::capture(), "load_model");
      fp.text = m.load_records[e->model] + "\n" + probe_conditions_note(*e->pool, *e->pool_options) + "\n";
      trace::reset();
      trace::set_enabled(true);
      fp.error = run_engine(*e, rc, fp.text);
      trace::set_enabled(false);
      fp.text += zones_text(trace::capture());
    }
    for (const auto* reads : {load_reads.get(), run_reads.get()})
      for (std::string& n : reads->names()) engine_reads_.insert(std::move(n));
    return cache_[key] = fp;
  }

  // A batched prefill of 5 tokens and 10 decode steps through a session, then one batch forward; the logits'
  // bits, the KV occupancy and the tokens the engine's sampler picks from the last logits (greedy and
  // temperature 0.8, top-p 0.9, as generate and serve pick) go into `text`. Returns the error, or "".
  static std::string run_engine(const ArmEngine& e, const Config& knobs, std::string& text) {
    const std::vector<TokenId> prompt = {1, 2, 3, 4, 5};
    auto session = e.model->new_session(*e.pool, 16, knobs);
    if (!session) return session.error().message();
    auto logits = (*session)->prefill(prompt);
    if (!logits) return logits.error().message();
    uint64_t h = hash_floats(14695981039346656037ull, *logits);
    for (TokenId t : {6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) {  // past a replay window of 8
      logits = (*session)->step(t);
      if (!logits) return logits.error().message();
      h = hash_floats(h, *logits);
    }
    auto batch = e.model->new_batch(*e.pool, {.max_sequences = 1, .max_tokens = 16, .max_batch_tokens = 8}, knobs);
    if (!batch) return batch.error().message();
    auto seq = (*batch)->add_sequence();
    if (!seq) return seq.error().message();
    std::vector<BatchToken> tokens;
    for (TokenId t : prompt) tokens.push_back({.seq = *seq, .token = t, .want_logits = t == prompt.back()});
    auto out = (*batch)->forward(tokens);
    if (!out) return out.error().message();
    const KvUsage kv = (*batch)->kv_usage();
    auto sample_kernel = resolve_kernel(knobs, "sample");
    if (!sample_kernel) return sample_kernel.error().message();
    Sampler greedy({}, *sample_kernel), warm({.temperature = 0.8f, .top_p = 0.9f, .seed = 7}, *sample_kernel);
    const TokenId picked = greedy.sample(*out), drawn = warm.sample(*out);
    text += fmt::format("logits {:016x} batch logits {:016x} kv pages {}/{} bytes {} sampled {} {}\n", h,
                        hash_floats(14695981039346656037ull, *out), kv.pages_used, kv.pages_total, kv.bytes_total,
                        picked, drawn);
    return "";
  }

  // knob=v must change some context's fingerprint; a refusal naming the knob counts only when
  // nothing else differs anywhere (engine.collectives=mpi outside mpirun).
  void check_engine(const KnobSpec& k, const std::string& v) {
    const bool at_load = acts_in(k.acts, KnobActs::kEngineLoad);
    const std::string stem = k.name.ends_with("[]") ? k.name.substr(0, k.name.size() - 2) : k.name;
    // The value "auto" resolves to changes no run: named in the defaults' trace, it holds without
    // trying every context.
    if (runs_as_auto(k, v, /*defaults_only=*/true)) return;
    std::string refusal;
    // Contexts outermost: a knob that acts on one model under the defaults is seen after one run per model.
    for (const auto& ctx : contexts_) {
      for (EngineModel& m : models_) {
        for (const std::string& member : members(k, m.layers)) {
          if (ctx.contains(member)) continue;
          const Fingerprint base = fingerprint(m, ctx, ctx);
          if (!base.error.empty()) continue;
          auto with_v = ctx;
          with_v[member] = v;
          const Fingerprint with = fingerprint(m, at_load ? with_v : ctx, with_v);
          if (with.error.empty() && with.text != base.text) return;
          if (!with.error.empty() && refusal.empty() && with.error.find(stem) != std::string::npos)
            refusal = with.error;
        }
      }
    }
    if (!refusal.empty()) return;
    if (runs_as_auto(k, v, /*defaults_only=*/false)) return;
    std::vector<std::string> names;
    for (const EngineModel& m : models_) names.push_back(m.name);
    fail(k, v,
         fmt::format("declared to act on the engine{}, but no run differs from {}={} (models: {}; contexts: the "
                     "defaults and each other engine knob's values)",
                     at_load ? " at load" : " at run time (the model instance is shared)", k.name, k.default_value,
                     fmt::join(names, ", ")));
  }

  // kernel.<k>.variant=v where "auto" (the default) already resolves to v runs the same code, so
  // no fingerprint can differ: it holds when an engine run's trace names v as the variant that
  // ran in zone <k> (the engine calls the kernel, and at v), under the defaults or in a context
  // (gemm_w8a8 runs only at kernel.gemm.precision=w8a8, kda_replay_decode only with
  // engine.kda.replay=on), except one where another knob of the same kernel is set to v:
  // engine.kda.decode_variant=vtile (component kernel:kda_decode) makes "auto" run vtile whether
  // or not the knob acts.
  bool runs_as_auto(const KnobSpec& k, const std::string& v, bool defaults_only) {
    const std::optional<std::string> kernel = variant_knob_kernel(k.name);
    if (!kernel) return false;
    const std::string zone = *kernel + " ", arg = " variant=" + v, component = "kernel:" + *kernel;
    auto picks_v_for_the_kernel = [&](const auto& kv) {
      if (kv.second != v) return false;
      const KnobSpec* other = KnobRegistry::global().find(kv.first);
      return other != nullptr && std::find(other->components.begin(), other->components.end(), component) !=
                                     other->components.end();
    };
    for (const auto& ctx : contexts_) {  // the defaults first: most kernels run there
      if (ctx.contains(k.name) || std::any_of(ctx.begin(), ctx.end(), picks_v_for_the_kernel)) continue;
      for (EngineModel& m : models_) {
        if (names_variant(fingerprint(m, ctx, ctx).text, zone, arg)) return true;
      }
      if (defaults_only) break;
    }
    return false;
  }

  // Whether a fingerprint's zone lines have one of zone `zone` (its name and a space) with arg `arg`.
  static bool names_variant(const std::string& text, const std::string& zone, const std::string& arg) {
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find('\n', at), text.size());
      const std::string_view line(text.data() + at, end - at);
      const size_t found = line.find(arg);
      if (line.starts_with(zone) && found != std::string_view::npos &&
          (found + arg.size() == line.size() || line[found + arg.size()] == ' '))
        return true;
      at = end + 1;
    }
    return false;
  }

  // "rmsnorm" for kernel.rmsnorm.variant.
  static std::optional<std::string> variant_knob_kernel(std::string_view name) {
    constexpr std::string_view prefix = "kernel.", suffix = ".variant";
    if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
    return std::string(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
  }

  void check_reader(const KnobSpec& k) {
    auto it = options_.readers.find(k.name);
    if (it == options_.readers.end())
      return fail(k, "", fmt::format("declared to act in {} but has no reader to check it by",
                                     fmt::join(knob_act_names(k.acts), ", ")));
    auto base = it->second(config_of({}));
    if (!base) return fail(k, k.default_value, base.error().message());
    for (const std::string& v : tried_values(k)) {
      auto got = it->second(config_of({{k.name, v}}));
      if (!got) fail(k, v, got.error().message());
      else if (*got == *base) fail(k, v, fmt::format("resolves to {} as the default does", *got));
    }
  }

  void check_kernel_probe(const KnobSpec& k) {
    const std::optional<std::string> name = variant_knob_kernel(k.name);
    if (!name) return fail(k, "", "declared to act in the kernel probes, which read only kernel.<k>.variant knobs");
    const std::string& kernel = *name;
    const kernels::KernelSpec* spec = kernels::KernelRegistry::global().find(kernel);
    if (spec == nullptr) return fail(k, "", fmt::format("no registered kernel {}", kernel));
    for (const std::string& v : k.choices)
      if (v != "auto" && spec->find_variant(v) == nullptr)
        fail(k, v, fmt::format("kernel {} has no variant {}", kernel, v));
  }

  const KnobRegistry& reg_;
  const KnobEfficacyOptions& options_;
  std::vector<EngineModel> models_;
  std::vector<std::map<std::string, std::string>> contexts_;
  std::map<std::string, Fingerprint> cache_;
  std::set<std::string> engine_reads_;
  std::vector<KnobEfficacyFailure> failures_;
};

}  // namespace

Result<std::vector<KnobEfficacyFailure>> check_knob_efficacy(const KnobRegistry& registry,
                                                             const KnobEfficacyOptions& options) {
  return Checker(registry, options).run();
}

}  // namespace recur::gate
