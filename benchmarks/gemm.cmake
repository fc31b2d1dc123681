# GEMM / GEMV benchmark and numerics study: variants against baselines in one interleaved run,
# roofline fractions, and the error-vs-K table of docs/gemm.md (--errors).
add_executable(bench_gemm ${CMAKE_CURRENT_LIST_DIR}/gemm_bench.cc)
target_link_libraries(bench_gemm PRIVATE recur_kernels_gemm recur_probe recur_core)

# recur's llama.cpp-parity arithmetic against a libggml-cpu.so loaded at run time (benchmarks/ggml_bits_check.sh).
add_executable(ggml_bits_check ${CMAKE_CURRENT_LIST_DIR}/ggml_bits_check.cc ${CMAKE_CURRENT_LIST_DIR}/ggml_graph_api.cc
               ${CMAKE_CURRENT_LIST_DIR}/ggml_elementwise_checks.cc ${CMAKE_CURRENT_LIST_DIR}/ggml_matmul_checks.cc)
target_link_libraries(ggml_bits_check PRIVATE recur_engine recur_kernels_gemm recur_ggml_arith recur_core ${CMAKE_DL_LIBS})
