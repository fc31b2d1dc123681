#!/usr/bin/env python3
"""Client disconnects on the disaggregated path (tests/serve_disagg_cancel_test.sh), stdlib only.

Usage: serve_disagg_cancel_client.py ROUTER_URL DECODE_URL ARM REFERENCE_JSON HELD_ROUTER_URL HELD_DECODE_URL HOLD
                                     TIMEOUT_ROUTER_URL PREFILL_URL
The decode worker runs one sequence at a time (--max-seqs 1 --kv-slots 1 --queue-size 1), so a
generation that went on after its client left would hold the next request (it times out), and a
leaked receive slot would answer it with 429. The prefill worker pauses mid-transfer while the
file ARM exists (RECUR_FAULT_PREFILL_PAUSE). REFERENCE_JSON is --role all's answer to REQUEST.
Cases:
  1. a long streamed completion whose client leaves after three chunks;
  2. a streamed chat whose client leaves while its prompt is still being prefilled (paused
     mid-transfer, before any token): within 1.5 s, the pause still armed, the router has told the
     prefill worker to cancel (recur_prefill_cancelled_total), released the receive slot and
     counted the request cancelled; the decode never starts.
A second decode worker (HELD_DECODE_URL: --max-seqs 1) holds each request's admission while the
file HOLD exists (RECUR_FAULT_DECODE_HOLD), so the requests behind the held one produce nothing;
HELD_ROUTER_URL routes to it, and so does TIMEOUT_ROUTER_URL (--request-timeout-s 1). Cases:
  3. a non-streamed client that leaves while its request waits on the decode worker with no text:
     within about a second (polled every 100 ms) the router counts it cancelled and the decode
     worker drops it from its queue, while the held request still holds the scheduler; the held
     one then gets --role all's text;
  4. deadlines: a request's "timeout" of 0.5 s gives 408 request_timeout (non-streamed) or that
     error event and [DONE] (streamed), the router's --request-timeout-s 1 a 408 after a second,
     each while the decode worker produces nothing; the decode worker cancels them all.
After cases 1 and 2: the decode worker has cancelled every generation it started (recur_requests_cancelled_total)
with nothing running and fewer tokens generated than max_tokens, the router counts the request
outcome "cancelled" and still reports the decode worker up (a client leaving is not a dead
worker), and the next request gets --role all's text. Exits non-zero on the first failure.
"""
import http.client
import json
import os
import sys
import threading
import time
from urllib.parse import urlsplit

ROUTER, DECODE, ARM, REFERENCE = sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
HELD_ROUTER, HELD_DECODE, HOLD, TIMEOUT_ROUTER, PREFILL = sys.argv[5:10]
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


def post(url, body, path="/v1/completions"):
    """Sends a request and returns (status, body, seconds taken)."""
    t0 = time.time()
    conn = connect(url)
    conn.request("POST", path, body=json.dumps(body), headers=HEADERS)
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    return resp.status, text, time.time() - t0


def open_stream(path, body, router=None):
    conn = connect(router or ROUTER)
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


def check_cancelled(case, n, decoded):
    """After the n-th disconnect, `decoded` of them reached the decode worker: cancelled there,
    and all n counted by the router."""
    wait_for(f"{case}: the decode worker cancelling the generation",
             lambda: metric(DECODE, "recur_requests_cancelled_total") == decoded and
             metric(DECODE, "recur_requests_running") == 0)
    generated = metric(DECODE, "recur_generation_tokens_total")
    if generated >= n * LONG:
        fail(f"{case}: the decode worker generated {generated} tokens for {n} cancelled requests of {LONG}")
    wait_for(f"{case}: the router counting the request cancelled",
             lambda: metric(ROUTER, 'recur_router_requests_total{outcome="cancelled"}') == n)
    if metric(ROUTER, f'recur_router_worker_up{{role="decode",url="{DECODE}"}}') != 1:
        fail(f"{case}: the router marked the decode worker down because a client left")
    check_reference(f"{case}: the next request", post(ROUTER, REQUEST))


def check_reference(what, answer):
    status, body, _ = answer
    if status != 200 or json.loads(body)["choices"][0]["text"] != REFERENCE["choices"][0]["text"]:
        fail(f"{what}: HTTP {status} {body[:300]!r} (--role all: {REFERENCE})")


def hold_one():
    """Arms HOLD and starts REQUEST through the held router in a thread; returns once the decode
    worker holds it (its scheduler waits: nothing behind it produces text). join() gives its answer."""
    open(HOLD, "w").close()
    answer = []
    t = threading.Thread(target=lambda: answer.append(post(HELD_ROUTER, REQUEST)))
    t.start()
    wait_for("the decode worker holding a request", lambda: os.path.exists(HOLD + ".paused"))
    return lambda: (os.remove(HOLD), t.join(), answer[0])[2]


