// The forward pass's dataflow graph as data (op_tap.h): every tapped op, its component, the ops
// it reads and how its data is sharded across ranks. A block taps an op with one line,
// `s.tap(Op::kKdaQProj, l, data, n, offset, whole)`; names, components and inputs come from
// kOpTable only, so they cannot drift from the arithmetic. The names and components are what
// `recur engine ops-diff`, the gate's op errors and the agent's attribution read.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "engine/op_tap.h"

namespace recur {

enum class Op : uint8_t {
  kEmbed, kAttnNorm,
  kKdaQProj, kKdaKProj, kKdaVProj, kKdaFProj, kKdaBProj, kKdaCore, kKdaGateProj, kKdaGatedNorm, kKdaOutProj,
  kKdaAllReduce,
  kAttnQProj, kAttnKProj, kAttnVProj, kAttnCore, kAttnOProj, kAttnAllReduce,
  kKdaMixResidual, kAttnMixResidual, kFfnNorm,
  kFfnGate, kFfnUp, kFfnAct, kFfnDown, kFfnAllReduce,
  kFfnRouter, kFfnMoe, kFfnMoeGathered, kMoeAllReduce, kMoeCombine,
  kResidual, kOutputNorm, kLmHead,
  kCount,
};

struct OpSpec {
  Op op;
  std::string_view name;       // inside layer L ("kda.q_proj" is layer.L.kda.q_proj); whole for globals
  std::string_view component;  // what the agent attributes the op's added error to
  OpShard shard;
  bool global;                 // not inside a layer (embed, output_norm, lm_head)
  // The ops it reads, in the same scope; "<stream>" is the residual entering the layer (embed
  // for layer 0) and "<last>" the last layer's residual.
  std::array<std::string_view, 5> inputs;
};

inline constexpr OpShard kOpWhole = OpShard::kWhole, kOpSlice = OpShard::kSlice, kOpPartial = OpShard::kPartial;

inline constexpr OpSpec kOpTable[] = {
    {Op::kEmbed, "embed", "engine:embed", kOpWhole, true, {}},
    {Op::kAttnNorm, "attn_norm", "engine:norm", kOpWhole, false, {"<stream>"}},
    {Op::kKdaQProj, "kda.q_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    {Op::kKdaKProj, "kda.k_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    {Op::kKdaVProj, "kda.v_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    {Op::kKdaFProj, "kda.f_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    {Op::kKdaBProj, "kda.b_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    // The convolutions and the recurrence count as one op: the KDA core.
    {Op::kKdaCore, "kda.core", "kernel:kda_decode", kOpSlice, false,
     {"kda.q_proj", "kda.k_proj", "kda.v_proj", "kda.f_proj", "kda.b_proj"}},
    {Op::kKdaGateProj, "kda.gate_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    {Op::kKdaGatedNorm, "kda.gated_norm", "engine:norm", kOpSlice, false, {"kda.core", "kda.gate_proj"}},
    {Op::kKdaOutProj, "kda.out_proj", "kernel:gemm", kOpPartial, false, {"kda.gated_norm"}},
    {Op::kKdaAllReduce, "kda.all_reduce", "op:all_reduce", kOpWhole, false, {"kda.out_proj"}},
    {Op::kAttnQProj, "attn.q_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    {Op::kAttnKProj, "attn.k_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    {Op::kAttnVProj, "attn.v_proj", "kernel:gemm", kOpSlice, false, {"attn_norm"}},
    {Op::kAttnCore, "attn.core", "engine:attention", kOpSlice, false, {"attn.q_proj", "attn.k_proj", "attn.v_proj"}},
    {Op::kAttnOProj, "attn.o_proj", "kernel:gemm", kOpPartial, false, {"attn.core"}},
    {Op::kAttnAllReduce, "attn.all_reduce", "op:all_reduce", kOpWhole, false, {"attn.o_proj"}},
    {Op::kKdaMixResidual, "mix_residual", "engine:residual", kOpWhole, false, {"<stream>", "kda.all_reduce"}},
    {Op::kAttnMixResidual, "mix_residual", "engine:residual", kOpWhole, false, {"<stream>", "attn.all_reduce"}},
    {Op::kFfnNorm, "ffn_norm", "engine:norm", kOpWhole, false, {"mix_residual"}},
    {Op::kFfnGate, "ffn.gate", "kernel:gemm", kOpSlice, false, {"ffn_norm"}},
    {Op::kFfnUp, "ffn.up", "kernel:gemm", kOpSlice, false, {"ffn_norm"}},
    {Op::kFfnAct, "ffn.act", "engine:activation", kOpSlice, false, {"ffn.gate", "ffn.up"}},
    {Op::kFfnDown, "ffn.down", "kernel:gemm", kOpPartial, false, {"ffn.act"}},
    {Op::kFfnAllReduce, "ffn.all_reduce", "op:all_reduce", kOpWhole, false, {"ffn.down"}},
    // The router stays fp32 on every rank (replicated): a flip in the top-k is a discontinuity.
    {Op::kFfnRouter, "ffn.router", "engine:router", kOpWhole, false, {"ffn_norm"}},
    {Op::kFfnMoe, "ffn.moe", "kernel:gemm", kOpPartial, false, {"ffn_norm", "ffn.router"}},
    {Op::kFfnMoeGathered, "ffn.moe", "kernel:gemm", kOpWhole, false, {"ffn_norm", "ffn.router"}},  // ep > 1
    {Op::kMoeAllReduce, "ffn.all_reduce", "op:all_reduce", kOpWhole, false, {"ffn.moe"}},
    {Op::kMoeCombine, "ffn.all_reduce", "op:moe_combine", kOpWhole, false, {"ffn.moe"}},  // ep > 1: no reduce
    {Op::kResidual, "residual", "engine:residual", kOpWhole, false, {"mix_residual", "ffn.all_reduce"}},
    {Op::kOutputNorm, "output_norm", "engine:norm", kOpWhole, true, {"<last>"}},
    {Op::kLmHead, "lm_head", "kernel:gemm", kOpSlice, true, {"output_norm"}},
};

constexpr const OpSpec& op_spec(Op op) { return kOpTable[size_t(op)]; }

constexpr bool op_table_in_order() {
  for (size_t i = 0; i < std::size(kOpTable); ++i)
    if (kOpTable[i].op != Op(i)) return false;
  return std::size(kOpTable) == size_t(Op::kCount);
}
static_assert(op_table_in_order(), "kOpTable lists every Op once, in enum order");

// Taps one forward's ops into an OpTap (or nothing: an unset tapper tests one pointer).
class OpTapper {
 public:
  OpTapper() = default;
  // tap: where records go (null: none); rank: this rank; replicated: the ranks replicate the
  // mixers (tp = 1), so slices and partials are recorded by rank 0 too; layers: the model's.
  OpTapper(OpTap* tap, int rank, bool replicated, int layers)
      : tap_(tap), rank_(rank), replicated_(replicated), layers_(layers) {}
  bool on() const { return tap_ != nullptr; }
  // data[0, n) is the op's output on this rank: a whole tensor, or elements [offset, offset + n)
  // of a whole of `whole` elements (kSlice), or this rank's addend (kPartial; whole = n).
  void operator()(Op op, int layer, const float* data, int64_t n, int64_t offset = 0, int64_t whole = 0) const {
    if (tap_ != nullptr) record(op, layer, data, n, offset, whole);
  }

 private:
  void record(Op op, int layer, const float* data, int64_t n, int64_t offset, int64_t whole) const;

  OpTap* tap_ = nullptr;
  int rank_ = 0;
  bool replicated_ = true;
  int layers_ = 0;
};

}  // namespace recur
