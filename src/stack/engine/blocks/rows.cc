// Row-wise blocks of the forward: embedding (and RoPE tables), RMSNorm and the residual add. Each runs
// over the rows in claimed chunks (for_rows), one row whole per thread. The norms are the
// registered kernels rmsnorm and rmsnorm_residual, the embedding rows the registered
// embedding_<table type>, at the variants EngineOptions::kernels names.
#include <cmath>
#include <optional>

#include "engine/blocks/block.h"
#include "engine/layers.h"
#include "kernels/ggml_arith/ggml_arith.h"
#include "kernels/layer/layer.h"
#include "kernels/rmsnorm/rmsnorm.h"
#include "trace/trace.h"

namespace recur {

const float* norm_weight(const Step& s, const Weight& w) {
  w.dequantize_row(0, s.r.norm_w.data());
  return s.r.norm_w.data();
}

namespace {

// kernels::RmsNormFn's shape over ggml_arith's row: (x * scale) * w, the squares summed in double.
void ggml_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t i = 0; i < rows; ++i) ggml_arith::rms_norm_row(n, y + i * n, x + i * n, eps, w);
}

}  // namespace

kernels::RmsNormFn rmsnorm_for(const Step& s) {
  return s.o.ggml ? ggml_rmsnorm : kernels::rmsnorm_fn(s.o.kernels.rmsnorm.isa);
}

namespace {

// The registered embedding kernel's table type for the model's token embedding; none for a
// table it does not read (W8A8's I8 rows, a regrouped table): those rows are dequantized.
std::optional<kernels::TableType> table_type(const Weight& w) {
  if (w.regrouped) return std::nullopt;
  switch (w.type) {
    case gguf::TensorType::kF32: return kernels::TableType::kF32;
    case gguf::TensorType::kF16: return kernels::TableType::kF16;
    case gguf::TensorType::kBF16: return kernels::TableType::kBF16;
    case gguf::TensorType::kQ8_0: return kernels::TableType::kQ8_0;
    default: return std::nullopt;
  }
}

// x = each row's embedding: the rows a caller gave (vision), the others gathered from the table
// by the registered embedding_<type> at its variant (ids were checked by the plan).
void gather_rows(const Step& s, kernels::TableType type, trace::Zone& zone) {
  const KernelChoice& k = s.o.kernels.embedding[size_t(type)];
  zone.arg("variant", k.variant.data());
  zone.arg("rows", s.rows());
  const kernels::LayerOps& ops = kernels::layer_ops(k.isa);
  const Weight& table = s.m.token_embedding;
  const int64_t dim = s.c().dim;
  for (int64_t i = 0; i < s.rows(); ++i) {
    float* row = s.r.x.data() + i * dim;
    if (const float* given = s.p.embeddings[size_t(i)]) {
      std::copy(given, given + dim, row);
      continue;
    }
    const int32_t id = s.p.tokens[size_t(i)];
    s.r.fail(kernels::embedding_gather(table.data, type, table.rows, dim, std::span(&id, 1), row, ops));
  }
}

// engine.ggml_arithmetic: each row's cache of ggml_rope_ext (ggml_arith::rope_cache: rd floats,
// cos and sin of each pair, the angles chained in float) at the start of its 2 hd floats; the
// sliding layers' own (gemma3: the local base, unscaled) likewise in rope_local.
void ggml_rope_tables(const Step& s, const float* freq_factors) {
  const ModelConfig& c = s.c();
  const int64_t hd = c.head_dim;
  const ggml_arith::RopeParams global{.n_dims = c.rotary_dims(), .freq_base = c.rope_theta, .freq_scale = c.rope_freq_scale};
  const ggml_arith::RopeParams local{.n_dims = c.rotary_dims(), .freq_base = c.rope_local_theta};
  for (int64_t i = 0; i < s.rows(); ++i) {
    const int64_t pos = s.p.positions[size_t(i)];
    ggml_arith::rope_cache(pos, global, freq_factors, s.r.rope.data() + i * 2 * hd);
    if (!s.r.rope_local.empty()) ggml_arith::rope_cache(pos, local, nullptr, s.r.rope_local.data() + i * 2 * hd);
  }
}

void embed_tokens(const Step& s) {
  const std::optional<kernels::TableType> type = table_type(s.m.token_embedding);
  if (!type) return batch_embed_rows(s.p, s.m.token_embedding, s.c().dim, s.r.x.data());
  // One zone per kernel, named after it (a zone's name is static).
  switch (*type) {
    case kernels::TableType::kF32: {
      RECUR_ZONE("embedding_f32");
      return gather_rows(s, *type, zone);
    }
    case kernels::TableType::kF16: {
      RECUR_ZONE("embedding_f16");
      return gather_rows(s, *type, zone);
    }
    case kernels::TableType::kBF16: {
      RECUR_ZONE("embedding_bf16");
      return gather_rows(s, *type, zone);
    }
    case kernels::TableType::kQ8_0: {
      RECUR_ZONE("embedding_q8_0");
      return gather_rows(s, *type, zone);
    }
  }
}

}  // namespace

