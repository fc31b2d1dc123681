# End-to-end tests of `recur serve` (curl and Python's standard library), its continuous batching
# (batched greedy equals unbatched, cancellation, chunked prefill, 429) and `recur loadgen`.
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_cli_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_cli_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(serve_cli_test PROPERTIES LABELS "e2e" TIMEOUT 120)
  add_test(NAME serve_batching_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_batching_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(serve_batching_test PROPERTIES LABELS "e2e" TIMEOUT 120)
endif()
# Slow, abandoning and oversized clients; /health under load (serve_hardening_client.py).
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_hardening_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_hardening_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(serve_hardening_test PROPERTIES LABELS "e2e" TIMEOUT 90)
endif()
# The official OpenAI client (npm `openai`): chat, completions, logprobs, echo, unsupported fields.
recur_e2e_test(serve_openai_client_test TIMEOUT 60)
