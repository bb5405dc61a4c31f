#===- RLXSanitizers.cmake - ASan/UBSan and libFuzzer builds ---------------===#
#
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===----------------------------------------------------------------------===#
# RLX_ENABLE_SANITIZERS: every RLX target is compiled and linked with
# -fsanitize=address,undefined (LeakSanitizer comes with ASan). Debian's
# libMLIR.so and libLLVM.so are not instrumented: memory errors inside them
# are only caught where RLX code touches the memory.
#
# RLX_ENABLE_FUZZERS: the same, plus libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link) on all RLX code; the targets in fuzz/ link
# libFuzzer's main (-fsanitize=fuzzer).
#
# Both need clang (libFuzzer and the sanitizer runtimes come with Debian's
# clang-22 and libclang-rt-22-dev: configure with
# -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22).

if(NOT RLX_ENABLE_SANITIZERS AND NOT RLX_ENABLE_FUZZERS)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "RLX_ENABLE_SANITIZERS / RLX_ENABLE_FUZZERS need clang: configure with "
    "-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 "
    "(apt-get install clang-22 libclang-rt-22-dev)")
endif()

# vptr checks need the dynamic types of objects that libMLIR.so creates,
# whose type_info is not ours: turned off. Every other UBSan check aborts on
# the first report (like ASan), so nothing is lost in a log.
set(RLX_SANITIZE_FLAGS
  -fsanitize=address,undefined
  -fno-sanitize=vptr
  -fno-sanitize-recover=all
  -fno-omit-frame-pointer
  -gline-tables-only)
if(RLX_ENABLE_FUZZERS)
  list(APPEND RLX_SANITIZE_FLAGS -fsanitize=fuzzer-no-link)
endif()
add_compile_options(${RLX_SANITIZE_FLAGS})
add_link_options(-fsanitize=address,undefined)
# Keep assertions on: they catch logic errors the sanitizers cannot see.
add_compile_options(-UNDEBUG)
message(STATUS "RLX: sanitizers on (${RLX_SANITIZE_FLAGS})")
