#include "engine/hf_checkpoint.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/convert.h"
#include "engine/hf_tensor_names.h"
#include "engine/hf_tokenizer.h"
#include "engine/safetensors.h"

namespace recur {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kHfMaxJsonBytes = uint64_t(64) << 20;  // config / index / tokenizer files

Result<std::string> hf_read_text(const fs::path& path, bool required) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    if (!required) return std::string();
    return not_found("{}: no such file (a Hugging Face model directory holds config.json, model.safetensors or "
                     "model.safetensors.index.json with its shards, and tokenizer.json)",
                     path.string());
  }
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kHfMaxJsonBytes) return parse_error("{}: {} bytes; recur reads JSON files up to 64 MiB", path.string(), size);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return io_error("{}: read failed", path.string());
  return text.str();
}

Result<HfShardIndex> hf_plan_shards(const fs::path& dir) {
  const fs::path index_path = dir / "model.safetensors.index.json";
  RECUR_ASSIGN_OR_RETURN(std::string index_text, hf_read_text(index_path, /*required=*/false));
  if (!index_text.empty()) return parse_hf_shard_index(index_text, index_path.string());
  std::error_code ec;
  if (!fs::is_regular_file(dir / "model.safetensors", ec))
    return not_found("{}: no model.safetensors and no model.safetensors.index.json", dir.string());
  HfShardIndex plan;
  plan.files.push_back("model.safetensors");
  return plan;
}

Result<gguf::TensorType> hf_gguf_type(const safetensors::Tensor& t, std::string_view shard) {
  switch (t.dtype) {
    case DType::kF32: return gguf::TensorType::kF32;
    case DType::kF16: return gguf::TensorType::kF16;
    case DType::kBF16: return gguf::TensorType::kBF16;
    default:
      return unsupported("{}: tensor '{}' is {}; recur reads F32, F16 and BF16 checkpoints (FP8 or integer weights need "
                         "converting first)",
                         shard, t.name, t.dtype_name);
  }
}

uint64_t hf_elements(const safetensors::Tensor& t) {
  uint64_t n = 1;
  for (uint64_t d : t.shape) n *= d;
  return n;
}

float hf_element(const safetensors::Tensor& t, uint64_t i) {
  switch (t.dtype) {
    case DType::kF16: { uint16_t h; std::memcpy(&h, t.data + 2 * i, 2); return fp16_to_fp32(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, t.data + 2 * i, 2); return bf16_to_fp32(h); }
    default: { float f; std::memcpy(&f, t.data + 4 * i, 4); return f; }
  }
}

std::string hf_origin(const safetensors::Tensor& t, std::string_view shard) {
  return fmt::format("'{}' [{}] in '{}'", t.name, fmt::join(t.shape, ", "), shard);
}

// Builds the File's tensors, owning the copies the conversions make.
class HfAssembler {
 public:
  HfAssembler(const HfModelConfig& hf, HfCheckpoint& out) : hf_(hf), c_(hf.config), out_(out) {}

  std::deque<safetensors::File> shards;

