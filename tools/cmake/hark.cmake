# Target helpers: every module, binary and test is declared with one of these, so flags,
# include paths, labels and the allocator are set in one place.

# Includes are written as an installed program writes them: "hark/core/base/result.h", the
# repository root being hark/. The build finds them through build/<preset>/include/hark, a link
# to the root; an install puts the headers in <prefix>/include/hark (hark_install.cmake).
set(HARK_ROOT "${CMAKE_CURRENT_SOURCE_DIR}")
set(HARK_INCLUDE_DIR "${CMAKE_BINARY_DIR}/include")
file(MAKE_DIRECTORY ${HARK_INCLUDE_DIR})
file(CREATE_LINK ${HARK_ROOT} ${HARK_INCLUDE_DIR}/hark SYMBOLIC)
include(GNUInstallDirs)

set(HARK_WARNINGS -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough -Werror
    # Options structs are built with designated initializers that rely on member defaults.
    -Wno-missing-field-initializers)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 reports false positives at -O2 in std::vector/std::string inlining (GCC bugs 105651,
  # 105329, 106297). They stay visible as warnings but do not fail the build; see docs/build.md.
  list(APPEND HARK_WARNINGS -Wno-error=maybe-uninitialized -Wno-error=array-bounds
       -Wno-error=stringop-overflow -Wno-error=restrict)
endif()
# Width-sensitive modules (wire and disk formats) also get these.
set(HARK_CONVERSION_WARNINGS -Wconversion -Wsign-conversion)

if(HARK_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(HARK_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()
if(HARK_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

# hark_library(NAME x SRCS ... DEPS ... [CONVERSION] [INSTALL]) -> target hark_x, alias hark::x.
#   INSTALL: `cmake --install` puts the library and the headers of its folder in the package
#   that find_package(hark) and hark.pc describe (tools/cmake/hark_install.cmake).
function(hark_library)
  cmake_parse_arguments(ARG "CONVERSION;INSTALL" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(hark_${ARG_NAME} STATIC ${ARG_SRCS})
  add_library(hark::${ARG_NAME} ALIAS hark_${ARG_NAME})
  target_include_directories(hark_${ARG_NAME} PUBLIC $<BUILD_INTERFACE:${HARK_INCLUDE_DIR}>
                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(hark_${ARG_NAME} PUBLIC ${ARG_DEPS})
  target_compile_options(hark_${ARG_NAME} PRIVATE ${HARK_WARNINGS})
  if(ARG_CONVERSION)
    target_compile_options(hark_${ARG_NAME} PRIVATE ${HARK_CONVERSION_WARNINGS})
  endif()
  if(ARG_INSTALL)
    hark_install_library(${ARG_NAME})
  endif()
endfunction()

# Links the process allocator. mimalloc goes into every plain binary; sanitizer builds keep
# the sanitizer's allocator, which replaces malloc anyway.
function(hark_link_allocator target)
  if(HARK_USE_MIMALLOC)
    target_link_libraries(${target} PRIVATE mimalloc)
  endif()
endfunction()

# hark_binary(NAME harkd SRCS ... DEPS ...) -> a product executable in HARK_BIN_DIR.
function(hark_binary)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  target_compile_options(${ARG_NAME} PRIVATE ${HARK_WARNINGS})
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${HARK_BIN_DIR})
  hark_link_allocator(${ARG_NAME})
  # `bin` builds the product binaries alone (make build, make run), not the tests.
  if(NOT TARGET bin)
    add_custom_target(bin)
  endif()
  add_dependencies(bin ${ARG_NAME})
endfunction()

# Precompiled test headers, built once and reused by every test binary.
if(NOT HARK_FUZZ)
  add_library(hark_test_pch OBJECT ${HARK_ROOT}/tests/support/pch.cc)
  target_link_libraries(hark_test_pch PUBLIC GTest::gtest GTest::gmock rapidcheck absl::strings)
  target_compile_options(hark_test_pch PRIVATE ${HARK_WARNINGS})
  target_precompile_headers(hark_test_pch PRIVATE
    <gtest/gtest.h> <gmock/gmock.h> <rapidcheck.h> <rapidcheck/gtest.h>
    <absl/strings/str_format.h> <atomic> <chrono> <cstdint> <string> <thread> <vector>)
endif()

set(HARK_TEST_ENV
  "TSAN_OPTIONS=halt_on_error=1 second_deadlock_stack=1"
  "ASAN_OPTIONS=detect_leaks=1 abort_on_error=1"
  "UBSAN_OPTIONS=print_stacktrace=1 halt_on_error=1")

# Every test binary is also a dependency of `tests_<label>`, so a sanitizer stage builds only
# what its labels run (tools/test.sh).
# The binaries of each label are also listed in build/<preset>/test-binaries/<label>.txt
# (hark_write_test_binaries), so tools/test.sh fails a stage whose binary is missing instead of
# running it as zero tests (gtest discovery turns a missing binary into an unlabelled
# <target>_NOT_BUILT test, which a label filter drops).
function(hark_label_target label target)
  if(NOT TARGET tests_${label})
    add_custom_target(tests_${label})
    set_property(GLOBAL APPEND PROPERTY HARK_TEST_LABELS ${label})
  endif()
  add_dependencies(tests_${label} ${target})
  set_property(GLOBAL APPEND PROPERTY HARK_TEST_BINARIES_${label} "$<TARGET_FILE:${target}>")
endfunction()

# Called once at the end of the root CMakeLists.txt, when every test is declared.
function(hark_write_test_binaries)
  get_property(labels GLOBAL PROPERTY HARK_TEST_LABELS)
  foreach(label IN LISTS labels)
    get_property(binaries GLOBAL PROPERTY HARK_TEST_BINARIES_${label})
    list(JOIN binaries "\n" content)
    file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/test-binaries/${label}.txt CONTENT "${content}\n")
  endforeach()
endfunction()

# hark_test(NAME io LABEL unit SRCS ... DEPS ... [DEFINES ...] [TIMEOUT s])
#   -> binary hark_<NAME>_tests; each gtest case becomes a ctest test labelled LABEL.
function(hark_test)
  cmake_parse_arguments(ARG "" "NAME;LABEL;TIMEOUT" "SRCS;DEPS;DEFINES" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set(target hark_${ARG_NAME}_tests)
  add_executable(${target} ${ARG_SRCS})
  target_link_libraries(${target} PRIVATE ${ARG_DEPS} hark::test_support GTest::gtest_main
                        GTest::gmock rapidcheck rapidcheck_gtest)
  target_compile_options(${target} PRIVATE ${HARK_WARNINGS})
  target_compile_definitions(${target} PRIVATE ${ARG_DEFINES})
  if(ARG_DEFINES)
    target_precompile_headers(${target} PRIVATE <gtest/gtest.h> <rapidcheck.h>)
  else()
    target_precompile_headers(${target} REUSE_FROM hark_test_pch)
  endif()
  hark_link_allocator(${target})
  hark_label_target(${ARG_LABEL} ${target})
  gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${HARK_TEST_ENV}")
endfunction()

# hark_mutant_test(NAME x LABEL l SRCS ... DEPS ... DEFINES HARK_MUTANT_... FILTER gtest-filter
#                  [ENV VAR=value ...])
#   A detector's proof that it still bites: the same test built with a planted bug, registered
#   as one ctest test that must fail (WILL_FAIL).
function(hark_mutant_test)
  cmake_parse_arguments(ARG "" "NAME;LABEL;FILTER" "SRCS;DEPS;DEFINES;ENV" ${ARGN})
  set(target hark_${ARG_NAME}_mutant)
  add_executable(${target} ${ARG_SRCS})
  target_link_libraries(${target} PRIVATE ${ARG_DEPS} hark::test_support GTest::gtest_main
                        GTest::gmock rapidcheck rapidcheck_gtest)
  target_compile_options(${target} PRIVATE ${HARK_WARNINGS})
  target_compile_definitions(${target} PRIVATE ${ARG_DEFINES})
  hark_link_allocator(${target})
  hark_label_target(${ARG_LABEL} ${target})
  add_test(NAME mutant.${ARG_NAME} COMMAND ${target} --gtest_filter=${ARG_FILTER})
  set_tests_properties(mutant.${ARG_NAME} PROPERTIES WILL_FAIL TRUE LABELS ${ARG_LABEL}
                       TIMEOUT 300 ENVIRONMENT "${HARK_TEST_ENV};${ARG_ENV}")
endfunction()

# hark_fuzz(NAME x SRCS ... DEPS ... CORPUS dir) -> libFuzzer binary, run for a bounded time.
function(hark_fuzz)
  cmake_parse_arguments(ARG "" "NAME;CORPUS;SECONDS" "SRCS;DEPS" ${ARGN})
  if(NOT HARK_FUZZ)
    return()
  endif()
  if(NOT ARG_SECONDS AND DEFINED ENV{HARK_FUZZ_SECONDS})
    set(ARG_SECONDS $ENV{HARK_FUZZ_SECONDS})  # tools/test.sh fuzz passes it at configure time.
  elseif(NOT ARG_SECONDS)
    set(ARG_SECONDS 30)
  endif()
  set(target hark_${ARG_NAME}_fuzz)
  add_executable(${target} ${ARG_SRCS})
  target_link_libraries(${target} PRIVATE ${ARG_DEPS})
  target_compile_options(${target} PRIVATE ${HARK_WARNINGS})
  target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  # The committed corpus is only read; new inputs go to a scratch directory in the build tree.
  set(scratch ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}_corpus)
  add_test(NAME fuzz.${ARG_NAME}
    COMMAND $<TARGET_FILE:${target}> -max_total_time=${ARG_SECONDS} -timeout=10
            -rss_limit_mb=2048 -print_final_stats=1 ${scratch} ${ARG_CORPUS})
  set_tests_properties(fuzz.${ARG_NAME} PROPERTIES LABELS fuzz TIMEOUT 600)
  file(MAKE_DIRECTORY ${scratch})
endfunction()
