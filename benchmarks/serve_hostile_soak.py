#!/usr/bin/env python3
"""The hostile soak of issue #24 against a running `recur serve` (benchmarks/serve_hostile_soak.sh).

Usage: serve_hostile_soak.py PORT SERVER_PID DURATION_S OUT_JSON
For DURATION_S at once: 64 normal clients (non-streamed completions, keep-alive), 16 that send a
long generation and give up after 1 s, 40 slow-header clients (one header line every 2 s,
reconnecting when cut), one client sending chunked bodies far over --max-body, and a /health
probe every 50 ms on a fresh connection. /metrics (recur_requests_cancelled_total) is read every
100 ms to time each abandoned request's cancellation; VmRSS every second.
Prints a summary, writes it as JSON; exits 1 when a normal client got a 5xx or no answer, the
/health p99 is 100 ms or more, an abandoned request took over 1 s to cancel, or RSS grew over
32 MB after the first 10 s.
"""
import http.client
import json
import socket
import sys
import threading
import time

PORT, PID, DURATION, OUT = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
HOST = "127.0.0.1"
NORMAL = {"model": "tiny", "prompt": "The quick brown fox jumps over the lazy dog", "max_tokens": 16,
          "temperature": 0}
LONG = {"model": "tiny", "prompt": "Once upon a time", "max_tokens": 4000, "ignore_eos": True, "temperature": 0}
HEADERS = {"Content-Type": "application/json"}
start = time.monotonic()
end = start + DURATION
lock = threading.Lock()
normal = {"2xx": 0, "4xx": 0, "5xx": 0, "no_answer": 0, "latency_s": []}
abandon_times = []
health_ms = []
health_failures = [0]
cancel_samples = []  # (t, cancelled_total)
rss_samples = []     # (t, kB)
slow = {"connections": 0, "cut_with_408": 0}
chunked = {"bodies": 0, "refused_413": 0, "bytes_sent": 0}


def now():
    return time.monotonic() - start


def normal_client():
    conn = None
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(HOST, PORT, timeout=120)
            conn.request("POST", "/v1/completions", body=json.dumps(NORMAL), headers=HEADERS)
            r = conn.getresponse()
            r.read()
            key = f"{r.status // 100}xx"
            with lock:
                normal[key] = normal.get(key, 0) + 1
                if r.status == 200:
                    normal["latency_s"].append(time.monotonic() - t0)
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            with lock:
                normal["no_answer"] += 1
            if conn is not None:
                conn.close()
            conn = None


def abandoning_client():
    while time.monotonic() < end:
        conn = http.client.HTTPConnection(HOST, PORT, timeout=1)
        try:
            conn.request("POST", "/v1/completions", body=json.dumps(LONG), headers=HEADERS)
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass
        try:
            conn.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass
        conn.close()
        with lock:
            abandon_times.append(now())


def slow_header_client():
    while time.monotonic() < end:
        try:
            s = socket.create_connection((HOST, PORT), timeout=5)
        except OSError:
            time.sleep(0.5)
            continue
        with lock:
            slow["connections"] += 1
        try:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\n")
            while time.monotonic() < end:
                time.sleep(2)
                s.sendall(b"X-Slow: one line every 2 s\r\n")
        except OSError:
            try:
                s.settimeout(1)
                if s.recv(64).startswith(b"HTTP/1.1 408"):
                    with lock:
                        slow["cut_with_408"] += 1
            except OSError:
                pass
        s.close()


def chunked_client():
    piece = b"10000\r\n" + b"a" * 0x10000 + b"\r\n"  # 64 KiB chunks, up to 100 MB per body
    while time.monotonic() < end:
        try:
            s = socket.create_connection((HOST, PORT), timeout=5)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
            with lock:
                chunked["bodies"] += 1
            s.settimeout(0.01)
            answer = b""
            for _ in range(1600):
                try:
                    s.sendall(piece)
                    with lock:
                        chunked["bytes_sent"] += len(piece)
                    answer += s.recv(256)
                    if answer:
                        break
                except socket.timeout:
                    continue
                except OSError:
                    break
            s.settimeout(1)
            try:
                answer += s.recv(256)
            except OSError:
                pass
            if answer.startswith(b"HTTP/1.1 413"):
                with lock:
                    chunked["refused_413"] += 1
            s.close()
        except OSError:
            time.sleep(0.1)


