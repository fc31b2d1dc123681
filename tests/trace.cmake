# End-to-end tests of `recur trace stats|convert|merge` (tests/trace_cli_test.sh).
if(RECUR_BUILD_TESTS)
  add_test(NAME trace_cli
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/trace_cli_test.sh $<TARGET_FILE:recur>
                   ${CMAKE_SOURCE_DIR}/../shared/testdata/hta)
  set_tests_properties(trace_cli PROPERTIES LABELS "e2e")
endif()
# Issue #24: non-regular files, gzip bombs (--max-trace-bytes), recovery notes in the analyses,
# invalid UTF-8 offsets; and nesting 20,000 deep analyzed in linear time and memory.
recur_e2e_test(trace_hostile_inputs TIMEOUT 60)
recur_e2e_test(trace_deep_nesting TIMEOUT 60)
