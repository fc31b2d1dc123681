# End-to-end test of `recur mcp` (a whole episode driven to a passing gate in each protocol era).
if(RECUR_BUILD_TESTS)
  add_test(NAME mcp_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/mcp_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(mcp_cli_test PROPERTIES LABELS "e2e" TIMEOUT 300)
endif()
# The official TypeScript SDK client against `recur mcp` (tests/npm; skips where node/npm are absent).
recur_e2e_test(mcp_sdk_test TIMEOUT 180)
