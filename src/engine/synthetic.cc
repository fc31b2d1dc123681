#include "engine/synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include <fmt/format.h>

#include "core/convert.h"

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
    std::normal_distribution<float> dist(0.0f, float(stddev));
    std::vector<float> x(size_t(rows * cols));
    for (float& v : x) v = dist(rng_);
    return w_.add_tensor(name, type_, {uint64_t(cols), uint64_t(rows)}, encode_as(type_, x));
  }
  Status ones(const std::string& name, int64_t n) {
    std::vector<float> x(size_t(n), 1.0f);
    return w_.add_tensor(name, gguf::TensorType::kF32, {uint64_t(n)}, encode_as(gguf::TensorType::kF32, x));
  }

 private:
  gguf::Writer& w_;
  gguf::TensorType type_;
  std::mt19937_64 rng_;
};

}  // namespace

std::vector<std::byte> quantize_q8_0(const float* x, int64_t n) {
  std::vector<std::byte> out(size_t(n / 32) * 34);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
    uint16_t d16 = fp32_to_fp16(amax / 127.0f);
    float d = fp16_to_fp32(d16);
    std::byte* blk = out.data() + b * 34;
    std::memcpy(blk, &d16, 2);
    for (int i = 0; i < 32; ++i) {
      float q = d > 0 ? std::nearbyint(xb[i] / d) : 0.0f;
      int8_t qi = int8_t(std::clamp(q, -127.0f, 127.0f));
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
  if (c.arch != Arch::kLlama) return unsupported("synthetic models of architecture {} are not written yet", arch_name(c.arch));
  if (o.dtype == gguf::TensorType::kQ8_0 && (c.dim % 32 != 0 || c.ffn_dim % 32 != 0 || (c.n_heads * c.head_dim) % 32 != 0))
    return invalid_argument("Q8_0 needs dim, ffn and heads x head_dim to be multiples of 32");
  if (o.dtype == gguf::TensorType::kI8 || o.dtype == gguf::TensorType::kI32)
    return invalid_argument("synthetic weights are F32, F16, BF16 or Q8_0");
  gguf::Writer w;
  c.to_gguf(w);
  w.set("general.name", gguf::Value::of_string(fmt::format("recur synthetic seed {}", o.seed)));
  RECUR_ASSIGN_OR_RETURN(Vocabulary vocab, synthetic_vocabulary(c.vocab));
  vocab.to_gguf(w);

  TensorMaker make(w, o.dtype, o.seed);
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  const double in_dim = 1.0 / std::sqrt(double(c.dim));
  const double residual = 1.0 / std::sqrt(2.0 * c.n_layers);
  RECUR_RETURN_IF_ERROR(make.matrix("token_embd.weight", c.vocab, c.dim, 1.0));
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    RECUR_RETURN_IF_ERROR(make.ones(p + "attn_norm.weight", c.dim));
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_q.weight", q_dim, c.dim, in_dim));
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_k.weight", kv_dim, c.dim, in_dim));
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_v.weight", kv_dim, c.dim, in_dim));
    RECUR_RETURN_IF_ERROR(make.matrix(p + "attn_output.weight", c.dim, q_dim, residual / std::sqrt(double(q_dim))));
    RECUR_RETURN_IF_ERROR(make.ones(p + "ffn_norm.weight", c.dim));
    RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_gate.weight", c.ffn_dim, c.dim, in_dim));
    RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_up.weight", c.ffn_dim, c.dim, in_dim));
    RECUR_RETURN_IF_ERROR(make.matrix(p + "ffn_down.weight", c.dim, c.ffn_dim, residual / std::sqrt(double(c.ffn_dim))));
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
