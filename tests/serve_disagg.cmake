# End-to-end test of disaggregated serving: router, prefill and decode processes (serve_disagg_test.sh).
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_disagg_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_disagg_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(serve_disagg_test PROPERTIES LABELS "e2e" TIMEOUT 60)
endif()
# The same across network namespaces (needs root and ip netns; skipped otherwise).
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_disagg_netns_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_disagg_netns_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(serve_disagg_netns_test PROPERTIES LABELS "e2e" TIMEOUT 60 SKIP_RETURN_CODE 77)
  # And with the KV transfer over UCX (UCX_TLS=tcp on the veth link; skipped without UCX too).
  add_test(NAME serve_disagg_netns_ucx_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_disagg_netns_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(serve_disagg_netns_ucx_test PROPERTIES LABELS "e2e" TIMEOUT 60 SKIP_RETURN_CODE 77
                       ENVIRONMENT KV_TRANSFER=ucx)
endif()
# Workers SIGKILLed mid-transfer: prefill (retried or 503, then back), decode (502 or retried).
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_disagg_faults_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_disagg_faults_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(serve_disagg_faults_test PROPERTIES LABELS "e2e" TIMEOUT 60)
endif()
# Streamed clients that leave (mid-stream, during the prefill): cancelled on the decode worker.
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_disagg_cancel_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_disagg_cancel_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(serve_disagg_cancel_test PROPERTIES LABELS "e2e" TIMEOUT 60)
endif()
# Peer authentication of the workers, reservation tokens and expiry.
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_disagg_auth_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_disagg_auth_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(serve_disagg_auth_test PROPERTIES LABELS "e2e" TIMEOUT 60)
endif()
# Serving over the ucx transport: same text as --role all; decode and prefill killed mid-transfer,
# a corrupted block (skipped where recur has no UCX).
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_disagg_ucx_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_disagg_ucx_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(serve_disagg_ucx_test PROPERTIES LABELS "e2e" TIMEOUT 60 SKIP_RETURN_CODE 77)
endif()
# The MLA architectures disaggregated: kimi-linear and deepseek2 latent caches moved between roles.
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_disagg_mla_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_disagg_mla_test.sh $<TARGET_FILE:recur>)
  set_tests_properties(serve_disagg_mla_test PROPERTIES LABELS "e2e" TIMEOUT 60)
endif()
