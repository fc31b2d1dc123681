# The machine's roofline (`recur sysinfo`, ~3 s) measured once per ctest run into
# build/test-cache; every test added in tests/ requires this fixture and finds the file in
# $RECUR_TEST_SYSINFO, which tests/sysinfo_seed.sh copies into its fresh RECUR_CACHE_DIR. A cache
# left by an earlier run is reused when it is for this CPU (the sysinfo cache's own rule).
if(RECUR_BUILD_TESTS)
  add_test(NAME sysinfo_cache COMMAND $<TARGET_FILE:recur> sysinfo --json)
  set_tests_properties(sysinfo_cache PROPERTIES FIXTURES_SETUP sysinfo_cache LABELS "e2e" TIMEOUT 120
                       ENVIRONMENT "RECUR_CACHE_DIR=${CMAKE_BINARY_DIR}/test-cache")
  # Deferred to the end of this directory, so it sees the tests every tests/*.cmake added.
  function(recur_tests_share_sysinfo)
    set(cache_file ${CMAKE_BINARY_DIR}/test-cache/sysinfo.json)
    get_property(tests DIRECTORY PROPERTY TESTS)
    foreach(t IN LISTS tests)
      if(NOT t STREQUAL "sysinfo_cache")
        set_property(TEST ${t} APPEND PROPERTY FIXTURES_REQUIRED sysinfo_cache)
        set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "RECUR_TEST_SYSINFO=${cache_file}")
      endif()
    endforeach()
  endfunction()
  cmake_language(DEFER CALL recur_tests_share_sysinfo)
endif()
