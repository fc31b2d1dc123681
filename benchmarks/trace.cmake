# Tracer benchmarks: zone cost (enabled, disabled, beside rdtsc and an empty loop) and the
# Chrome JSON reader's throughput and peak RSS on HTA's Kineto traces (beside simdjson's DOM
# parser and a memchr pass over the same bytes).
find_package(simdjson REQUIRED)
add_executable(bench_trace_zone_cost ${CMAKE_CURRENT_LIST_DIR}/trace_zone_cost.cc)
target_link_libraries(bench_trace_zone_cost PRIVATE recur_trace)
add_executable(bench_trace_reader_throughput ${CMAKE_CURRENT_LIST_DIR}/trace_reader_throughput.cc)
target_link_libraries(bench_trace_reader_throughput PRIVATE recur_trace simdjson::simdjson)
target_compile_definitions(bench_trace_reader_throughput PRIVATE
  RECUR_HTA_TESTDATA="${CMAKE_SOURCE_DIR}/../shared/testdata/hta")
