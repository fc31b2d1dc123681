#include "engine/hf_export.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/convert.h"
#include "engine/hf_config.h"
#include "engine/hf_tensor_names.h"
#include "engine/hf_tokenizer.h"
#include "engine/model_config.h"
#include "engine/safetensors.h"
#include "engine/tokenizer.h"
#include "engine/weights.h"

namespace recur {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<DType> hf_export_dtype(const gguf::TensorInfo& t) {
  switch (t.type) {
    case gguf::TensorType::kF32: return DType::kF32;
    case gguf::TensorType::kF16: return DType::kF16;
    case gguf::TensorType::kBF16: return DType::kBF16;
    default:
      return unsupported("tensor '{}' is {}; a Hugging Face checkpoint holds F32, F16 or BF16", t.name,
                         gguf::tensor_type_name(uint32_t(t.type)));
  }
}

std::vector<uint64_t> hf_reversed(const std::vector<uint64_t>& dims) { return {dims.rbegin(), dims.rend()}; }

std::vector<std::byte> hf_f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Every element of a 1-d or flat tensor as float.
std::vector<float> hf_floats(const gguf::TensorInfo& t) {
  const Weight w{t.name, t.type, 1, int64_t(t.elements()), t.data};
  std::vector<float> out(size_t(t.elements()));
  w.dequantize_row(0, out.data());
  return out;
}

Status hf_write_file(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), std::streamsize(text.size()));
  if (!out) return io_error("{}: write failed", path.string());
  return ok_status();
}

class HfExporter {
 public:
  HfExporter(const gguf::File& f, const ModelConfig& c, const HfArchitecture& row) : f_(f), c_(c), row_(row) {}
  std::vector<safetensors::PendingTensor> out;

  Status add(const gguf::TensorInfo& t) {
    if (t.name == "rope_freqs.weight") return ok_status();  // config.json's rope_scaling (export_hf_checkpoint)
    if (t.name.ends_with("attn_v_b.weight")) return ok_status();  // joined with attn_k_b
    if (t.name.ends_with("attn_k_b.weight")) return join_kv_b(t);
    if (t.name.ends_with("attn_gate.weight") && splits_qkvz(t.name, "attn_gate.weight")) return ok_status();  // joined
    RECUR_ASSIGN_OR_RETURN(const DType dtype, hf_export_dtype(t));
    const size_t el = dtype_size(dtype);
    if (t.name.ends_with("_exps.weight")) {
      if (t.dims.size() != 3) return invalid_argument("tensor '{}' has {} dims, expected 3", t.name, t.dims.size());
      const size_t one = size_t(t.dims[0] * t.dims[1]) * el;
      for (uint64_t e = 0; e < t.dims[2]; ++e) {
        const std::string hf = hf_tensor_name(row_, t.name, int(e));
        out.push_back({hf, dtype, {t.dims[1], t.dims[0]}, {t.data + e * one, t.data + (e + 1) * one}});
      }
      return ok_status();
    }
    const std::string hf = hf_tensor_name(row_, t.name);
    bool ignored = false;
    const std::optional<HfTensorTarget> target = hf.empty() ? std::nullopt : hf_tensor_target(row_, hf, c_.n_layers, &ignored);
    if (!target) return unsupported("tensor '{}' has no Hugging Face name for {}", t.name, row_.name);
    std::vector<std::byte> bytes(t.data, t.data + t.bytes);
    switch (target->conversion) {
      case HfConversion::kNone:
      case HfConversion::kExpert:
        out.push_back({hf, dtype, hf_reversed(t.dims), std::move(bytes)});
        return ok_status();
      case HfConversion::kFlatten:
        out.push_back({hf, dtype, {t.elements()}, std::move(bytes)});
        return ok_status();
      case HfConversion::kConv:  // {taps, 1, channels} or {taps, channels} -> [channels, 1, taps]
      case HfConversion::kConvSqueezed:
        out.push_back({hf, dtype, {t.dims.back(), 1, t.dims[0]}, std::move(bytes)});
        return ok_status();
      case HfConversion::kSplitQkvz: return join_qkvz(t, hf, dtype);
      case HfConversion::kPermuteQ:
      case HfConversion::kPermuteK: {
        const size_t row_bytes = size_t(t.dims[0]) * el;
        for (uint64_t r = 0; r < t.dims[1]; ++r)
          std::memcpy(bytes.data() + r * row_bytes,
                      t.data + size_t(llama_permuted_row(int64_t(r), c_.head_dim, /*inverse=*/true)) * row_bytes, row_bytes);
        out.push_back({hf, dtype, hf_reversed(t.dims), std::move(bytes)});
        return ok_status();
      }
      case HfConversion::kNormPlusOne: {
        std::vector<float> v = hf_floats(t);
        for (float& x : v) x -= 1.0f;
        out.push_back({hf, DType::kF32, hf_reversed(t.dims), hf_f32_bytes(v)});
        return ok_status();
      }
      case HfConversion::kNegExp: {  // ssm_a = -exp(A_log): Kimi's {1, heads} as [1, 1, heads, 1], a vector as is
        std::vector<float> v = hf_floats(t);
        for (float& x : v) x = std::log(-x);
        std::vector<uint64_t> shape = t.dims.size() == 1 ? t.dims : std::vector<uint64_t>{1, 1, uint64_t(v.size()), 1};
        out.push_back({hf, DType::kF32, std::move(shape), hf_f32_bytes(v)});
        return ok_status();
      }
    }
    return ok_status();
  }

