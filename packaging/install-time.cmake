# Runs inside cmake_install.cmake, where CMAKE_INSTALL_PREFIX is the prefix
# of this install (cmake --install --prefix, CPack's /usr) and DESTDIR, if
# set, is a staging root that must not appear in any installed path.
# Expects HPCB_UNIT_TEMPLATE, HPCB_INSTALL_DAEMONDIR, HPCB_INSTALL_UNITDIR and
# HPCB_INSTALL_SBINDIR from the install(CODE) that includes it.

foreach(dir DAEMONDIR UNITDIR SBINDIR)
  cmake_path(ABSOLUTE_PATH HPCB_INSTALL_${dir} BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}"
             NORMALIZE OUTPUT_VARIABLE hpcb_full_${dir})
endforeach()
set(HPCB_DAEMON "${hpcb_full_DAEMONDIR}/hpc-batchd")

# Written straight to its destination, not into the build tree: a
# `sudo cmake --install` would otherwise leave root-owned files there.
set(hpcb_unit "$ENV{DESTDIR}${hpcb_full_UNITDIR}/hpc-batch.service")
message(STATUS "Installing: ${hpcb_unit} (ExecStart=${HPCB_DAEMON})")
file(MAKE_DIRECTORY "$ENV{DESTDIR}${hpcb_full_UNITDIR}")
configure_file("${HPCB_UNIT_TEMPLATE}" "${hpcb_unit}" @ONLY)
file(CHMOD "${hpcb_unit}" FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${hpcb_unit}")

# hpc-batchd on PATH for admins. A link, not a copy: the kernel resolves it,
# so /proc/self/exe (where hpc-batchd looks for its roles) is the real one.
# Relative, so the tree still works when moved or staged.
set(hpcb_link "$ENV{DESTDIR}${hpcb_full_SBINDIR}/hpc-batchd")
file(RELATIVE_PATH hpcb_target "${hpcb_full_SBINDIR}" "${HPCB_DAEMON}")
message(STATUS "Installing: ${hpcb_link} -> ${hpcb_target}")
file(MAKE_DIRECTORY "$ENV{DESTDIR}${hpcb_full_SBINDIR}")
file(REMOVE "${hpcb_link}")
file(CREATE_LINK "${hpcb_target}" "${hpcb_link}" SYMBOLIC)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${hpcb_link}")
