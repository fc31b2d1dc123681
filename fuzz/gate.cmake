recur_fuzz_target(fuzz_gate_spec SOURCES ${CMAKE_CURRENT_LIST_DIR}/gate_spec_fuzz.cc LIBS recur_gate)
