# Trace-analysis benchmarks: `recur analyze hta` per HTA test-data folder (wall time and peak
# RSS in fresh processes) and peak RSS against the number of ranks in a folder.
add_executable(bench_analyze_hta ${CMAKE_CURRENT_LIST_DIR}/analyze_hta_bench.cc)
target_link_libraries(bench_analyze_hta PRIVATE recur_analyze recur_trace)
target_compile_definitions(bench_analyze_hta PRIVATE
  RECUR_HTA_TESTDATA="${CMAKE_SOURCE_DIR}/../shared/testdata/hta")
