#include "gate/op_errors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/clock.h"
#include "engine/op_capture.h"
#include "engine/sampler.h"

namespace recur::gate {
namespace {

// Appends b's `n` greedy tokens after the prompt in `tokens` (the last one is never fed back).
Status extend_greedy(const Model& model, ThreadPool& pool, const NamedConfig& arm, int n, std::vector<TokenId>& tokens) {
  const int capacity = int(tokens.size()) + n;
  if (capacity > model.config().context)
    return invalid_argument("prompt of {} tokens plus {} generated exceeds the model's context of {}", tokens.size(), n,
                            model.config().context);
  auto session = model.new_session(pool, capacity, arm.config);
  if (!session) return unexpected(session.error().with_context(fmt::format("arm {}", arm.name)));
  std::span<const float> logits;
  for (TokenId t : tokens) {
    RECUR_ASSIGN_OR_RETURN(logits, (*session)->step(t));
  }
  for (int i = 0; i < n; ++i) {
    tokens.push_back(argmax(logits));
    if (i + 1 < n) {
      RECUR_ASSIGN_OR_RETURN(logits, (*session)->step(tokens.back()));
    }
  }
  return ok_status();
}

// Feeds `tokens` to a fresh session of `arm` with `capture` as its op tap, one capture step each.
Status captured_run(const Model& model, ThreadPool& pool, const NamedConfig& arm, const std::vector<TokenId>& tokens,
                    OpCapture& capture) {
  auto session = model.new_session(pool, int(tokens.size()), arm.config);
  if (!session) return unexpected(session.error().with_context(fmt::format("arm {}", arm.name)));
  (*session)->set_op_tap(&capture);
  for (TokenId t : tokens) {
    capture.begin_step();
    auto logits = (*session)->step(t);
    if (!logits) return unexpected(logits.error().with_context(fmt::format("arm {}", arm.name)));
  }
  return ok_status();
}

double rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  if (!std::isfinite(diff)) return std::numeric_limits<double>::max();
  return scale > 0 ? diff / scale : diff;
}

// The layer an op belongs to ("layer.3.attn.core" -> 3), or -1 (embed, output_norm, lm_head).
int op_layer(std::string_view name) {
  constexpr std::string_view prefix = "layer.";
  if (!name.starts_with(prefix)) return -1;
  int l = 0;
  size_t i = prefix.size();
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) l = l * 10 + (name[i] - '0');
  return l;
}

// A component's error is "in one layer" when that layer adds at least this share of it.
constexpr double kOneLayerShare = 0.5;

}  // namespace

Result<OpErrorsResult> measure_op_errors(const Model& model, std::string_view model_path, ThreadPool& pool,
                                         const OpErrorOptions& options, const NamedConfig& a, const NamedConfig& b) {
  return measure_op_errors(model_path, options, EngineArm{a, &model, &pool}, EngineArm{b, &model, &pool});
}

