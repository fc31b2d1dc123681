// The registry entries of kda_decode, kda_replay_decode and kda_prefill (kda_register.h):
// tensors laid out as kda.h states, the float64 reference, costs and tolerances.
#include "kernels/kda/kda_register.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "kernels/kda/kda.h"
#include "kernels/kda/kda_cost.h"
#include "kernels/kda/kda_reference.h"
#include "kernels/kda/kda_replay.h"
#include "kernels/kda/kda_replay_memo.h"

namespace recur::kernels {
namespace {

constexpr int kBlockV = 64;
constexpr int kReplayWindow = 16;

kda::Params registered_params() {
  return kda::Params{.gate = kda::GateForm::kSigmoidBounded, .layout = kda::StateLayout::kKV, .block_v = kBlockV};
}

// The kda.h shape of a registry shape, with `tokens` tokens per sequence (default: T, which
// decode does not have: 1).
kda::Shape kda_shape(const Shape& s, std::optional<int64_t> tokens = std::nullopt) {
  return kda::Shape{.batch = s["B"], .tokens = tokens.value_or(s.find("T").value_or(1)), .hk = s["HK"], .hv = s["HV"],
                    .k = s["K"], .v = s["V"]};
}


kda::Workspace& workspace() {
  thread_local kda::Workspace ws;
  return ws;
}

// Input order of every KDA kernel: q, k, v, g, b, a_log, dt_bias, state_in; kda_replay_decode
// then has the F earlier tokens' q, k, v, g, b (inputs 8..12).
constexpr size_t kHistoryInput = 8;

// The kda::Inputs whose per-token tensors start at index `first` of `ptrs` (0: q..b; 8: history).
template <typename Ptr>
kda::Inputs kda_inputs(Ptr ptrs, size_t first) {
  return kda::Inputs{ptrs(first), ptrs(first + 1), ptrs(first + 2), ptrs(first + 3), ptrs(first + 4), ptrs(5), ptrs(6)};
}
kda::Inputs call_inputs(const KernelCall& c, size_t first = 0) {
  return kda_inputs([&](size_t i) { return c.inputs[i].ptr<float>(); }, first);
}

std::vector<ShapeParam> shape_params(bool tokens, int64_t max_tokens) {
  std::vector<ShapeParam> p = {
      {.name = "B", .default_value = 4, .max = 4096, .help = "sequences"},
      {.name = "HK", .default_value = 4, .max = 1024, .help = "key heads"},
      {.name = "HV", .default_value = 8, .max = 1024, .help = "value heads (multiple of HK)"},
      {.name = "K", .default_value = 128, .max = 1 << 14, .help = "key head size"},
      {.name = "V", .default_value = 128, .max = 1 << 14, .help = "value head size"}};
  if (tokens) p.push_back({.name = "T", .default_value = std::min<int64_t>(64, max_tokens), .max = max_tokens, .help = "tokens per sequence"});
  return p;
}

Status check_heads(const Shape& s) {
  if (s["HV"] % s["HK"] != 0) return invalid_argument("HV={} is not a multiple of HK={}", s["HV"], s["HK"]);
  return ok_status();
}

using Dims = std::function<std::vector<int64_t>(const Shape&)>;

// [B, (tokens,) H, n] for per-token tensors; `tokens` names the shape parameter that counts
// them (T, or F for ReplaySSM's earlier tokens), or is null for one token.
TensorSpec per_token(std::string name, const char* tokens, const char* heads, const char* inner,
                     std::string inner_coord) {
  const std::string h = heads;
  const std::optional<std::string> n = inner ? std::optional<std::string>(inner) : std::nullopt;
  const std::optional<std::string> t = tokens ? std::optional<std::string>(tokens) : std::nullopt;
  Dims dims = [t, h, n](const Shape& s) {
    std::vector<int64_t> d = {s["B"]};
    if (t) d.push_back(s[*t]);
    d.push_back(s[h]);
    if (n) d.push_back(s[*n]);
    return d;
  };
  std::vector<std::string> coords = {"seq"};
  std::vector<int64_t> tile = {1};
  if (tokens) {
    coords.push_back("token");
    tile.push_back(16);
  }
  coords.push_back("head");
  tile.push_back(1);
  if (n) {
    coords.push_back(inner_coord);
    tile.push_back(kBlockV);
  }
  return {.name = std::move(name), .dtype = DType::kF32, .dims = dims, .coords = coords, .tile = tile, .partition_dim = 0};
}

TensorSpec state_tensor(std::string name) {
  return {.name = std::move(name), .dtype = DType::kF32,
          .dims = [](const Shape& s) { return std::vector<int64_t>{s["B"], s["HV"], s["K"], s["V"]}; },
          .coords = {"seq", "head", "k", "v"}, .tile = {1, 1, 32, kBlockV}, .partition_dim = 0};
}

// q, k, v, g, b of `tokens` tokens (as per_token), with `suffix` on their names.
std::vector<TensorSpec> token_inputs(const char* tokens, const std::string& suffix = "") {
  return {per_token("q" + suffix, tokens, "HK", "K", "k"), per_token("k" + suffix, tokens, "HK", "K", "k"),
          per_token("v" + suffix, tokens, "HV", "V", "v"), per_token("g" + suffix, tokens, "HV", "K", "k"),
          per_token("b" + suffix, tokens, "HV", nullptr, "")};
}

// The inputs of every KDA kernel; kda_replay_decode appends the history (kHistoryInput).
std::vector<TensorSpec> inputs(const char* tokens) {
  std::vector<TensorSpec> in = token_inputs(tokens);
  in.push_back({.name = "a_log", .dtype = DType::kF32,
                .dims = [](const Shape& s) { return std::vector<int64_t>{s["HV"]}; }, .coords = {"head"}});
  in.push_back({.name = "dt_bias", .dtype = DType::kF32,
                .dims = [](const Shape& s) { return std::vector<int64_t>{s["HV"], s["K"]}; }, .coords = {"head", "k"},
                .tile = {1, kBlockV}});
  in.push_back(state_tensor("state_in"));
  return in;
}

// Error scale of a (sequence, head) block: the largest |ref| in it, floored by the largest
// state entry the head held (before or after the call). docs/kda.md normalizes by max |ref|;
// the floor matters where the output cancels: o = S^T q with |q|_1 <= 1 (q is normalized and
// scaled by K^-1/2), so fp32 rounding in o is relative to max |S|, not to |o|.
std::vector<double> state_floor(const std::vector<double>& before, const std::vector<double>& after, int64_t heads,
                                int64_t block) {
  std::vector<double> f(size_t(heads), 0.0);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < block; ++i)
      f[size_t(h)] = std::max({f[size_t(h)], std::fabs(before[size_t(h * block + i)]), std::fabs(after[size_t(h * block + i)])});
  return f;
}

// ref is [B, T, H, inner]; mag gets max(block max |ref|, floor[b * H + h]) per element.
void head_scale(const std::vector<double>& ref, std::vector<double>& mag, int64_t B, int64_t T, int64_t H,
                int64_t inner, const std::vector<double>& floor) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      double m = floor[size_t(b * H + h)];
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < inner; ++i) m = std::max(m, std::fabs(ref[size_t(((b * T + t) * H + h) * inner + i)]));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < inner; ++i) mag[size_t(((b * T + t) * H + h) * inner + i)] = m;
    }
}

