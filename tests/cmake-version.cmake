# SPDX-License-Identifier: Apache-2.0
# tests/cmake-version.cmake - the version rule of the CMake package
# (cmake/zklockConfigVersion.cmake.in) as find_package() applies it, for a
# 0.x and a 1.x library. Run by tests/install-check:
#   cmake -DIN=.../zklockConfigVersion.cmake.in -DWORK=dir -P cmake-version.cmake
# Prints one "ok"/"FAIL" line per case, and fails when any case failed.
cmake_minimum_required(VERSION 3.10)
if(NOT IN OR NOT WORK)
  message(FATAL_ERROR "usage: cmake -DIN=zklockConfigVersion.cmake.in -DWORK=dir -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
file(READ "${IN}" _template)
set(_failed 0)

# The package file of libzklock `version`, as `make` would generate it.
function(instantiate version out)
  string(REPLACE "@PACKAGE_VERSION@" "${version}" _t "${_template}")
  string(REPLACE "@ZKL_SIZEOF_VOID_P@" "" _t "${_t}")
  file(WRITE "${out}" "${_t}")
endfunction()

# find_package(zklock <request>) against the package file of `version`:
# COMPATIBLE must be `want`. A request "A...B" is a range (CMake >= 3.19).
function(expect version request want)
  set(file "${WORK}/zklockConfigVersion-${version}.cmake")
  if(request MATCHES "^([0-9.]+)\\.\\.\\.([0-9.]+)$")
    set(PACKAGE_FIND_VERSION_RANGE "${request}")
    set(PACKAGE_FIND_VERSION_RANGE_MIN INCLUDE)
    set(PACKAGE_FIND_VERSION_RANGE_MAX INCLUDE)
    set(PACKAGE_FIND_VERSION_MIN "${CMAKE_MATCH_1}")
    set(PACKAGE_FIND_VERSION_MAX "${CMAKE_MATCH_2}")
    string(REGEX MATCH "^[0-9]+" PACKAGE_FIND_VERSION_MIN_MAJOR "${CMAKE_MATCH_1}")
    set(PACKAGE_FIND_VERSION "${PACKAGE_FIND_VERSION_MIN}")
  else()
    set(PACKAGE_FIND_VERSION "${request}")
    string(REPLACE "." ";" _parts "${request}")
    list(LENGTH _parts PACKAGE_FIND_VERSION_COUNT)
    list(GET _parts 0 PACKAGE_FIND_VERSION_MAJOR)
    if(PACKAGE_FIND_VERSION_COUNT GREATER 1)
      list(GET _parts 1 PACKAGE_FIND_VERSION_MINOR)
    endif()
  endif()
  include("${file}")
  if(PACKAGE_VERSION_COMPATIBLE)
    set(got TRUE)
  else()
    set(got FALSE)
  endif()
  if(got STREQUAL want)
    message("ok: find_package(zklock ${request}) against ${version}: ${got}")
  else()
    message("FAIL: find_package(zklock ${request}) against ${version}: ${got}, not ${want}")
    set(_failed 1 PARENT_SCOPE)
  endif()
endfunction()

instantiate(0.2.0 "${WORK}/zklockConfigVersion-0.2.0.cmake")
instantiate(1.0.0 "${WORK}/zklockConfigVersion-1.0.0.cmake")
expect(0.2.0 1.0 FALSE)       # 1.0 refuses 0.x
expect(1.0.0 1.0 TRUE)
expect(1.0.0 0.2 FALSE)       # a 0.2 caller is refused 1.0
expect(1.0.0 1 TRUE)
expect(1.0.0 1.0...2.0 TRUE)
instantiate(1.1.0 "${WORK}/zklockConfigVersion-1.1.0.cmake")
expect(1.1.0 1.0 TRUE)        # 1.1 only adds: a 1.0 caller takes it
expect(1.0.0 1.1 FALSE)       # a caller of 1.1's additions is refused 1.0
expect(1.1.0 1.1 TRUE)
if(_failed)
  message(FATAL_ERROR "the CMake version rule is not the one README.md states")
endif()
