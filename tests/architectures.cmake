# `recur model new --arch`, `recur generate` and `recur serve` on each row of the architecture
# table (engine/architectures.h), and the refusal of an unknown architecture.
recur_e2e_test(architectures_cli_test TIMEOUT 60)
# kernel.gemm.amx: Q8_0 prefill on the emulated AMX tiles gives the same greedy tokens, says so in
# the trace, and `on` without AMX is refused by name.
recur_e2e_test(amx_cli_test TIMEOUT 120)
