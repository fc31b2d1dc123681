#!/usr/bin/env python3
"""Drives a running `recur serve` with Python's standard library only (tests/serve_cli_test.sh).

Usage: serve_client.py PORT API_KEY MODEL_ID EXPECTED_GREEDY_JSON
EXPECTED_GREEDY_JSON is `recur generate --json` on the chat template of the streamed request.
Checks: auth, a non-streamed completion, a streamed chat (chunk format, [DONE], usage, greedy
text equal to recur generate), bad requests, overload (429 + Retry-After), a client that
disconnects mid-stream, and that the server stays healthy. Exits non-zero on the first failure.
"""
import http.client
import json
import sys
import threading
import time

PORT, KEY, MODEL, EXPECTED = int(sys.argv[1]), sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
AUTH = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def request(method, path, body=None, headers=AUTH):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), payload


def expect_error(status, body, path="/v1/completions", param=None, headers=AUTH):
    got, _, payload = request("POST", path, body, headers)
    if got != status:
        fail(f"{body!r}: expected HTTP {status}, got {got}: {payload[:300]!r}")
    err = json.loads(payload).get("error")
    if not isinstance(err, dict) or set(err) != {"message", "type", "param", "code"} or not err["message"]:
        fail(f"{body!r}: not an OpenAI error object: {payload[:300]!r}")
    if param is not None and err["param"] != param:
        fail(f"{body!r}: expected param {param}, got {err['param']}")
    return err


def sse_events(resp):
    """Yields the JSON payload of each `data:` event, then the string '[DONE]'."""
    buf = b""
    while True:
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        if not chunk:
            return
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            if not event.startswith(b"data: "):
                fail(f"SSE event without 'data: ': {event[:100]!r}")
            data = event[6:].decode()
            yield data if data == "[DONE]" else json.loads(data)


def open_stream(body):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    conn.request("POST", "/v1/chat/completions" if "messages" in body else "/v1/completions",
                 body=json.dumps(body), headers=AUTH)
    resp = conn.getresponse()
    return conn, resp


def metric(name):
    _, _, page = request("GET", "/metrics")
    for line in page.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    fail(f"metric {name} missing")


# Authentication: /health is open, everything else needs the key.
if request("GET", "/health", headers={})[0] != 200:
    fail("/health without a key")
expect_error(401, {"model": MODEL, "prompt": "x"}, headers={"Content-Type": "application/json"})
expect_error(401, {"model": MODEL, "prompt": "x"}, headers={"Authorization": "Bearer wrong"})
status, _, body = request("GET", "/v1/models")
if status != 200 or json.loads(body)["data"][0]["id"] != MODEL:
    fail(f"/v1/models: {status} {body!r}")

# A non-streamed completion with usage.
status, _, body = request("POST", "/v1/completions", {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 5,
                                                      "temperature": 0, "ignore_eos": True})
r = json.loads(body)
if status != 200 or r["object"] != "text_completion" or r["usage"]["completion_tokens"] != 5 \
        or r["usage"]["total_tokens"] != r["usage"]["prompt_tokens"] + 5 or r["choices"][0]["finish_reason"] != "length":
    fail(f"completion: {status} {body!r}")

# A streamed chat: chunk format, [DONE], the usage chunk, greedy text equal to recur generate.
conn, resp = open_stream({"model": MODEL, "messages": [{"role": "user", "content": "Hello"}], "stream": True,
                          "max_tokens": EXPECTED["generated_tokens"], "temperature": 0,
                          "stream_options": {"include_usage": True}})
if resp.status != 200 or not resp.getheader("Content-Type", "").startswith("text/event-stream"):
    fail(f"stream: HTTP {resp.status} {resp.getheader('Content-Type')}")
events = list(sse_events(resp))
conn.close()
if events[-1] != "[DONE]":
    fail(f"stream does not end with [DONE]: {events[-3:]}")
