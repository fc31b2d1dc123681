# Sourced after RECUR_CACHE_DIR is set: seeds that fresh cache with the roofline the
# sysinfo_cache fixture measured once per ctest run (tests/sysinfo_cache.cmake), so a test does
# not spend ~3 s re-measuring the machine. Run outside ctest (RECUR_TEST_SYSINFO unset), a test
# measures as before. Tests whose subject is the measurement (Cli.Sysinfo*) do not use this.
if [ -n "${RECUR_TEST_SYSINFO:-}" ] && [ -f "$RECUR_TEST_SYSINFO" ] && [ ! -e "$RECUR_CACHE_DIR/sysinfo.json" ]; then
  cp "$RECUR_TEST_SYSINFO" "$RECUR_CACHE_DIR/sysinfo.json"
fi
