#!/usr/bin/env bash
# GGUF interop with llama.cpp (issues #7, #27): recur's files of every architecture it writes run
# in llama.cpp, llama.cpp's files run in recur, and both engines give the same tokenization and the
# same greedy tokens.
#
#   benchmarks/gguf_interop_llamacpp.sh LLAMA_CPP_BIN_DIR [N_TOKENS=16]
#
# LLAMA_CPP_BIN_DIR holds a llama.cpp CPU build's llama-server and llama-quantize (built by you,
# outside this repository). Without them the script says so and exits 0: CI has no llama.cpp.
# Files (in $RECUR_INTEROP_DIR, default /tmp/recur-interop):
#   recur-written:     `recur model new --arch llama` (dim 256, 2 layers, 4 heads, 2 KV heads,
#                      vocab 4096, seed 7) in f32, f16, bf16, q8_0, and f32 with a tied LM head;
#   llama.cpp-written: llama-quantize of the recur f32 file into Q8_0, F16 and BF16;
#   every architecture of recur's table in two shapes, F16 and Q8_0 (below).
# RECUR_INTEROP_ARCHS="qwen2 phi3" limits the architectures; RECUR_INTEROP_BASE=0 skips the llama
# files above and the vocabulary check (a run takes ~30 s per file on a loaded 2-core machine).
# For each file and prompt: llama-server's /tokenize (add_special) against the ids recur generate
# encoded, and llama-server's /completion (temperature 0, top_k 1, return_tokens) against
# `recur generate --json` (greedy), both on one thread; where the tokens part, the gap between the
# two picks' logits in llama.cpp (its top-5 log-probabilities) shows whether it was a near tie.
# Prints one row per file and prompt; exits 1 if any tokenization differs or a file fails to load
# in either engine (greedy tokens may part at near ties: see docs/engine.md on Q8_0 files).
# RECUR_INTEROP_LLAMA_ARGS adds llama-server arguments, e.g. "-ctk f32 -ctv f32": llama.cpp's KV
# cache in fp32 (its default F16 cache rounds K and V, and the q and softmax rows multiplied with
# them, to fp16, where recur's default cache is fp32; on Q8_0 files that rounding moves the
# activations' Q8_0 roundings downstream, docs/engine.md).
# RECUR_INTEROP_RECUR_SET="engine.attention.operands=cache_type engine.gelu=fp16_table" sets knobs of
# recur's runs, and RECUR_INTEROP_RECUR_KV=f16 every layer's KV cache type: with both, recur runs
# ggml's 16-bit arithmetic of llama.cpp's default configuration (docs/engine.md).
# RECUR_INTEROP_PARITY=ggml does all of that at once for llama.cpp's default configuration: an f16
# cache in every layer, engine.attention.operands=cache_type, engine.gelu=fp16_table,
# kernel.gemm.q8_0_activations=q8_0_ggml and engine.ggml_arithmetic set to the ISA the build's
# libggml-cpu.so was compiled for (avx512 or avx2, asked of the library itself): recur then
# computes llama.cpp's bits (docs/engine.md "ggml's arithmetic in recur").
# Then, with llama.cpp's source tree's models/ (LLAMA_CPP_VOCAB_DIR, default BIN_DIR/../../models),
# recur's tokenizer on llama.cpp's vocabulary files against their reference tokenizations.
set -euo pipefail
bin=${1:?usage: gguf_interop_llamacpp.sh LLAMA_CPP_BIN_DIR [N_TOKENS]}
ntok=${2:-16}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${RECUR_INTEROP_DIR:-/tmp/recur-interop}
for b in llama-server llama-quantize; do
  [ -x "$bin/$b" ] || { echo "skip: no $b in $bin (build llama.cpp outside this repository to run this check)"; exit 0; }
