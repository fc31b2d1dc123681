# End-to-end tests of the probe verbs (recur kernels, check, bench): exit codes, --json Feedback.
if(RECUR_BUILD_TESTS)
  add_test(NAME probe_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/probe_cli_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(probe_cli_test PROPERTIES LABELS "e2e" TIMEOUT 120)
endif()
# Programs started by probes die with a killed recur (core/spawn.h).
recur_e2e_test(probe_children_test TIMEOUT 60)
# A roofline measured under load is re-measured or flagged (probe/sysinfo_conditions.h).
recur_e2e_test(sysinfo_disturbed_test TIMEOUT 60)
