# bench's false-positive rate (A/A x100) and power (3% extra work x20): docs/performance.md "## Probes".
add_executable(bench_false_positive_and_power ${CMAKE_CURRENT_LIST_DIR}/bench_false_positive_and_power.cc)
target_link_libraries(bench_false_positive_and_power PRIVATE recur_probe recur_kernels recur_core)
