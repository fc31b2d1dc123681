#!/usr/bin/env bash
# Issue #24: memory and time linear in nesting depth. 20,000 B events that never close (each
# closed at track end by the reader) and 20,000 nested X events, the same name at every level
# so every zone has its own ever longer path. Stored as text, those paths took 5.3-5.6 GB and
# 22 s; interned, the analyses finish in well under a second and 200 MB. Address space is
# capped (ulimit -v) so a quadratic regression fails here instead of swapping; the outputs are
# checked, not timed (benchmarks/deep_trace.py and docs/performance.md hold the figures).
#   tests/trace_deep_nesting.sh RECUR_BINARY SOURCE_DIR
set -uo pipefail
recur=${1:?usage: trace_deep_nesting.sh RECUR SOURCE_DIR}
src=${2:?usage: trace_deep_nesting.sh RECUR SOURCE_DIR}
. "$(dirname "$0")/testlib.sh"
tmp=$T
depth=20000
gen="$src/benchmarks/deep_trace.py"
/usr/bin/python3 "$gen" --kind begin --depth $depth --name f -o "$tmp/b.json" || fail "generator (begin)"
/usr/bin/python3 "$gen" --kind complete --depth $depth --name f -o "$tmp/x.json" || fail "generator (complete)"

# run NAME CMD...: runs CMD under a 1.5 GiB address-space cap and 20 s, output in $tmp/NAME.
run() {
  local name=$1; shift
  ( ulimit -v $((1536 * 1024)); timeout 20 "$@" ) >"$tmp/$name" 2>"$tmp/$name.err"
  local rc=$?
  [ "$rc" -eq 0 ] || fail "$name: exit $rc: $* -- $(head -c 300 "$tmp/$name.err")"
}

run b_name "$recur" analyze breakdown --json "$tmp/b.json"
run b_path "$recur" analyze breakdown --by path --json "$tmp/b.json"
run x_path "$recur" analyze breakdown --by path --json "$tmp/x.json"
run x_path_text "$recur" analyze breakdown --by path "$tmp/x.json"
run x_select "$recur" analyze breakdown --by path --select 'path=f/f/f' --json "$tmp/x.json"
run x_cp "$recur" analyze critical-path --json "$tmp/x.json"
run x_locks "$recur" analyze locks --json "$tmp/x.json"
run x_diff "$recur" analyze diff --json "$tmp/x.json" "$tmp/b.json"
run x_diff_root "$recur" analyze diff --root 'name=f' "$tmp/x.json" "$tmp/x.json"

/usr/bin/python3 - "$tmp" $depth <<'PY' || fail "outputs"
import json, sys
tmp, depth = sys.argv[1], int(sys.argv[2])
load = lambda n: json.load(open(f"{tmp}/{n}"))
# By name: one row holding every zone.
d = load("b_name")["details"]
assert d["zones"] == depth and len(d["rows"]) == 1, (d["zones"], len(d["rows"]))
assert d["rows"][0]["key"] == "f" and d["rows"][0]["count"] == depth, d["rows"][0]
assert any("B without E closed at track end" in n for n in load("b_name")["notes"])
# By path: a row per depth; the outermost is "f", the next "f/f" (equal self times: ties go in
# path order, shorter first). The last B closes at its own ts: zero length, so it is a root "f"
# (a zone starting where another ends is its sibling), making the B trace one path shorter.
for name, paths in (("b_path", depth - 1), ("x_path", depth)):
    rows = load(name)["details"]["rows"]
    assert len(rows) == paths, (name, len(rows))
    assert rows[0]["key"] == "f" and rows[1]["key"] == "f/f", (name, rows[0]["key"][:20], rows[1]["key"][:20])
    assert rows[0]["count"] == (2 if name == "b_path" else 1) and all(r["count"] == 1 for r in rows[1:]), name
    named = [r for r in rows if r["key"] is not None]
    assert len(named) >= 20 and all(len(r["key"]) == 2 * i + 1 for i, r in enumerate(named[:50])), name
# X nesting: zone i spans 2*(depth-i) µs from 1000+i: self time 1 µs each side but the innermost.
rows = load("x_path")["details"]["rows"]
assert abs(rows[0]["total_us"] - 2 * depth) < 1e-6 and abs(rows[0]["self_us"] - 2) < 1e-6, rows[0]
# path=f/f/f: every path ending in those three segments (all but the two outermost).
d = load("x_select")["details"]
assert d["zones"] == depth - 2, d["zones"]
# The critical path runs through every level (two pieces of each zone but the innermost), and
# its per-zone paths are cut to their last segments.
cp = load("x_cp")["details"]
assert len(cp["components"]) == depth, len(cp["components"])
assert all(len(s["zone"]["path"]) <= 4096 for s in cp["segments"] if "zone" in s)
# diff X vs B: the paths align level by level (B is one level shorter: its last zone is a root).
rows = load("x_diff")["details"]["rows"]
assert len(rows) == depth, len(rows)
assert sum(1 for r in rows if r["base_count"] == 1 and r["cand_count"] >= 1) == depth - 1
PY
grep -Eq "^ +f/f +1 " "$tmp/x_path_text" || fail "text --by path lacks the row f/f: $(head -c 300 "$tmp/x_path_text")"

finish trace_deep_nesting