 private:
  // kv_b_proj [heads * (nope + v), rank]: each head's nope rows (attn_k_b transposed), then its
  // v rows (attn_v_b), as DeepSeek stores it before llama.cpp's converter splits it.
  Status join_kv_b(const gguf::TensorInfo& k_b) {
    const std::string v_name = k_b.name.substr(0, k_b.name.size() - std::string_view("attn_k_b.weight").size()) + "attn_v_b.weight";
    const gguf::TensorInfo* v_b = f_.tensor(v_name);
    if (v_b == nullptr) return not_found("tensor '{}' has no '{}' to join", k_b.name, v_name);
    if (v_b->type != k_b.type) return invalid_argument("tensors '{}' and '{}' differ in type", k_b.name, v_name);
    RECUR_ASSIGN_OR_RETURN(const DType dtype, hf_export_dtype(k_b));
    const size_t el = dtype_size(dtype);
    const uint64_t H = uint64_t(c_.n_heads), N = uint64_t(c_.qk_nope_dim), V = uint64_t(c_.v_head_dim),
                   R = uint64_t(c_.kv_lora_rank);
    if (k_b.elements() != H * R * N || v_b->elements() != H * V * R)
      return invalid_argument("tensors '{}' / '{}' do not hold {} heads of [{}, {}] / [{}, {}]", k_b.name, v_name, H, R, N, V, R);
    std::vector<std::byte> kv(size_t(H * (N + V) * R) * el);
    for (uint64_t h = 0; h < H; ++h) {
      for (uint64_t n = 0; n < N; ++n)
        for (uint64_t r = 0; r < R; ++r)
          std::memcpy(kv.data() + ((h * (N + V) + n) * R + r) * el, k_b.data + ((h * R + r) * N + n) * el, el);
      std::memcpy(kv.data() + (h * (N + V) + N) * R * el, v_b->data + h * V * R * el, V * R * el);
    }
    const std::string hf = hf_tensor_name(row_, k_b.name.substr(0, k_b.name.size() - std::string_view("attn_k_b.weight").size()) +
                                                    "attn_kv_b.weight");
    out.push_back({hf, dtype, {H * (N + V), R}, std::move(kv)});
    return ok_status();
  }

  // Whether GGUF tensor `name` (ending in `suffix`) has an attn_qkv sibling that comes from
  // Qwen3-Next's in_proj_qkvz (so the exporter writes both as that one tensor).
  bool splits_qkvz(const std::string& name, std::string_view suffix) const {
    const std::string qkv = name.substr(0, name.size() - suffix.size()) + "attn_qkv.weight";
    const std::string hf = hf_tensor_name(row_, qkv);
    bool ignored = false;
    const std::optional<HfTensorTarget> target = hf.empty() ? std::nullopt : hf_tensor_target(row_, hf, c_.n_layers, &ignored);
    return target && target->conversion == HfConversion::kSplitQkvz && f_.tensor(qkv) != nullptr;
  }

  // in_proj_qkvz from attn_qkv and attn_gate (qwen3next_qkvz_row's inverse direction).
  Status join_qkvz(const gguf::TensorInfo& qkv, const std::string& hf, DType dtype) {
    const std::string gate_name = qkv.name.substr(0, qkv.name.size() - std::string_view("attn_qkv.weight").size()) + "attn_gate.weight";
    const gguf::TensorInfo* gate = f_.tensor(gate_name);
    if (gate == nullptr) return not_found("tensor '{}' has no '{}' to join", qkv.name, gate_name);
    if (gate->type != qkv.type) return invalid_argument("tensors '{}' and '{}' differ in type", qkv.name, gate_name);
    const QkvzShape s{c_.kda_key_heads, c_.kda_head_dim, c_.kda_heads / c_.kda_key_heads};
    if (qkv.dims.size() != 2 || gate->dims.size() != 2 || qkv.dims[0] != uint64_t(c_.dim) || gate->dims[0] != uint64_t(c_.dim) ||
        qkv.dims[1] != uint64_t(s.qkv_rows()) || gate->dims[1] != uint64_t(s.rows() - s.qkv_rows()))
      return invalid_argument("tensors '{}' / '{}' are not [{}, {}] / [{}, {}]", qkv.name, gate_name, c_.dim, s.qkv_rows(), c_.dim,
                              s.rows() - s.qkv_rows());
    const size_t row_bytes = size_t(c_.dim) * dtype_size(dtype);
    std::vector<std::byte> bytes(size_t(s.rows()) * row_bytes);
    for (int64_t r = 0; r < s.rows(); ++r) {
      const std::byte* from = r < s.qkv_rows() ? qkv.data + size_t(r) * row_bytes : gate->data + size_t(r - s.qkv_rows()) * row_bytes;
      std::memcpy(bytes.data() + size_t(qwen3next_qkvz_row(r, s)) * row_bytes, from, row_bytes);
    }
    out.push_back({hf, dtype, {uint64_t(s.rows()), uint64_t(c_.dim)}, std::move(bytes)});
    return ok_status();
  }

