#include "engine/synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include <fmt/format.h>

#include "core/convert.h"
#include "engine/w8a8.h"

namespace recur {
namespace {

const std::string kWordStart = "\xE2\x96\x81";

std::vector<std::byte> encode_as(gguf::TensorType type, const std::vector<float>& x) {
  std::vector<std::byte> out;
  switch (type) {
    case gguf::TensorType::kF32:
      out.resize(x.size() * 4);
      std::memcpy(out.data(), x.data(), out.size());
      break;
    case gguf::TensorType::kF16:
    case gguf::TensorType::kBF16: {
      out.resize(x.size() * 2);
      for (size_t i = 0; i < x.size(); ++i) {
        uint16_t h = type == gguf::TensorType::kF16 ? fp32_to_fp16(x[i]) : fp32_to_bf16(x[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
    }
    case gguf::TensorType::kQ8_0:
      out = quantize_q8_0(x.data(), int64_t(x.size()));
      break;
    default:
      break;
  }
  return out;
}

class TensorMaker {
 public:
  TensorMaker(gguf::Writer& w, gguf::TensorType type, uint64_t seed) : w_(w), type_(type), rng_(seed) {}

  Status matrix(const std::string& name, int64_t rows, int64_t cols, double stddev) {
    return stored(name, {uint64_t(cols), uint64_t(rows)}, normal(rows * cols, stddev));
  }
  // The MoE router [n_experts, dim]: F32 in a Q8_0 file, as llama-quantize and llama.cpp's
  // converter leave ffn_gate_inp.weight in every quantized file (c392e50 llama-quant.cpp), so
  // llama.cpp multiplies it with fp32 activations as recur does (a Q8_0 router would have it
  // quantize them); the file's type otherwise.
  Status router(const std::string& name, int64_t rows, int64_t cols, double stddev) {
    if (type_ != gguf::TensorType::kQ8_0) return matrix(name, rows, cols, stddev);
    return w_.add_tensor(name, gguf::TensorType::kF32, {uint64_t(cols), uint64_t(rows)},
                         encode_as(gguf::TensorType::kF32, normal(rows * cols, stddev)));
  }
  Status ones(const std::string& name, int64_t n) { return vector(name, std::vector<float>(size_t(n), 1.0f)); }
  // An F32 vector of `n` values mean + N(0, stddev) (biases, QK-norm weights, gate rows).
  Status random_vector(const std::string& name, int64_t n, double mean, double stddev) {
    std::normal_distribution<float> dist{float(mean), float(stddev)};
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng_);
    return vector(name, x);
  }
  Status vector(const std::string& name, const std::vector<float>& x) {
    return w_.add_tensor(name, gguf::TensorType::kF32, {uint64_t(x.size())}, encode_as(gguf::TensorType::kF32, x));
  }
  // n experts of [rows, cols] as one 3-d tensor {cols, rows, n}, llama.cpp's MoE layout.
  Status experts(const std::string& name, int n, int64_t rows, int64_t cols, double stddev) {
    return stored(name, {uint64_t(cols), uint64_t(rows), uint64_t(n)}, normal(int64_t(n) * rows * cols, stddev));
  }
  // Short-convolution taps: the current input passes through (last tap near 1), the window
  // adds a little of the previous inputs.
  // kimi: llama.cpp's {taps, 1, channels} shape.
  Status conv(const std::string& name, int64_t channels, int taps, bool kimi = false) {
    std::normal_distribution<float> dist(0.0f, 0.2f);
    std::vector<float> x(size_t(channels * taps));
    for (int64_t c = 0; c < channels; ++c)
      for (int t = 0; t < taps; ++t) x[size_t(c * taps + t)] = (t == taps - 1 ? 1.0f : 0.0f) + dist(rng_);
    std::vector<uint64_t> dims = kimi ? std::vector<uint64_t>{uint64_t(taps), 1, uint64_t(channels)}
                                      : std::vector<uint64_t>{uint64_t(taps), uint64_t(channels)};
    return w_.add_tensor(name, gguf::TensorType::kF32, std::move(dims), encode_as(gguf::TensorType::kF32, x));
  }
  // KDA decay parameters as Kimi initialises them: A = U(1, 16), dt = logU(1e-3, 1e-1), and
  // dt_bias = softplus^-1(dt), so exp(g) starts between about 0.98 and 0.9999.
  // kimi: llama.cpp's kimi-linear names, ssm_a = -exp(A_log) as {1, heads} and ssm_dt.bias
  // (flat_a: ssm_a as {heads}, qwen3next's shape).
  Status kda_decay(const std::string& prefix, int heads, int k, bool kimi = false, bool flat_a = false) {
    std::uniform_real_distribution<float> a(1.0f, 16.0f), u(0.0f, 1.0f);
    std::vector<float> a_log(static_cast<size_t>(heads)), dt_bias(static_cast<size_t>(heads) * size_t(k));
    for (float& v : a_log) v = std::log(a(rng_));
    for (float& v : dt_bias) {
      float dt = std::exp(std::log(1e-3f) + u(rng_) * (std::log(1e-1f) - std::log(1e-3f)));
      v = std::log(std::expm1(dt));
    }
    if (kimi) {
      for (float& v : a_log) v = -std::exp(v);
      std::vector<uint64_t> dims = flat_a ? std::vector<uint64_t>{uint64_t(heads)} : std::vector<uint64_t>{1, uint64_t(heads)};
      RECUR_RETURN_IF_ERROR(
          w_.add_tensor(prefix + "ssm_a", gguf::TensorType::kF32, std::move(dims), encode_as(gguf::TensorType::kF32, a_log)));
      return vector(prefix + "ssm_dt.bias", dt_bias);
    }
    RECUR_RETURN_IF_ERROR(vector(prefix + "kda_a_log", a_log));
    return vector(prefix + "kda_dt_bias", dt_bias);
  }

 private:
  // A 2-d (or stacked 3-d) weight in the model's storage type; W8A8 (I8) adds <name>.scale,
  // one F32 per row of every stacked matrix (dims without the innermost).
  std::vector<float> normal(int64_t n, double stddev) {
    std::normal_distribution<float> dist(0.0f, float(stddev));
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng_);
    return x;
  }
  Status stored(const std::string& name, std::vector<uint64_t> dims, const std::vector<float>& x) {
    if (type_ != gguf::TensorType::kI8) return w_.add_tensor(name, type_, std::move(dims), encode_as(type_, x));
    const int64_t cols = int64_t(dims[0]), rows = int64_t(x.size()) / cols;
    std::vector<float> scales;
    RECUR_ASSIGN_OR_RETURN(std::vector<std::byte> q, quantize_w8a8(x.data(), rows, cols, scales));
    std::vector<uint64_t> scale_dims(dims.begin() + 1, dims.end());
    RECUR_RETURN_IF_ERROR(w_.add_tensor(name, type_, std::move(dims), std::move(q)));
    return w_.add_tensor(name + ".scale", gguf::TensorType::kF32, std::move(scale_dims),
                         encode_as(gguf::TensorType::kF32, scales));
  }

  gguf::Writer& w_;
  gguf::TensorType type_;
  std::mt19937_64 rng_;
};

// Llama 3.1's RoPE frequency divisors for head dim d (convert_hf_to_gguf.py's
// generate_extra_tensors for rope_type llama3): high frequencies untouched, low ones divided by
// the factor, a smooth blend between.
std::vector<float> llama3_rope_factors(int d, double theta) {
  const double factor = 8, low = 1, high = 4, original = 8192;
  const double low_wavelen = original / low, high_wavelen = original / high;
  std::vector<float> out;
  for (int i = 0; i < d; i += 2) {
    const double freq = 1 / std::pow(theta, double(i) / d), wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) out.push_back(1.0f);
    else if (wavelen > low_wavelen) out.push_back(float(factor));
    else {
      const double smooth = (original / wavelen - low) / (high - low);
      out.push_back(float(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

// MLA attention in llama.cpp's names (deepseek2.h): a direct or low-rank q, attn_k_b / attn_v_b
// (or the unsplit attn_kv_b of the older form, ModelConfig::mla_unsplit_kv_b).
Status mla_attention(TensorMaker& make, const ModelConfig& c, const std::string& p) {
  const int64_t H = c.n_heads, N = c.qk_nope_dim, E = c.qk_rope_dim, R = c.kv_lora_rank, V = c.v_head_dim;
  const double in_dim = 1.0 / std::sqrt(double(c.dim)), residual = 1.0 / std::sqrt(2.0 * c.n_layers);
  if (c.q_lora_rank > 0) {
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_q_a.weight", c.q_lora_rank, c.dim, in_dim));
    RECUR_RETURN_IF_ERROR(make.ones(p + "attn_q_a_norm.weight", c.q_lora_rank));
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_q_b.weight", H * (N + E), c.q_lora_rank, 1 / std::sqrt(double(c.q_lora_rank))));
  } else {
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_q.weight", H * (N + E), c.dim, in_dim));
  }
  RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_kv_a_mqa.weight", R + E, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.ones(p + "attn_kv_a_norm.weight", R));
  const double up = 1 / std::sqrt(double(R));
  if (c.mla_unsplit_kv_b) {
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_kv_b.weight", H * (N + V), R, up));
  } else {
    RECUR_RETURN_IF_ERROR(make.experts(p + "attn_k_b.weight", int(H), R, N, up));
    RECUR_RETURN_IF_ERROR(make.experts(p + "attn_v_b.weight", int(H), V, R, up));
  }
  return make.matrix(p + "attn_output.weight", c.dim, H * V, residual / std::sqrt(double(H * V)));
}

// kimi-linear's KDA layer (kimi_linear.h): q/k/v, their convolutions, the low-rank decay and
// output-gate projections, beta, ssm_a = -exp(A_log), dt bias, the gated norm and the output.
Status kimi_kda(TensorMaker& make, const ModelConfig& c, const std::string& p) {
  const int64_t K = c.kda_head_dim, D = int64_t(c.kda_heads) * K;
  const double in_dim = 1.0 / std::sqrt(double(c.dim)), residual = 1.0 / std::sqrt(2.0 * c.n_layers);
  for (const char* x : {"q", "k", "v"}) {
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_" + x + ".weight", D, c.dim, in_dim));
    RECUR_RETURN_IF_ERROR(make.conv(p + "ssm_conv1d_" + x + ".weight", D, c.conv_size, /*kimi=*/true));
  }
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ssm_f_a.weight", K, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ssm_f_b.weight", D, K, 1 / std::sqrt(double(K))));
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ssm_beta.weight", c.kda_heads, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.kda_decay(p, c.kda_heads, int(K), /*kimi=*/true));
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ssm_g_a.weight", K, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ssm_g_b.weight", D, K, 1 / std::sqrt(double(K))));
  RECUR_RETURN_IF_ERROR(make.ones(p + "ssm_norm.weight", K));
  return make.matrix(p + "attn_output.weight", c.dim, D, residual / std::sqrt(double(D)));
}

// qwen3next's gated DeltaNet layer (qwen3next.h): q, k, v in one attn_qkv, the z gate, one
// convolution over q, k and v, ssm_ba (per key head its betas then its decay logits), one
// decay and dt bias per value head, the gated norm's weight and ssm_out.
Status qwen3next_deltanet(TensorMaker& make, const ModelConfig& c, const std::string& p) {
  const int64_t K = c.kda_head_dim, qk = int64_t(c.kda_key_heads) * K, vd = int64_t(c.kda_heads) * K;
  const double in_dim = 1.0 / std::sqrt(double(c.dim)), residual = 1.0 / std::sqrt(2.0 * c.n_layers);
  RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_qkv.weight", 2 * qk + vd, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_gate.weight", vd, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.conv(p + "ssm_conv1d.weight", 2 * qk + vd, c.conv_size));
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ssm_ba.weight", 2 * int64_t(c.kda_heads), c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.kda_decay(p, c.kda_heads, 1, /*kimi=*/true, /*flat_a=*/true));
  RECUR_RETURN_IF_ERROR(make.random_vector(p + "ssm_norm.weight", K, 1, 0.2));
  return make.matrix(p + "ssm_out.weight", c.dim, vd, residual / std::sqrt(double(vd)));
}

// Layer l's FFN: dense (with phi3's fused gate+up; deepseek2's leading dense layers are
// dense_ffn_dim wide), or the routed experts (with the selection bias for sigmoid gating and
// always for kimi-linear) and the shared expert (with qwen2moe's gate).
Status ffn_tensors(TensorMaker& make, const ModelConfig& c, const std::string& p, int l) {
  const double in_dim = 1.0 / std::sqrt(double(c.dim)), residual = 1.0 / std::sqrt(2.0 * c.n_layers);
  // qwen3next names the norm before the FFN after Qwen's post_attention_layernorm.
  RECUR_RETURN_IF_ERROR(make.ones(p + (c.arch == Arch::kQwen3Next ? "post_attention_norm.weight" : "ffn_norm.weight"), c.dim));
  if (c.post_norms) RECUR_RETURN_IF_ERROR(make.random_vector(p + "post_ffw_norm.weight", c.dim, 1, 0.2));
  if (c.is_dense_ffn_layer(l)) {
    const int64_t width = l < c.leading_dense_layers ? c.dense_ffn_dim : c.ffn_dim;
    if (c.fused_gate_up) {
      RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_up.weight", 2 * width, c.dim, in_dim));
    } else {
      RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_gate.weight", width, c.dim, in_dim));
      RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_up.weight", width, c.dim, in_dim));
    }
    return make.matrix(p + "ffn_down.weight", c.dim, width, residual / std::sqrt(double(width)));
  }
  const double down = residual / std::sqrt(double(c.ffn_dim));
  RECUR_RETURN_IF_ERROR(make.router(p + "ffn_gate_inp.weight", c.n_experts, c.dim, in_dim));
  if (c.expert_gating == ExpertGating::kSigmoid || c.arch == Arch::kKimiLinear)
    RECUR_RETURN_IF_ERROR(make.random_vector(p + "exp_probs_b.bias", c.n_experts, 0, 0.1));
  RECUR_RETURN_IF_ERROR(make.experts(p + "ffn_gate_exps.weight", c.n_experts, c.ffn_dim, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.experts(p + "ffn_up_exps.weight", c.n_experts, c.ffn_dim, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.experts(p + "ffn_down_exps.weight", c.n_experts, c.dim, c.ffn_dim, down));
  if (!c.shared_expert) return ok_status();
  const int64_t shared = c.shared_width();
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_gate_shexp.weight", shared, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_up_shexp.weight", shared, c.dim, in_dim));
  RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_down_shexp.weight", c.dim, shared, residual / std::sqrt(double(shared))));
  if (c.shared_expert_gate)
    RECUR_RETURN_IF_ERROR(make.random_vector(p + "ffn_gate_inp_shexp.weight", c.dim, 0, in_dim));
  return ok_status();
}

}  // namespace

std::vector<std::byte> quantize_q8_0(const float* x, int64_t n) {
  std::vector<std::byte> out(size_t(n / 32) * 34);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
    // ggml's reference order (quantize_row_q8_0_ref): the unrounded d = amax / 127 gives the
    // multiplier 1 / d, and only the stored scale is rounded to fp16; roundf takes ties away from
    // zero. Dividing by the fp16-rounded d instead differs by one in ~0.7% of the quants.
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t d16 = fp32_to_fp16(d);
    std::byte* blk = out.data() + b * 34;
    std::memcpy(blk, &d16, 2);
    for (int i = 0; i < 32; ++i) {
      const float q = std::round(xb[i] * id);
      // A d under ~2.9e-39 (subnormal) overflows 1 / d to inf; ggml's x86 float->int8
      // conversion gives 0 for the resulting inf/NaN products (checked against llama-quantize).
      const int8_t qi = std::isfinite(q) ? int8_t(std::clamp(q, -127.0f, 127.0f)) : int8_t(0);
      std::memcpy(blk + 2 + i, &qi, 1);
    }
  }
  return out;
}

