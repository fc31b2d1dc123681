# The vision encoder of the encode worker: latency per image (docs/performance.md, "Vision encoder").
add_executable(bench_vision_encode ${CMAKE_CURRENT_LIST_DIR}/vision_encode_bench.cc)
target_link_libraries(bench_vision_encode PRIVATE recur_engine recur_core)
