# CPack: `cpack -G DEB` in the build directory (or the `package` target)
# makes hpc-batch_<version>_<arch>.deb with prefix /usr.

set(CPACK_PACKAGE_NAME hpc-batch)
set(CPACK_PACKAGE_VENDOR hpc-batch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "single-node batch job system for shared HPC and benchmark machines")
set(CPACK_PACKAGE_DESCRIPTION "\
Users submit jobs with dispatch, and the hpc-batchd daemon queues them in
submission order and runs each as the submitting user in its own cgroup v2,
pinned to one NUMA node with a memory budget and no swap, so that a job's
timings mean something. The service is installed but neither enabled nor
started.")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
# DESTDIR staging: CPack's default instead sets CMAKE_INSTALL_PREFIX to the
# staging directory itself, which would end up in the unit's ExecStart=.
# With it, CPACK_INSTALL_PREFIX is what the install sees as its prefix.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${HPCB_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS bash-completion)
# Library dependencies come from dpkg-shlibdeps where it exists (dpkg-dev);
# without it they are spelled out (Debian 12 names; dispatch carries its
# own libstdc++; a release build's executor carries libcap-ng and libc
# itself, design.md "Footprint"). The maintainer scripts need the sysusers
# and tmpfiles tools, which systemd or its standalone packages provide.
find_program(HPCB_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(HPCB_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "systemd-sysusers, systemd-tmpfiles")
elseif(HPCB_STATIC_EXECUTOR)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6, libstdc++6, libgcc-s1, libseccomp2, systemd-sysusers, systemd-tmpfiles")
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6, libstdc++6, libgcc-s1, libseccomp2, libcap-ng0, systemd-sysusers, systemd-tmpfiles")
endif()

file(READ ${CMAKE_CURRENT_SOURCE_DIR}/purge-state.sh HPCB_PURGE_STATE)
file(READ ${CMAKE_CURRENT_SOURCE_DIR}/broker-account.sh HPCB_BROKER_ACCOUNT)
set(hpcb_scripts)
foreach(script postinst prerm postrm)
  configure_file(debian/${script}.in ${CMAKE_CURRENT_BINARY_DIR}/debian/${script} @ONLY)
  list(APPEND hpcb_scripts ${CMAKE_CURRENT_BINARY_DIR}/debian/${script})
endforeach()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${hpcb_scripts})
# 0755 for the scripts whatever the checkout's modes and umask were.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
