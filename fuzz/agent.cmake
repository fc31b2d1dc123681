recur_fuzz_target(fuzz_expect SOURCES ${CMAKE_CURRENT_LIST_DIR}/expect_fuzz.cc LIBS recur_agent_loop)
