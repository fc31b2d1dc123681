#include "gate/time_split.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "analyze/zone_tree.h"
#include "engine/engine_bench.h"
#include "probe/stats.h"
#include "trace/trace.h"
#include "gate/zone_probe.h"

namespace recur::gate {

namespace {

constexpr std::string_view kUnattributed = "unattributed";

struct ZoneRule {
  std::string_view zone, component;
};
// Zone names of the engine (RECUR_ZONE in src/engine; "GIL", the Python bindings' lock zones,
// trace/external_lock.h) and what their self time is. Container
// zones' self time is the work between their children: a layer's plain residual adds, the
// MLP's gathers, the attention's core over the KV cache, the KDA mixer's gated norm.
constexpr ZoneRule kZoneRules[] = {
    {"matvec", "kernel:gemm"},          {"kda_decode", "kernel:kda_decode"}, {"kda_prefill", "kernel:kda_prefill"},
    {"attention", "engine:attention"},  {"mlp", "engine:activation"},        {"kda_mixer", "engine:kda_mixer"},
    {"layer", "engine:norm"},           {"all_reduce", "op:all_reduce"},     {"all_gather", "op:all_reduce"},
    {"moe.dispatch", "op:moe_dispatch"}, {"moe.combine", "op:moe_combine"},  {"forward", "engine:forward"},
    {"step", "engine:forward"},         {"GIL", "lock:gil"},
    // The registered kernels the forward calls (engine/engine_kernels.h), each zone named after
    // its kernel, whose variant knob carries the component.
    {"rmsnorm", "kernel:rmsnorm"},      {"rmsnorm_residual", "kernel:rmsnorm_residual"},
    {"swiglu", "kernel:swiglu"},        {"rope", "kernel:rope"},             {"route_topk", "kernel:route_topk"},
    {"embedding_f32", "kernel:embedding_f32"}, {"embedding_f16", "kernel:embedding_f16"},
    {"embedding_bf16", "kernel:embedding_bf16"}, {"embedding_q8_0", "kernel:embedding_q8_0"},
    {"gemv", "kernel:gemv"},            {"gemm", "kernel:gemm"},             {"gemm_w8a8", "kernel:gemm_w8a8"},
    {"sample", "kernel:sample"},
    {"kda_replay_decode", "kernel:kda_replay_decode"}, {"attention_decode", "kernel:attention_decode"},
    {"attention_prefill", "kernel:attention_prefill"},
};

// The layer a zone's work belongs to: its own `layer` arg or its nearest enclosing zone's; -1
// outside every layer (the LM head, sampling).
int layer_of(const analyze::ZoneTree& tree, const trace::EventTable& table, const analyze::Zone& z) {
  for (const analyze::Zone* at = &z;;) {
    if (auto l = table.int_arg(at->event, "layer")) return int(*l);
    if (at->parent == analyze::kNoZone) return -1;
    at = &tree.zones()[at->parent];
  }
}

Result<TimeSplit> split_once(const Model& model, ThreadPool& pool, const EngineWorkload& w, SplitPhase phase,
                             const NamedConfig& arm, trace::EventTable* last) {
  EngineBenchOptions o{.prefill_tokens = w.prefill_tokens,
                       .decode_tokens = phase == SplitPhase::kPrefill ? 1 : w.decode_tokens,
                       .runs = 1,
                       .warmup_runs = 0};
  RECUR_RETURN_IF_ERROR(bench_engine(model, pool, o, arm.config));  // untraced, untimed
  std::map<std::string, std::vector<double>> samples;
  std::map<std::pair<std::string, int>, std::vector<double>> layer_samples;
  std::vector<double> totals;
  const int runs = std::max(3, std::min(w.runs, 5));
  for (int i = 0; i < runs; ++i) {
    RECUR_ASSIGN_OR_RETURN(trace::EventTable table, traced_engine_run(model, pool, o, arm.config));
    const TimeSplit one = split_trace(table);
    for (const auto& [c, v] : one.us_by_component) samples[c].push_back(v);
    for (const auto& [c, layers] : one.us_by_layer)
      for (const auto& [l, v] : layers) layer_samples[{c, l}].push_back(v);
    totals.push_back(one.total_us);
    if (last && i + 1 == runs) *last = std::move(table);
  }
  TimeSplit s;
  for (auto& [c, v] : samples) {
    v.resize(totals.size(), 0.0);
    s.us_by_component[c] = probe::median(v);
  }
  for (auto& [key, v] : layer_samples) {
    v.resize(totals.size(), 0.0);
    s.us_by_layer[key.first][key.second] = probe::median(v);
  }
  s.total_us = probe::median(totals);
  return s;
}

// A component's time by layer in this split (its excess over `ref` when given), largest first.
std::vector<std::pair<int, double>> by_layer(const TimeSplit& a, const TimeSplit* ref, const std::string& c) {
  std::vector<std::pair<int, double>> out;
  auto it = a.us_by_layer.find(c);
  if (it == a.us_by_layer.end()) return out;
  for (const auto& [layer, us] : it->second) {
    double v = us;
    if (ref) {
      auto rc = ref->us_by_layer.find(c);
      if (rc != ref->us_by_layer.end())
        if (auto rl = rc->second.find(layer); rl != rc->second.end()) v = std::max(0.0, us - rl->second);
    }
    if (v > 0) out.emplace_back(layer, v);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  return out;
}

// "; by layer: 3 61%, 1 20%, 0 12%" (the three largest), and the layer that dominates, if one does.
struct LayerDetail {
  std::string text;
  std::optional<int> dominant;
};
LayerDetail layer_detail(const std::vector<std::pair<int, double>>& layers) {
  LayerDetail d;
  double sum = 0;
  for (const auto& [l, v] : layers) sum += v;
  if (sum <= 0 || layers.empty() || (layers.size() == 1 && layers[0].first < 0)) return d;
  // Half of the whole and twice the next layer: two layers sharing a component evenly never
  // name one of them on noise.
  const double next = layers.size() > 1 ? layers[1].second : 0.0;
  if (layers[0].first >= 0 && layers[0].second >= 0.5 * sum && layers[0].second >= 2 * next) d.dominant = layers[0].first;
  d.text = "; by layer:";
  for (size_t i = 0; i < layers.size() && i < 3; ++i)
    d.text += fmt::format("{} {} {:.0f}%", i ? "," : "", layers[i].first < 0 ? std::string("outside layers")
                                                                              : std::to_string(layers[i].first),
                          100 * layers[i].second / sum);
  return d;
}

std::string label(const std::string& c) { return c.empty() ? std::string(kUnattributed) : c; }

}  // namespace

TimeSplit split_trace(const trace::EventTable& table) {
  analyze::ZoneTree tree(table);
  TimeSplit s;
  for (const analyze::Zone& z : tree.zones()) {
    const std::string c = engine_zone_component(table.name(z.event));
    const double us = double(z.self_ns) * 1e-3;
    s.us_by_component[c] += us;
    s.us_by_layer[c][layer_of(tree, table, z)] += us;
    s.total_us += us;
  }
  return s;
}

std::string engine_zone_component(std::string_view zone) {
  for (const ZoneRule& r : kZoneRules)
    if (r.zone == zone) return std::string(r.component);
  return "";
}

std::vector<std::string> engine_zone_components() {
  std::vector<std::string> out;
  for (const ZoneRule& r : kZoneRules)
    if (std::find(out.begin(), out.end(), r.component) == out.end()) out.emplace_back(r.component);
  return out;
}

Feedback time_split_feedback(const TimeSplit& a, std::string_view a_name, const TimeSplit* b, std::string_view b_name,
                             std::string subject) {
  Feedback f;
  f.probe = "analyze.time_split";
  f.tier = 3;
  f.subject = std::move(subject);
  f.add_metric("total_us", a.total_us, "us");
  if (b) f.add_metric("reference_total_us", b->total_us, "us");
  // Shares of a's excess over b (per component where a is slower) when a is slower overall;
  // else (no b, or a already the faster) of a's own time: what is left to gain is where a spends it.
  const bool excess = b && a.total_us > b->total_us;
  if (b && !excess)
    f.notes.push_back(fmt::format("{} is not slower than {} overall ({:.0f} us against {:.0f} us a run): the shares "
                                  "are of {}'s own time",
                                  a_name, b_name, a.total_us, b->total_us, a_name));
  std::vector<std::pair<std::string, double>> parts;
  double whole = 0;
  for (const auto& [c, us] : a.us_by_component) {
    double v = us;
    if (excess) {
      auto it = b->us_by_component.find(c);
      v = std::max(0.0, us - (it == b->us_by_component.end() ? 0.0 : it->second));
    }
    parts.emplace_back(c, v);
    whole += v;
  }
  if (excess && whole <= 0) f.notes.push_back(fmt::format("{} is not slower than {} in any component", a_name, b_name));
  std::stable_sort(parts.begin(), parts.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  for (const auto& [c, v] : parts) {
    if (whole <= 0 || (v <= 0 && !c.empty())) continue;
    const double own = a.us_by_component.at(c);
    const LayerDetail layers = c.empty() ? LayerDetail{} : layer_detail(by_layer(a, excess ? b : nullptr, c));
    f.attribution.push_back(
        {layers.dominant ? fmt::format("{}/layer[{}]", c, *layers.dominant) : label(c), v / whole,
         (excess ? fmt::format("{:.0f} us per run under {} against {:.0f} us under {}", own, a_name,
                               b->us_by_component.count(c) ? b->us_by_component.at(c) : 0.0, b_name)
                 : fmt::format("{:.0f} us of {:.0f} us per run (self time of its zones)", own, a.total_us)) +
             layers.text});
  }
  // A decomposition names its remainder, even when every zone had a component.
  if (whole > 0 && std::none_of(f.attribution.begin(), f.attribution.end(),
                                [](const Attribution& x) { return x.component == kUnattributed; }))
    f.attribution.push_back({std::string(kUnattributed), 0.0, "zones of no known component"});
  f.attribution_is_decomposition = whole > 0;
  f.verdict = whole > 0 ? Verdict::kConfirmed : Verdict::kInconclusive;
  return f;
}


Result<TimeSplitResult> measure_time_split(const Model& model, ThreadPool& pool, const EngineWorkload& w,
                                          SplitPhase phase, const NamedConfig& a, const NamedConfig* b,
                                          const std::string& trace_out) {
  const auto t0 = std::chrono::steady_clock::now();
  TimeSplitResult out;
  trace::EventTable last;
  RECUR_ASSIGN_OR_RETURN(out.a, split_once(model, pool, w, phase, a, &last));
  if (b) {
    RECUR_ASSIGN_OR_RETURN(out.b, split_once(model, pool, w, phase, *b, nullptr));
  }
  const std::string what = phase == SplitPhase::kPrefill ? "prefill" : "decode";
  out.feedback = time_split_feedback(out.a, a.name, b ? &out.b : nullptr, b ? b->name : "",
                                     b ? fmt::format("engine {} time by component, arm {} against {}", what, a.name, b->name)
                                       : fmt::format("engine {} time by component, arm {}", what, a.name));
  Feedback& f = out.feedback;
  f.hypothesis = fmt::format("the engine's {} time of {} is split by component", what, a.name);
  f.notes.push_back(fmt::format("{} traced run(s) of {} prompt + {} decode tokens per arm; medians per component",
                                std::max(3, std::min(w.runs, 5)), w.prefill_tokens,
                                phase == SplitPhase::kPrefill ? 1 : w.decode_tokens));
  attach_trace(last, trace_out, f);
  f.cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace recur::gate
