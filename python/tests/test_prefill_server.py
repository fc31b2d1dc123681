# The Python prefill server: prompts prefilled by the scheduler thread, each layer's state sent
# by the kv_transfer thread, imported and decoded by a DecodeWorker, equal the engine's own
# greedy generation, with the GIL released or held during the forward.
import itertools
import os

import pytest

import recur
from recur.prefill_server import DecodeWorker, PrefillServer, kv_layout

_names = itertools.count()


@pytest.mark.parametrize("release_gil", ["on", "off"])
def test_disaggregated_tokens_equal_generate(tiny_model, release_gil):
    recur.set_knob("python.release_gil", release_gil)
    try:
        model = recur.load(tiny_model, threads=1)
        layout = kv_layout(model, max_prompt_tokens=64)
        tag = f"{os.getpid()}-{next(_names)}"
        decode = DecodeWorker(model, recur.TransferEngine(f"pyps-dec-{tag}"), layout)
        server = PrefillServer(model, recur.TransferEngine(f"pyps-pre-{tag}"), f"pyps-dec-{tag}", layout).start()
        prompts = [model.encode("The quick brown fox"), model.encode("a second, somewhat longer prompt")]
        reqs = [server.submit(ids, decode.remote_offset(slot), generation=1) for slot, ids in enumerate(prompts)]
        for slot, (ids, req) in enumerate(zip(prompts, reqs)):
            req.wait(timeout=10)
            assert sorted(req.layer_bytes) == list(range(model.layers))
            tokens = decode.decode(req, slot, max_new_tokens=8)
            assert tokens == list(model.generate(ids, max_new_tokens=8, stop_at_eos=False)["tokens"])
        server.stop()
    finally:
        recur.set_knob("python.release_gil", "on")