done
[ -x "$root/build/recur" ] || { echo "build recur first (make build)" >&2; exit 2; }
mkdir -p "$work"
# A private copy of recur: other engineers' builds may relink build/recur during the run.
recur=$work/recur.$$
cp "$root/build/recur" "$recur"
trap 'rm -f "$recur"' EXIT
recur_sets=()
if [ "${RECUR_INTEROP_PARITY:-}" = ggml ]; then
  isa=$(/usr/bin/python3 -c "import ctypes,sys; l = ctypes.CDLL(sys.argv[1]); print('avx512' if l.ggml_cpu_has_avx512() else 'avx2' if l.ggml_cpu_has_avx2() else '')" "$bin/libggml-cpu.so") ||
    { echo "RECUR_INTEROP_PARITY=ggml: cannot ask $bin/libggml-cpu.so for its ISA" >&2; exit 2; }
  [ -n "$isa" ] || { echo "RECUR_INTEROP_PARITY=ggml: $bin/libggml-cpu.so has neither AVX-512 nor AVX2 (no ggml_arith form for it)" >&2; exit 2; }
  echo "llama.cpp's build: $isa; recur runs engine.ggml_arithmetic=$isa"
  RECUR_INTEROP_RECUR_KV=f16
  RECUR_INTEROP_RECUR_SET="engine.attention.operands=cache_type engine.gelu=fp16_table kernel.gemm.q8_0_activations=q8_0_ggml engine.ggml_arithmetic=$isa ${RECUR_INTEROP_RECUR_SET:-}"
fi
for a in ${RECUR_INTEROP_RECUR_SET:-}; do recur_sets+=(--set "$a"); done
kv_sets=()
if [ -n "${RECUR_INTEROP_RECUR_KV:-}" ]; then  # every layer a file of this script can have
  for i in $(seq 0 63); do kv_sets+=(--set "engine.kv_dtype.layer[$i]=$RECUR_INTEROP_RECUR_KV"); done
