# End-to-end tests of `recur gate` and `recur journal show`: exit codes, --json Feedback, spec
# errors with positions, a real gate run on a tiny synthetic model, a journal written by the
# crash test's child.
if(RECUR_BUILD_TESTS AND TARGET journal_crash_child)
  add_test(NAME gate_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/gate_cli_test.sh $<TARGET_FILE:recur>
           $<TARGET_FILE:journal_crash_child> ${CMAKE_SOURCE_DIR})
  set_tests_properties(gate_cli_test PROPERTIES LABELS "e2e" TIMEOUT 120)
endif()
