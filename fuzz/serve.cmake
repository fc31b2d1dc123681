# OpenAI request bodies (src/stack/serve/request.h) fed arbitrary bytes.
recur_fuzz_target(fuzz_serve_request SOURCES ${CMAKE_CURRENT_LIST_DIR}/serve_request_fuzz.cc LIBS recur_serve_api)
# The HTTP front's request framing (src/stack/serve/http_framing.h): heads and chunked bodies.
recur_fuzz_target(fuzz_serve_http_framing SOURCES ${CMAKE_CURRENT_LIST_DIR}/serve_http_framing_fuzz.cc LIBS recur_serve_api)
