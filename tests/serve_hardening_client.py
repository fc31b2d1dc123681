#!/usr/bin/env python3
"""Hostile and careless clients against a running `recur serve` (tests/serve_hardening_test.sh).

Usage: serve_hardening_client.py PORT API_KEY [SECTION...]   (default: all, in this order)
The server runs --http-threads 4 --max-seqs 1 --read-timeout-s 2 --max-body 1048576 on a model
with a long context. Checks, each failing on a server without the fix:
  slow_headers   12 connections dribbling a head byte by byte hold no handler thread: /health
                 and a completion answer; each slow one gets 408 after --read-timeout-s
  busy_handlers  6 streamed generations (more than the 4 handler threads) do not delay /health
  abandoned      a non-streamed client that gives up is cancelled within 1 s (metrics), and the
                 next request is served at once
  deadline       "timeout": 0.5 ends a long generation with 408 request_timeout (an error event
                 then [DONE] when streamed); a bad timeout is a 400 naming it
  body_limits    a declared Content-Length over --max-body is 413 before any body is sent; a
                 chunked body is 413 as soon as it passes the limit; a compressed body is 415
Exits non-zero on the first failure.
"""
import http.client
import json
import socket
import sys
import threading
import time

PORT, KEY = int(sys.argv[1]), sys.argv[2]
AUTH = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json"}
LONG = {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 8000, "ignore_eos": True, "temperature": 0}


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def request(method, path, body=None, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=AUTH)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, payload


def health_ms(what):
    """Times GET /health; fails when it takes over 500 ms (on a quiet server it takes about 1)."""
    t0 = time.monotonic()
    try:
        status, _ = request("GET", "/health", timeout=2)
    except OSError as e:
        fail(f"{what}: /health did not answer within 2 s ({e})")
    ms = (time.monotonic() - t0) * 1000
    if status != 200 or ms > 500:
        fail(f"{what}: /health answered HTTP {status} after {ms:.0f} ms")
    return ms


def metric(name):
    _, text = request("GET", "/metrics")
    for line in text.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def raw(head, timeout=3):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    s.sendall(head.encode())
    return s


def read_status(s):
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0, data


def slow_headers():
    # Slow headers: each connection sends its request head a byte every 0.3 s.
    slow = [raw("POST /v1/completions HTTP/1.1\r\n") for _ in range(12)]
    stop_dribbling = threading.Event()

    def dribble():
        while not stop_dribbling.is_set():
            for s in slow:
                try:
                    s.send(b"X")
                except OSError:
                    pass
            time.sleep(0.3)

    dribbler = threading.Thread(target=dribble, daemon=True)
    dribbler.start()
    time.sleep(0.5)
    for _ in range(5):
        health_ms("12 slow-header clients")
    status, payload = request("POST", "/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 4})
    if status != 200:
        fail(f"completion beside slow clients: HTTP {status}: {payload[:200]!r}")
    time.sleep(2.5)  # past --read-timeout-s 2
    stop_dribbling.set()
    dribbler.join()
    for s in slow:
        got, data = read_status(s)
        if got != 408 or b"request_timeout" not in data:
            fail(f"slow client: expected 408 request_timeout after --read-timeout-s, got {data[:200]!r}")
        s.close()


def busy_handlers():
    # Busy handlers: 6 long streams (4 handler threads) must not delay /health.
    streams = []
    for _ in range(6):
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        c.request("POST", "/v1/completions", body=json.dumps(dict(LONG, stream=True)), headers=AUTH)
        streams.append(c)
    time.sleep(0.5)
    for _ in range(5):
        health_ms("6 streams on 4 handler threads")
    cancelled_before = metric("recur_requests_cancelled_total")
    for c in streams:
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
    deadline = time.monotonic() + 3
    while metric("recur_requests_cancelled_total") < cancelled_before + 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    if metric("recur_requests_cancelled_total") < cancelled_before + 6:
        fail(f"6 streams closed, cancelled metric {cancelled_before} -> {metric('recur_requests_cancelled_total')}")


def abandoned():
    # Abandoned: a non-streamed client gives up after 0.5 s; the generation must stop within 1 s.
    before = metric("recur_requests_cancelled_total")
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=0.5)
    c.request("POST", "/v1/completions", body=json.dumps(LONG), headers=AUTH)
    try:
        c.getresponse()
        fail("the long request finished in 0.5 s: make it longer")
    except socket.timeout:
        pass
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    gone = time.monotonic()
    while metric("recur_requests_cancelled_total") < before + 1 and time.monotonic() - gone < 1.0:
        time.sleep(0.05)
    if metric("recur_requests_cancelled_total") < before + 1:
        fail("a non-streamed request whose client left was not cancelled within 1 s")
    t0 = time.monotonic()
    status, _ = request("POST", "/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 4})
    if status != 200 or time.monotonic() - t0 > 3:
        fail(f"the request after an abandoned one: HTTP {status} after {time.monotonic() - t0:.1f} s")


def deadline():
    # Deadline: the request's timeout.
    t0 = time.monotonic()
    status, payload = request("POST", "/v1/completions", dict(LONG, timeout=0.5))
    err = json.loads(payload).get("error", {})
    if status != 408 or err.get("code") != "request_timeout" or err.get("param") != "timeout" or time.monotonic() - t0 > 3:
        fail(f"timeout 0.5: HTTP {status} after {time.monotonic() - t0:.1f} s: {payload[:300]!r}")
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    conn.request("POST", "/v1/completions", body=json.dumps(dict(LONG, timeout=0.5, stream=True)), headers=AUTH)
    events = [line for line in conn.getresponse().read().decode().split("\n\n") if line]
    conn.close()
    if len(events) < 2 or events[-1] != "data: [DONE]" or json.loads(events[-2][6:]).get("error", {}).get("code") != "request_timeout":
        fail(f"streamed timeout 0.5: last events {events[-2:]!r}")
    for bad, code in ((0, 400), (-1, 400), ("soon", 422)):
        status, payload = request("POST", "/v1/completions", dict(LONG, timeout=bad))
        if status != code or json.loads(payload)["error"]["param"] != "timeout":
            fail(f"timeout {bad!r}: expected HTTP {code} naming 'timeout', got {status}: {payload[:200]!r}")


def body_limits():
    # Body limits.
    t0 = time.monotonic()
    s = raw(f"POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\nContent-Length: 1000000000\r\n\r\n")
    got, data = read_status(s)
    s.close()
    if got != 413 or b"body_too_large" not in data or time.monotonic() - t0 > 1:
        fail(f"Content-Length 1e9 with no body sent: {data[:200]!r} after {time.monotonic() - t0:.1f} s")
    s = raw(f"POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"  # 64 KiB
    sent, got, data = 0, 0, b""
    s.settimeout(0.05)
    while sent < 8 << 20 and not got:
        try:
            s.sendall(chunk)
            sent += 0x10000
            got, data = read_status(s)
        except OSError:
            s.settimeout(1)
            got, data = read_status(s)
            break
    s.close()
    if got != 413 or b"body_too_large" not in data or sent > 2 << 20:
        fail(f"chunked body: after {sent} bytes sent: {data[:200]!r}")
    s = raw(f"POST /v1/completions HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\n\r\n")
    got, data = read_status(s)
    s.close()
    if got != 415:
        fail(f"gzip body: {data[:200]!r}")


SECTIONS = [slow_headers, busy_handlers, abandoned, deadline, body_limits]
for section in SECTIONS:
    if len(sys.argv) <= 3 or section.__name__ in sys.argv[3:]:
        section()
health_ms("after everything")
print("ok")
