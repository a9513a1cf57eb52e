# Runs inside cmake_install.cmake, after the programs are installed: drops
# their debug info (objcopy --strip-debug; symbols stay, so backtraces still
# name functions). The build tree keeps the full programs for debugging.
# The bargain: `dispatch` starts once per submission, and the 14 MB of DWARF
# it never reads made each start map and fault in far more than it runs.
# Expects HPCB_OBJCOPY and HPCB_STRIP_PROGRAMS (paths relative to the prefix).

if(NOT HPCB_OBJCOPY)
  message(STATUS "No objcopy: installed programs keep their debug info")
  return()
endif()
foreach(program IN LISTS HPCB_STRIP_PROGRAMS)
  set(installed "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${program}")
  execute_process(COMMAND "${HPCB_OBJCOPY}" --strip-debug "${installed}" RESULT_VARIABLE stripped)
  if(NOT stripped EQUAL 0)
    message(FATAL_ERROR "objcopy --strip-debug ${installed} failed")
  endif()
endforeach()