def health_probe():
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            c = http.client.HTTPConnection(HOST, PORT, timeout=5)
            c.request("GET", "/health")
            ok = c.getresponse().status == 200
            c.close()
        except (OSError, http.client.HTTPException):
            ok = False
        ms = (time.monotonic() - t0) * 1000
        with lock:
            if ok:
                health_ms.append(ms)
            else:
                health_failures[0] += 1
        time.sleep(0.05)


def cancelled_total():
    c = http.client.HTTPConnection(HOST, PORT, timeout=5)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith("recur_requests_cancelled_total "):
            return float(line.split()[1])
    return 0.0


def metrics_sampler(stop_at):
    while time.monotonic() < stop_at:
        try:
            cancel_samples.append((now(), cancelled_total()))
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.1)


def rss_sampler(stop_at):
    while time.monotonic() < stop_at:
        with open(f"/proc/{PID}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss_samples.append((now(), int(line.split()[1])))
        time.sleep(1)


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


base_cancelled = cancelled_total()
threads = [threading.Thread(target=f, daemon=True) for f in
           [normal_client] * 64 + [abandoning_client] * 16 + [slow_header_client] * 40 + [chunked_client, health_probe]]
samplers = [threading.Thread(target=metrics_sampler, args=(end + 3,), daemon=True),
            threading.Thread(target=rss_sampler, args=(end + 3,), daemon=True)]
for t in threads + samplers:
    t.start()
for t in threads:
    t.join(timeout=max(0, end - time.monotonic()) + 130)
for t in samplers:
    t.join()

# The k-th abandon is cancelled at the first sample where the counter (less its start) reached k.
lags = []
for k, t_abandon in enumerate(sorted(abandon_times), start=1):
    seen = next((t for t, n in cancel_samples if n - base_cancelled >= k), None)
    lags.append(None if seen is None else max(0.0, seen - t_abandon))
uncancelled = sum(1 for x in lags if x is None)
steady = [kb for t, kb in rss_samples if t >= 10]
summary = {
    "duration_s": DURATION,
    "normal": {k: v for k, v in normal.items() if k != "latency_s"},
    "normal_latency_s": {"p50": pct(normal["latency_s"], 50), "p99": pct(normal["latency_s"], 99)},
    "health": {"probes": len(health_ms), "failed": health_failures[0], "p50_ms": pct(health_ms, 50),
               "p99_ms": pct(health_ms, 99), "max_ms": max(health_ms) if health_ms else None},
    "abandoned": {"requests": len(abandon_times), "never_cancelled": uncancelled,
                  "cancel_lag_p50_s": pct([x for x in lags if x is not None], 50),
                  "cancel_lag_max_s": max([x for x in lags if x is not None], default=None)},
    "slow_header": slow,
    "chunked_oversize": chunked,
    "rss_mb": {"at_10s": steady[0] / 1024 if steady else None, "end": steady[-1] / 1024 if steady else None,
               "max": max(steady) / 1024 if steady else None},
}
json.dump(summary, open(OUT, "w"), indent=1)
print(json.dumps(summary, indent=1))
problems = []
if normal["5xx"] or normal["no_answer"]:
    problems.append("normal clients got 5xx or no answer")
if health_failures[0] or not health_ms or pct(health_ms, 99) >= 100:
    problems.append("/health p99 >= 100 ms or a probe failed")
if uncancelled or any(x is not None and x > 1.0 for x in lags):
    problems.append("an abandoned request took over 1 s to cancel")
if steady and (steady[-1] - steady[0]) / 1024 > 32:
    problems.append("RSS grew over 32 MB after 10 s")
for p in problems:
    print("FAIL:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
