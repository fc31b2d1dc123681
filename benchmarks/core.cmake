# Benchmarks of core and sysinfo. stream_like compares `recur sysinfo`'s bandwidth probe with
# STREAM-style kernels in one interleaved run.
add_executable(bench_stream_like ${CMAKE_CURRENT_LIST_DIR}/stream_like.cc)
# Native code for the STREAM kernels only: they stand in for what a tuned peer gets here.
target_compile_options(bench_stream_like PRIVATE -O3 -march=native)
target_link_libraries(bench_stream_like PRIVATE recur_probe recur_core)
# ThreadPool::parallel_claim against the parallel_for rendezvous, with and without a busy neighbour.
add_executable(bench_thread_pool_claim ${CMAKE_CURRENT_LIST_DIR}/thread_pool_claim_bench.cc)
target_link_libraries(bench_thread_pool_claim PRIVATE recur_core)
