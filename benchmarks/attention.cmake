# Paged attention decode benchmark: KV-read bandwidth per cache dtype and ISA path at context
# 1k..32k, interleaved against the scalar path over an f32 cache, with roofline fractions.
add_executable(bench_attention_decode ${CMAKE_CURRENT_LIST_DIR}/attention_decode_bench.cc)
target_link_libraries(bench_attention_decode PRIVATE recur_kernels_attention recur_probe recur_core)
