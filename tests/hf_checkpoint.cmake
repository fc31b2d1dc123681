# `recur model new --hf` and `recur generate -m DIR` on a Hugging Face checkpoint of each row of
# engine/hf_config.h's table, and the refusal of bad directories.
recur_e2e_test(hf_checkpoint_cli_test TIMEOUT 60)
