# KV transfer protocol frames (src/stack/transfer/frame.h) fed arbitrary bytes.
recur_fuzz_target(fuzz_transfer_frame SOURCES ${CMAKE_CURRENT_LIST_DIR}/transfer_frame_fuzz.cc LIBS recur_transfer_frame)