fi
# The KV settings for one file: none for deepseek2 under RECUR_INTEROP_PARITY, whose MLA layers
# cache the latent where c392e50 caches the expanded per-head K and V (rounded to f16): an f16
# latent is a rounding llama.cpp does not make, recur's f32 latent is the nearer arithmetic.
kv_sets_for() {
  case "$1" in
    deepseek2-*) [ "${RECUR_INTEROP_PARITY:-}" = ggml ] && return ;;
  esac
  [ ${#kv_sets[@]} -eq 0 ] || printf '%s\n' "${kv_sets[@]}"
}

shape=(--dim 256 --layers 2 --heads 4 --kv-heads 2 --vocab 4096 --seed 7)
files=()
base=${RECUR_INTEROP_BASE:-1}
archs=${RECUR_INTEROP_ARCHS:-llama qwen2 qwen3 qwen2moe qwen3moe phi3 gemma2 gemma3 deepseek2}
if [ "$base" = 1 ]; then
for dt in f32 f16 bf16 q8_0; do
  "$recur" model new "$work/recur-$dt.gguf" "${shape[@]}" --dtype "$dt" 2>/dev/null
  files+=("recur:$dt:$work/recur-$dt.gguf")
done
"$recur" model new "$work/recur-f32-tied.gguf" "${shape[@]}" --dtype f32 --tied 2>/dev/null
files+=("recur:f32-tied:$work/recur-f32-tied.gguf")
for q in Q8_0 F16 BF16; do
  out=$work/llamacpp-${q,,}.gguf
  "$bin/llama-quantize" "$work/recur-f32.gguf" "$out" "$q" 1 > "$work/quantize-$q.log" 2>&1 ||
    { echo "llama-quantize $q failed: see $work/quantize-$q.log" >&2; exit 1; }
  files+=("llama.cpp:${q,,}:$out")
done
fi

# Each architecture of recur's table (engine/architectures.h, issue #27) in two shapes, F16 and
# Q8_0: llama with Llama 3 RoPE scaling (rope_freqs.weight), qwen2 (QKV bias), qwen3 (QK norm),
# qwen2moe (raw top-k, gated shared expert of its own width), qwen3moe (renormalised top-k), phi3
# (fused qkv and gate+up), gemma2 (26 layers: embedding scale, GELU, sandwich norms, soft-caps,
# tied head; a sliding window of RECUR_INTEROP_WINDOW tokens, default 6, on the even layers, so
# prompt and generation run past it), deepseek2 (MLA + MoE, shapes of its own below). Rows whose
# architecture this llama.cpp lacks (c392e50: qwen3, qwen3moe, gemma3) are reported as such, not as
# failures (CI checks them against the float64 reference).
arch_shapes=("--dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512" "--dim 128 --layers 3 --heads 2 --kv-heads 1 --ffn 256")
# deepseek2 in the older form c392e50 reads (--unsplit-kv-b: attn_kv_b, per-head key/value
# lengths). Shape 0 is DeepSeek-V2-Lite's form: q direct (c392e50 takes attn_q only from a
# 27-layer model, its "lite" test), softmax gating, one leading dense layer, one shared expert.
# Shape 1 is V3's: low-rank q, sigmoid gating with exp_probs_b and renormalized top-k, two
# shared experts, YaRN (factor 4 over an original context of 1024).
mla=(--heads 4 --qk-nope 32 --qk-rope 16 --v-head-dim 32 --leading-dense 1 --experts-used 2 --unsplit-kv-b)
deepseek2_shapes=("--dim 256 --layers 27 --q-lora-rank 0 --kv-lora-rank 64 --experts 4 --ffn 128 --dense-ffn 512 --shared-experts 1 --gating softmax"
                  "--dim 256 --layers 3 --q-lora-rank 96 --kv-lora-rank 128 --experts 8 --ffn 64 --dense-ffn 384 --shared-experts 2 --gating sigmoid --yarn-factor 4 --context 4096")
for arch in $archs; do
  extra=()
  case $arch in
    llama) extra=(--llama3-rope) ;;
    qwen2moe) extra=(--experts 4 --experts-used 2 --shared-ffn 384) ;;
    qwen3moe) extra=(--experts 4 --experts-used 2) ;;
    gemma2|gemma3) extra=(--sliding-window "${RECUR_INTEROP_WINDOW:-6}") ;;
    deepseek2) extra=("${mla[@]}") ;;
  esac
  for s in 0 1; do
    shape_flags=${arch_shapes[$s]}
    # llama.cpp c392e50 runs gemma2 of 26, 42 or 46 layers only (its query scale is per model type).
    [ "$arch" = gemma2 ] && shape_flags=${shape_flags/--layers ?/--layers 26}
    # gemma3: six layers, five sliding and one global (for a llama.cpp that has gemma3).
    [ "$arch" = gemma3 ] && shape_flags=${shape_flags/--layers ?/--layers 6}
    [ "$arch" = deepseek2 ] && shape_flags=${deepseek2_shapes[$s]}
    for dt in f16 q8_0; do
      out=$work/arch-$arch-$s-$dt.gguf
      # shellcheck disable=SC2086  # the shape is a list of flags
      "$recur" model new "$out" --arch "$arch" $shape_flags --vocab 4096 --seed 7 --dtype "$dt" "${extra[@]}" \
        --force 2>/dev/null
      files+=("recur:$arch-$s-$dt:$out")
    done
  done
done

prompts=("Hello world, the quick brown fox" "Once upon a time" "naïve café, 日本語 and 12345!")
results=$work/interop.jsonl
: > "$results"
for entry in "${files[@]}"; do
  IFS=: read -r writer dtype path <<< "$entry"
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$bin/llama-server" -m "$path" --host 127.0.0.1 --port "$port" -t 1 -c 512 -np 1 --no-mmap \
    ${RECUR_INTEROP_LLAMA_ARGS:-} > "$work/server-$writer-$dtype.log" 2>&1 &
  server=$!
  for prompt in "${prompts[@]}"; do
    mapfile -t file_kv < <(kv_sets_for "$dtype")
    recur_json=$("$recur" "${recur_sets[@]}" "${file_kv[@]}" generate -m "$path" -p "$prompt" -n "$ntok" --threads 1 --json 2>/dev/null || echo '{}')
    /usr/bin/python3 - "$port" "$writer" "$dtype" "$prompt" "$ntok" "$recur_json" "$work/server-$writer-$dtype.log" \
      "$server" >> "$results" <<'PY'
import json, os, sys, time, urllib.request
port, writer, dtype, prompt, ntok, recur_json, server_log, server_pid = sys.argv[1:]
url = f"http://127.0.0.1:{port}"
def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)
row = {"writer": writer, "dtype": dtype, "prompt": prompt}
def server_alive():  # a server that refused the file (an architecture it lacks) has exited
    try:
        os.kill(int(server_pid), 0)
        return not open(f"/proc/{server_pid}/stat").read().split(") ")[-1].startswith("Z")
    except (OSError, ValueError):
        return False
