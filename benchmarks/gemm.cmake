# GEMM / GEMV benchmark and numerics study: variants against baselines in one interleaved run,
# roofline fractions, and the error-vs-K table of docs/gemm.md (--errors).
add_executable(bench_gemm ${CMAKE_CURRENT_LIST_DIR}/gemm_bench.cc)
target_link_libraries(bench_gemm PRIVATE recur_kernels_gemm recur_probe recur_core)
