# Trace readers (Chrome JSON, gzip, Perfetto protobuf) fed arbitrary bytes.
recur_fuzz_target(fuzz_trace_reader SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_reader_fuzz.cc LIBS recur_trace)