for _ in range(600):  # the server loads the model: up to 60 s
    if not server_alive():
        break
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as r:
            if r.status == 200: break
    except Exception:
        time.sleep(0.1)
try:
    row["llama_prompt"] = post("/tokenize", {"content": prompt, "add_special": True})["tokens"]
    c = post("/completion", {"prompt": prompt, "n_predict": int(ntok), "temperature": 0, "top_k": 1,
                             "return_tokens": True, "cache_prompt": False, "n_probs": 5})
    row["llama_tokens"] = c["tokens"]
    # llama.cpp's top-5 log-probabilities of the raw logits per step, to size a disagreement. Its
    # server gives no entry to a token that leaves the text in an incomplete UTF-8 sequence (a
    # byte-fallback token), so the entries are matched to the steps by their ids, not by position.
    probs, row["llama_top"] = c["completion_probabilities"], []
    for t in c["tokens"]:
        entry = probs[0] if probs and probs[0]["id"] == t else None
        row["llama_top"].append(entry and {e["id"]: e["logprob"] for e in entry["top_logprobs"]})
        probs = probs[1:] if entry else probs
except Exception as e:
    row["llama_error"] = str(e)
    if "unknown model architecture" in open(server_log, errors="replace").read():
        row["llama_lacks"] = True
r = json.loads(recur_json)
if "tokens" in r:
    row["recur_prompt"] = r["prompt_ids"]
    row["recur_tokens"] = r["tokens"]
else:
    row["recur_error"] = "recur generate failed"
print(json.dumps(row))
PY
  done
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
done

status=0
/usr/bin/python3 - "$results" "$ntok" <<'PY' || status=$?
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ntok = int(sys.argv[2])
bad = 0
print(f"{'written by':10} {'dtype':16} {'prompt':34} {'prompt ids':>11} {'greedy tokens equal':>20}  first difference")
lacks = 0
for r in rows:
    if r.get("llama_lacks") and "recur_error" not in r:
        lacks += 1
        print(f"{r['writer']:10} {r['dtype']:16} {r['prompt'][:34]:34} llama.cpp lacks this architecture; recur ran it")
        continue
    if "llama_error" in r or "recur_error" in r:
        bad += 1
        print(f"{r['writer']:10} {r['dtype']:16} {r['prompt'][:34]:34} ERROR {r.get('llama_error', '')}{r.get('recur_error', '')}")
        continue
    same_prompt = r["llama_prompt"] == r["recur_prompt"]
    bad += not same_prompt
    a, b = r["recur_tokens"], r["llama_tokens"]
    k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    diff = "-"
    if a != b and k < min(len(a), len(b)):
        top = {int(i): v for i, v in (r["llama_top"][k] or {}).items()}
        gap = (f"logit gap {top[b[k]] - top[a[k]]:.3f} in llama.cpp" if a[k] in top else
               "recur's pick not in llama.cpp's top 5" if top else "no llama.cpp log-probabilities at a partial UTF-8 byte")
        diff = f"step {k}: recur {a[k]}, llama.cpp {b[k]} ({gap})"
    print(f"{r['writer']:10} {r['dtype']:16} {r['prompt'][:34]:34} {'same' if same_prompt else 'DIFFER':>11} "
          f"{f'{k}/{max(len(a), len(b))}':>20}  {diff}")
print(f"{len(rows)} cases, {bad} failed to load or tokenized differently, {lacks} of an architecture llama.cpp lacks")
sys.exit(1 if bad else 0)
PY