  Status add(const safetensors::Tensor& t, std::string_view shard) {
    if (hf_vision_tensor(*hf_.row, t.name)) {
      ++vision_tensors_;
      return ok_status();
    }
    if (hf_.row->tensors.multimodal)
      if (const std::optional<HfTextName> text = hf_text_model_name(t.name)) out_.text_prefix = text->prefix;
    bool ignored = false;
    const std::optional<HfTensorTarget> target = hf_tensor_target(*hf_.row, t.name, c_.n_layers, &ignored);
    if (ignored) return ok_status();
    if (!target)
      return unsupported("{}: tensor '{}' is not one recur maps for {} (docs/engine.md \"Hugging Face checkpoints\")", shard,
                         t.name, hf_.row->name);
    if (target->gguf_name == "output.weight" && c_.tied_embeddings) return ok_status();  // tied: the embedding serves
    RECUR_ASSIGN_OR_RETURN(const gguf::TensorType type, hf_gguf_type(t, shard));
    std::vector<uint64_t> dims(t.shape.rbegin(), t.shape.rend());
    if (dims.empty()) dims.push_back(1);
    switch (target->conversion) {
      case HfConversion::kNone:
        return put(target->gguf_name, type, std::move(dims), t.data, t.end - t.begin, hf_origin(t, shard));
      case HfConversion::kFlatten:
        return put(target->gguf_name, type, {hf_elements(t)}, t.data, t.end - t.begin, hf_origin(t, shard));
      case HfConversion::kConv:
      case HfConversion::kConvSqueezed: {
        const bool three = t.shape.size() == 3 && t.shape[1] == 1, two = t.shape.size() == 2;
        if (!three && !two)
          return parse_error("{}: tensor '{}' has shape [{}], expected [channels, 1, taps] or [channels, taps]", shard, t.name,
                             fmt::join(t.shape, ", "));
        std::vector<uint64_t> shape = target->conversion == HfConversion::kConv
                                          ? std::vector<uint64_t>{t.shape.back(), 1, t.shape[0]}
                                          : std::vector<uint64_t>{t.shape.back(), t.shape[0]};
        return put(target->gguf_name, type, std::move(shape), t.data, t.end - t.begin, hf_origin(t, shard));
      }
      case HfConversion::kSplitQkvz: return split_qkvz(t, shard, type, target->gguf_name);
      case HfConversion::kPermuteQ:
      case HfConversion::kPermuteK: {
        const int64_t heads = target->conversion == HfConversion::kPermuteQ ? c_.n_heads : c_.n_kv_heads;
        const uint64_t rows = uint64_t(heads) * uint64_t(c_.head_dim);
        if (t.shape.size() != 2 || t.shape[0] != rows)
          return parse_error("{}: tensor '{}' has shape [{}], expected [{}, {}] ({} heads of {})", shard, t.name,
                             fmt::join(t.shape, ", "), rows, c_.dim, heads, c_.head_dim);
        const size_t row_bytes = size_t(t.shape[1]) * dtype_size(t.dtype);
        std::vector<std::byte>& buf = buffers_.emplace_back(t.end - t.begin);
        for (uint64_t r = 0; r < rows; ++r)
          std::memcpy(buf.data() + r * row_bytes, t.data + size_t(llama_permuted_row(int64_t(r), c_.head_dim, false)) * row_bytes,
                      row_bytes);
        return put(target->gguf_name, type, std::move(dims), buf.data(), buf.size(), hf_origin(t, shard));
      }
      case HfConversion::kNormPlusOne:
      case HfConversion::kNegExp: {
        const bool norm = target->conversion == HfConversion::kNormPlusOne;
        const uint64_t n = hf_elements(t);
        std::vector<std::byte>& buf = buffers_.emplace_back(n * sizeof(float));
        for (uint64_t i = 0; i < n; ++i) {
          const float x = hf_element(t, i), y = norm ? 1.0f + x : -std::exp(x);
          std::memcpy(buf.data() + 4 * i, &y, 4);
        }
        std::vector<uint64_t> shape = norm || t.shape.size() == 1 ? dims : std::vector<uint64_t>{1, n};
        return put(target->gguf_name, gguf::TensorType::kF32, std::move(shape), buf.data(), buf.size(), hf_origin(t, shard));
      }
      case HfConversion::kExpert: {
        if (c_.n_experts <= 0 || target->expert >= c_.n_experts)
          return parse_error("{}: tensor '{}' is expert {} but the config has {} experts", shard, t.name, target->expert,
                             c_.n_experts);
        auto& slots = experts_[target->gguf_name];
        slots.resize(size_t(c_.n_experts));
        slots[size_t(target->expert)] = {&t, std::string(shard)};
        return ok_status();
      }
    }
    return ok_status();
  }

