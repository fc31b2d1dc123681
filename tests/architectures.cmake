# `recur model new --arch`, `recur generate` and `recur serve` on each row of the architecture
# table (engine/architectures.h), and the refusal of an unknown architecture.
recur_e2e_test(architectures_cli_test TIMEOUT 60)
