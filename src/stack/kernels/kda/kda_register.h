// Registry entries of the KDA kernels (kda.h, kda_replay.h): kda_decode, kda_replay_decode and
// kda_prefill, with shapes (B, HK, HV, K, V, T; F for ReplaySSM's buffered steps), the float64
// reference of kda_reference.h, the cost model of kda_cost.h and the tolerances of docs/kda.md.
// builtin_kernels.cc lists them. kda_replay_decode times a steady-state step (kda_replay_memo.h).
//
// The registered form fixes what the registry's shape cannot express: gate sigmoid_bounded
// (g = -5 sigmoid(exp(A_log) x), bounded for any input the check draws), state layout KV,
// block_v 64. The state is an input (state_in) and an output (state): a variant copies it
// before the in-place update, so inputs stay unmodified. Each variant is one algorithm; the
// ISA path inside it follows active_isa() (--isa / ScopedIsaCap), as kda.h dispatches.
// Thread-safety: the spec functions are pure; variant calls use a thread-local workspace.
#pragma once

#include "kernels/registry.h"

namespace recur::kernels {

KernelSpec kda_decode_spec();
KernelSpec kda_replay_decode_spec();
KernelSpec kda_prefill_spec();

}  // namespace recur::kernels
