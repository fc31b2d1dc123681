# MLA attention benchmark: the blocked absorbed form per ISA against the scalar absorbed form,
# prefill and decode, at kimi-linear's latent shape and the gate's, with roofline fractions.
add_executable(bench_mla ${CMAKE_CURRENT_LIST_DIR}/mla_bench.cc)
target_link_libraries(bench_mla PRIVATE recur_kernels_mla recur_probe recur_core)
