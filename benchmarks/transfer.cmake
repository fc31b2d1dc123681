# KV transfer: shared memory vs TCP vs the memcpy roofline, interleaved (docs/performance.md "KV transfer").
add_executable(bench_transfer ${CMAKE_CURRENT_LIST_DIR}/transfer_bench.cc)
target_link_libraries(bench_transfer PRIVATE recur_transfer recur_core)
