# Hybrid batched decode: tokens/s at several batch sizes, TP and ReplaySSM settings.
add_executable(bench_hybrid_batch ${CMAKE_CURRENT_LIST_DIR}/hybrid_batch_bench.cc)
target_link_libraries(bench_hybrid_batch PRIVATE recur_engine recur_core)
