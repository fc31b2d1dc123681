# End-to-end test of `recur transfer bench|peer` (tests/transfer_cli_test.sh).
if(RECUR_BUILD_TESTS)
  add_test(NAME transfer_cli COMMAND ${CMAKE_CURRENT_LIST_DIR}/transfer_cli_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(transfer_cli PROPERTIES LABELS "e2e" TIMEOUT 60)
endif()
