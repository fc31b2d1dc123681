#!/usr/bin/python3
"""Writes a large trace from a real one: its traceEvents repeated N times, each copy shifted in
time past the one before (same threads, same names, same nesting) and its ids past the copy
before's (flow ids, correlation and External id: a launch still joins only its own kernel and a
flow its own end), as a long profiling run of the same steps would look. For the analyses'
memory at scale (docs/performance.md, "A 1 GB trace made of a real one").
Usage: scale_real_trace.py INPUT(.json|.json.gz) OUTPUT.json TARGET_MB"""
import gzip
import json
import sys

# Args that link events (a launch to its kernel, an op to its launches).
ID_ARGS = ("correlation", "External id")


def main() -> None:
    src, out, target_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    opener = gzip.open if src.endswith(".gz") else open
    with opener(src, "rt") as f:
        trace = json.load(f)
    events = trace.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed)
    # Per copy, ids move past every id the trace holds.
    id_step = 1 + max([e["id"] for e in events if isinstance(e.get("id"), int)] +
                      [v for e in events for k, v in e.get("args", {}).items()
                       if k in ID_ARGS and isinstance(v, int)] + [0])
    copy_bytes = len(json.dumps(events, separators=(",", ":")))
    copies = max(1, int(target_mb * 1e6 / copy_bytes))
    with open(out, "w") as f:
        head = json.dumps(trace, separators=(",", ":"))
        f.write(head[:-1] + (',' if len(trace) else '') + '"traceEvents":[')
        first = True
        for k in range(copies):
            for e in events:
                if k and "ts" in e and isinstance(e["ts"], (int, float)):
                    e = dict(e, ts=e["ts"] + k * span * 1.01)
                    if isinstance(e.get("id"), int):
                        e["id"] += k * id_step
                    args = e.get("args")
                    if args and any(isinstance(args.get(a), int) for a in ID_ARGS):
                        e["args"] = {a: v + k * id_step if a in ID_ARGS and isinstance(v, int) else v
                                     for a, v in args.items()}
                elif k and e.get("ph") == "M":
                    continue  # metadata once
                f.write(("" if first else ",") + json.dumps(e, separators=(",", ":")))
                first = False
        f.write("]}")
    print(f"{out}: {copies} copies of {len(events)} events ({copy_bytes / 1e6:.1f} MB each)")


if __name__ == "__main__":
    main()