// outputs: out, then (with_state) the final state. With history, the F earlier tokens
// (inputs 8..12) run on state_in first; only the T tokens' outputs are compared.
ReferenceFn make_reference(bool with_state, bool history) {
  return [with_state, history](const Shape& shape, std::span<const std::vector<double>> in,
                               std::span<std::vector<double>> out, std::span<std::vector<double>> mag) {
    const kda::Shape s = kda_shape(shape);
    std::vector<std::vector<float>> f(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      if (i != 7) f[i].assign(in[i].begin(), in[i].end());
    auto ptrs = [&](size_t i) { return static_cast<const float*>(f[i].data()); };
    std::vector<double> state = in[7];
    std::vector<double> o;
    if (history && shape["F"] > 0) {
      kda::reference_forward(kda_shape(shape, shape["F"]), registered_params(), kda_inputs(ptrs, kHistoryInput),
                             state, o);
    }
    kda::reference_forward(s, registered_params(), kda_inputs(ptrs, 0), state, o);
    const std::vector<double> floor = state_floor(in[7], state, s.batch * s.hv, s.k * s.v);
    out[0] = o;
    head_scale(out[0], mag[0], s.batch, s.tokens, s.hv, s.v, floor);
    if (with_state) {
      out[1] = state;
      head_scale(out[1], mag[1], s.batch, 1, s.hv, s.k * s.v, floor);
    }
  };
}

std::map<DType, Tolerance> tolerance(double rtol) { return {{DType::kF32, Tolerance{.atol = 1e-30, .rtol = rtol}}}; }

std::map<std::string, std::string> variant_params(std::string prologue, std::string division) {
  return {{"prologue", std::move(prologue)}, {"division", std::move(division)}, {"block_v", std::to_string(kBlockV)}};
}

struct DecodeVariantInfo {
  kda::DecodeVariant variant;
  const char* prologue;
  const char* division;
  const char* help;
};
constexpr DecodeVariantInfo kDecodeVariants[] = {
    {kda::DecodeVariant::kVtile, "per_tile", "divide", "prologue recomputed by every V-tile item"},
    {kda::DecodeVariant::kVtileRecip, "per_tile", "rsqrt_rcp_newton", "per-tile prologue, rsqrt/rcp + Newton"},
    {kda::DecodeVariant::kHoisted, "per_head", "divide", "prologue once per (sequence, head), shared by its tiles"},
    {kda::DecodeVariant::kHoistedRecip, "per_head", "rsqrt_rcp_newton", "per-head prologue, rsqrt/rcp + Newton"},
};

KernelFn decode_call(kda::DecodeVariant variant) {
  return [variant](const KernelCall& c) {
    const kda::Shape s = kda_shape(c.shape);
    float* state = c.outputs[1].ptr<float>();
    std::memcpy(state, c.inputs[7].ptr<float>(), size_t(c.outputs[1].numel()) * sizeof(float));
    must(kda::decode(s, registered_params(), call_inputs(c), state, c.outputs[0].ptr<float>(), variant, nullptr,
                     workspace()),
         "kda_decode");
  };
}

// The step starts from state_in plus the F history steps (kda_replay_memo.h: filled once per
// input set, then only state_in is copied into the checkpoint per call).
KernelFn replay_call(kda::DecodeVariant variant) {
  return [variant](const KernelCall& c) {
    const kda::Shape s = kda_shape(c.shape);
    uint64_t salt = 0;
    for (const auto& [name, value] : c.shape.params()) salt = salt * 1000003 + uint64_t(value);
    const uint64_t key = kda::fingerprint_views(c.inputs.subspan(5), salt);  // a_log .. history
    auto cache = kda::steady_replay_cache(key, kda_shape(c.shape, c.shape["F"]), registered_params(),
                                          call_inputs(c, kHistoryInput), c.inputs[7].ptr<float>(), kReplayWindow);
    must(cache ? ok_status() : Status(unexpected(cache.error())), "kda_replay_decode");
    must(kda::replay_step(**cache, s, registered_params(), call_inputs(c), c.outputs[0].ptr<float>(), variant,
                          nullptr, workspace()),
         "kda_replay_decode");
  };
}

KernelFn prefill_call(kda::PrefillVariant variant) {
  return [variant](const KernelCall& c) {
    const kda::Shape s = kda_shape(c.shape);
    float* state = c.outputs[1].ptr<float>();
    std::memcpy(state, c.inputs[7].ptr<float>(), size_t(c.outputs[1].numel()) * sizeof(float));
    must(kda::prefill(s, registered_params(), call_inputs(c), state, c.outputs[0].ptr<float>(), variant, nullptr,
                      workspace()),
         "kda_prefill");
  };
}

}  // namespace

