#!/bin/sh
# Disaggregated serving (docs/serve.md, "Roles") of the MLA architectures (docs/engine.md,
# "Sequence state export/import"): a prefill worker hands the MLA latent caches (and kimi-linear's
# KDA states) to a decode worker, and the router's greedy text equals --role all's, over shared
# memory and over TCP, for a kimi-linear file (the decode worker at engine.ep=2, the prefill at 1)
# and a deepseek2 file with a latent dtype per layer (bf16, int8, fp8_e4m3) on every role.
# Usage: serve_disagg_mla_test.sh /path/to/recur
set -u
RECUR="$1"
. "$(dirname "$0")/serve_disagg_lib.sh"

KL="$T/kimi.gguf"
DS="$T/ds.gguf"
"$RECUR" model new "$KL" --arch kimi-linear --dim 64 --layers 4 --heads 2 --vocab 400 --context 256 --pattern kkka \
  --kda-head-dim 32 --kv-lora-rank 32 --qk-nope 32 --qk-rope 16 --v-head-dim 32 --experts 4 --experts-used 2 \
  --ffn 32 2>/dev/null || fail "model new kimi-linear"
"$RECUR" model new "$DS" --arch deepseek2 --dim 64 --layers 3 --heads 2 --vocab 400 --context 256 \
  --kv-lora-rank 32 --qk-nope 32 --qk-rope 16 --v-head-dim 32 --experts 4 --experts-used 2 --ffn 32 \
  --q-lora-rank 32 --gating sigmoid --yarn-factor 4 2>/dev/null || fail "model new deepseek2"
DS_KV="--set engine.kv_dtype.layer[0]=bf16 --set engine.kv_dtype.layer[1]=int8 --set engine.kv_dtype.layer[2]=fp8_e4m3"

# Workers first (all at once), then the routers over them.
launch kl_all "$RECUR" serve -m "$KL" --port 0 --threads 1
launch kl_decode "$RECUR" --set engine.ep=2 serve --role decode -m "$KL" --port 0 --threads 1
launch kl_prefill_shm "$RECUR" serve --role prefill -m "$KL" --port 0 --threads 1
launch kl_prefill_tcp "$RECUR" --set serve.kv_transfer=tcp serve --role prefill -m "$KL" --port 0 --threads 1
# shellcheck disable=SC2086 # DS_KV is several words on purpose
launch ds_all "$RECUR" $DS_KV serve -m "$DS" --port 0 --threads 1
# shellcheck disable=SC2086
launch ds_decode "$RECUR" $DS_KV serve --role decode -m "$DS" --port 0 --threads 1
# shellcheck disable=SC2086
launch ds_prefill_shm "$RECUR" $DS_KV serve --role prefill -m "$DS" --port 0 --threads 1
# shellcheck disable=SC2086
launch ds_prefill_tcp "$RECUR" $DS_KV --set serve.kv_transfer=tcp serve --role prefill -m "$DS" --port 0 --threads 1
for m in kl ds; do
  M="$KL"
  [ $m = ds ] && M="$DS"
  D=$(url_of ${m}_decode) || exit 1
  P_SHM=$(url_of ${m}_prefill_shm) || exit 1
  P_TCP=$(url_of ${m}_prefill_tcp) || exit 1
  router ${m}_router_shm "$P_SHM" "$D"
  router ${m}_router_tcp "$P_TCP" "$D"
done

# Same greedy text as --role all, over shm and TCP (prompts of 4..40 tokens: 1..3 KV pages).
for m in kl ds; do
  name=kimi  # the served model's name is its file's
  [ $m = ds ] && name=ds
  ALL=$(url_of ${m}_all) || exit 1
  R_SHM=$(url_of ${m}_router_shm) || exit 1
  R_TCP=$(url_of ${m}_router_tcp) || exit 1
  i=0
  for prompt in "Once upon a time" "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n"; do
    i=$((i + 1))
    body="{\"model\":\"$name\",\"prompt\":\"$prompt\",\"max_tokens\":10,\"temperature\":0,\"ignore_eos\":true}"
    [ "$(post "$ALL" "$body" "$T/$m-all$i.json")" = 200 ] || fail "$m role all: $(cat "$T/$m-all$i.json")"
    for r in shm tcp; do
      url=$R_SHM
      [ $r = tcp ] && url=$R_TCP
      [ "$(post "$url" "$body" "$T/$m-$r$i.json")" = 200 ] || fail "$m router $r, prompt $i: $(cat "$T/$m-$r$i.json")"
      [ "$(text_of "$T/$m-$r$i.json")" = "$(text_of "$T/$m-all$i.json")" ] ||
        fail "$m router $r, prompt $i: '$(text_of "$T/$m-$r$i.json")' != role all '$(text_of "$T/$m-all$i.json")'"
      grep -q '"completion_tokens":10' "$T/$m-$r$i.json" || fail "$m usage: $(cat "$T/$m-$r$i.json")"
    done
  done
  curl -sf "$R_SHM/metrics" | grep -Eq '^recur_kv_transfer_bytes_total [1-9]' || fail "$m: router transfer bytes metric"
done
echo "serve_disagg_mla_test: ok"
