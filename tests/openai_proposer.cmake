# `recur agent run --proposer openai:URL` against `recur serve` (a tiny random-weight model):
# nonsense answers are refused and fed back, limits stop the run, resume replays.
if(RECUR_BUILD_TESTS)
  add_test(NAME openai_proposer_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/openai_proposer_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(openai_proposer_cli_test PROPERTIES LABELS "e2e" TIMEOUT 120)
endif()