  // The experts stacked, the Llama 3 RoPE divisors, and the head's presence checked.
  Status finish() {
    for (auto& [name, slots] : experts_) {
      const safetensors::Tensor* first = nullptr;
      for (size_t e = 0; e < slots.size(); ++e) {
        const safetensors::Tensor* t = slots[e].first;
        if (t == nullptr)
          return not_found("{}: tensor '{}' is missing ({} experts stack into {})", out_.file.source(),
                           hf_tensor_name(*hf_.row, name, int(e)), c_.n_experts, name);
        if (first == nullptr) first = t;
        if (t->shape.size() != 2 || t->shape != first->shape || t->dtype != first->dtype)
          return parse_error("{}: tensor '{}' is {} [{}] but expert 0's is {} [{}]; experts must match", slots[e].second,
                             t->name, t->dtype_name, fmt::join(t->shape, ", "), first->dtype_name, fmt::join(first->shape, ", "));
      }
      const size_t one = first->end - first->begin;
      std::vector<std::byte>& buf = buffers_.emplace_back(one * slots.size());
      for (size_t e = 0; e < slots.size(); ++e) std::memcpy(buf.data() + e * one, slots[e].first->data, one);
      RECUR_ASSIGN_OR_RETURN(const gguf::TensorType type, hf_gguf_type(*first, slots[0].second));
      RECUR_RETURN_IF_ERROR(put(name, type, {first->shape[1], first->shape[0], uint64_t(slots.size())}, buf.data(), buf.size(),
                                fmt::format("'{}' .. expert {} stacked", hf_tensor_name(*hf_.row, name, 0), slots.size() - 1)));
    }
    if (!hf_.rope_freqs.empty()) {
      std::vector<std::byte>& buf = buffers_.emplace_back(hf_.rope_freqs.size() * sizeof(float));
      std::memcpy(buf.data(), hf_.rope_freqs.data(), buf.size());
      RECUR_RETURN_IF_ERROR(put("rope_freqs.weight", gguf::TensorType::kF32, {hf_.rope_freqs.size()}, buf.data(), buf.size(),
                                "config.json rope_scaling (llama3)"));
    }
    if (vision_tensors_ > 0)
      out_.notes.push_back(fmt::format("{}: skipped {} vision tower / projector tensor{} (recur runs the text model)",
                                       hf_.row->name, vision_tensors_, vision_tensors_ == 1 ? "" : "s"));
    if (!c_.tied_embeddings && out_.file.tensor("output.weight") == nullptr)
      return not_found("{}: tensor 'lm_head.weight' is missing (config.json's tie_word_embeddings is false)",
                       out_.file.source());
    return ok_status();
  }

  std::shared_ptr<const void> storage() {
    struct Owned {
      std::deque<safetensors::File> shards;
      std::deque<std::vector<std::byte>> buffers;
    };
    auto owned = std::make_shared<Owned>();
    owned->shards = std::move(shards);
    owned->buffers = std::move(buffers_);
    return owned;
  }

 private:
  Status put(const std::string& name, gguf::TensorType type, std::vector<uint64_t> dims, const std::byte* data, uint64_t bytes,
             std::string origin) {
    gguf::TensorInfo t;
    t.name = name;
    t.dims = std::move(dims);
    t.type = type;
    t.bytes = bytes;
    t.data = data;
    if (out_.file.tensor(name) != nullptr)
      return parse_error("{}: two tensors become '{}': {} and {}", out_.file.source(), name, out_.origin[name], origin);
    RECUR_RETURN_IF_ERROR(out_.file.add_tensor(std::move(t)));
    out_.origin[name] = std::move(origin);
    return ok_status();
  }

