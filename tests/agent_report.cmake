# End-to-end test of `recur agent report` (tests/agent_report_cli_test.sh): the CLI, and the page
# as headless Chromium renders it. Skipped (exit 77) where Chromium is not installed.
if(RECUR_BUILD_TESTS AND TARGET agent_report_sample)
  add_test(NAME agent_report_cli_test
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_report_cli_test.sh $<TARGET_FILE:recur>
                   $<TARGET_FILE:agent_report_sample>)
  set_tests_properties(agent_report_cli_test PROPERTIES LABELS "e2e" SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
