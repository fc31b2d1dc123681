#!/usr/bin/python3
"""Writes a Chrome JSON trace of DEPTH zones nested on one thread (issue #24: memory and time
must stay linear in nesting depth).

  --kind begin     DEPTH "B" events that never close (the reader closes each at track end)
  --kind complete  DEPTH "X" events, each enclosing the next

Every zone has the same name, so every one of them has its own, ever longer, zone path
("step/step/step/..."): the worst case for path storage. Used by benchmarks and by
tests/trace_deep_nesting.sh; figures in docs/performance.md ("Deep nesting").

  /usr/bin/python3 benchmarks/deep_trace.py --kind begin --depth 20000 -o /tmp/deep_b.json
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kind", choices=["begin", "complete"], default="begin")
    ap.add_argument("--depth", type=int, default=20000)
    ap.add_argument("--name", default="aten::linear_forward_with_a_realistic_kineto_length")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    if a.depth < 1:
        sys.exit("deep_trace.py: --depth must be at least 1")
    with open(a.output, "w", encoding="utf-8") as f:
        f.write('{"traceEvents": [\n')
        for i in range(a.depth):
            sep = ",\n" if i + 1 < a.depth else "\n"
            if a.kind == "begin":
                ev = '{"ph":"B","name":"%s","cat":"cpu_op","ts":%d,"pid":1,"tid":1}' % (a.name, 1000 + i)
            else:
                dur = 2 * (a.depth - i)
                ev = '{"ph":"X","name":"%s","cat":"cpu_op","ts":%d,"dur":%d,"pid":1,"tid":1}' % (a.name, 1000 + i, dur)
            f.write(ev + sep)
        f.write("]}\n")


if __name__ == "__main__":
    main()
