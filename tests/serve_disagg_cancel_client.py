#!/usr/bin/env python3
"""Client disconnects on the disaggregated path (tests/serve_disagg_cancel_test.sh), stdlib only.

Usage: serve_disagg_cancel_client.py ROUTER_URL DECODE_URL ARM REFERENCE_JSON
The decode worker runs one sequence at a time (--max-seqs 1 --kv-slots 1 --queue-size 1), so a
generation that went on after its client left would hold the next request (it times out), and a
leaked receive slot would answer it with 429. The prefill worker pauses mid-transfer while the
file ARM exists (RECUR_FAULT_PREFILL_PAUSE). REFERENCE_JSON is --role all's answer to REQUEST.
Cases:
  1. a long streamed completion whose client leaves after three chunks;
  2. a streamed chat whose client leaves while its prompt is still being prefilled (before any
     token), so the router learns it only once the decode worker's text arrives.
After each: the decode worker counts the generation cancelled (recur_requests_cancelled_total)
with nothing running and fewer tokens generated than max_tokens, the router counts the request
outcome "cancelled" and still reports the decode worker up (a client leaving is not a dead
worker), and the next request gets --role all's text. Exits non-zero on the first failure.
"""
import http.client
import json
import os
import sys
import time
from urllib.parse import urlsplit

ROUTER, DECODE, ARM, REFERENCE = sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
HEADERS = {"Content-Type": "application/json"}
REQUEST = {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0, "ignore_eos": True}
LONG = 8000  # tokens: far more than are generated between three chunks and the client leaving


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def connect(url):
    u = urlsplit(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=20)


def get(url, path):
    conn = connect(url)
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, body


def metric(url, name):
    """The value of the series `name` (with its labels, if any) on url's /metrics; 0 when absent."""
    for line in get(url, "/metrics")[1].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def wait_for(what, cond, seconds=10):
    deadline = time.time() + seconds
    while not cond():
        if time.time() > deadline:
            fail(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.02)


def open_stream(path, body):
    conn = connect(ROUTER)
    conn.request("POST", path, body=json.dumps(dict(body, stream=True)), headers=HEADERS)
    resp = conn.getresponse()
    if resp.status != 200:
        fail(f"stream {path}: HTTP {resp.status} {resp.read()[:300]!r}")
    return conn, resp


def read_events(resp, n):
    """Reads n SSE events (their data payloads) from a stream."""
    buf, events = b"", []
    while len(events) < n:
        chunk = resp.read1(65536)
        if not chunk:
            fail(f"the stream ended after {len(events)} events: {events}")
        buf += chunk
        while b"\n\n" in buf and len(events) < n:
            event, buf = buf.split(b"\n\n", 1)
            events.append(event[6:].decode())
    return events


def leave(conn):
    conn.sock.shutdown(2)
    conn.close()


def check_cancelled(case, n):
    """After the n-th disconnect: cancelled on the decode worker and counted by the router."""
    wait_for(f"{case}: the decode worker cancelling the generation",
             lambda: metric(DECODE, "recur_requests_cancelled_total") == n and
             metric(DECODE, "recur_requests_running") == 0)
    generated = metric(DECODE, "recur_generation_tokens_total")
    if generated >= n * LONG:
        fail(f"{case}: the decode worker generated {generated} tokens for {n} cancelled requests of {LONG}")
    wait_for(f"{case}: the router counting the request cancelled",
             lambda: metric(ROUTER, 'recur_router_requests_total{outcome="cancelled"}') == n)
    if metric(ROUTER, f'recur_router_worker_up{{role="decode",url="{DECODE}"}}') != 1:
        fail(f"{case}: the router marked the decode worker down because a client left")
    conn = connect(ROUTER)
    conn.request("POST", "/v1/completions", body=json.dumps(REQUEST), headers=HEADERS)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    if resp.status != 200 or json.loads(body)["choices"][0]["text"] != REFERENCE["choices"][0]["text"]:
        fail(f"{case}: the next request: HTTP {resp.status} {body[:300]!r} (--role all: {REFERENCE})")


# 1. The client leaves mid-stream.
conn, resp = open_stream("/v1/completions", {"model": "tiny", "prompt": "a", "max_tokens": LONG,
                                             "ignore_eos": True})
for e in read_events(resp, 3):
    if not json.loads(e)["choices"][0]["text"]:
        fail(f"mid-stream: an empty chunk {e}")
leave(conn)
check_cancelled("mid-stream", 1)

# 2. The client leaves while its prompt is being prefilled (the prefill worker paused mid-transfer).
open(ARM, "w").close()
conn, resp = open_stream("/v1/chat/completions", {"model": "tiny", "max_tokens": LONG, "ignore_eos": True,
                                                  "messages": [{"role": "user", "content": "Hi"}]})
wait_for("the prefill pausing mid-transfer", lambda: os.path.exists(ARM + ".paused"))
leave(conn)
os.remove(ARM)
check_cancelled("during the prefill", 2)
print("serve_disagg_cancel_client: ok")