Result<Vocabulary> synthetic_vocabulary(int size) {
  if (size < 259 + 95) return invalid_argument("synthetic vocabulary needs at least 354 tokens, got {}", size);
  Vocabulary v;
  v.model = "llama";
  auto add = [&](const std::string& t, float score, TokenKind kind) {
    v.tokens.push_back(t);
    v.scores.push_back(score);
    v.kinds.push_back(kind);
  };
  add("<unk>", 0, TokenKind::kUnknown);
  add("<s>", 0, TokenKind::kControl);
  add("</s>", 0, TokenKind::kControl);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, TokenKind::kByte);
  v.unknown = 0;
  v.bos = 1;
  v.eos = 2;
  std::set<std::string> seen;
  auto piece = [&](const std::string& t) {
    if (int(v.tokens.size()) >= size || !seen.insert(t).second) return;
    // Longer pieces score higher, so merges prefer them; a small offset keeps scores distinct.
    add(t, -1000.0f / float(t.size() + 1) - 1e-4f * float(v.tokens.size()), TokenKind::kNormal);
  };
  piece(kWordStart);
  for (char c = 33; c < 127; ++c) piece(std::string(1, c));  // the space is kWordStart
  const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
  for (char a : letters) piece(kWordStart + a);
  for (char a : letters)
    for (char b : letters) piece(std::string{a, b});
  for (char a : letters)
    for (char b : letters) piece(kWordStart + std::string{a, b});
  for (char a : letters)
    for (char b : letters)
      for (char c : letters) piece(std::string{a, b, c});
  for (char a : letters)
    for (char b : letters)
      for (char c : letters) piece(kWordStart + std::string{a, b, c});
  for (int i = 0; int(v.tokens.size()) < size; ++i) piece(fmt::format("<extra_{}>", i));
  return v;
}