// Instruction regions (bench --callgrind): the kernel's own parts, and state_copy (harness: the agent
// leaves it out of the kernel's work), the copy of
// state_in every registered call makes (memcpy; callgrind counts each `rep movsb` step, so it is
// most of the count at small head counts).
KernelSpec kda_decode_spec() {
  KernelSpec k;
  k.name = "kda_decode";
  k.engine_calls = true;  // engine/hybrid_kda.cc; "auto" there is engine.kda.decode_variant
  k.engine_note = "in the engine auto keeps engine.kda.decode_variant's choice";
  k.help = "one KDA decode step (kda.h): gate sigmoid_bounded, state KV, block_v 64; state copied then updated";
  k.shape_params = shape_params(false, 1);
  k.check_shape = check_heads;
  k.inputs = inputs(nullptr);
  k.outputs = {per_token("out", nullptr, "HV", "V", "v"), state_tensor("state")};
  k.reference = make_reference(true, false);
  // decode_cost plus the copy of state_in into state (one more state read and write).
  k.cost.bytes = [](const Shape& s) {
    const kda::Cost c = kda::decode_cost(kda_shape(s), registered_params());
    return c.bytes + c.state_bytes;
  };
  k.cost.flops = [](const Shape& s) { return kda::decode_cost(kda_shape(s), registered_params()).flops; };
  k.tolerances = tolerance(2e-5);  // docs/kda.md: decode, one step
  k.partitioning = Partitioning{.param = "B"};
  k.regions = {{"prologue", "token_prologue"}, {"tile", "plain_tile"}, {"state_copy", "memcpy", true}};
  for (const DecodeVariantInfo& v : kDecodeVariants)
    k.variants.push_back({.name = std::string(kda::decode_variant_name(v.variant)), .isa = Isa::kScalar,
                          .params = variant_params(v.prologue, v.division), .help = v.help,
                          .run = decode_call(v.variant)});
  return k;
}

