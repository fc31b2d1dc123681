#!/usr/bin/python3
"""Peak RSS and wall time of the trace verbs on one large trace, for several recur binaries,
interleaved: each round runs every verb with every binary (the binaries' order alternates
between rounds), so load drifts hit all of them alike. Prints per verb and binary the median
and [min..max] of wall seconds and peak RSS, and the peak over the file size (diff reads the
file twice: its ratio is also given over both inputs). For issue #24's bound (1 GB of a real
trace analyzes in at most 1.5x its size; docs/performance.md, "A 1 GB trace made of a real one").
Usage: trace_memory_at_scale.py [--only VERB] TRACE ROUNDS LABEL=BINARY [LABEL=BINARY ...]
(--only "analyze diff": that verb alone)
Make TRACE with benchmarks/scale_real_trace.py."""
import os
import statistics
import subprocess
import sys
import time


def verbs(trace: str, only: str | None = None) -> list[tuple[str, list[str]]]:
    every = [
        ("trace stats", ["trace", "stats", trace]),
        ("analyze breakdown", ["analyze", "breakdown", "--top", "5", trace]),
        ("analyze critical-path", ["analyze", "critical-path", "--end", "name~^ProfilerStep", trace]),
        ("analyze overlap", ["analyze", "overlap", trace, "cat=kernel", "cat=cpu_op"]),
        ("analyze hta", ["analyze", "hta", trace]),
        ("analyze diff", ["analyze", "diff", trace, trace]),
    ]
    return [v for v in every if only is None or v[0] == only]


def run(binary: str, args: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one run."""
    start = time.monotonic()
    proc = subprocess.Popen([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)}: exit {proc.returncode}: {err.strip()}")
    return wall, usage.ru_maxrss * 1024


def summary(values: list[float], fmt: str) -> str:
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}..{fmt.format(max(values))}]"


def main() -> None:
    argv = sys.argv[1:]
    only = None
    if argv[:1] == ["--only"]:
        only, argv = argv[1], argv[2:]
    if len(argv) < 3:
        sys.exit(__doc__)
    trace, rounds = argv[0], int(argv[1])
    binaries = [tuple(a.split("=", 1)) for a in argv[2:]]
    if not verbs(trace, only):
        sys.exit(f"--only {only}: not one of {[v[0] for v in verbs(trace)]}")
    size = os.path.getsize(trace)
    results: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for r in range(rounds):
        order = binaries if r % 2 == 0 else binaries[::-1]
        for name, args in verbs(trace, only):
            for label, binary in order:
                wall, rss = run(binary, args)
                results.setdefault((name, label), []).append((wall, rss))
                print(f"round {r + 1} {name} {label}: {wall:.2f} s {rss / 1e9:.3f} GB", file=sys.stderr, flush=True)
    print(f"{trace}: {size / 1e6:.0f} MB, {rounds} interleaved rounds; medians [min..max]\n")
    print("| verb | binary | wall s | peak RSS GB | peak / file |")
    print("| --- | --- | --- | --- | --- |")
    for name, _ in verbs(trace, only):
        for label, _ in binaries:
            runs = results[(name, label)]
            walls = [w for w, _ in runs]
            gbs = [m / 1e9 for _, m in runs]
            ratio = statistics.median(m for _, m in runs) / size
            note = f" ({ratio / 2:.2f}x of both inputs)" if name == "analyze diff" else ""
            print(f"| `{name}` | {label} | {summary(walls, '{:.2f}')} | {summary(gbs, '{:.3f}')} | {ratio:.2f}x{note} |")


if __name__ == "__main__":
    main()