  // Qwen3-Next's in_proj_qkvz regrouped into attn_qkv (named `qkv_name`) and attn_gate.
  Status split_qkvz(const safetensors::Tensor& t, std::string_view shard, gguf::TensorType type, const std::string& qkv_name) {
    const QkvzShape s{c_.kda_key_heads, c_.kda_head_dim, c_.kda_key_heads > 0 ? c_.kda_heads / c_.kda_key_heads : 0};
    if (t.shape.size() != 2 || t.shape[0] != uint64_t(s.rows()) || t.shape[1] != uint64_t(c_.dim))
      return parse_error("{}: tensor '{}' has shape [{}], expected [{}, {}] ({} key heads of q, k ({}) and v, z ({} x {}))", shard,
                         t.name, fmt::join(t.shape, ", "), s.rows(), c_.dim, s.key_heads, s.head_dim, s.value_heads_per_key,
                         s.head_dim);
    const size_t row_bytes = size_t(t.shape[1]) * dtype_size(t.dtype);
    std::vector<std::byte>& buf = buffers_.emplace_back(size_t(s.rows()) * row_bytes);
    for (int64_t r = 0; r < s.rows(); ++r)
      std::memcpy(buf.data() + size_t(r) * row_bytes, t.data + size_t(qwen3next_qkvz_row(r, s)) * row_bytes, row_bytes);
    const size_t qkv_bytes = size_t(s.qkv_rows()) * row_bytes;
    const std::string gate_name = qkv_name.substr(0, qkv_name.size() - std::string_view("attn_qkv.weight").size()) + "attn_gate.weight";
    RECUR_RETURN_IF_ERROR(put(qkv_name, type, {t.shape[1], uint64_t(s.qkv_rows())}, buf.data(), qkv_bytes, hf_origin(t, shard)));
    return put(gate_name, type, {t.shape[1], uint64_t(s.rows() - s.qkv_rows())}, buf.data() + qkv_bytes, buf.size() - qkv_bytes,
               hf_origin(t, shard));
  }

  const HfModelConfig& hf_;
  const ModelConfig& c_;
  HfCheckpoint& out_;
  std::deque<std::vector<std::byte>> buffers_;  // deque: growing it never moves a buffer
  std::map<std::string, std::vector<std::pair<const safetensors::Tensor*, std::string>>> experts_;
  int vision_tensors_ = 0;
};

}  // namespace

Result<HfShardIndex> parse_hf_shard_index(std::string_view text, std::string_view source) {
  HfShardIndex plan;
  json index = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object()) return parse_error("{}: not a JSON object", source);
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object() || map->empty())
    return parse_error("{}: missing object 'weight_map' (tensor name -> shard file)", source);
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string()) return parse_error("{}: weight_map['{}'] must be a file name", source, tensor);
    const std::string name = file.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name == "." ||
        name == ".." || !name.ends_with(".safetensors"))
      return parse_error("{}: weight_map['{}'] is '{}', not a .safetensors file name in the model directory", source, tensor,
                         name);
    if (std::find(plan.files.begin(), plan.files.end(), name) == plan.files.end()) plan.files.push_back(name);
    plan.owner.emplace(tensor, name);
  }
  return plan;
}

bool is_hf_checkpoint(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "config.json", ec);
}

