"""Prefill throughput of the Python prefill server, with or without KV transfer (one JSON line).

    RECUR_KNOBS="engine.ep=2 serve.kv_transfer=shm transfer.link_mbps=40 python.release_gil=off" \\
        python3 -m recur.prefill_bench --model moe.gguf --prompts 4 --tokens 192 [--trace t.json]

`--prompts` prompts of `--tokens` random tokens go to a PrefillServer (prefill_server.py), at
most `--concurrency` at a time (default 1: a client that sends the next prompt when the last one
is done); a prompt is done when it is prefilled and, with transfer, every layer of its state has
reached the decode worker's memory (the link's delivery, knob transfer.link_mbps, included).
With one client prefill_tok_s = tokens / the median prompt's time (submit to done), so one prompt
that lost its vCPU to another process does not move it; with more, prompts * tokens / the wall
time from the first submit to the last done (also printed as wall_tok_s). prefill_tok_s = prompts * tokens / that time. One
prompt is prefilled (and sent) untimed first. Everything is configured by knobs (RECUR_KNOBS, as
a gate's program workload sets them): serve.kv_transfer = off measures prefill alone, shm sends
through the transfer engine; python.release_gil decides whether the forward holds the GIL.
With --trace the timed part is traced (the tracer's own cost is in the figure then).
The gate episodes/gates/kv-transfer-overlap.toml runs this (docs/python.md).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import recur
from recur.prefill_server import DecodeWorker, PrefillServer, kv_layout


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m recur.prefill_bench", description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="a GGUF file (a hybrid MoE model for the case study)")
    p.add_argument("--prompts", type=int, default=4, help="prompts queued at once (default 4)")
    p.add_argument("--tokens", type=int, default=192, help="tokens per prompt (default 192)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="prompts in flight: 1 (default) submits the next when the last is done and sent")
    p.add_argument("--threads", type=int, default=1, help="the engine's thread pool (default 1)")
    p.add_argument("--seed", type=int, default=1, help="seed of the random prompts")
    p.add_argument("--trace", default="", help="write the timed part's timeline here (.json, .json.gz, .pftrace)")
    a = p.parse_args(argv)
    if a.prompts < 1 or a.tokens < 1 or a.concurrency < 1:
        p.error("--prompts, --tokens and --concurrency must be at least 1")
    return a


def main(argv=None):
    a = parse_args(argv)
    transfer = recur.get_knob("serve.kv_transfer")
    if transfer not in ("shm", "off"):
        raise SystemExit(f"prefill_bench: serve.kv_transfer={transfer}: this bench sends over shm or not at all")
    model = recur.load(a.model, threads=a.threads)
    layout = kv_layout(model, a.tokens)
    tag = f"pbench-{os.getpid()}"
    slots = a.prompts + 1
    decode = None
    if transfer == "shm":
        decode = DecodeWorker(model, recur.TransferEngine(f"{tag}-dec"), layout, max_sequences=slots)
    server = PrefillServer(model, recur.TransferEngine(f"{tag}-pre"), decode and f"{tag}-dec", layout,
                           max_sequences=slots, max_batch_tokens=a.tokens).start()
    rng = np.random.default_rng(a.seed)
    prompts = [rng.integers(0, model.vocab, a.tokens).astype(np.int32) for _ in range(a.prompts + 1)]

    def submit(i):
        return server.submit(prompts[i], decode.remote_offset(i) if decode else 0, generation=i + 1)

    submit(a.prompts).wait(600)  # the untimed warm-up prompt
    if a.trace:
        recur.trace.enable()
    t0 = time.perf_counter()
    requests, starts, ends = [], [], {}
    for i in range(a.prompts):  # at most --concurrency in flight: a client waits for its oldest
        if len(requests) >= a.concurrency:
            oldest = len(requests) - a.concurrency
            requests[oldest].wait(600)
            ends.setdefault(oldest, time.perf_counter())
        starts.append(time.perf_counter())
        requests.append(submit(i))
    for i, r in enumerate(requests):
        r.wait(600)
        ends.setdefault(i, time.perf_counter())
    seconds = time.perf_counter() - t0
    # One client: a prompt's time is submit to done. The median prompt is the figure (a prompt
    # that lost its vCPU to another process does not move it); with more clients, the wall time.
    median_s = statistics.median(ends[i] - starts[i] for i in range(a.prompts))
    if a.trace:
        recur.trace.disable()
    server.stop()
    if a.trace:
        recur.trace.save(a.trace)
    sent = sum(sum(r.layer_bytes.values()) for r in requests)
    print(json.dumps({
        "prefill_tok_s": a.tokens / median_s if a.concurrency == 1 else a.prompts * a.tokens / seconds,
        "wall_tok_s": a.prompts * a.tokens / seconds,
        "median_prompt_s": median_s,
        "seconds": seconds,
        "prompts": a.prompts,
        "prompt_tokens": a.tokens,
        "concurrency": a.concurrency,
        "transfer": transfer,
        "bytes_sent": sent,
        "release_gil": recur.get_knob("python.release_gil"),
        "link_mbps": recur.get_knob("transfer.link_mbps"),
        "trace": a.trace or None,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
