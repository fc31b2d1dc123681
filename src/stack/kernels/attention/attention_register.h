// Registry entries of the paged attention kernels (attention.h): attention_decode and
// attention_prefill, with the float64 reference of attention_reference.h, costs, tolerances
// (docs/attention.md) and variants per ISA path and context split. builtin_kernels.cc lists them.
//
// The registry's tensors are dense fp32, so the registered form builds the paged cache inside
// the call: shape parameter C picks its dtype (0 f32, 1 bf16, 2 fp8_e4m3, 3 int8, 4 f16), P its page
// size, W a sliding window (0: none; the reference attends to the same window); input `lens` (int32, one per sequence) gives each sequence's length as
// 1 + |lens| mod L (decode) or 1 + |lens| mod T (prefill), so every trial sees new lengths and
// page boundaries. Tokens are appended round-robin over the sequences, so page tables
// interleave. fp8 scales are fixed at 1/64 per kv head (amax 7: the check's uniform and normal
// draws fit, wide_range saturates), so a sequence's result does not depend on the others in
// the batch and the kernels partition over B. The reference builds the same cache and reads it
// back (kv_cache.h read), so it sees the stored values and the tolerance judges the kernel, not
// the quantization (whose error docs/attention.md reports separately).
// Cost: a call builds the cache (reads K/V in fp32, writes the cache) and then runs; costs use
// the mean length (L + 1) / 2 (decode) or (T + 1) / 2 (prefill).
// Thread-safety: the spec functions are pure; variants allocate their own cache per call.
#pragma once

#include "kernels/registry.h"

namespace recur::kernels {

KernelSpec attention_decode_spec();
KernelSpec attention_prefill_spec();

}  // namespace recur::kernels