  const gguf::File& f_;
  const ModelConfig& c_;
  const HfArchitecture& row_;
};

// The text model's tensors under `prefix` (the exporter names them under model.language_model.),
// and two small tensors standing for the vision tower and projector, which the loader skips.
void hf_multimodal_layout(std::vector<safetensors::PendingTensor>& out, HfTextPrefix prefix, const ModelConfig& c) {
  for (safetensors::PendingTensor& t : out)
    if (const std::optional<HfTextName> text = hf_text_model_name(t.name)) t.name = hf_multimodal_name(text->name, prefix);
  const std::string outer = prefix == HfTextPrefix::kModelLanguageModel ? "model." : "";
  auto fake = [&](std::string name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::vector<float> v(n);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * float(i % 7);
    out.push_back({outer + name, DType::kF32, std::move(shape), hf_f32_bytes(v)});
  };
  fake("vision_tower.vision_model.embeddings.patch_embedding.weight", {8, 3, 2, 2});
  fake("multi_modal_projector.mm_input_projection_weight", {8, uint64_t(c.dim)});
}

}  // namespace

Status export_hf_checkpoint(const gguf::File& file, const std::string& dir_name, const HfExportOptions& options) {
  RECUR_ASSIGN_OR_RETURN(const ModelConfig c, ModelConfig::from_gguf(file));
  const HfArchitecture* row = options.multimodal ? hf_multimodal_architecture_of(c.arch) : hf_architecture_of(c.arch);
  if (row == nullptr)
    return unsupported("{}: architecture '{}' has no {}Hugging Face form here", file.source(), arch_name(c.arch),
                       options.multimodal ? "multimodal " : "");
  RECUR_ASSIGN_OR_RETURN(const Vocabulary vocab, Vocabulary::from_gguf(file));
  HfExporter ex(file, c, *row);
  for (const gguf::TensorInfo& t : file.tensors) {
    if (auto s = ex.add(t); !s) return unexpected(s.error().with_context(file.source()));
  }
  if (options.multimodal) hf_multimodal_layout(ex.out, *options.multimodal, c);
  const fs::path dir(dir_name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("{}: cannot create the directory: {}", dir_name, ec.message());

  json config = json::parse(write_hf_config(c, vocab.bos, vocab.eos, row));
  if (const gguf::TensorInfo* freqs = file.tensor("rope_freqs.weight")) {
    // Llama 3.1's scaling as synthetic.h writes it; anything else has no config.json form.
    const Llama3Rope rope;
    const std::vector<float> want = llama3_rope_divisors(c.head_dim, c.rope_theta, rope), have = hf_floats(*freqs);
    if (want != have) return unsupported("{}: rope_freqs.weight is not Llama 3.1's default scaling", file.source());
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", rope.factor},
                              {"low_freq_factor", rope.low_freq_factor},
                              {"high_freq_factor", rope.high_freq_factor},
                              {"original_max_position_embeddings", int(rope.original_context)}};
  }
  RECUR_RETURN_IF_ERROR(hf_write_file(dir / "config.json", config.dump(2)));
  RECUR_ASSIGN_OR_RETURN(const std::string tokenizer, hf_tokenizer_json(vocab));
  RECUR_RETURN_IF_ERROR(hf_write_file(dir / "tokenizer.json", tokenizer));
  RECUR_RETURN_IF_ERROR(hf_write_file(dir / "tokenizer_config.json", json{{"add_bos_token", vocab.add_bos}}.dump()));

  const int shards = std::max(1, std::min(options.shards, int(ex.out.size())));
  json weight_map = json::object();
  const size_t per = (ex.out.size() + size_t(shards) - 1) / size_t(shards);
  for (int s = 0; s < shards; ++s) {
    const std::string name =
        shards == 1 ? "model.safetensors" : fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards);
    std::vector<safetensors::PendingTensor> part;
    for (size_t i = size_t(s) * per; i < std::min(ex.out.size(), size_t(s + 1) * per); ++i) {
      weight_map[ex.out[i].name] = name;
      part.push_back(std::move(ex.out[i]));
    }
    RECUR_ASSIGN_OR_RETURN(const std::vector<std::byte> bytes, safetensors::serialize(part));
    RECUR_RETURN_IF_ERROR(
        hf_write_file(dir / name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  }
  if (shards > 1)
    RECUR_RETURN_IF_ERROR(
        hf_write_file(dir / "model.safetensors.index.json", json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump(2)));
  return ok_status();
}

}  // namespace recur