chunks = [e for e in events[:-1] if e["choices"]]
usage = [e for e in events[:-1] if not e["choices"]]
if not chunks or chunks[0]["choices"][0]["delta"].get("role") != "assistant":
    fail(f"first chunk has no assistant role: {chunks[:1]}")
for c in chunks:
    if c["object"] != "chat.completion.chunk" or c["model"] != MODEL or c["id"] != chunks[0]["id"] or "usage" not in c:
        fail(f"bad chunk {c}")
if chunks[-1]["choices"][0]["finish_reason"] not in ("stop", "length") or \
        any(c["choices"][0]["finish_reason"] for c in chunks[:-1]):
    fail("finish_reason must be on the last chunk only")
if len(usage) != 1 or usage[0]["usage"]["completion_tokens"] != EXPECTED["generated_tokens"] or \
        usage[0]["usage"]["prompt_tokens"] != EXPECTED["prompt_tokens"]:
    fail(f"usage chunk {usage} vs recur generate {EXPECTED['prompt_tokens']}+{EXPECTED['generated_tokens']}")
text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
# Both sides replace invalid UTF-8 (random weights emit byte tokens); compare the rest exactly.
if text.replace("\ufffd", "") != EXPECTED["text"].replace("\ufffd", ""):
    fail(f"greedy stream {text!r} != recur generate {EXPECTED['text']!r}")

# Bad requests.
expect_error(400, "{\"model\": ", param=None)
expect_error(422, {"prompt": "x"}, param="model")
expect_error(422, {"model": MODEL, "prompt": "x", "max_tokens": "many"}, param="max_tokens")
expect_error(400, {"model": MODEL, "prompt": "x", "max_tokens": 0}, param="max_tokens")
expect_error(400, {"model": MODEL, "prompt": "x", "max_tokens": 10 ** 6}, param="max_tokens")
expect_error(404, {"model": "no-such-model", "prompt": "x"}, param="model")
expect_error(400, {"model": MODEL, "prompt": "word " * 20000}, param="prompt")
expect_error(422, {"model": MODEL}, path="/v1/chat/completions", param="messages")
err = expect_error(400, {"model": MODEL, "messages": [{"role": "user", "content": [
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}, path="/v1/chat/completions")
if err["code"] != "invalid_image" or err["param"] != "messages[0].content[0]":  # not a PNG
    fail(f"image error: {err}")
if request("GET", "/no/such/path")[0] != 404:
    fail("unknown path")

# Overload and disconnect: A streams a long generation, B waits in the queue (size 1), C gets
# 429; then A's client leaves mid-stream, which cancels A, so B runs and finishes.
long_body = {"model": MODEL, "prompt": "a", "max_tokens": 8000, "ignore_eos": True, "stream": True}
conn_a, resp_a = open_stream(long_body)
first = next(sse_events(resp_a))
if not isinstance(first, dict):
    fail(f"A: {first}")
b_result = {}
threading.Thread(target=lambda: b_result.update(
    r=request("POST", "/v1/completions", {"model": MODEL, "prompt": "b", "max_tokens": 3}))).start()
deadline = time.time() + 10
while metric("recur_queue_depth") < 1:
    if time.time() > deadline:
        fail("B never reached the queue")
    time.sleep(0.01)
status, headers, body = request("POST", "/v1/completions", {"model": MODEL, "prompt": "c", "max_tokens": 3})
if status != 429 or "Retry-After" not in headers or json.loads(body)["error"]["code"] != "queue_full":
    fail(f"overload: expected 429 with Retry-After, got {status} {headers} {body!r}")
conn_a.sock.shutdown(2)
conn_a.close()
deadline = time.time() + 20
while "r" not in b_result:
    if time.time() > deadline:
        fail("B did not finish after A's client left")
    time.sleep(0.01)
if b_result["r"][0] != 200:
    fail(f"B: {b_result['r']}")
if metric("recur_requests_cancelled_total") < 1:
    fail("A's generation was not cancelled")
if request("GET", "/health")[0] != 200:
    fail("unhealthy after the disconnect")
print("serve_client: ok")
