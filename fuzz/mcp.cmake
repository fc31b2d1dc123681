recur_fuzz_target(fuzz_mcp_request SOURCES ${CMAKE_CURRENT_LIST_DIR}/mcp_request_fuzz.cc LIBS recur_mcp)
