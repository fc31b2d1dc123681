# `recur candidate build` on a fixture repository: good, wrong, stale, broken and cheating patches.
if(RECUR_BUILD_TESTS)
  add_test(NAME candidate_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/candidate_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(candidate_cli_test PROPERTIES LABELS "e2e" TIMEOUT 120)
endif()
# A command proposer's patch action is built as a candidate and its record fed back; resume replays it.
if(RECUR_BUILD_TESTS)
  add_test(NAME proposer_patch_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/proposer_patch_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(proposer_patch_cli_test PROPERTIES LABELS "e2e" TIMEOUT 120)
endif()
