// kda::decode: one token per sequence, work items (sequence, head, V-tile).
//
// vtile / vtile_recip: each work item computes its head's prologue in per-worker scratch, then
// its tile. hoisted / hoisted_recip: a first parallel pass computes one prologue per (sequence,
// head) into the workspace; the tile pass reads it. The tile step itself is plain_tile (kda_prologue.h).
#include <algorithm>

#include "core/thread_pool.h"
#include "kernels/kda/kda.h"
#include "kernels/kda/kda_parallel.h"
#include "kernels/kda/kda_prologue.h"

namespace recur::kda {
Status decode(const Shape& shape, const Params& params, const Inputs& in, float* state,
              float* out, DecodeVariant variant, ThreadPool* pool, Workspace& ws) {
  RECUR_RETURN_IF_ERROR(validate(shape, params, in));
  if (shape.tokens != 1) {
    return invalid_argument("kda::decode: tokens={}: decode takes one token per sequence (use prefill)",
                            shape.tokens);
  }
  if (state == nullptr || out == nullptr) return invalid_argument("kda::decode: state and out must be given");
  const KdaOps& ops = *kOps.get();
  const CallInfo ci = call_info(shape, params);
  const int K = ci.K, V = ci.V;
  const int bv = std::min(params.block_v, V);
  const int nv = (V + bv - 1) / bv;
  const int64_t heads = shape.batch * shape.hv;
  const int workers = pool ? pool->size() : 1;
  const bool hoisted = hoists_prologue(variant);
  const bool recip = uses_reciprocals(variant);

  const size_t per_head = round16(kPrologueArrays * size_t(K)) + 16;  // arrays + beta, kq
  const size_t per_worker = round16(kPrologueArrays * size_t(K)) + round16(3 * size_t(bv));
  float* base = ws.floats(per_worker * workers + (hoisted ? per_head * heads : 0));
  float* shared = base + per_worker * workers;

  if (hoisted) {
    run(pool, heads, [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin; i < end; ++i) {
        float* slot = shared + per_head * i;
        Prologue p;
        token_prologue(ops, ci, params, in, i / ci.HV, 0, i % ci.HV, recip, true, slot, p);
        slot[per_head - 2] = p.beta;
        slot[per_head - 1] = p.kq;
      }
    });
  }
  run(pool, heads * nv, [&](int64_t begin, int64_t end, int worker) {
    float* scratch = base + per_worker * worker;
    float* tmp = scratch + round16(kPrologueArrays * size_t(K));
    Prologue p;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t head = item / nv;
      const int tile = int(item % nv);
      if (hoisted) {
        float* slot = shared + per_head * head;
        p = Prologue{slot, slot + K, slot + 2 * K, slot + 3 * K, slot + 4 * K, slot + 5 * K,
                     slot[per_head - 2], slot[per_head - 1]};
      } else {  // every tile item recomputes its head's prologue: the NV-fold repeat
        token_prologue(ops, ci, params, in, head / ci.HV, 0, head % ci.HV, recip, true, scratch, p);
      }
      const int v0 = tile * bv;
      const int w = std::min(bv, V - v0);
      float* S = state + head * int64_t(K) * V;
      plain_tile(ops, ci, S, v0, w, p, in.v + head * V + v0, out + head * V + v0, tmp);
    }
  });
  return ok_status();
}

}  // namespace recur::kda
