#===- AddRLX.cmake - RLX CMake helpers ------------------------------------===#
#
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===----------------------------------------------------------------------===#
# Thin wrappers over the upstream helpers that record which libraries exist, so
# that tools link exactly the RLX libraries (not every MLIR dialect).

include(GNUInstallDirs)

# rlx_export_library(<target>): makes a library part of the installed
# package. It is installed, exported in RLXTargets as RLX::<name without the
# RLX prefix> (RLXFlow -> RLX::Flow; an alias of that name serves the build
# tree), and carries relocatable usage requirements: RLX's headers from the
# source and build trees, or from the install prefix, and C++17.
function(rlx_export_library name)
  string(REGEX REPLACE "^RLX" "" export_name ${name})
  set_target_properties(${name} PROPERTIES EXPORT_NAME ${export_name})
  add_library(RLX::${export_name} ALIAS ${name})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${RLX_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${RLX_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${name} PUBLIC cxx_std_17)
  install(TARGETS ${name} EXPORT RLXTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT rlx-libraries
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT rlx-libraries
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT rlx-libraries)
  set_property(GLOBAL APPEND PROPERTY RLX_EXPORTED_LIBS ${export_name})
endfunction()

# _rlx_add_library(<name> <property> [NO_INSTALL] <args...>): add_mlir_library
# with the MLIR libraries among LINK_LIBS routed to libMLIR.so
# (mlir_target_link_libraries), so no static MLIR archive ends up next to the
# dylib. Unless NO_INSTALL (test-only libraries), the library is installed and
# exported (rlx_export_library) and recorded in RLX_LLVM_LIBS, and in
# RLX_MLIR_LIBS when it links MLIR: the installed RLXConfig.cmake gives those
# the include directories of the LLVM and MLIR it finds (their imported
# targets carry none).
function(_rlx_add_library name property)
  cmake_parse_arguments(ARG "NO_INSTALL" "" "LINK_LIBS" ${ARGN})
  set(rlx_libs)
  set(mlir_libs)
  foreach(lib ${ARG_LINK_LIBS})
    if(lib STREQUAL "PUBLIC" OR lib STREQUAL "PRIVATE")
      continue()
    elseif(lib MATCHES "^MLIR")
      list(APPEND mlir_libs ${lib})
    else()
      list(APPEND rlx_libs ${lib})
    endif()
  endforeach()
  if(property)
    set_property(GLOBAL APPEND PROPERTY ${property} ${name})
  endif()
  add_mlir_library(${name} ${ARG_UNPARSED_ARGUMENTS} DISABLE_INSTALL
                   EXCLUDE_FROM_LIBMLIR LINK_LIBS PUBLIC ${rlx_libs})
  if(mlir_libs)
    mlir_target_link_libraries(${name} PUBLIC ${mlir_libs})
  endif()
  if(NOT ARG_NO_INSTALL)
    rlx_export_library(${name})
    string(REGEX REPLACE "^RLX" "" export_name ${name})
    set_property(GLOBAL APPEND PROPERTY RLX_LLVM_LIBS ${export_name})
    if(mlir_libs)
      set_property(GLOBAL APPEND PROPERTY RLX_MLIR_LIBS ${export_name})
    endif()
  endif()
endfunction()

function(add_rlx_dialect_library name)
  _rlx_add_library(${name} RLX_DIALECT_LIBS ${ARGN})
endfunction()

function(add_rlx_conversion_library name)
  _rlx_add_library(${name} RLX_CONVERSION_LIBS ${ARGN})
endfunction()

function(add_rlx_library name)
  _rlx_add_library(${name} "" ${ARGN})
endfunction()

# add_rlx_doc(<td file> <output name> <generator> <gen flags...>)
function(add_rlx_doc td_filename output_file output_directory command)
  set(LLVM_TARGET_DEFINITIONS ${td_filename}.td)
  mlir_tablegen(${output_file}.md ${command} ${ARGN})
  set(GEN_DOC_FILE ${RLX_BINARY_DIR}/docs/${output_directory}${output_file}.md)
  add_custom_command(
    OUTPUT ${GEN_DOC_FILE}
    COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_CURRENT_BINARY_DIR}/${output_file}.md
            ${GEN_DOC_FILE}
    DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${output_file}.md)
  add_custom_target(${output_file}DocGen DEPENDS ${GEN_DOC_FILE})
  set_property(GLOBAL APPEND PROPERTY RLX_DOC_TARGETS ${output_file}DocGen)
endfunction()

# add_rlx_unittest(<name> sources...): a GoogleTest binary registered with ctest.
function(add_rlx_unittest name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main)
  set_property(GLOBAL APPEND PROPERTY RLX_UNITTESTS ${name})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
endfunction()