Result<HfCheckpoint> read_hf_checkpoint(const std::string& dir_name, FileMemory memory) {
  const fs::path dir(dir_name);
  RECUR_ASSIGN_OR_RETURN(const std::string config_text, hf_read_text(dir / "config.json", true));
  RECUR_ASSIGN_OR_RETURN(const HfModelConfig hf, read_hf_config(config_text, (dir / "config.json").string()));
  RECUR_ASSIGN_OR_RETURN(const std::string tokenizer_text, hf_read_text(dir / "tokenizer.json", true));
  RECUR_ASSIGN_OR_RETURN(const std::string tokenizer_config, hf_read_text(dir / "tokenizer_config.json", false));
  const std::string tokenizer_source = (dir / "tokenizer.json").string();
  RECUR_ASSIGN_OR_RETURN(Vocabulary vocab,
                         vocabulary_from_hf_tokenizer({.tokenizer_json = tokenizer_text,
                                                       .source = tokenizer_source,
                                                       .vocab_size = hf.config.vocab,
                                                       .bos = hf.bos,
                                                       .eos = hf.eos,
                                                       .tokenizer_config_json = tokenizer_config}));
  gguf::Writer w;
  hf.config.to_gguf(w);
  vocab.to_gguf(w);
  w.set("general.name", gguf::Value::of_string(dir.filename().string()));
  const std::vector<std::byte> header = w.serialize();
  HfCheckpoint out;
  out.row = hf.row;
  RECUR_ASSIGN_OR_RETURN(out.file, gguf::parse(header, dir_name));

  RECUR_ASSIGN_OR_RETURN(const HfShardIndex plan, hf_plan_shards(dir));
  HfAssembler assemble(hf, out);
  for (const std::string& name : plan.files) {
    RECUR_ASSIGN_OR_RETURN(safetensors::File shard, safetensors::read((dir / name).string(), memory));
    assemble.shards.push_back(std::move(shard));
  }
  for (const auto& [tensor, file] : plan.owner) {
    const size_t i = size_t(std::find(plan.files.begin(), plan.files.end(), file) - plan.files.begin());
    if (assemble.shards[i].find(tensor) == nullptr)
      return parse_error("{}: weight_map puts tensor '{}' in '{}', which holds no such tensor",
                         (dir / "model.safetensors.index.json").string(), tensor, file);
  }
  std::map<std::string_view, std::string_view> seen;  // tensor -> shard
  for (size_t i = 0; i < plan.files.size(); ++i) {
    for (const safetensors::Tensor& t : assemble.shards[i].tensors) {
      if (auto [it, fresh] = seen.emplace(t.name, plan.files[i]); !fresh)
        return parse_error("{}: tensor '{}' is in both '{}' and '{}'", dir_name, t.name, it->second, plan.files[i]);
      RECUR_RETURN_IF_ERROR(assemble.add(t, plan.files[i]));
    }
  }
  RECUR_RETURN_IF_ERROR(assemble.finish());
  out.file.keep_alive(assemble.storage());
  return out;
}

namespace {

// The Hugging Face name of GGUF tensor `gguf_name` as this checkpoint spells it.
std::string hf_checkpoint_name(const HfCheckpoint& ck, std::string_view gguf_name) {
  const std::string name = hf_tensor_name(*ck.row, gguf_name);
  if (!ck.row->tensors.multimodal || name.empty()) return name;
  const std::optional<HfTextName> text = hf_text_model_name(name);
  return text ? hf_multimodal_name(text->name, ck.text_prefix) : name;
}

}  // namespace

Result<std::unique_ptr<Model>> load_hf_model(const std::string& dir, const LoadOptions& options) {
  const FileMemory memory = options.memory == WeightsMemory::kAnon ? FileMemory::kAnonymous : FileMemory::kMap;
  RECUR_ASSIGN_OR_RETURN(HfCheckpoint ck, read_hf_checkpoint(dir, memory));
  for (const std::string& note : ck.notes) fmt::print(stderr, "{}: {}\n", dir, note);
  auto model = model_from_file(std::move(ck.file), options.model);
  if (model) return model;
  // Name the Hugging Face tensor behind the first GGUF tensor name the message quotes.
  const std::string& message = model.error().message();
  for (size_t open = message.find('\''); open != std::string::npos; open = message.find('\'', open + 1)) {
    const size_t close = message.find('\'', open + 1);
    if (close == std::string::npos) break;
    const std::string name = message.substr(open + 1, close - open - 1);
    if (auto it = ck.origin.find(name); it != ck.origin.end())
      return unexpected(Error(model.error().code(),
                              fmt::format("{} (from Hugging Face tensor {}; shapes above are GGUF's, PyTorch's reversed)",
                                          message, it->second)));
    if (const std::string hf = hf_checkpoint_name(ck, name); !hf.empty())
      return unexpected(
          Error(model.error().code(), fmt::format("{} (Hugging Face tensor '{}', which the checkpoint lacks)", message, hf)));
    open = close;
  }
  return model;
}

}  // namespace recur
