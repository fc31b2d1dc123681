# Helpers shared by every module's CMakeLists.txt.

# ISA flags for translation units that hold one dispatch path each. Only these files
# are compiled for the wider ISA; the dispatcher decides at run time whether to call them.
set(RECUR_AVX2_FLAGS -mavx2 -mfma -mf16c)
set(RECUR_AVX512_FLAGS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 -mfma -mf16c)

# recur_isa_sources(avx2|avx512 FILE...) compiles FILEs with that ISA's flags.
function(recur_isa_sources isa)
  if(isa STREQUAL "avx2")
    set(flags ${RECUR_AVX2_FLAGS})
  elseif(isa STREQUAL "avx512")
    set(flags ${RECUR_AVX512_FLAGS})
  else()
    message(FATAL_ERROR "recur_isa_sources: unknown isa '${isa}' (expected avx2 or avx512)")
  endif()
  set_source_files_properties(${ARGN} DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                              PROPERTIES COMPILE_OPTIONS "${flags}")
endfunction()

# recur_test(NAME [TSAN] SOURCES... LIBS ...) builds one gtest binary and registers its tests with ctest.
function(recur_test name)
  if(NOT RECUR_BUILD_TESTS)
    return()
  endif()
  # TSAN marks a test that also runs in the ThreadSanitizer build (`make tsan`).
  cmake_parse_arguments(T "TSAN" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  # Test files are mostly gtest macros and references: -O1 compiles them about a quarter faster
  # than -O3 (CI: 2 cores, 20 minutes), and the code under test keeps its libraries' flags.
  if(CMAKE_BUILD_TYPE STREQUAL "Release")
    target_compile_options(${name} PRIVATE -O1)
  endif()
  set(labels ${T_LABELS})
  if(T_TSAN)
    list(APPEND labels tsan)
    set_property(GLOBAL APPEND PROPERTY RECUR_TSAN_TESTS ${name})
  endif()
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS "${labels}")
endfunction()

# recur_include_root(ROOT) makes ROOT the include root of every target defined in this directory
# and below it: exported (PUBLIC) by libraries, so their dependents see it; private to executables.
function(recur_include_root root)
  _recur_include_root_in(${CMAKE_CURRENT_SOURCE_DIR} ${root})
endfunction()
function(_recur_include_root_in dir root)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      target_include_directories(${t} INTERFACE ${root})
    elseif(type MATCHES "_LIBRARY$")
      target_include_directories(${t} PUBLIC ${root})
    elseif(type STREQUAL "EXECUTABLE")
      target_include_directories(${t} PRIVATE ${root})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s ${subdirs})
    _recur_include_root_in(${s} ${root})
  endforeach()
endfunction()
