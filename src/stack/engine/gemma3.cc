#include "engine/gemma3.h"

#include <cmath>

namespace recur {

namespace {
constexpr float kLocalRopeTheta = 10000.0f;  // llama.cpp's rope_freq_base_train_swa for gemma3
constexpr int kPattern = 6;                  // five sliding layers, then one global
}  // namespace

// `recur model new` defaults: the released models' window (1024 from 4B up) and global base.
void gemma3_features(ModelConfig& c) {
  c.rope_neox = true;
  c.scale_embeddings = true;
  c.ffn_gelu = true;
  c.post_norms = true;
  c.qk_norm = true;
  c.tied_embeddings = true;
  c.sliding_window = 1024;
  c.sliding_window_pattern = kPattern;
  c.rope_local_theta = kLocalRopeTheta;
  c.rope_theta = 1e6f;
  c.rms_eps = 1e-6f;
}

Status read_gemma3_keys(const ArchKeys& k, ModelConfig& c) {
  // Absent: llama.cpp's default 10000, not the row's. (get_opt: ArchKeys::has inlined here trips
  // g++ 12's -Wrestrict false positive.)
  float base = std::nanf("");
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.freq_base", base));
  if (std::isnan(base)) c.rope_theta = 10000.0f;
  c.sliding_window = 0;  // absent: every layer global
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.sliding_window", c.sliding_window));
  if (c.sliding_window < 0)
    return invalid_argument("{}: gemma3.attention.sliding_window {} is negative", k.file().source(), c.sliding_window);
  c.rope_local_theta = c.sliding_window > 0 ? kLocalRopeTheta : 0.0f;
  c.final_softcap = 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("final_logit_softcapping", c.final_softcap));
  if (c.n_layers == 62 && c.n_heads > 0) c.attn_scale = 1.0f / std::sqrt(float(c.dim / c.n_heads));
  return ok_status();
}

void write_gemma3_keys(const ModelConfig& c, gguf::Writer& w) {
  const std::string p = std::string(arch_name(c.arch)) + ".";
  w.set(p + "attention.sliding_window", gguf::Value::of_u32(uint32_t(c.sliding_window)));
  if (c.final_softcap > 0) w.set(p + "final_logit_softcapping", gguf::Value::of_f32(c.final_softcap));
}

}  // namespace recur
