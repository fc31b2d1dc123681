"""An SGLang-style disaggregated prefill worker in Python over recur's C++ engine.

Python scheduling code (the "scheduler" thread) takes requests from a queue and prefills each
prompt with one Batch.forward through the bindings. While that forward runs, the engine's layer
hook exports every finished layer's state (engine/sequence_state.h) into registered staging
memory; a Python KV-transfer thread ("kv_transfer") pops each layer and sends it to the decode
worker with KvSender.send_layer, so layer L moves while layer L+1 computes — if the forward
released the GIL (python.release_gil=on). With the knob off, the forward holds the GIL and the
transfer thread waits for it (the case study "kv-transfer-overlap"; docs/python.md).

    layout = kv_layout(model, max_prompt_tokens=256)
    decode = DecodeWorker(model, recur.TransferEngine("decode0"), layout)
    server = PrefillServer(model, recur.TransferEngine("prefill0"), "decode0", layout).start()
    req = server.submit(ids, decode.remote_offset(slot=0), generation=1)
    req.wait()                                   # prefilled and every layer sent
    tokens = decode.decode(req, slot=0, max_new_tokens=16)
    server.stop()

Limits: prompts fit one forward (max_batch_tokens); one block per layer; the decode side learns
the prompt length from the request object (same process) rather than from a wire message.
"""
import itertools
import queue
import threading

import numpy as np

import recur
from recur import trace


def kv_layout(model, max_prompt_tokens):
    """A KvLayout with one block per layer, large enough for a prompt of max_prompt_tokens."""
    batch = model.new_batch(max_sequences=1, max_tokens=max_prompt_tokens)
    seq = batch.add_sequence()
    largest = max(batch.layer_state_bytes(seq, layer, max_prompt_tokens) for layer in range(model.layers))
    return recur.KvLayout(layers=model.layers, blocks_per_layer=1, max_block_bytes=largest)


class PrefillRequest:
    """One prompt: filled by the server (first_token, logits, layer_bytes), done when every layer is sent."""

    def __init__(self, rid, ids, remote_offset, generation):
        self.rid = rid
        self.ids = np.ascontiguousarray(ids, dtype=np.int32)
        self.remote_offset = remote_offset
        self.generation = generation
        self.first_token = None
        self.logits = None
        self.layer_bytes = {}
        self.error = None
        self._done = threading.Event()

    def wait(self, timeout=None):
        if not self._done.wait(timeout):
            raise TimeoutError(f"prefill request {self.rid}: not done after {timeout} s")
        if self.error is not None:
            raise self.error
        return self

    def _finish(self, error=None):
        self.error = error
        self._done.set()


