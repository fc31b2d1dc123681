"""The prefill server's timeline with python.release_gil off or on (docs/python.md).

    recur model new /tmp/ps_mid.gguf --arch llama --dim 512 --layers 8 --heads 8 --kv-heads 4 \
        --ffn 1408 --vocab 2000 --context 1024
    python3 python/examples/prefill_overlap.py /tmp/ps_mid.gguf off /tmp/ps_off.json
    recur analyze overlap /tmp/ps_off.json 'name=kv_transfer.layer' 'name=py.forward'
    recur analyze locks /tmp/ps_off.json
"""
import os
import sys
import time

import numpy as np

import recur
from recur.prefill_server import DecodeWorker, PrefillServer, kv_layout


def main(model_path, release_gil, trace_path, prompts=4, prompt_tokens=200):
    recur.set_knob("python.release_gil", release_gil)
    model = recur.load(model_path, threads=1)
    layout = kv_layout(model, prompt_tokens)
    tag = f"{os.getpid()}"
    decode = DecodeWorker(model, recur.TransferEngine(f"overlap-dec-{tag}"), layout)
    server = PrefillServer(model, recur.TransferEngine(f"overlap-pre-{tag}"), f"overlap-dec-{tag}", layout).start()
    rng = np.random.default_rng(1)
    recur.trace.enable()
    t0 = time.perf_counter()
    for _ in range(prompts):
        req = server.submit(rng.integers(0, model.vocab, prompt_tokens).astype(np.int32), decode.remote_offset(0))
        decode.decode(req.wait(60), 0, max_new_tokens=2)
    elapsed = time.perf_counter() - t0
    recur.trace.disable()
    server.stop()
    recur.trace.save(trace_path)
    print(f"python.release_gil={release_gil}: {prompts} prompts x {prompt_tokens} tokens prefilled, sent and "
          f"decoded 2 tokens in {elapsed * 1000:.1f} ms; trace {trace_path}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