def timeout_error(what, status, body, seconds, at_least, at_most):
    if status != 408 or not at_least <= seconds < at_most:
        fail(f"{what}: HTTP {status} after {seconds:.2f} s, expected 408 within [{at_least}, {at_most}) s: {body[:300]}")
    error = json.loads(body)["error"]
    if error["code"] != "request_timeout" or error["param"] != "timeout":
        fail(f"{what}: error {error}, expected code request_timeout, param timeout")


# 1. The client leaves mid-stream.
conn, resp = open_stream("/v1/completions", {"model": "tiny", "prompt": "a", "max_tokens": LONG,
                                             "ignore_eos": True})
for e in read_events(resp, 3):
    if not json.loads(e)["choices"][0]["text"]:
        fail(f"mid-stream: an empty chunk {e}")
leave(conn)
check_cancelled("mid-stream", 1, decoded=1)

# 2. The client leaves while its prompt is being prefilled (the prefill worker paused mid-transfer).
open(ARM, "w").close()
conn, resp = open_stream("/v1/chat/completions", {"model": "tiny", "max_tokens": LONG, "ignore_eos": True,
                                                  "messages": [{"role": "user", "content": "Hi"}]})
wait_for("the prefill pausing mid-transfer", lambda: os.path.exists(ARM + ".paused"))
leave(conn)
wait_for("the router cancelling the prefill while it is paused",
         lambda: metric(PREFILL, "recur_prefill_cancelled_total") == 1 and
         metric(ROUTER, 'recur_router_requests_total{outcome="cancelled"}') == 2, seconds=1.5)
if not os.path.exists(ARM):
    fail("during the prefill: the pause ended before the cancel")
os.remove(ARM)
check_cancelled("during the prefill", 2, decoded=1)

# 3. A non-streamed client leaves while its request waits on the decode worker, which produces nothing.
release = hold_one()
conn = connect(HELD_ROUTER)
conn.request("POST", "/v1/completions", body=json.dumps({"model": "tiny", "prompt": "b", "max_tokens": LONG,
                                                          "ignore_eos": True}), headers=HEADERS)
wait_for("the second request queued on the decode worker", lambda: metric(HELD_DECODE, "recur_queue_depth") == 1)
t0 = time.time()
leave(conn)
wait_for("the decode worker dropping the abandoned request",
         lambda: metric(HELD_DECODE, "recur_queue_depth") == 0 and
         metric(HELD_DECODE, "recur_requests_cancelled_total") == 1, seconds=1.5)
wait_for("the router counting it cancelled",
         lambda: metric(HELD_ROUTER, 'recur_router_requests_total{outcome="cancelled"}') == 1, seconds=1.5)
print(f"case 3: the abandoned request left the decode worker's queue {time.time() - t0:.2f} s after its client")
if not os.path.exists(HOLD + ".paused"):
    fail("case 3: the decode worker stopped holding before the abandoned request was dropped")
check_reference("case 3: the held request", release())

# 4. Deadlines, while the decode worker produces nothing.
release = hold_one()
status, body, took = post(HELD_ROUTER, dict(REQUEST, timeout=0.5))
timeout_error("case 4: timeout 0.5", status, body, took, 0.5, 1.5)
conn, resp = open_stream("/v1/completions", dict(REQUEST, timeout=0.5), HELD_ROUTER)
events = read_events(resp, 2)
conn.close()
if json.loads(events[0])["error"]["code"] != "request_timeout" or events[1] != "[DONE]":
    fail(f"case 4: streamed with timeout 0.5: {events}, expected the request_timeout error event, then [DONE]")
status, body, took = post(TIMEOUT_ROUTER, REQUEST)
timeout_error("case 4: --request-timeout-s 1", status, body, took, 1.0, 2.0)
if metric(HELD_ROUTER, 'recur_router_requests_total{outcome="timeout"}') != 2:
    fail("case 4: the router did not count two requests 'timeout'")
wait_for("the decode worker dropping the queued requests past their deadline",
         lambda: metric(HELD_DECODE, "recur_queue_depth") == 0)
status, _, _ = release()
if status != 200:
    fail(f"case 4: the held request: HTTP {status}")
wait_for("the decode worker cancelling the three", lambda: metric(HELD_DECODE, "recur_requests_cancelled_total") == 4 and
         metric(HELD_DECODE, "recur_requests_running") == 0)
check_reference("case 4: the next request", post(HELD_ROUTER, REQUEST))
print("serve_disagg_cancel_client: ok")