class PrefillServer:
    """With decode_segment=None (knob serve.kv_transfer=off) it only prefills: the baseline."""

    def __init__(self, model, engine, decode_segment, layout, max_sequences=4, max_batch_tokens=512):
        self.model = model
        self.layout = layout
        self.max_batch_tokens = max_batch_tokens
        self.batch = model.new_batch(max_sequences=max_sequences, max_batch_tokens=max_batch_tokens)
        self.transfer = decode_segment is not None
        self.exporter = self.batch.layer_exporter()
        self.slot_bytes = layout.layers * layout.max_block_bytes
        if self.transfer:
            self.staging = engine.allocate_shared(max_sequences * self.slot_bytes)
            engine.register_memory(self.staging)
            self.sender = recur.KvSender(engine, engine.open_segment(decode_segment), layout)
        self._queue = queue.Queue()
        self._rids = itertools.count(1)
        self._free_slots = list(range(max_sequences))
        self._inflight = {}  # seq -> (request, slot)
        self._sent = queue.Queue()  # seqs whose layers are all sent: the scheduler frees them
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._schedule_loop, name="scheduler", daemon=True)]
        if self.transfer:
            self._threads.append(threading.Thread(target=self._transfer_loop, name="kv_transfer", daemon=True))

    def start(self):
        for t in self._threads:
            t.start()
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join()

    def submit(self, ids, remote_offset, generation=1):
        if len(ids) == 0 or len(ids) > self.max_batch_tokens:
            raise ValueError(f"prefill: prompt of {len(ids)} tokens, expected 1..{self.max_batch_tokens}")
        req = PrefillRequest(next(self._rids), ids, remote_offset, generation)
        self._queue.put(req)
        return req

    # The scheduler thread: one prompt per forward; frees sequences whose KV has left.
    def _schedule_loop(self):
        while not self._stop.is_set():
            self._free_sent()
            if not self._free_slots:
                seq = self._sent.get()
                self._free(seq)
                continue
            try:
                req = self._queue.get(timeout=0.02)
            except queue.Empty:
                continue
            try:
                self._prefill(req)
            except Exception as e:  # the request fails; the server goes on
                req._finish(e)

    def _prefill(self, req):
        n = len(req.ids)
        with trace.zone("prefill.schedule", rid=req.rid, tokens=n):
            seq = self.batch.add_sequence()
            slot = self._free_slots.pop()
            self._inflight[seq] = (req, slot)
            if self.transfer:
                staging = self.staging[slot * self.slot_bytes:(slot + 1) * self.slot_bytes]
                self.exporter.watch(seq, staging, self.layout.max_block_bytes)
            want = np.zeros(n, dtype=bool)
            want[-1] = True
            try:
                logits = self.batch.forward(np.full(n, seq, dtype=np.int32), req.ids, want)
            except Exception:
                if self.transfer:
                    self.exporter.unwatch(seq)
                self._free(seq)
                raise
            req.logits = logits[0]
            req.first_token = int(np.argmax(req.logits))
            if self.transfer:
                self.exporter.unwatch(seq)
            else:  # nothing to send: done, and the sequence is free at once
                req._finish()
                self._free(seq)

    def _free_sent(self):
        while True:
            try:
                self._free(self._sent.get_nowait())
            except queue.Empty:
                return

    def _free(self, seq):
        _, slot = self._inflight.pop(seq)
        self.batch.free_sequence(seq)
        self._free_slots.append(slot)

    # The KV-transfer thread: each exported layer goes out as soon as it is popped.
    def _transfer_loop(self):
        last = self.layout.layers - 1
        while not self._stop.is_set():
            item = self.exporter.pop(20)
            if item is None:
                continue
            seq, layer, nbytes = item
            req, slot = self._inflight[seq]
            try:
                with trace.zone("kv_transfer.layer", rid=req.rid, layer=layer, bytes=nbytes):
                    if layer == 0:
                        self.sender.begin_sequence(req.rid, req.remote_offset, req.generation)
                    begin = slot * self.slot_bytes + layer * self.layout.max_block_bytes
                    self.sender.send_layer(req.rid, layer, [self.staging[begin:begin + nbytes]])
                    req.layer_bytes[layer] = nbytes
                    if layer == last:
                        self.sender.finish_sequence(req.rid)
            except Exception as e:
                req._finish(e)
                self._sent.put(seq)
                continue
            if layer == last:
                while req.first_token is None and not self._stop.is_set():  # forward() still returning
                    trace.instant("kv_transfer.wait_logits")
                    threading.Event().wait(0.0005)
                req._finish()
                self._sent.put(seq)


class DecodeWorker:
    """The decode side: a receive area in shared memory, sequences imported layer by layer."""

    def __init__(self, model, engine, layout, max_sequences=4):
        self.model = model
        self.layout = layout
        self.area = engine.allocate_shared(max_sequences * layout.sequence_bytes)
        self.region = engine.register_memory(self.area)
        self.receiver = recur.KvReceiver(self.area, layout)
        self.batch = model.new_batch(max_sequences=max_sequences)

    def remote_offset(self, slot):
        return self.region["segment_offset"] + slot * self.layout.sequence_bytes

    def decode(self, req, slot, max_new_tokens, timeout_ms=5000):
        """Imports the request's layers (checksums verified), then decodes greedily; the tokens."""
        n = len(req.ids)
        seq = self.batch.add_sequence()
        try:
            with trace.zone("decode.import", rid=req.rid, tokens=n):
                for layer in range(self.layout.layers):
                    state = np.empty(self.batch.layer_state_bytes(seq, layer, n), dtype=np.uint8)
                    self.receiver.receive_layer(req.rid, req.generation, slot * self.layout.sequence_bytes, layer,
                                                [state], timeout_ms)
                    self.batch.import_layer_state(seq, layer, state)
                self.batch.set_sequence_position(seq, n)
            tokens = [req.first_token]
            with trace.zone("decode.generate", rid=req.rid):
                while len(tokens) < max_new_tokens:
                    logits = self.batch.forward(np.array([seq], np.int32), np.array([tokens[-1]], np.int32))
                    tokens.append(int(np.argmax(logits[0])))
            return tokens
        finally:
            self.batch.free_sequence(seq)
