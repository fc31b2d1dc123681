# End-to-end test of images in chat (issue #9's encode worker): `recur serve` with the encoder in
# process and through `recur serve --role encode`, driven by curl and Python's standard library.
if(RECUR_BUILD_TESTS)
  add_test(NAME serve_image_test COMMAND ${CMAKE_CURRENT_LIST_DIR}/serve_image_test.sh $<TARGET_FILE:recur> ${CMAKE_SOURCE_DIR})
  set_tests_properties(serve_image_test PROPERTIES LABELS "e2e" TIMEOUT 120)
endif()
