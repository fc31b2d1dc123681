# recur.prefill_bench, the kv-transfer-overlap gate's program: its JSON line, the transfer on
# and off, its timeline (transfer intervals, MoE dispatch/combine, the GIL), its argument errors;
# and the prefill server on a hybrid MoE model at engine.ep=2 (the episode's configuration).
import itertools
import json
import os
import subprocess
import sys

import pytest

import recur
from recur.prefill_server import DecodeWorker, PrefillServer, kv_layout

_names = itertools.count()


@pytest.fixture(scope="session")
def moe_model(recur_cli, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("moe") / "moe.gguf")
    subprocess.run([recur_cli, "model", "new", path, "--arch", "hybrid", "--dim", "64", "--layers", "4",
                    "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--experts", "4", "--experts-used", "2",
                    "--shared-expert", "--kda-head-dim", "16", "--vocab", "400", "--context", "256"],
                   check=True, capture_output=True)
    return path


def run_bench(model, knobs, *args):
    env = dict(os.environ, RECUR_KNOBS=knobs)
    return subprocess.run([sys.executable, "-m", "recur.prefill_bench", "--model", model, *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("transfer", ["off", "shm"])
def test_json_line_with_and_without_transfer(moe_model, transfer):
    r = run_bench(moe_model, f"engine.ep=2 serve.kv_transfer={transfer}", "--prompts", "2", "--tokens", "16")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["prefill_tok_s"] > 0 and out["prompts"] == 2 and out["prompt_tokens"] == 16
    assert out["transfer"] == transfer
    if transfer == "off":
        assert out["bytes_sent"] == 0
    else:  # every layer of both prompts: 4 layers, KV of 16 tokens or a KDA state each
        assert out["bytes_sent"] > 2 * 4 * 16


def test_timeline_shows_transfer_dispatch_combine_and_the_held_gil(moe_model, tmp_path):
    trace = str(tmp_path / "t.json")
    r = run_bench(moe_model, "engine.ep=2 serve.kv_transfer=shm python.release_gil=off", "--prompts", "2",
                  "--tokens", "16", "--trace", trace)
    assert r.returncode == 0, r.stderr
    events = json.load(open(trace))
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e.get("name") for e in events}
    assert {"kv_transfer.send", "kv_transfer.layer", "moe.dispatch", "moe.combine", "py.forward"} <= names
    held = [e for e in events if e.get("name") in ("lock_held", "GIL") or (e.get("args") or {}).get("mutex") == "GIL"]
    assert held, "the forward held the GIL: a lock_held zone of mutex GIL"


def test_argument_and_knob_errors(moe_model):
    r = run_bench(moe_model, "", "--prompts", "0")
    assert r.returncode == 2 and "--prompts, --tokens and --concurrency must be at least 1" in r.stderr
    r = run_bench(moe_model, "serve.kv_transfer=tcp", "--prompts", "1")
    assert r.returncode != 0 and "serve.kv_transfer=tcp" in r.stderr
    r = run_bench(moe_model, "no.such_knob=1")
    assert r.returncode != 0 and "no.such_knob" in r.stderr


@pytest.mark.parametrize("release_gil", ["on", "off"])
def test_expert_parallel_prefill_server_tokens_equal_generate(moe_model, release_gil):
    recur.set_knob("python.release_gil", release_gil)
    recur.set_knob("engine.ep", "2")
    try:
        model = recur.load(moe_model, threads=1)
        layout = kv_layout(model, max_prompt_tokens=32)
        tag = f"{os.getpid()}-{next(_names)}"
        decode = DecodeWorker(model, recur.TransferEngine(f"pyep-dec-{tag}"), layout)
        server = PrefillServer(model, recur.TransferEngine(f"pyep-pre-{tag}"), f"pyep-dec-{tag}", layout).start()
        ids = model.encode("the quick brown fox jumps")
        req = server.submit(ids, decode.remote_offset(0), generation=1).wait(timeout=30)
        assert sorted(req.layer_bytes) == list(range(model.layers))
        assert decode.decode(req, 0, max_new_tokens=6) == list(
            model.generate(ids, max_new_tokens=6, stop_at_eos=False)["tokens"])
        server.stop()
    finally:
        recur.set_knob("python.release_gil", "on")
        recur.set_knob("engine.ep", "1")
