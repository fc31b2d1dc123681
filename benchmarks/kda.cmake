# KDA decode benchmark: variants against vtile, plain and ReplaySSM, with roofline fractions.
add_executable(bench_kda_decode ${CMAKE_CURRENT_LIST_DIR}/kda_decode_bench.cc)
target_link_libraries(bench_kda_decode PRIVATE recur_kernels_kda recur_probe recur_core)