void embed_rows(const Step& s) {
  const ModelConfig& c = s.c();
  embed_tokens(s);
  if (c.scale_embeddings) {
    const float k = std::sqrt(float(c.dim));  // gemma, as llama.cpp's ggml_scale(sqrtf(n_embd))
    for (int64_t i = 0; i < s.rows() * c.dim; ++i) s.r.x[size_t(i)] *= k;
  }
  s.tap(Op::kEmbed, -1, s.r.x.data(), c.dim);
  if (s.r.rope.empty()) return;  // no attention layer
  if (c.is_mla()) return mla_rope_tables(s);
  const int64_t hd = c.head_dim, rd = c.rotary_dims();  // tables of the rotated dims, rows 2 hd apart
  const kernels::RopeLayout layout = c.rope_neox ? kernels::RopeLayout::kHalfSplit : kernels::RopeLayout::kInterleaved;
  // Llama 3 RoPE scaling: rope_freqs.weight's divisors, widened once per rank.
  const bool factors = s.m.rope_freqs.data != nullptr;
  if (factors && s.r.rope_freqs.empty()) {
    s.r.rope_freqs.resize(size_t(hd / 2));
    s.m.rope_freqs.dequantize_row(0, s.r.rope_freqs.data());
  }
  if (s.o.ggml) return ggml_rope_tables(s, factors ? s.r.rope_freqs.data() : nullptr);
  for (int64_t i = 0; i < s.rows(); ++i) {
    float* cs = s.r.rope.data() + i * 2 * hd;
    const double pos = double(s.p.positions[size_t(i)]);
    kernels::rope_tables(rd, pos, double(c.rope_theta), layout, cs, cs + rd, c.rope_freq_scale,
                         factors ? s.r.rope_freqs.data() : nullptr);
    // gemma3's sliding layers: their own base, without the global layers' linear scaling.
    if (!s.r.rope_local.empty()) {
      float* local = s.r.rope_local.data() + i * 2 * hd;
      kernels::rope_tables(rd, pos, double(c.rope_local_theta), layout, local, local + rd, 1.0f, nullptr);
    }
  }
}

void norm_rows(const Step& s, const Weight& w) {
  const KernelChoice& k = s.o.kernels.rmsnorm;
  RECUR_ZONE("rmsnorm");
  zone.arg("variant", s.o.ggml ? "ggml" : k.variant.data());  // the function that ran
  zone.arg("rows", s.rows());
  const kernels::RmsNormFn fn = rmsnorm_for(s);
  const int64_t dim = s.c().dim;
  const float eps = s.c().rms_eps;
  const float* wf = norm_weight(s, w);
  const float* x = s.r.x.data();
  float* h = s.r.h.data();
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) { fn(x + i0 * dim, wf, h + i0 * dim, i1 - i0, dim, eps); });
}

void norm_partial_rows(const Step& s, const Weight& w) {
  const kernels::RmsNormFn fn = rmsnorm_for(s);
  const int64_t dim = s.c().dim;
  const float eps = s.c().rms_eps;
  const float* wf = norm_weight(s, w);
  float* y = s.r.partial.data();
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) { fn(y + i0 * dim, wf, y + i0 * dim, i1 - i0, dim, eps); });
}

void add_partial_norm_rows(const Step& s, const Weight& w) {
  const KernelChoice& k = s.o.kernels.rmsnorm_residual;
  RECUR_ZONE("rmsnorm_residual");
  zone.arg("variant", s.o.ggml ? "ggml" : k.variant.data());
  zone.arg("rows", s.rows());
  const kernels::LayerOps& ops = kernels::layer_ops(k.isa);
  const int64_t dim = s.c().dim;
  const float eps = s.c().rms_eps;
  const float* wf = norm_weight(s, w);
  float* x = s.r.x.data();
  float* h = s.r.h.data();
  const float* partial = s.r.partial.data();
  if (s.o.ggml) {
    // ggml_add, then ggml_rms_norm and ggml_mul: the sum is exact in either order of its two terms.
    for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0 * dim; i < i1 * dim; ++i) x[i] += partial[i];
      ggml_rmsnorm(x + i0 * dim, wf, h + i0 * dim, i1 - i0, dim, eps);
    });
    return;
  }
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) {
    const int64_t at = i0 * dim;
    kernels::rmsnorm_residual(x + at, partial + at, wf, x + at, h + at, i1 - i0, dim, eps, ops);
  });
}

void add_partial_rows(const Step& s) {
  const int64_t dim = s.c().dim;
  float* x = s.r.x.data();
  const float* partial = s.r.partial.data();
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0 * dim; i < i1 * dim; ++i) x[i] += partial[i];
  });
}

}  // namespace recur