Result<OpErrorsResult> measure_op_errors(std::string_view model_path, const OpErrorOptions& options,
                                         const EngineArm& ea, const EngineArm& eb) {
  const NamedConfig &a = ea.arm, &b = eb.arm;
  const Model& model = *eb.model;
  const int64_t t0 = now_ns();
  OpErrorsResult out;
  std::map<std::string, size_t, std::less<>> index;
  int steps = 0;
  for (size_t p = 0; p < options.prompts.size(); ++p) {
    const Tokenizer& tok = model.tokenizer();
    std::vector<TokenId> tokens = tok.encode(options.prompts[p], tok.vocabulary().add_bos);
    if (tokens.empty()) tokens.push_back(std::max(tok.vocabulary().bos, 0));
    RECUR_RETURN_IF_ERROR(extend_greedy(model, *eb.pool, b, options.decode_tokens, tokens));
    OpCapture b_cap, a_cap;
    RECUR_RETURN_IF_ERROR(captured_run(model, *eb.pool, b, tokens, b_cap));
    RECUR_RETURN_IF_ERROR(captured_run(*ea.model, *ea.pool, a, tokens, a_cap));
    if (b_cap.ops().empty())
      return unsupported("{}: the {} architecture has no op taps", model_path, arch_name(model.config().arch));
    steps += b_cap.steps();
    for (const OpCapture::Op* op : b_cap.ops()) {
      const OpCapture::Op* other = a_cap.find(op->name);
      if (other == nullptr)
        return internal_error("op {} ran under {} but not under {}", op->name, b.name, a.name);
      auto [it, fresh] = index.try_emplace(op->name, out.ops.size());
      if (fresh) out.ops.push_back({op->name, op->component, 0, 0});
      OpError& e = out.ops[it->second];
      for (int s = 0; s < b_cap.steps(); ++s) {
        const double err = rel_err(other->steps[size_t(s)], op->steps[size_t(s)]);
        double inherited = 0;
        for (const std::string& in : op->inputs) {
          const OpCapture::Op* ib = b_cap.find(in);
          const OpCapture::Op* ia = a_cap.find(in);
          if (ib && ia) inherited = std::max(inherited, rel_err(ia->steps[size_t(s)], ib->steps[size_t(s)]));
        }
        e.max_rel_err = std::max(e.max_rel_err, err);
        e.added += std::max(0.0, err - inherited);
      }
    }
  }
  for (const OpError& e : out.ops)
    if (e.max_rel_err > options.tolerance) {
      out.first_over = e.name;
      break;
    }

  Feedback& f = out.feedback;
  f.probe = "check.engine_ops";
  f.tier = 3;
  f.cost_s = double(now_ns() - t0) / 1e9;
  f.subject = pair_subject(model, model_path, a, b);
  f.hypothesis = fmt::format("every op of {} is within {:g} of {}", a.name, options.tolerance, b.name);
  f.verdict = out.first_over.empty() ? Verdict::kConfirmed : Verdict::kRefuted;
  for (const OpError& e : out.ops) f.add_metric(fmt::format("op_max_rel_err[{}]", e.name), e.max_rel_err);
  std::map<std::string, double> by_component;
  std::map<std::string, std::string> worst_in;
  std::map<std::string, std::map<int, double>> by_layer;  // component -> layer -> added
  double total = 0;
  for (const OpError& e : out.ops) {
    const std::string c = e.component.empty() ? std::string(kUnattributed) : e.component;
    if (e.added > by_component[c]) worst_in[c] = e.name;
    by_component[c] += e.added;
    by_layer[c][op_layer(e.name)] += e.added;
    total += e.added;
  }
  // A component whose added error sits mostly in one layer is named with it
  // ("engine:attention/layer[3]"), so a per-layer knob can be bound to that layer.
  std::map<std::string, std::string> label;
  for (const auto& [c, layers] : by_layer) {
    label[c] = c;
    for (const auto& [l, added] : layers)
      if (l >= 0 && by_component[c] > 0 && added >= kOneLayerShare * by_component[c])
        label[c] = fmt::format("{}/layer[{}]", c, l);
  }
  if (total > 0) {
    // Largest share first; shares are of the total added error, so they sum to 1.
    std::vector<std::pair<std::string, double>> shares(by_component.begin(), by_component.end());
    std::stable_sort(shares.begin(), shares.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    for (const auto& [c, added] : shares) {
      if (c == kUnattributed || added == 0) continue;
      const double in_layer = label[c] == c ? 0 : by_layer[c][op_layer(worst_in[c])] / added;
      f.attribution.push_back(
          {label[c], added / total,
           fmt::format("error added over inputs, summed over {} ops x {} steps; largest op {}{}", out.ops.size(), steps,
                       worst_in[c], label[c] == c ? "" : fmt::format("; {:.0f}% of it in that layer", 100 * in_layer))});
    }
    f.attribution.push_back({std::string(kUnattributed), by_component.count(std::string(kUnattributed))
                                                             ? by_component[std::string(kUnattributed)] / total
                                                             : 0.0,
                             "ops without a component tag"});
    f.attribution_is_decomposition = true;
  }
  if (!out.first_over.empty()) {
    const OpError& e = out.ops[index[out.first_over]];
    f.notes.push_back(fmt::format("first op over {:g}: {} ({}) max rel err {:.3g}", options.tolerance, e.name,
                                  e.component, e.max_rel_err));
  } else {
    f.notes.push_back(fmt::format("every op within {:g}", options.tolerance));
  }
  std::vector<const OpError*> by_added;
  for (const OpError& e : out.ops) by_added.push_back(&e);
  std::stable_sort(by_added.begin(), by_added.end(), [](auto* x, auto* y) { return x->added > y->added; });
  std::string top;
  for (size_t i = 0; i < std::min<size_t>(3, by_added.size()); ++i)
    top += fmt::format("{}{} ({}, added {:.3g})", i ? ", " : "", by_added[i]->name, by_added[i]->component,
                       by_added[i]->added);
  f.notes.push_back("most error added by: " + top);
  f.notes.push_back(fmt::format("{} prompt(s); {} greedy tokens of {}; {} fed the same tokens; {} ops x {} steps",
                                options.prompts.size(), options.decode_tokens, b.name, a.name, out.ops.size(), steps));
  return out;
}

}  // namespace recur::gate
