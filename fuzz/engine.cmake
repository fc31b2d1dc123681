recur_fuzz_target(fuzz_gguf_reader SOURCES ${CMAKE_CURRENT_LIST_DIR}/gguf_reader_fuzz.cc LIBS recur_engine)
recur_fuzz_target(fuzz_safetensors_reader SOURCES ${CMAKE_CURRENT_LIST_DIR}/safetensors_reader_fuzz.cc LIBS recur_engine)
recur_fuzz_target(fuzz_hf_checkpoint SOURCES ${CMAKE_CURRENT_LIST_DIR}/hf_checkpoint_fuzz.cc LIBS recur_engine)
