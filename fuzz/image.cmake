# Image data: URIs and files (src/stack/serve/image_decode.h) fed arbitrary bytes.
recur_fuzz_target(fuzz_image_decode SOURCES ${CMAKE_CURRENT_LIST_DIR}/image_decode_fuzz.cc LIBS recur_serve_image)
