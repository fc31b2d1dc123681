// `recur model inspect FILE`: what a GGUF model file holds (metadata, tensors), or why it is broken.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "engine/architectures.h"
#include "engine/qwen3next.h"
#include "engine/gguf.h"
#include "engine/hf_export.h"
#include "engine/model_cache.h"
#include "engine/synthetic.h"

namespace recur::cli {
namespace {

using nlohmann::json;

constexpr size_t kMaxArrayItemsShown = 8;

json value_to_json(const gguf::Value& v, size_t max_items) {
  using gguf::ValueType;
  switch (v.type) {
    case ValueType::kString: return v.str;
    case ValueType::kBool: return v.boolean;
    case ValueType::kFloat32: case ValueType::kFloat64: return v.f64;
    case ValueType::kArray: {
      json items = json::array();
      for (size_t i = 0; i < v.items.size() && i < max_items; ++i) items.push_back(value_to_json(v.items[i], max_items));
      return {{"type", std::string(gguf::value_type_name(v.item_type))}, {"count", v.items.size()}, {"items", items}};
    }
    default:
      if (auto i = v.as_int()) return *i;
      return v.u64;
  }
}

struct InspectFlags {
  std::string path;
  bool json = false;
  bool all_items = false;
};

int run_inspect(const InspectFlags& flags) {
  auto file = gguf::read(flags.path);
  if (!file) return report_failure(file.error());
  size_t max_items = flags.all_items ? SIZE_MAX : kMaxArrayItemsShown;
  uint64_t total = 0;
  for (const auto& t : file->tensors) total += t.bytes;
  if (flags.json) {
    json meta = json::object();
    for (const auto& [k, v] : file->metadata) meta[k] = value_to_json(v, max_items);
    json tensors = json::array();
    for (const auto& t : file->tensors)
      tensors.push_back({{"name", t.name}, {"type", gguf::tensor_type_name(uint32_t(t.type))}, {"dims", t.dims},
                         {"bytes", t.bytes}, {"offset", file->data_offset + t.offset}});
    json out = {{"path", flags.path}, {"version", file->version}, {"alignment", file->alignment},
                {"tensor_bytes", total}, {"metadata", meta}, {"tensors", tensors}};
    print_json(out);
    return kExitOk;
  }
  fmt::print("{}: GGUF v{}, {} metadata keys, {} tensors, {:.1f} MiB of tensor data\n", flags.path, file->version,
             file->metadata.size(), file->tensors.size(), double(total) / (1 << 20));
  for (const auto& [k, v] : file->metadata) {
    std::string shown = value_to_json(v, max_items).dump();
    if (shown.size() > 100) shown = shown.substr(0, 97) + "...";
    fmt::print("  {:<40} {}\n", k, shown);
  }
  for (const auto& t : file->tensors)
    fmt::print("  {:<40} {:<5} [{}] {} bytes\n", t.name, gguf::tensor_type_name(uint32_t(t.type)), fmt::join(t.dims, ", "),
               t.bytes);
  return kExitOk;
}

struct NewFlags {
  std::string arch = "llama";
  std::string dtype = "f32";
  std::string out;
  int dim = 256, layers = 4, heads = 8, kv_heads = 0, ffn = 0, vocab = 4096, context = 2048;
  uint64_t seed = 1;
  bool tied = false;
  // hybrid
  std::string pattern = "kkka";
  int kda_heads = 0, kda_key_heads = 0, kda_head_dim = 128, conv = 4, experts = 0, experts_used = 2;
  bool shared_expert = false;
  // architecture features
  int shared_ffn = 0;
  bool llama3_rope = false;
  float rope_scale = 1.0f;
  int sliding_window = -1;  // gemma2, gemma3: {arch}.attention.sliding_window (-1: the row's default, 0: none)
  // deepseek2 (MLA; --ffn is each expert's width, --experts 0 makes every layer dense)
  int q_lora_rank = 0, kv_lora_rank = 128, qk_nope = 32, qk_rope = 16, v_head_dim = 32, leading_dense = 1,
      dense_ffn = 0, shared_experts = 1;
  std::string gating = "softmax";
  float yarn_factor = 1;
  bool unsplit_kv_b = false;
  bool force = false;  // overwrite an existing OUT
  std::string hf_dir;  // also write the weights as a Hugging Face checkpoint here
  int hf_shards = 1;
  std::string hf_multimodal;  // --hf: the multimodal form, text model under this prefix (empty: the CausalLM form)
  bool json = false;
};

void set_deepseek2(const NewFlags& f, ModelConfig& c) {
  c.n_kv_heads = 1;  // MLA runs as MQA over the latent (what llama.cpp writes)
  c.q_lora_rank = f.q_lora_rank;
  c.mla_unsplit_kv_b = f.unsplit_kv_b;
  c.kv_lora_rank = f.kv_lora_rank;
  c.qk_nope_dim = f.qk_nope;
  c.qk_rope_dim = f.qk_rope;
  c.head_dim = f.qk_nope + f.qk_rope;
  c.v_head_dim = f.v_head_dim;
  c.n_experts = f.experts;
  c.n_experts_used = f.experts > 0 ? f.experts_used : 0;
  c.leading_dense_layers = f.experts > 0 ? std::min(f.leading_dense, f.layers) : f.layers;
  c.dense_ffn_dim = f.dense_ffn > 0 ? f.dense_ffn : (f.dim * 8 / 3 + 31) / 32 * 32;
  c.shared_expert = f.experts > 0 && f.shared_experts > 0;
  c.shared_ffn_dim = c.shared_expert ? f.shared_experts * c.ffn_dim : 0;  // whole experts
  c.expert_gating = f.gating == "sigmoid" ? ExpertGating::kSigmoid : ExpertGating::kSoftmax;
  c.moe_renormalize = c.expert_gating == ExpertGating::kSigmoid;  // V3 renormalizes, V2 does not
  if (f.yarn_factor > 1) {
    c.rope_yarn_factor = f.yarn_factor;
    c.rope_original_context = std::max(1, int(float(f.context) / f.yarn_factor));
    c.rope_yarn_log_mul = 0.0707f;  // DeepSeek-V2: 0.1 * mscale_all_dim 0.707
  }
}

int run_new(const NewFlags& f) {
  std::error_code ec;
  if (!f.force && std::filesystem::exists(f.out, ec)) {
    std::fprintf(stderr, "recur: model new: %s exists; pass --force to overwrite it\n", f.out.c_str());
    return kExitUsage;
  }
  SyntheticModelOptions o;
  ModelConfig& c = o.config;
  auto arch = find_architecture(f.arch, "model new --arch");
  if (!arch) return report_failure(arch.error());
  c.arch = (*arch)->arch;
  (*arch)->features(c);
  c.dim = f.dim;
  c.n_layers = f.layers;
  c.n_heads = f.heads;
  c.n_kv_heads = f.kv_heads > 0 ? f.kv_heads : f.heads;
  c.head_dim = f.heads > 0 ? f.dim / f.heads : 0;
  c.ffn_dim = f.ffn > 0 ? f.ffn : (f.dim * 8 / 3 + 31) / 32 * 32;
  c.vocab = f.vocab;
  c.context = f.context;
  c.tied_embeddings = c.tied_embeddings || f.tied;  // gemma2 is always tied
  c.rope_freq_scale = 1.0f / f.rope_scale;
  const bool moe_arch = c.arch == Arch::kQwen2Moe || c.arch == Arch::kQwen3Moe || c.arch == Arch::kQwen3Next;
  // Flags the architecture has no place for are refused, not dropped: a reader would not see them.
  auto refuse = [&](const char* flag, std::string_view why) {
    std::fprintf(stderr, "recur: model new: %s: %s\n", flag, std::string(why).c_str());
    return kExitUsage;
  };
  if (f.experts > 0 && c.arch != Arch::kHybrid && !moe_arch && !(*arch)->mla)
    return refuse("--experts", fmt::format("{} is dense (the MoE architectures are qwen2moe, qwen3moe, deepseek2, "
                                           "qwen3next, kimi-linear and hybrid)",
                                           arch_name(c.arch)));
  if (f.shared_expert && c.arch != Arch::kHybrid && !c.shared_expert)
    return refuse("--shared-expert", fmt::format("{} has no shared expert", arch_name(c.arch)));
  if (f.sliding_window >= 0) {
    if (c.sliding_window_pattern == 0)
      return refuse("--sliding-window", fmt::format("{} has no sliding layers (gemma2 and gemma3 do)", arch_name(c.arch)));
    c.sliding_window = f.sliding_window;
  }
  if (f.llama3_rope && c.arch != Arch::kLlama)
    return refuse("--llama3-rope", fmt::format("llama.cpp reads rope_freqs.weight for llama only, not {}",
                                               arch_name(c.arch)));
  if (c.arch == Arch::kHybrid || moe_arch) {
    // MoE architectures default to 4 experts (top --experts-used) when --experts is not given.
    c.n_experts = moe_arch && f.experts == 0 ? 4 : f.experts;
    c.n_experts_used = c.n_experts > 0 ? f.experts_used : 0;
    c.shared_expert = c.shared_expert || f.shared_expert;
    c.shared_ffn_dim = c.shared_expert ? f.shared_ffn : 0;
  }
  if (c.arch == Arch::kHybrid || c.arch == Arch::kQwen3Next) {
    // qwen3next: gated DeltaNet heads, a full-attention layer closing each --pattern (k..., a).
    c.layer_pattern = f.pattern;
    c.kda_head_dim = f.kda_head_dim;
    c.kda_heads = f.kda_heads > 0 ? f.kda_heads : std::max(1, f.dim / f.kda_head_dim);
    c.kda_key_heads = f.kda_key_heads > 0 ? f.kda_key_heads : c.kda_heads;
    c.conv_size = f.conv;
  }
  if (c.arch == Arch::kQwen3Next) c.rope_dims = qwen3next_rope_dims(c.head_dim);
  o.llama3_rope = f.llama3_rope;
  if ((*arch)->mla) set_deepseek2(f, c);
  if ((*arch)->mla && (*arch)->kda_layers) {
    // Kimi-Linear: KDA heads = head_count, sigmoid gating (no RoPE in MLA and renormalized top-k
    // come with the row's features).
    c.layer_pattern = f.pattern;
    c.kda_head_dim = f.kda_head_dim;
    c.kda_heads = c.kda_key_heads = f.heads;
    c.conv_size = f.conv;
    c.expert_gating = ExpertGating::kSigmoid;
    c.moe_renormalize = true;
  }
  o.seed = f.seed;
  auto dtype = parse_storage_type(f.dtype);
  if (!dtype) return report_failure(dtype.error());
  o.dtype = *dtype;
  if (auto s = write_synthetic_model(o, f.out); !s) return report_failure(s.error());
  auto written = gguf::read(f.out);
  if (!written) return report_failure(written.error());
  if (!f.hf_dir.empty()) {
    HfExportOptions hf{.shards = f.hf_shards};
    if (!f.hf_multimodal.empty())
      hf.multimodal = f.hf_multimodal == "language_model.model" ? HfTextPrefix::kLanguageModelModel : HfTextPrefix::kModelLanguageModel;
    if (auto s = export_hf_checkpoint(*written, f.hf_dir, hf); !s) return report_failure(s.error());
  }
  uint64_t params = 0, bytes = 0;
  for (const auto& t : written->tensors) {
    bytes += t.bytes;
    const bool w8a8_scale = t.name.ends_with(".scale") && o.dtype == gguf::TensorType::kI8;  // not a parameter
    if (!w8a8_scale) params += t.elements();
  }
  if (f.json) {
    print_json({{"path", f.out}, {"arch", arch_name(c.arch)}, {"dtype", f.dtype}, {"parameters", params},
                {"tensor_bytes", bytes}, {"seed", f.seed}, {"tensors", written->tensors.size()}});
    return kExitOk;
  }
  fmt::print(stderr, "recur: wrote {} ({} {}, {:.1f}M parameters, {:.1f} MiB, seed {}; random weights)\n", f.out,
             arch_name(c.arch), f.dtype, double(params) / 1e6, double(bytes) / (1 << 20), f.seed);
  return kExitOk;
}

void register_model(CLI::App& app, Invocation& inv) {
  auto* model = app.add_subcommand("model", "Model files: write synthetic models, inspect GGUF files");
  model->require_subcommand(1);
  auto flags = std::make_shared<InspectFlags>();
  auto* inspect = model->add_subcommand("inspect", "Print a GGUF file's metadata and tensors, or the first problem found");
  inspect->add_option("FILE", flags->path, "GGUF model file")->required();
  inspect->add_flag("--json", flags->json, "Print a JSON object");
  inspect->add_flag("--all", flags->all_items, "Print every item of array metadata (default: the first 8)");
  inspect->callback([&inv, flags] { inv.run = [flags] { return run_inspect(*flags); }; });

  auto nf = std::make_shared<NewFlags>();
  auto* create = model->add_subcommand("new", "Write a model with random weights (seeded) and a synthetic vocabulary, "
                                              "with weight statistics that keep activations finite through every layer");
  create->add_option("OUT", nf->out, "output .gguf path")->required();
  std::vector<std::string> arch_names;
  for (const Architecture& a : architectures()) arch_names.emplace_back(a.name);
  create->add_option("--arch", nf->arch, "architecture (llama.cpp's general.architecture; hybrid is recur's own)")
      ->check(CLI::IsMember(arch_names))->capture_default_str();
  create->add_option("--dim", nf->dim, "embedding width")->check(CLI::Range(16, 1 << 16))->capture_default_str();
  create->add_option("--layers", nf->layers, "layers")->check(CLI::Range(1, 1024))->capture_default_str();
  create->add_option("--heads", nf->heads, "attention heads")->check(CLI::Range(1, 1024))->capture_default_str();
  create->add_option("--kv-heads", nf->kv_heads, "key/value heads (default: --heads)")->check(CLI::Range(0, 1024));
  create->add_option("--ffn", nf->ffn, "SwiGLU width (default: 8/3 dim rounded to 32)")->check(CLI::Range(0, 1 << 20));
  create->add_option("--vocab", nf->vocab, "vocabulary size (>= 354)")->check(CLI::Range(354, 1 << 20))->capture_default_str();
  create->add_option("--context", nf->context, "context length")->check(CLI::Range(1, 1 << 22))->capture_default_str();
  create->add_option("--dtype", nf->dtype, "storage of 2-d weights")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "w8a8"}))->capture_default_str();
  create->add_option("--seed", nf->seed, "random seed")->capture_default_str();
  create->add_flag("--tied", nf->tied, "tie the LM head to the embedding");
  create->add_option("--pattern", nf->pattern, "hybrid, kimi-linear, qwen3next: layer pattern, k = KDA (qwen3next: gated DeltaNet), a = attention (MLA), repeated; qwen3next: k repeated then one a")->capture_default_str();
  create->add_option("--kda-heads", nf->kda_heads, "hybrid, qwen3next: KDA value heads (default dim / head dim)")->check(CLI::Range(0, 1024));
  create->add_option("--kda-key-heads", nf->kda_key_heads, "hybrid, qwen3next: KDA key heads (default: value heads)")->check(CLI::Range(0, 1024));
  create->add_option("--kda-head-dim", nf->kda_head_dim, "hybrid, kimi-linear, qwen3next: KDA head dim K = V")->check(CLI::Range(2, 1024))->capture_default_str();
  create->add_option("--conv", nf->conv, "hybrid: short convolution taps")->check(CLI::Range(1, 64))->capture_default_str();
  create->add_option("--experts", nf->experts, "hybrid, qwen2moe, qwen3moe, qwen3next, deepseek2, kimi-linear: MoE experts (0 = dense SwiGLU; qwen2moe / qwen3moe / qwen3next default to 4); --ffn is each expert's width")->check(CLI::Range(0, 1024))->capture_default_str();
  create->add_option("--experts-used", nf->experts_used, "MoE: experts per token (top-k)")->check(CLI::Range(1, 1024))->capture_default_str();
  create->add_flag("--shared-expert", nf->shared_expert, "hybrid: add a shared expert (qwen2moe always has one)");
  create->add_option("--shared-ffn", nf->shared_ffn, "MoE: the shared expert's width (default: --ffn)")->check(CLI::Range(0, 1 << 20));
  create->add_flag("--llama3-rope", nf->llama3_rope, "write Llama 3.1's RoPE scaling (rope_freqs.weight)");
  create->add_option("--sliding-window", nf->sliding_window, "gemma2, gemma3: the sliding layers' window in tokens (0: none; default 4096 / 1024)")->check(CLI::Range(0, 1 << 22));
  create->add_option("--rope-scale", nf->rope_scale, "linear RoPE scaling factor ({arch}.rope.scaling.factor)")->check(CLI::Range(1.0f, 1024.0f))->capture_default_str();
  create->add_option("--q-lora-rank", nf->q_lora_rank, "deepseek2: low-rank q width (0: attn_q)")->check(CLI::Range(0, 1 << 16))->capture_default_str();
  create->add_option("--kv-lora-rank", nf->kv_lora_rank, "deepseek2: MLA latent width")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  create->add_option("--qk-nope", nf->qk_nope, "deepseek2: q/k dims per head without RoPE")->check(CLI::Range(1, 4096))->capture_default_str();
  create->add_option("--qk-rope", nf->qk_rope, "deepseek2: RoPE'd q/k dims per head (even)")->check(CLI::Range(2, 4096))->capture_default_str();
  create->add_option("--v-head-dim", nf->v_head_dim, "deepseek2: value dims per head")->check(CLI::Range(1, 4096))->capture_default_str();
  create->add_option("--leading-dense", nf->leading_dense, "deepseek2: leading layers with a dense FFN")->check(CLI::Range(0, 1024))->capture_default_str();
  create->add_option("--dense-ffn", nf->dense_ffn, "deepseek2: the dense layers' SwiGLU width (default 8/3 dim)")->check(CLI::Range(0, 1 << 20));
  create->add_option("--shared-experts", nf->shared_experts, "deepseek2: shared experts' worth of shared expert")->check(CLI::Range(0, 64))->capture_default_str();
  create->add_option("--gating", nf->gating, "deepseek2: expert scores (sigmoid adds exp_probs_b and renormalizes)")
      ->check(CLI::IsMember({"softmax", "sigmoid"}))->capture_default_str();
  create->add_option("--yarn-factor", nf->yarn_factor, "deepseek2: YaRN RoPE scaling factor (1: none)")->check(CLI::Range(1.0f, 1024.0f))->capture_default_str();
  create->add_flag("--unsplit-kv-b", nf->unsplit_kv_b, "deepseek2: write the older form llama.cpp c392e50 reads (unsplit attn_kv_b, per-head key/value lengths)");
  CLI::Option* hf_option = create->add_option("--hf", nf->hf_dir, "also write the same weights as a Hugging Face checkpoint directory (config.json, "
                                          "safetensors, tokenizer.json; f32, f16 or bf16)");
  create->add_option("--hf-shards", nf->hf_shards, "--hf: safetensors shards (> 1 adds model.safetensors.index.json)")
      ->check(CLI::Range(1, 64))->capture_default_str();
  create->add_option("--hf-multimodal", nf->hf_multimodal,
                     "--hf: gemma3 as released (Gemma3ForConditionalGeneration: text_config, the text model under "
                     "model.language_model (transformers >= 4.52) or language_model.model (4.50 - 4.51), two small "
                     "vision tensors the loader skips)")
      ->check(CLI::IsMember({"model.language_model", "language_model.model"}))
      ->needs(hf_option);
  create->add_flag("--force", nf->force, "overwrite OUT when it exists (refused otherwise)");
  create->add_flag("--json", nf->json, "Print what was written as a JSON object");
  create->callback([&inv, nf] { inv.run = [nf] { return run_new(*nf); }; });
}

}  // namespace

RECUR_CLI_COMMAND(model, register_model);

}  // namespace recur::cli
