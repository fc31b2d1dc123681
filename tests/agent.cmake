# End-to-end tests of `recur agent run/resume`: kill -9 mid-episode and resume (journal
# invariants), exit codes, usage errors.
if(RECUR_BUILD_TESTS)
  add_test(NAME agent_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(agent_cli_test PROPERTIES LABELS "e2e" TIMEOUT 300)
endif()
# Both shipped episodes solved from their starting configurations with a reduced budget.
if(RECUR_BUILD_TESTS)
  add_test(NAME episodes_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/episodes_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  # Alone (RUN_SERIAL): its speed gates time kernels and the engine, and two other tests on
  # two cores pushed a 0.81 ratio to 0.93 and a 2.9 ratio to 1.75 (both failing their bounds).
  set_tests_properties(episodes_test PROPERTIES LABELS "e2e" TIMEOUT 600 RUN_SERIAL TRUE)
endif()
# An external command proposer that follows `next` solves kda-replayssm; refusals are fed back.
if(RECUR_BUILD_TESTS)
  add_test(NAME proposer_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/proposer_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(proposer_cli_test PROPERTIES LABELS "e2e" TIMEOUT 300)
endif()
# `recur agent eval`: a small suite scored for the built-in and random proposers, --verify, errors.
if(RECUR_BUILD_TESTS)
  add_test(NAME agent_eval_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/agent_eval_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(agent_eval_cli_test PROPERTIES LABELS "e2e" TIMEOUT 300)
endif()
# The shipped suite holds: every episode's start fails its gate and its expected root cause passes.
if(RECUR_BUILD_TESTS)
  add_test(NAME episodes_expect_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/episodes_expect_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(episodes_expect_test PROPERTIES LABELS "e2e" TIMEOUT 900 RUN_SERIAL TRUE)
endif()
