#!/bin/sh
# A roofline cache measured on a loaded machine is not trusted silently (probe/sysinfo_conditions.h):
# `recur sysinfo` measures it again when the machine is quiet now, or says DISTURBED and why.
# Usage: sysinfo_disturbed_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$(realpath "$1")"
. "$(dirname "$0")/testlib.sh"
"$RECUR" sysinfo --json >/dev/null 2>"$T/err" || fail "sysinfo: $(cat "$T/err")"
# Claim every cached roofline was measured at load 1000, just now.
/usr/bin/python3 - "$RECUR_CACHE_DIR/sysinfo.json" <<'PY' || fail "could not rewrite the cache"
import json, sys, time
p = sys.argv[1]
c = json.load(open(p))
for r in c["rooflines"].values():
    r["conditions"] = {"load_before": 1000.0, "load_after": 1000.0, "logical_cpus": c["machine"]["logical_cpus"],
                       "measured_unix": int(time.time())}
json.dump(c, open(p, "w"))
PY
out=$("$RECUR" sysinfo --json 2>"$T/err") || fail "sysinfo on the disturbed cache: $(cat "$T/err")"
echo "$out" | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
remeasured = not j["from_cache"]
flagged = j.get("disturbed") and "load 1000.00" in j["disturbed"]
assert remeasured or flagged, "a cache measured at load 1000 was used without a word: %s" % {k: j.get(k) for k in ("from_cache", "disturbed", "conditions")}
' || fail "sysinfo trusted a disturbed cache"
if echo "$out" | grep -q '"from_cache": *true'; then
  "$RECUR" sysinfo 2>/dev/null | grep -q "DISTURBED: load 1000.00" || fail "sysinfo's text should say DISTURBED"
fi
finish sysinfo_disturbed_test
