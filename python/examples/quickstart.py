"""recur from Python: generate, prefill logits, a KV page through the transfer engine on a
Python thread, all in one trace (docs/python.md).

    recur model new /tmp/tiny.gguf --arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 \
        --ffn 128 --vocab 400 --context 512
    python3 python/examples/quickstart.py /tmp/tiny.gguf /tmp/quickstart.json
    recur analyze locks /tmp/quickstart.json
"""
import os
import sys
import threading

import numpy as np

import recur


def main(model_path, trace_path):
    recur.trace.enable()
    model = recur.load(model_path, threads=1)
    out = model.generate("Once upon a time", max_new_tokens=8)
    print("generated", list(out["tokens"]), f"({out['decode_tok_s']:.0f} tok/s)")

    # A decode worker's receive area and a prefill worker's KV page, both in shared memory.
    layout = recur.KvLayout(layers=model.layers, blocks_per_layer=1, max_block_bytes=4096)
    decode = recur.TransferEngine(f"quickstart-dec-{os.getpid()}")
    area = decode.allocate_shared(layout.sequence_bytes)
    region = decode.register_memory(area)
    prefill = recur.TransferEngine(f"quickstart-pre-{os.getpid()}")
    pages = prefill.allocate_shared(model.layers * 4096)
    prefill.register_memory(pages)
    sender = recur.KvSender(prefill, prefill.open_segment(decode.segment_name), layout)
    sender.begin_sequence(seq=1, remote_offset=region["segment_offset"], generation=1)

    def transfer():  # the "KV-transfer thread": its own track in the trace
        for layer in range(model.layers):
            with recur.trace.zone("send_layer", layer=layer):
                sender.send_layer(1, layer, [pages[layer * 4096:(layer + 1) * 4096]])
        sender.finish_sequence(1)

    with recur.trace.zone("prefill", tokens=5):
        logits = model.new_session().prefill(model.encode("Hello, world"))
        pages[:] = np.resize(logits.view(np.uint8), pages.size)  # stand-in for the layer KV
    t = threading.Thread(target=transfer, name="kv_transfer")
    t.start()
    t.join()

    receiver = recur.KvReceiver(area, layout)
    got = np.zeros(4096, np.uint8)
    receiver.receive_layer(1, 1, 0, model.layers - 1, [got])  # checksum-verified copy
    assert np.array_equal(got, pages[-4096:])
    print("logits", logits.shape, "argmax", int(logits.argmax()), "; KV pages arrived intact")
    print("trace events:", recur.trace.save(trace_path), "->", trace_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "quickstart.json")
