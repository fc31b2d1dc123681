# End-to-end test of `recur analyze hta` (tests/analyze_hta_cli_test.sh): HTA's figures from
# the CLI on the HTA test data, --json, exit codes and errors.
if(RECUR_BUILD_TESTS)
  add_test(NAME analyze_hta_cli
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/analyze_hta_cli_test.sh $<TARGET_FILE:recur>
                   ${CMAKE_SOURCE_DIR}/../shared/testdata/hta)
  set_tests_properties(analyze_hta_cli PROPERTIES LABELS "e2e")
endif()
