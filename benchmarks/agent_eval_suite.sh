#!/usr/bin/env bash
# The agent's score on the whole episode suite (docs/agent.md, "Evaluating a proposer"): every
# episode under episodes/ run by the built-in proposer and by the matched-budget random search,
# REPEAT times each, into one journal; prints the table per proposer and the summary lines, and
# keeps the JSON and the HTML page (each run's report linked) in OUT. Not run by CI (about 25-30
# minutes on a 2-vCPU machine); `tests/episodes_test.sh` runs a short subset there.
#   benchmarks/agent_eval_suite.sh [BUILD_DIR] [REPEAT] [OUT] [-- extra `recur agent eval` flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
repeat=${2:-3}
out=${3:-$root/runs/eval-suite}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"
start=$(date +%s)
"$build/recur" agent eval "$root/episodes" --proposer builtin --proposer random --repeat "$repeat" \
  --journal "$out/journal.db" --html "$out/eval.html" --json "$@" >"$out/eval.json" 2> >(tee "$out/progress.log" >&2)
# The same figures as text, from the JSON (no second run).
/usr/bin/python3 - "$out/eval.json" <<'PYEOF'
import json, statistics, sys
j = json.load(open(sys.argv[1]))
for p in j["proposers"]:
    print(f"\n{p['proposer']}")
    print(f"  {'episode':26} {'expected':11} {'met':>4} {'cause':>5} {'probe s':>8} {'wasted s':>8} {'to pass s':>9}")
    runs = [r for r in j["runs"] if r["proposer"] == p["proposer"]]
    for ep in dict.fromkeys(r["episode"] for r in runs):
        rs = [r for r in runs if r["episode"] == ep]
        named = [r["root_cause_named"] for r in rs if r["root_cause_named"] is not None]
        passes = [r["s_to_pass"] for r in rs if r["s_to_pass"] is not None]
        print(f"  {ep:26} {rs[0]['expected']:11} {sum(r['outcome_met'] for r in rs):>2}/{len(rs)} "
              f"{(str(sum(named)) + '/' + str(len(named))) if named else '-':>5} "
              f"{statistics.median(r['probe_s'] for r in rs):8.1f} {statistics.mean(r['wasted_s'] for r in rs):8.1f} "
              f"{statistics.median(passes) if passes else float('nan'):9.1f}")
    print(f"  summary: {p['summary']}")
PYEOF
echo "wall $(( $(date +%s) - start )) s; JSON $out/eval.json; page $out/eval.html"
