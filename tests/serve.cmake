# End-to-end test of `recur serve` (curl and Python's standard library) and `recur loadgen`.
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(serve_cli_test PROPERTIES LABELS "e2e" TIMEOUT 120)
endif()
