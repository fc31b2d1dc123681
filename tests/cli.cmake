# End-to-end tests of the recur binary: exit codes, --help, --json, stdout/stderr discipline.
if(RECUR_BUILD_TESTS)
  add_executable(cli_test ${CMAKE_CURRENT_LIST_DIR}/cli_test.cc ${CMAKE_CURRENT_LIST_DIR}/cli_runner.cc)
  target_link_libraries(cli_test PRIVATE GTest::gtest GTest::gtest_main nlohmann_json::nlohmann_json fmt::fmt)
  target_include_directories(cli_test PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  target_compile_definitions(cli_test PRIVATE RECUR_BINARY="$<TARGET_FILE:recur>"
                                           RECUR_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  add_dependencies(cli_test recur)
  gtest_discover_tests(cli_test DISCOVERY_MODE PRE_TEST PROPERTIES LABELS "e2e")
endif()
# A newcomer's papercuts and run names that would leave the journal's folder (issue 24).
recur_e2e_test(cli_papercuts_test TIMEOUT 120)
# deepseek2 and kimi-linear: model new, generate (absorbed / expand MLA), the float64 reference, refusals.
recur_e2e_test(mla_models_cli_test TIMEOUT 120)