Result<gguf::Writer> synthetic_model(const SyntheticModelOptions& o) {
  const ModelConfig& c = o.config;
  RECUR_RETURN_IF_ERROR(c.validate());
  if (o.dtype == gguf::TensorType::kQ8_0 && (c.dim % 32 != 0 || c.ffn_dim % 32 != 0 || (!c.is_mla() && (c.n_heads * c.head_dim) % 32 != 0) ||
                                            (c.shared_expert && c.shared_width() % 32 != 0) ||
                                            (c.arch == Arch::kHybrid && (c.kda_head_dim * c.kda_key_heads) % 32 != 0) ||
                                            (c.arch == Arch::kKimiLinear && c.kda_head_dim % 32 != 0) ||
                                            (c.arch == Arch::kQwen3Next && (c.kda_head_dim * c.kda_heads) % 32 != 0)))
    return invalid_argument("Q8_0 needs dim, ffn and the head widths to be multiples of 32");
  if (o.dtype == gguf::TensorType::kQ8_0 && c.is_mla() &&
      (c.kv_lora_rank % 32 != 0 || c.qk_nope_dim % 32 != 0 || c.q_lora_rank % 32 != 0 || c.dense_ffn_dim % 32 != 0 ||
       (c.n_heads * c.v_head_dim) % 32 != 0))
    return invalid_argument("Q8_0 needs kv_lora_rank, q_lora_rank, the nope and value widths and the dense FFN to be "
                            "multiples of 32");
  if (o.dtype == gguf::TensorType::kI32)
    return invalid_argument("synthetic weights are F32, F16, BF16, Q8_0 or W8A8 (I8)");
  gguf::Writer w;
  c.to_gguf(w);
  w.set("general.name", gguf::Value::of_string(fmt::format("recur synthetic seed {}", o.seed)));
  RECUR_ASSIGN_OR_RETURN(Vocabulary vocab, synthetic_vocabulary(c.vocab));
  vocab.to_gguf(w);

  TensorMaker make(w, o.dtype, o.seed);
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  const double in_dim = 1.0 / std::sqrt(double(c.dim));
  const double residual = 1.0 / std::sqrt(2.0 * c.n_layers);
  // Architectures that scale the embedding by sqrt(dim) (gemma) get embeddings N(0, 1/dim), so the
  // scaled rows are N(0, 1) like everyone else's: N(0, 1) times sqrt(dim) would drown the layers,
  // and with gemma's tied head every greedy token would repeat the one before.
  RECUR_RETURN_IF_ERROR(make.matrix("token_embd.weight", c.vocab, c.dim, c.scale_embeddings ? in_dim : 1.0));
  if (o.llama3_rope) RECUR_RETURN_IF_ERROR(make.vector("rope_freqs.weight", llama3_rope_factors(c.head_dim, c.rope_theta)));
  const int64_t K = c.kda_head_dim, qk = int64_t(c.kda_key_heads) * K, vd = int64_t(c.kda_heads) * K;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    RECUR_RETURN_IF_ERROR(make.ones(p + "attn_norm.weight", c.dim));
    if (c.is_mla()) {  // deepseek2, kimi-linear (whose KDA layers have llama.cpp's names)
      RECUR_RETURN_IF_ERROR(c.is_kda_layer(l) ? kimi_kda(make, c, p) : mla_attention(make, c, p));
    } else if (c.arch == Arch::kQwen3Next && c.is_kda_layer(l)) {
      RECUR_RETURN_IF_ERROR(qwen3next_deltanet(make, c, p));
    } else if (c.is_kda_layer(l)) {
      RECUR_RETURN_IF_ERROR(make.matrix(p + "kda_q.weight", qk, c.dim, in_dim));
      RECUR_RETURN_IF_ERROR(make.matrix(p + "kda_k.weight", qk, c.dim, in_dim));
      RECUR_RETURN_IF_ERROR(make.matrix(p + "kda_v.weight", vd, c.dim, in_dim));
      RECUR_RETURN_IF_ERROR(make.conv(p + "kda_conv_q.weight", qk, c.conv_size));
      RECUR_RETURN_IF_ERROR(make.conv(p + "kda_conv_k.weight", qk, c.conv_size));
      RECUR_RETURN_IF_ERROR(make.conv(p + "kda_conv_v.weight", vd, c.conv_size));
      RECUR_RETURN_IF_ERROR(make.matrix(p + "kda_f.weight", vd, c.dim, in_dim));
      RECUR_RETURN_IF_ERROR(make.kda_decay(p, c.kda_heads, c.kda_head_dim));
      RECUR_RETURN_IF_ERROR(make.matrix(p + "kda_b.weight", c.kda_heads, c.dim, in_dim));
      RECUR_RETURN_IF_ERROR(make.matrix(p + "kda_out_gate.weight", vd, c.dim, in_dim));
      RECUR_RETURN_IF_ERROR(make.ones(p + "kda_out_norm.weight", K));
      RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_output.weight", c.dim, vd, residual / std::sqrt(double(vd))));
    } else {
      if (c.fused_qkv) {
        RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_qkv.weight", q_dim + 2 * kv_dim, c.dim, in_dim));
      } else {
        // qwen3next's attn_q: each head's q rows, then its output gate's.
        RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_q.weight", c.attn_output_gate ? 2 * q_dim : q_dim, c.dim, in_dim));
        RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_k.weight", kv_dim, c.dim, in_dim));
        RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_v.weight", kv_dim, c.dim, in_dim));
      }
      if (c.attn_bias) {
        RECUR_RETURN_IF_ERROR(make.random_vector(p + "attn_q.bias", q_dim, 0, 0.5));
        RECUR_RETURN_IF_ERROR(make.random_vector(p + "attn_k.bias", kv_dim, 0, 0.5));
        RECUR_RETURN_IF_ERROR(make.random_vector(p + "attn_v.bias", kv_dim, 0, 0.5));
      }
      if (c.qk_norm) {
        RECUR_RETURN_IF_ERROR(make.random_vector(p + "attn_q_norm.weight", c.head_dim, 1, 0.2));
        RECUR_RETURN_IF_ERROR(make.random_vector(p + "attn_k_norm.weight", c.head_dim, 1, 0.2));
      }
      RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_output.weight", c.dim, q_dim, residual / std::sqrt(double(q_dim))));
      if (c.post_norms) RECUR_RETURN_IF_ERROR(make.random_vector(p + "post_attention_norm.weight", c.dim, 1, 0.2));
    }
    RECUR_RETURN_IF_ERROR(ffn_tensors(make, c, p, l));
  }
  RECUR_RETURN_IF_ERROR(make.ones("output_norm.weight", c.dim));
  if (!c.tied_embeddings) RECUR_RETURN_IF_ERROR(make.matrix("output.weight", c.vocab, c.dim, in_dim));
  return w;
}

Status write_synthetic_model(const SyntheticModelOptions& options, const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(gguf::Writer w, synthetic_model(options));
  return w.write(path);
}

}  // namespace recur
