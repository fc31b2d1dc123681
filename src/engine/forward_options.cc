#include "engine/forward_options.h"

#include <fmt/format.h>

namespace recur {

RECUR_KNOB(engine_kda_decode_variant,
           {.name = "engine.kda.decode_variant", .type = KnobType::kEnum,
            .choices = {"vtile", "vtile_recip", "hoisted", "hoisted_recip"}, .default_value = "hoisted",
            .components = {"kernel:kda_decode"},
            .help = "KDA decode work split: prologue per V-tile (vtile, vtile_recip) or once per head (hoisted, "
                    "hoisted_recip); _recip: rsqrt/rcp + Newton step instead of divisions"});
RECUR_KNOB(engine_kda_prefill_variant,
           {.name = "engine.kda.prefill_variant", .type = KnobType::kEnum,
            .choices = {"recurrent", "chunked64", "chunked16"}, .default_value = "recurrent",
            .components = {"kernel:kda_prefill"},
            .help = "KDA over a prompt run of several tokens: token by token (recurrent) or the WY/UT chunked form "
                    "with chunks of 64 or 16 tokens"});
RECUR_KNOB(engine_kda_replay,
           {.name = "engine.kda.replay", .type = KnobType::kEnum, .choices = {"off", "on"}, .default_value = "off",
            .components = {"kernel:kda_decode"},
            .help = "on: each sequence's KDA state is a ReplaySSM checkpoint plus the last engine.kda.replay_window "
                    "steps, decode steps run kda::replay_step (the state is written once per window)"});
RECUR_KNOB(engine_kda_replay_window,
           {.name = "engine.kda.replay_window", .type = KnobType::kInt, .min = 1, .max = 1024, .default_value = "16",
            .components = {"kernel:kda_decode"},
            .help = "ReplaySSM window L: decode steps buffered before they are folded into the checkpoint"});
RECUR_KNOB(engine_kv_dtype_layer,
           {.name = "engine.kv_dtype.layer[]", .type = KnobType::kEnum,
            .choices = {"f32", "bf16", "fp8_e4m3", "int8"}, .default_value = "f32",
            // The attention core reads the cache: its op tap carries the storage's rounding.
            .components = {"engine:kv_cache", "engine:attention"},
            .help = "element type of layer N's paged KV cache (kernels/attention kv_cache.h); fp8_e4m3 with scale 1 "
                    "per KV head; layers without attention hold no KV and ignore it"});
RECUR_KNOB(engine_hybrid_kv_pages,
           {.name = "engine.hybrid.kv_pages", .type = KnobType::kInt, .min = 0, .max = 1 << 30, .default_value = "0",
            .components = {"engine:kv_cache"},
            .help = "pages of 16 tokens in a batch's attention KV pool; 0: enough for every sequence at max_tokens"});
RECUR_KNOB(engine_layer_split,
           {.name = "engine.layer_split", .type = KnobType::kEnum, .choices = {"off", "on"}, .default_value = "off",
            .components = {"engine:kv_cache"},
            .help = "with engine.tp > 1: each attention layer whole on one rank (round robin), holding that layer's "
                    "KV cache alone, instead of its heads split and KV heads replicated across ranks; no-op at tp = 1"});

Result<ForwardOptions> forward_options(const Config& knobs, const ModelConfig& c, const BatchOptions& batch) {
  ForwardOptions o;
  o.batch = batch;
  RECUR_ASSIGN_OR_RETURN(int64_t tp, knobs.get_int("engine.tp"));
  o.tp = int(tp);
  RECUR_ASSIGN_OR_RETURN(o.ep, moe::ep_options_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.collectives, collectives_backend_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.reduce, reduce_dtype_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.precision, gemm::precision_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.act, gemm::activations_from_config(knobs));
  bool any_kda = false;
  for (int l = 0; l < c.n_layers; ++l) any_kda = any_kda || c.is_kda_layer(l);
  if (any_kda) {
    RECUR_ASSIGN_OR_RETURN(std::string decode, knobs.get("engine.kda.decode_variant"));
    auto dv = kda::parse_decode_variant(decode);
    if (!dv) return invalid_argument("engine.kda.decode_variant '{}' is not a KDA decode variant", decode);
    o.kda.decode = *dv;
    RECUR_ASSIGN_OR_RETURN(std::string prefill, knobs.get("engine.kda.prefill_variant"));
    auto pv = kda::parse_prefill_variant(prefill);
    if (!pv) return invalid_argument("engine.kda.prefill_variant '{}' is not a KDA prefill variant", prefill);
    o.kda.prefill = *pv;
    RECUR_ASSIGN_OR_RETURN(std::string replay, knobs.get("engine.kda.replay"));
    o.kda.replay = replay == "on";
    RECUR_ASSIGN_OR_RETURN(int64_t window, knobs.get_int("engine.kda.replay_window"));
    o.kda.replay_window = int(window);
  }
  RECUR_ASSIGN_OR_RETURN(o.kv_pages, knobs.get_int("engine.hybrid.kv_pages"));
  RECUR_ASSIGN_OR_RETURN(std::string layer_split, knobs.get("engine.layer_split"));
  o.layer_split = layer_split == "on";
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.is_kda_layer(l)) continue;
    RECUR_ASSIGN_OR_RETURN(std::string name, knobs.get(fmt::format("engine.kv_dtype.layer[{}]", l)));
    RECUR_ASSIGN_OR_RETURN(kernels::attention::KvDType t, kernels::attention::parse_kv_dtype(name));
    o.kv_dtypes.push_back(t);
  }
  return o;
}

}  // namespace recur
