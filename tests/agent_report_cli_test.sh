#!/usr/bin/env bash
# End-to-end test of `recur agent report`: the page a synthetic run (agent_report_sample) gets,
# --json counts, exit codes (0 written, 1 no journal or run, 2 bad usage), and what headless
# Chromium renders from it: the sections and their element counts, the final config values,
# escaped journal text shown as text (a planted <script> must not run), links that resolve
# from the report's folder, and nothing loaded from elsewhere.
# Exit 77 (ctest SKIP) when Chromium is not installed and every non-browser check passed.
#   tests/agent_report_cli_test.sh RECUR_BINARY AGENT_REPORT_SAMPLE_BINARY
set -uo pipefail
recur=${1:?usage: agent_report_cli_test.sh RECUR SAMPLE}
sample=${2:?usage: agent_report_cli_test.sh RECUR SAMPLE}
# The test changes folder below: binaries given relative to this one must still be found.
[[ $recur == /* ]] || recur=$PWD/$recur
[[ $sample == /* ]] || sample=$PWD/$sample
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect CODE CMD...: runs CMD, stdout to $tmp/out, stderr to $tmp/err, checks the exit code.
expect() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" -eq "$want" ] || fail "exit $got (want $want): $* -- $(head -c 300 "$tmp/err")"
}
contains() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 300 "$1")"; }

"$sample" "$tmp/run" >/dev/null || { echo "FAIL: $sample could not write the sample journal" >&2; exit 1; }
cd "$tmp/run" || exit 1

# The default output: <journal folder>/<run name>/report.html, printed.
expect 0 "$recur" agent report kda-sample --journal journal.db
contains "$tmp/out" "kda-sample/report.html"
[ -s kda-sample/report.html ] || fail "kda-sample/report.html was not written"

# --json: the path and the counts; by id, to a file elsewhere.
expect 0 "$recur" agent report 1 --journal journal.db --out "$tmp/elsewhere/page.html" --json
python3 - "$tmp/out" "$tmp/elsewhere/page.html" <<'PY' || fail "--json output: $(head -c 600 "$tmp/out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["report"] == sys.argv[2], j["report"]
assert j["run"]["name"] == "kda-sample" and j["experiments"] == 7, j
assert j["decisions"] == {"keep": 2, "revert": 1, "none": 4}, j["decisions"]
assert j["gate_evaluations"] == 3 and j["gate_metrics"] == 2 and j["artifacts"] == 6, j
assert abs(j["probe_cost_s"] - 27.6) < 1e-9 and j["bytes"] > 0, j
PY
[ -s "$tmp/elsewhere/page.html" ] || fail "--out file was not written"

# Errors: no such run, no journal (and none created), no RUN.
expect 1 "$recur" agent report no-such-run --journal journal.db
contains "$tmp/err" "no run 'no-such-run'"
expect 1 "$recur" agent report kda-sample --journal "$tmp/none.db"
[ ! -e "$tmp/none.db" ] || fail "a missing journal was created"
expect 2 "$recur" agent report

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
if ! command -v chromium >/dev/null 2>&1; then
  echo "SKIP: chromium is not installed (scripts/setup.sh installs it); the CLI checks passed"
  exit 77
fi

# What a browser makes of the page (no JavaScript in it; the DOM after parsing).
timeout 60 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/chromium" \
  --dump-dom "file://$tmp/run/kda-sample/report.html" >"$tmp/dom.html" 2>"$tmp/chromium.log"
[ -s "$tmp/dom.html" ] || fail "chromium rendered nothing: $(tail -c 600 "$tmp/chromium.log")"

python3 - "$tmp/dom.html" "$tmp/run/kda-sample" <<'PY' || fail "rendered DOM checks"
import os, sys
from html.parser import HTMLParser
from urllib.parse import unquote

class Dom(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements = []  # (tag, attrs, text inside)
        self.stack = []
        self.text = []
    def handle_starttag(self, tag, attrs):
        e = [tag, dict(attrs), ""]
        self.elements.append(e)
        if tag not in ("br", "meta", "rect", "line", "circle", "polyline"):
            self.stack.append(e)
    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
    def handle_data(self, data):
        self.text.append(data)
        for e in self.stack:
            e[2] += data

dom = Dom()
dom.feed(open(sys.argv[1], encoding="utf-8").read())
report_dir = sys.argv[2]
errors = []
def check(cond, what):
    if not cond:
        errors.append(what)
def having(tag, cls=None, **attrs):
    out = []
    for t, a, text in dom.elements:
        if t != tag or (cls and cls not in a.get("class", "").split()):
            continue
        if all(a.get(k.replace("_", "-")) == v for k, v in attrs.items()):
            out.append((a, text))
    return out

for section in ("summary", "timeline", "metrics", "decisions", "config", "artifacts"):
    check(len([1 for t, a, _ in dom.elements if a.get("id") == section]) == 1, f"one #{section}")
check(len(having("details", "experiment")) == 7, "7 experiments (details.experiment)")
check(len(having("details", "decision-keep")) == 2, "2 kept experiments")
check(len(having("g", "tl-row")) == 7, "7 timeline rows")
check(len(having("rect", "decision-revert")) == 1, "1 reverted bar")
check(len(having("figure", "metric")) == 2, "2 gate metric charts")
check(len(having("circle", "point")) == 6, "6 gate points")
check(len(having("line", "ci")) == 6, "6 CI bars")
check(len(having("line", "threshold")) == 2, "2 threshold lines")
check(len(having("tr", "changed")) == 2, "2 changed knobs")

# The final configuration, knob by knob: the cells of the row with data-knob=KNOB.
def cell(knob, cls):
    rows = [i for i, (t, a, _) in enumerate(dom.elements) if t == "tr" and a.get("data-knob") == knob]
    if len(rows) != 1:
        return None
    for t, a, text in dom.elements[rows[0] + 1:]:
        if t == "tr":
            break
        if t == "td" and cls in a.get("class", "").split():
            return text
    return None
for knob, base, final in (("kernel.kda_decode.variant", "vtile", "hoisted"),
                          ("kernel.gemm.variant", "(default)", "avx2"),
                          ("engine.threads", "2", "2"),  # step 3's change was reverted
                          ("engine.tp", "1", "1")):
    check(cell(knob, "base") == base and cell(knob, "final") == final,
          f"{knob}: base {cell(knob, 'base')!r} final {cell(knob, 'final')!r}, want {base!r} -> {final!r}")
check(len([1 for t, a, _ in dom.elements if t == "tr" and "data-knob" in a]) == 4, "4 knobs in the config table")

# The planted script is text, not an element, and did not run.
text = "".join(dom.text)
check(not any(t == "script" for t, _, _ in dom.elements), "no <script> element")
check("<script>document.body.setAttribute('data-pwned','1')</script> & \"quotes\"" in text,
      "the hypothesis's script shown as text")
body = [a for t, a, _ in dom.elements if t == "body"]
check(body and "data-pwned" not in body[0], "the planted script did not run")
check("<b>not bold</b>" in text and all("not bold" not in x for _, x in having("b")), "a note's <b> is text")

# Self-contained: nothing fetched from anywhere.
check(not any("src" in a for _, a, _ in dom.elements), "no src attributes")
check(not any(t == "link" for t, _, _ in dom.elements), "no <link> elements")
check(not any(a.get("href", "").startswith(("http:", "https:", "//")) for _, a, _ in dom.elements), "no remote hrefs")

# Artifact links resolve from the report's folder, except the one recorded as missing.
links = having("a", "artifact")
check(len(links) == 12, f"12 artifact links (6 in the list, 6 in the experiments), got {len(links)}")
resolved = {text: os.path.exists(os.path.join(report_dir, unquote(a["href"]))) for a, text in links}
check(resolved.get("traces/gate0.trace.json") is True, f"relative trace link: {resolved}")
check(any(k.endswith("abs/step2 trace.json") and v for k, v in resolved.items()), f"absolute trace link: {resolved}")
check(resolved.get("kda-sample/missing-report.html") is False, f"missing report: {resolved}")

for e in errors:
    print("FAIL (DOM):", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "agent report CLI and Chromium checks passed"
