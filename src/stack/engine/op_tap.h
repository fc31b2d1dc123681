// OpTap: an optional observer of the forward pass's intermediate tensors, for per-op error
// localization (two configurations compared op by op, gate/op_errors.h). A session with a tap
// calls record() after every named op; with none set the forward pass only tests a pointer.
//
// Op names: "embed"; per layer "layer.L.<op>" with <op> one of attn_norm, kda.{q,k,v,f,b,gate}_proj,
// kda.core, kda.gated_norm, kda.out_proj, kda.all_reduce, attn.{q,k,v}_proj, attn.core,
// attn.o_proj, attn.all_reduce, mix_residual, ffn_norm, ffn.{gate,up}, ffn.act, ffn.down,
// ffn.router, ffn.moe, ffn.all_reduce, residual; then "output_norm" and "lm_head".
// Each record names the ops whose outputs it reads (`inputs`), so an analysis can tell the error
// an op adds from the error it inherits.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace recur {

enum class OpShard : uint8_t {
  kWhole,    // data is the whole tensor (replicated on every rank; recorded by rank 0 only)
  kSlice,    // data is elements [offset, offset + data.size()) of the whole (column-parallel)
  kPartial,  // data is one rank's addend: the whole tensor is the sum over ranks (row-parallel)
};

struct OpRecord {
  std::string name;                 // "layer.0.kda.q_proj"
  std::string component;            // "kernel:gemm", "op:all_reduce", "kernel:kda_decode", ...
  std::vector<std::string> inputs;  // names of the ops it reads
  int rank = 0;
  OpShard shard = OpShard::kWhole;
  int64_t offset = 0;  // kSlice: where data starts in the whole tensor
  int64_t size = 0;    // elements of the whole tensor
  std::span<const float> data;
};

class OpTap {
 public:
  virtual ~OpTap() = default;
  // Called from every rank's thread, concurrently: implementations synchronize.
  virtual void record(const OpRecord& r) = 0;
};

}  // namespace recur
