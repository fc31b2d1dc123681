# End-to-end tests of `recur analyze overlap|breakdown|diff|locks|critical-path`
# (tests/analyze_cli_test.sh). The `hta` verb has its own test.
if(RECUR_BUILD_TESTS)
  add_test(NAME analyze_cli
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/analyze_cli_test.sh $<TARGET_FILE:recur>
                   ${CMAKE_SOURCE_DIR}/../shared/testdata/hta)
  set_tests_properties(analyze_cli PROPERTIES LABELS "e2e")
endif()