KernelSpec kda_replay_decode_spec() {
  KernelSpec k;
  k.name = "kda_replay_decode";
  k.engine_calls = true;  // engine/hybrid_kda.cc; "auto" there is engine.kda.decode_variant
  k.engine_note = "in the engine auto keeps engine.kda.decode_variant's choice";
  k.help = "ReplaySSM step (kda_replay.h) of T drafts against a checkpoint with F steps already buffered "
           "(window 16; inputs q..b of the T tokens, then q_prev..b_prev of the F earlier ones); T = 1 is decode, "
           "T > 1 speculative verify; state_in copied into the checkpoint per call";
  k.shape_params = shape_params(true, kReplayWindow);
  k.shape_params.back().default_value = 1;
  k.shape_params.push_back({.name = "F", .default_value = 8, .min = 0, .max = kReplayWindow - 1,
                            .help = "steps buffered before the call (8: the mean fill of a 16-step window)"});
  k.check_shape = [](const Shape& s) -> Status {
    RECUR_RETURN_IF_ERROR(check_heads(s));
    if (s["F"] + s["T"] > kReplayWindow)
      return invalid_argument("F={} + T={} exceed the window of {}: the step would flush", s["F"], s["T"],
                              kReplayWindow);
    return ok_status();
  };
  k.inputs = inputs("T");
  for (TensorSpec& t : token_inputs("F", "_prev")) k.inputs.push_back(std::move(t));
  k.outputs = {per_token("out", "T", "HV", "V", "v")};
  k.reference = make_reference(false, true);
  // The copy of state_in into the checkpoint (a state read and write, as kda_decode's copy),
  // then T steps from F buffered entries (mean F + (T - 1) / 2), with vtile's repeated prologue.
  auto cost = [](const Shape& s) {
    const double t = double(s["T"]);
    kda::Cost c = kda::replay_step_cost(kda_shape(s), registered_params(), double(s["F"]) + (t - 1) / 2, false);
    c.bytes = t * c.bytes + 2 * c.state_bytes;
    c.flops = t * c.flops;
    return c;
  };
  k.cost.bytes = [cost](const Shape& s) { return cost(s).bytes; };
  k.cost.flops = [cost](const Shape& s) { return cost(s).flops; };
  k.tolerances = tolerance(1e-4);  // docs/kda.md: ReplaySSM
  k.partitioning = Partitioning{.param = "B"};
  k.regions = {{"prologue", "replay_prologue"}, {"tile", "replay_tile"}, {"state_copy", "memcpy", true}};
  for (const DecodeVariantInfo& v : kDecodeVariants)
    k.variants.push_back({.name = std::string(kda::decode_variant_name(v.variant)), .isa = Isa::kScalar,
                          .params = variant_params(v.prologue, v.division), .help = v.help,
                          .run = replay_call(v.variant)});
  return k;
}

KernelSpec kda_prefill_spec() {
  KernelSpec k;
  k.name = "kda_prefill";
  k.engine_calls = true;  // engine/hybrid_kda.cc; "auto" there is engine.kda.prefill_variant
  k.engine_note = "in the engine auto keeps engine.kda.prefill_variant's choice";
  k.help = "KDA prefill of T tokens per sequence (kda.h): gate sigmoid_bounded, state KV; state copied then updated";
  k.shape_params = shape_params(true, 1 << 16);
  k.shape_params[0].default_value = 1;
  k.check_shape = check_heads;
  k.inputs = inputs("T");
  k.outputs = {per_token("out", "T", "HV", "V", "v"), state_tensor("state")};
  k.reference = make_reference(true, false);
  // The recurrent form's cost (chunk 0) plus the state copy; chunked variants do other FLOPs
  // (prefill_cost(chunk)), which the bench reports against this same model.
  k.cost.bytes = [](const Shape& s) {
    const kda::Cost c = kda::prefill_cost(kda_shape(s), registered_params(), 0);
    return c.bytes + c.state_bytes;
  };
  k.cost.flops = [](const Shape& s) { return kda::prefill_cost(kda_shape(s), registered_params(), 0).flops; };
  k.tolerances = tolerance(1e-4);  // docs/kda.md: prefill
  k.partitioning = Partitioning{.param = "B"};
  k.regions = {{"recurrent", "prefill_recurrent"}, {"chunk", "chunk_step"}, {"state_copy", "memcpy", true}};
  const struct {
    kda::PrefillVariant variant;
    const char* chunk;
    const char* help;
  } variants[] = {{kda::PrefillVariant::kRecurrent, "1", "token by token per (sequence, head, V-tile)"},
                  {kda::PrefillVariant::kChunked64, "64", "WY/UT chunked form, chunk 64"},
                  {kda::PrefillVariant::kChunked16, "16", "WY/UT chunked form, chunk 16"}};
  for (const auto& v : variants)
    k.variants.push_back({.name = std::string(kda::prefill_variant_name(v.variant)), .isa = Isa::kScalar,
                          .params = {{"chunk", v.chunk}, {"block_v", std::to_string(kBlockV)}}, .help = v.help,
                          .run = prefill_call(v.variant)});
  return k;
}

}  // namespace recur::kernels
