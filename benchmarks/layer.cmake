# Layer kernels (rmsnorm, rope, swiglu, softmax, routing, grouped GEMM, embedding, sampling, gemv):
# every variant against its scalar baseline through the bench probe, with roofline fractions.
add_executable(bench_layer_kernels ${CMAKE_CURRENT_LIST_DIR}/layer_kernels_bench.cc)
target_link_libraries(bench_layer_kernels PRIVATE recur_probe recur_kernels recur_core)
