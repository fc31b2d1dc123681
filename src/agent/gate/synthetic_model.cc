#include "gate/synthetic_model.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "engine/architectures.h"
#include "engine/model_cache.h"
#include "engine/qwen3next.h"
#include "gate/toml_reader.h"

namespace recur::gate {

namespace {

// The rows with routed experts (hybrid's are optional; the others default to 4).
bool moe_row(const Architecture& row) {
  return row.mla || row.kda_layers || row.arch == Arch::kQwen2Moe || row.arch == Arch::kQwen3Moe;
}
int default_experts(const Architecture& row) { return row.arch == Arch::kHybrid ? 0 : 4; }
// The row's features fix a shared expert on (qwen2moe); MLA rows default to one; hybrid may add one.
bool shared_expert_fixed_on(const Architecture& row) {
  ModelConfig c;
  row.features(c);
  return c.shared_expert;
}
bool default_shared_expert(const Architecture& row) { return shared_expert_fixed_on(row) || row.mla; }
bool shared_expert_possible(const Architecture& row) { return default_shared_expert(row) || row.arch == Arch::kHybrid; }
int default_ffn(int dim) { return (dim * 8 / 3 + 31) / 32 * 32; }

// Which rows a key applies to (beyond the ones every row takes).
enum class Place { kKda, kMoe, kMla, kGating, kGqa };

bool has_place(const Architecture& row, Place p) {
  switch (p) {
    case Place::kKda: return row.kda_layers;
    case Place::kMoe: return moe_row(row);
    case Place::kMla: return row.mla;
    case Place::kGating: return row.mla && !row.kda_layers;  // kimi-linear's scores are sigmoid, fixed
    case Place::kGqa: return !row.mla;                       // MLA caches one latent per token
  }
  return false;
}

constexpr std::pair<std::string_view, Place> kRowKeys[] = {
    {"kv_heads", Place::kGqa},     {"pattern", Place::kKda},       {"kda_head_dim", Place::kKda},
    {"experts", Place::kMoe},      {"experts_used", Place::kMoe},  {"shared_expert", Place::kMoe},
    {"shared_ffn", Place::kMoe},   {"kv_lora_rank", Place::kMla},  {"q_lora_rank", Place::kMla},
    {"qk_nope", Place::kMla},      {"qk_rope", Place::kMla},       {"v_head_dim", Place::kMla},
    {"leading_dense", Place::kMla}, {"dense_ffn", Place::kMla},    {"gating", Place::kGating},
};

std::string rows_with(Place p) {
  std::string out;
  for (const Architecture& a : architectures())
    if (has_place(a, p)) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

// Keys written for a row that has no place for them.
Status check_row_keys(TomlTable& t, const Architecture& row) {
  for (const auto& [key, place] : kRowKeys) {
    const toml::node* n = t.find(key);
    if (n != nullptr && !has_place(row, place))
      return unexpected(t.error_at(*n, key, fmt::format("arch {} has no place for it (it applies to {})", row.name,
                                                        rows_with(place))));
  }
  return ok_status();
}

// The MoE choices the row allows: experts on qwen2moe / qwen3moe, the shared expert where it may be.
Status check_moe(TomlTable& t, const Architecture& row, const SyntheticModel& m) {
  const bool always_moe = moe_row(row) && !row.mla && !row.kda_layers;
  if (always_moe && m.experts && *m.experts == 0)
    return unexpected(t.error_at(*t.find("experts"), "experts",
                                 fmt::format("{} is a MoE architecture: expected at least 1 expert", row.name)));
  if (!m.shared_expert) return ok_status();
  const toml::node& at = *t.find("shared_expert");
  if (*m.shared_expert && !shared_expert_possible(row))
    return unexpected(t.error_at(at, "shared_expert", fmt::format("{} has no shared expert", row.name)));
  if (!*m.shared_expert && shared_expert_fixed_on(row))
    return unexpected(t.error_at(at, "shared_expert", fmt::format("{} always has a shared expert", row.name)));
  if (*m.shared_expert && m.experts.value_or(default_experts(row)) == 0)
    return unexpected(t.error_at(at, "shared_expert", "a shared expert needs routed experts: set experts >= 1"));
  return ok_status();
}

// The file the engine loads (synthetic_options, without the context its errors get there).
Result<SyntheticModelOptions> build_options(const SyntheticModel& m) {
  RECUR_ASSIGN_OR_RETURN(const Architecture* row, find_architecture(m.arch, "synthetic model"));
  SyntheticModelOptions o;
  ModelConfig& c = o.config;
  c.arch = row->arch;
  row->features(c);
  c.dim = m.dim;
  c.n_layers = m.layers;
  c.n_heads = m.heads;
  c.n_kv_heads = m.kv_heads > 0 ? m.kv_heads : m.heads;
  c.head_dim = m.dim / m.heads;
  c.ffn_dim = m.ffn > 0 ? m.ffn : default_ffn(m.dim);
  c.vocab = m.vocab;
  c.context = m.context;
  if (moe_row(*row)) {
    c.n_experts = m.experts.value_or(default_experts(*row));
    c.n_experts_used = c.n_experts > 0 ? m.experts_used : 0;
    c.shared_expert = c.n_experts > 0 && m.shared_expert.value_or(default_shared_expert(*row));
    c.shared_ffn_dim = c.shared_expert ? (m.shared_ffn > 0 ? m.shared_ffn : c.ffn_dim) : 0;
  }
  if (row->kda_layers) {
    c.layer_pattern = m.pattern;
    c.kda_head_dim = m.kda_head_dim;
    c.kda_heads = row->mla ? m.heads : std::max(1, m.dim / m.kda_head_dim);  // kimi-linear: KDA and MLA share heads
    c.kda_key_heads = c.kda_heads;
    c.conv_size = 4;
  }
  if (row->arch == Arch::kQwen3Next) c.rope_dims = qwen3next_rope_dims(c.head_dim);
  if (row->mla) {
    c.n_kv_heads = 1;  // MLA runs as MQA over the latent (what llama.cpp writes)
    c.q_lora_rank = m.q_lora_rank;
    c.kv_lora_rank = m.kv_lora_rank;
    c.qk_nope_dim = m.qk_nope;
    c.qk_rope_dim = m.qk_rope;
    c.head_dim = m.qk_nope + m.qk_rope;
    c.v_head_dim = m.v_head_dim;
    c.leading_dense_layers = c.n_experts > 0 ? std::min(m.leading_dense, m.layers) : m.layers;
    c.dense_ffn_dim = m.dense_ffn > 0 ? m.dense_ffn : default_ffn(m.dim);
    const bool sigmoid = row->kda_layers || m.gating == "sigmoid";  // kimi-linear: sigmoid, always
    c.expert_gating = sigmoid ? ExpertGating::kSigmoid : ExpertGating::kSoftmax;
    c.moe_renormalize = sigmoid;  // DeepSeek-V3 and Kimi renormalize their top-k, V2 does not
  }
  o.seed = m.seed;
  RECUR_ASSIGN_OR_RETURN(o.dtype, parse_storage_type(m.dtype));
  RECUR_RETURN_IF_ERROR(c.validate());
  return o;
}

}  // namespace

Result<SyntheticModel> read_synthetic_model(TomlTable t) {
  SyntheticModel m;
  RECUR_ASSIGN_OR_RETURN(auto arch, t.string("arch"));
  if (arch) m.arch = *arch;
  auto row = find_architecture(m.arch, "synthetic model");
  if (!row)
    return unexpected(t.error_at(*t.find("arch"), "arch",
                                 fmt::format("expected one of {}, got '{}'", supported_architectures(), m.arch)));
  auto read_int = [&](std::string_view key, int& out, int64_t lo, int64_t hi) -> Status {
    RECUR_ASSIGN_OR_RETURN(auto v, t.integer(key, lo, hi));
    if (v) out = int(*v);
    return ok_status();
  };
  RECUR_RETURN_IF_ERROR(read_int("dim", m.dim, 16, 1 << 16));
  RECUR_RETURN_IF_ERROR(read_int("layers", m.layers, 1, 1024));
  RECUR_RETURN_IF_ERROR(read_int("heads", m.heads, 1, 1024));
  RECUR_RETURN_IF_ERROR(read_int("kv_heads", m.kv_heads, 0, 1024));
  RECUR_RETURN_IF_ERROR(read_int("ffn", m.ffn, 0, 1 << 20));
  RECUR_RETURN_IF_ERROR(read_int("vocab", m.vocab, 354, 1 << 20));
  RECUR_RETURN_IF_ERROR(read_int("context", m.context, 16, 1 << 22));
  RECUR_RETURN_IF_ERROR(read_int("kda_head_dim", m.kda_head_dim, 2, 1024));
  RECUR_ASSIGN_OR_RETURN(auto experts, t.integer("experts", 0, 1024));
  if (experts) m.experts = int(*experts);
  RECUR_RETURN_IF_ERROR(read_int("experts_used", m.experts_used, 1, 1024));
  if (const toml::node* n = t.find("shared_expert")) {
    if (!n->is_boolean()) return unexpected(t.error_at(*n, "shared_expert", "expected true or false"));
    m.shared_expert = n->as_boolean()->get();
  }
  RECUR_RETURN_IF_ERROR(read_int("shared_ffn", m.shared_ffn, 0, 1 << 20));
  RECUR_RETURN_IF_ERROR(read_int("kv_lora_rank", m.kv_lora_rank, 1, 1 << 16));
  RECUR_RETURN_IF_ERROR(read_int("q_lora_rank", m.q_lora_rank, 0, 1 << 16));
  RECUR_RETURN_IF_ERROR(read_int("qk_nope", m.qk_nope, 1, 4096));
  RECUR_RETURN_IF_ERROR(read_int("qk_rope", m.qk_rope, 2, 4096));
  RECUR_RETURN_IF_ERROR(read_int("v_head_dim", m.v_head_dim, 1, 4096));
  RECUR_RETURN_IF_ERROR(read_int("leading_dense", m.leading_dense, 0, 1024));
  RECUR_RETURN_IF_ERROR(read_int("dense_ffn", m.dense_ffn, 0, 1 << 20));
  RECUR_ASSIGN_OR_RETURN(auto gating, t.string("gating"));
  if (gating) {
    if (*gating != "softmax" && *gating != "sigmoid")
      return unexpected(
          t.error_at(*t.find("gating"), "gating", fmt::format("expected softmax or sigmoid, got '{}'", *gating)));
    m.gating = *gating;
  }
  RECUR_ASSIGN_OR_RETURN(auto seed, t.integer("seed", 0, INT64_MAX));
  if (seed) m.seed = uint64_t(*seed);
  RECUR_ASSIGN_OR_RETURN(auto dtype, t.string("dtype"));
  if (dtype) {
    if (*dtype != "f32" && *dtype != "f16" && *dtype != "bf16" && *dtype != "q8_0")
      return unexpected(
          t.error_at(*t.find("dtype"), "dtype", fmt::format("expected f32, f16, bf16 or q8_0, got '{}'", *dtype)));
    m.dtype = *dtype;
  }
  RECUR_ASSIGN_OR_RETURN(auto pattern, t.string("pattern"));
  if (pattern) m.pattern = *pattern;
  RECUR_RETURN_IF_ERROR(t.finish());
  RECUR_RETURN_IF_ERROR(check_row_keys(t, **row));
  RECUR_RETURN_IF_ERROR(check_moe(t, **row, m));
  // The sizes together (heads divide dim, the pattern's letters, whole shared experts, ...).
  if (auto o = build_options(m); !o) {
    const toml::node* at = t.find("arch");
    return unexpected(t.error_at(at ? *at : t.table(), "arch", o.error().message()));
  }
  return m;
}

Result<SyntheticModelOptions> synthetic_options(const SyntheticModel& m) {
  auto o = build_options(m);
  if (!o) return unexpected(o.error().with_context(fmt::format("synthetic {} model", m.arch)));
  return o;
}

std::string synthetic_model_name(const SyntheticModel& m) {
  std::string name = fmt::format("gate-{}-d{}-l{}-h{}-kv{}-f{}-v{}-c{}-{}-s{}", m.arch, m.dim, m.layers, m.heads,
                                 m.kv_heads, m.ffn, m.vocab, m.context, m.dtype, m.seed);
  auto row = find_architecture(m.arch, "");
  if (!row) return name;
  if ((*row)->kda_layers) name += fmt::format("-p{}-k{}", m.pattern, m.kda_head_dim);
  if (moe_row(**row)) {
    const int experts = m.experts.value_or(default_experts(**row));
    const bool shared = m.shared_expert.value_or(default_shared_expert(**row));
    if (experts > 0) name += fmt::format("-e{}x{}{}", experts, m.experts_used, shared ? "s" : "");
    if (experts > 0 && shared && m.shared_ffn > 0) name += fmt::format("{}", m.shared_ffn);
  }
  if ((*row)->mla)
    name += fmt::format("-mla{}q{}n{}r{}v{}-ld{}x{}{}", m.kv_lora_rank, m.q_lora_rank, m.qk_nope, m.qk_rope,
                        m.v_head_dim, m.leading_dense, m.dense_ffn, (*row)->kda_layers ? "" : "-" + m.gating);
  return name;
}

}  // namespace recur::gate
