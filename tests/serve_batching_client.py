#!/usr/bin/env python3
"""Drives `recur serve` with continuous batching (tests/serve_batching_test.sh), standard library only.

Usage: serve_batching_client.py PORT_ON PORT_OFF MODEL_ID MAX_BATCH_TOKENS
PORT_ON serves with batching (--max-seqs 4 --queue-size 3), PORT_OFF with --batching off.
Checks: concurrent streamed greedy requests (with per-request stop and max_tokens) that join a
running batch give the text, usage and finish_reason the unbatched server gives; cancelling one
streamed request mid-generation frees its sequence while another keeps streaming; a long prompt
is prefilled in ceil(prompt / MAX_BATCH_TOKENS) forwards; with every sequence busy and the queue
full, 429. Exits non-zero on the first failure.
"""
import http.client
import json
import math
import sys
import threading
import time

PORT_ON, PORT_OFF, MODEL, MAX_BATCH_TOKENS = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
HEADERS = {"Content-Type": "application/json"}


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def post(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/v1/completions", body=json.dumps(body), headers=HEADERS)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, payload


def metric(name):
    conn = http.client.HTTPConnection("127.0.0.1", PORT_ON, timeout=60)
    conn.request("GET", "/metrics")
    page = conn.getresponse().read().decode()
    conn.close()
    for line in page.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    fail(f"metric {name} missing")


def wait_for(what, cond, seconds=20):
    deadline = time.time() + seconds
    while not cond():
        if time.time() > deadline:
            fail(f"timed out waiting for {what}")
        time.sleep(0.01)


class Stream:
    """A streamed completion; events() yields each data payload (dicts, then '[DONE]')."""

    def __init__(self, body):
        self.conn = http.client.HTTPConnection("127.0.0.1", PORT_ON, timeout=60)
        self.conn.request("POST", "/v1/completions", body=json.dumps(dict(body, stream=True)), headers=HEADERS)
        self.resp = self.conn.getresponse()
        if self.resp.status != 200:
            fail(f"stream: HTTP {self.resp.status}")
        self.buf = b""

    def next_event(self):
        while b"\n\n" not in self.buf:
            chunk = self.resp.read1(65536)
            if not chunk:
                return None
            self.buf += chunk
        event, self.buf = self.buf.split(b"\n\n", 1)
        data = event[6:].decode()
        return data if data == "[DONE]" else json.loads(data)

    def collect(self):
        """Text, finish_reason and usage of a stream read to its end."""
        text, finish, usage = "", None, None
        while (e := self.next_event()) not in (None, "[DONE]"):
            if e["choices"]:
                text += e["choices"][0]["text"]
                finish = e["choices"][0]["finish_reason"] or finish
            else:
                usage = e["usage"]
        self.conn.close()
        return text, finish, usage

    def leave(self):
        self.conn.sock.shutdown(2)
        self.conn.close()


def ids(n, seed):
    return [100 + (seed * 131 + i * 37) % 250 for i in range(n)]


LONG = {"model": MODEL, "prompt": ids(3, 9), "max_tokens": 4000, "ignore_eos": True, "temperature": 0}

# Reference answers from the unbatched server, one request at a time.
bodies = [{"model": MODEL, "prompt": ids(5, 1), "max_tokens": 24, "temperature": 0, "ignore_eos": True},
          {"model": MODEL, "prompt": ids(23, 2), "max_tokens": 5, "temperature": 0, "ignore_eos": True},
          {"model": MODEL, "prompt": ids(40, 3), "max_tokens": 24, "temperature": 0, "ignore_eos": True}]
status, payload = post(PORT_OFF, bodies[0])
first_text = json.loads(payload)["choices"][0]["text"]
if status != 200 or len(first_text) < 4:
    fail(f"reference: {status} {payload!r}")
# A stop sequence from the middle of it (an ASCII letter: random weights also emit byte tokens).
cut = next((i for i in range(2, len(first_text)) if first_text[i].isascii() and first_text[i].isalnum()), None)
if cut is None:
    fail(f"no ASCII letter to stop at in {first_text!r}")
bodies[0]["stop"] = [first_text[cut]]
refs = []
for b in bodies:
    status, payload = post(PORT_OFF, b)
    r = json.loads(payload)
    if status != 200:
        fail(f"reference {b}: {status} {payload!r}")
    refs.append((r["choices"][0]["text"], r["choices"][0]["finish_reason"], r["usage"]))
if refs[0][1] != "stop" or refs[1][2]["completion_tokens"] != 5:
    fail(f"references: {refs}")

# Three streamed requests join a batch that a long generation keeps busy.
a = Stream(LONG)
if not isinstance(a.next_event(), dict):
    fail("A: no first chunk")
results = [None] * len(bodies)


def run(i):
    results[i] = Stream(dict(bodies[i], stream_options={"include_usage": True})).collect()


threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
for t in threads:
    t.start()
for t in threads:
    t.join()
for i, (got, ref) in enumerate(zip(results, refs)):
    if got != ref:
        fail(f"request {i} batched {got} != unbatched {ref}")
if metric("recur_requests_running") != 1:
    fail("only A should be running")

# Cancel A mid-generation: its sequence is freed, E keeps streaming.
e = Stream(LONG)
if not isinstance(e.next_event(), dict):
    fail("E: no first chunk")
a.leave()
wait_for("A's cancellation", lambda: metric("recur_requests_cancelled_total") >= 1 and
         metric("recur_requests_running") == 1)
for _ in range(20):
    if not isinstance(e.next_event(), dict):
        fail("E stopped after A left")
e.leave()
wait_for("E's cancellation", lambda: metric("recur_requests_running") == 0)
if metric("recur_requests_cancelled_total") != 2:
    fail("expected 2 cancelled generations")
if metric("recur_kv_pages_total") <= 0:
    fail("recur_kv_pages_total")

# A long prompt alone: prefilled in chunks of MAX_BATCH_TOKENS, then one token sampled.
before = metric("recur_batch_forwards_total")
status, payload = post(PORT_ON, {"model": MODEL, "prompt": ids(100, 4), "max_tokens": 1, "temperature": 0})
prompt_tokens = json.loads(payload)["usage"]["prompt_tokens"]
forwards = metric("recur_batch_forwards_total") - before
if status != 200 or forwards != math.ceil(prompt_tokens / MAX_BATCH_TOKENS):
    fail(f"a {prompt_tokens}-token prompt took {forwards} forwards, expected chunks of {MAX_BATCH_TOKENS}")

# Every sequence busy (--max-seqs 4) and the queue full (--queue-size 3): the next request gets 429.
# One at a time: four requests sent at once could find the scheduler not yet awake and overflow
# the 3-place queue before it takes the first.
busy = []
for _ in range(4):
    busy.append(Stream(LONG))
    if not isinstance(busy[-1].next_event(), dict):
        fail("busy stream: no first chunk")
queued = [{} for _ in range(3)]
for q in queued:
    threading.Thread(target=lambda q=q: q.update(r=post(PORT_ON, dict(bodies[2])))).start()
wait_for("the queued requests", lambda: metric("recur_queue_depth") == 3)
status, payload = post(PORT_ON, bodies[2])
if status != 429 or json.loads(payload)["error"]["code"] != "queue_full":
    fail(f"expected 429 queue_full, got {status} {payload!r}")
busy[0].leave()
wait_for("the queued requests to finish", lambda: all("r" in q for q in queued))
for q in queued:
    if q["r"][0] != 200 or json.loads(q["r"][1])["choices"][0]["text"] != refs[2][0]:
        fail(f"queued request: {q['r']}")
for s in busy[1:]:
    s.leave()
wait_for("all cancelled", lambda: metric("recur_requests_running") == 0)
print("serve_batching_client: ok")