# llama.cpp's vocabularies against its own reference tokenizations: each models/ggml-vocab-*.gguf
# of the llama.cpp source tree (SPM "llama" or BPE "gpt2") has its tokenizer.* keys grafted onto a
# tiny recur model with as many tokens; recur's prompt ids (BOS dropped) for each test text of its
# .inp file are compared with the .out file (llama.cpp's tests/test-tokenizer-0, add_special off).
[ "$base" = 1 ] || exit $status
vocab_dir=${LLAMA_CPP_VOCAB_DIR:-$bin/../../models}
echo
echo "llama.cpp vocabularies ($vocab_dir): recur's ids against llama.cpp's reference tokenizations"
for out in "$vocab_dir"/ggml-vocab-*.gguf.out; do
  vocab=${out%.out}
  [ -f "$vocab" ] && [ -f "$vocab.inp" ] || continue
  name=$(basename "$vocab" .gguf)
  read -r kind size bos < <("$recur" model inspect --json "$vocab" | /usr/bin/python3 -c "
import json, sys; m = json.load(sys.stdin)['metadata']
print(m.get('tokenizer.ggml.model'), m['tokenizer.ggml.tokens']['count'], m.get('tokenizer.ggml.bos_token_id', -1))")
  if [ "$kind" != llama ] && [ "$kind" != gpt2 ]; then echo "$name: tokenizer '$kind' (recur reads llama and gpt2)"; continue; fi
  "$recur" model new "$work/vocab-base-$size.gguf" --dim 64 --layers 1 --heads 2 --vocab "$size" --seed 1 2>/dev/null
  /usr/bin/python3 - "$work/vocab-base-$size.gguf" "$vocab" "$work/$name.gguf" <<'PY'
# Copy the model's metadata entries but tokenizer.*, then the vocabulary file's tokenizer.* entries,
# byte for byte; tensor infos and data stay as they are (their offsets are relative to the data).
import struct, sys
def parse(b):
    fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    def skip(t, o):
        if t == 8: return o + 8 + struct.unpack_from('<Q', b, o)[0]
        if t == 9:
            it, n = struct.unpack_from('<IQ', b, o); o += 12
            if it in fixed: return o + fixed[it] * n
            for _ in range(n): o = skip(it, o)
            return o
        return o + fixed[t]
    version, n_tensors, n_kv = struct.unpack_from('<IQQ', b, 4); o = 24
    kvs = []
    for _ in range(n_kv):
        start = o; n = struct.unpack_from('<Q', b, o)[0]; key = b[o + 8:o + 8 + n].decode(); o += 8 + n
        o = skip(struct.unpack_from('<I', b, o)[0], o + 4); kvs.append((key, b[start:o]))
    return version, n_tensors, kvs, o
model, vocab = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
version, n_tensors, model_kvs, o = parse(model)
tokenizer_kvs = [e for k, e in parse(vocab)[2] if k.startswith('tokenizer.')]
infos_start = o
for _ in range(n_tensors):
    o += 8 + struct.unpack_from('<Q', model, o)[0]
    o += 4 + 8 * struct.unpack_from('<I', model, o)[0] + 12
kvs = [e for k, e in model_kvs if not k.startswith('tokenizer.')] + tokenizer_kvs
head = b'GGUF' + struct.pack('<IQQ', version, n_tensors, len(kvs)) + b''.join(kvs) + model[infos_start:o]
head += b'\0' * (-len(head) % 32)  # recur writes general.alignment 32
open(sys.argv[3], 'wb').write(head + model[(o + 31) // 32 * 32:])
PY
  /usr/bin/python3 - "$recur" "$work/$name.gguf" "$vocab.inp" "$out" "$bos" "$name" <<'PY'
import json, subprocess, sys
recur, model, inp, out, bos, name = sys.argv[1:]
bos = int(bos)
tests = open(inp, encoding='utf-8').read().split('\n__ggml_vocab_test__\n')
if tests and tests[-1] == '': tests.pop()
want_all = [[int(t) for t in line.split()] for line in open(out, encoding='utf-8').read().split('\n')]
same, first = 0, None
for text, want in zip(tests, want_all):
    r = subprocess.run([recur, 'generate', '-m', model, '-p', text, '-n', '0', '--threads', '1', '--json'],
                       capture_output=True, text=True)
    ids = json.loads(r.stdout)['prompt_ids'] if r.returncode == 0 else None
    if ids and ids[0] == bos and (not want or want[0] != bos): ids = ids[1:]
    if ids == want: same += 1
    elif first is None: first = f"{text[:24]!r}: recur {ids[:8] if ids else r.stderr.strip()[:80]} llama.cpp {want[:8]}"
print(f"{name:32} {same:3}/{len(tests)} equal" + (f"  first difference {first}" if first else ""))
PY
done
exit $status
