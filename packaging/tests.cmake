# Checks of what gets installed; each runs in a scratch directory.
#   hpcb_install_tree  cmake --install into a prefix and a DESTDIR: the
#                      layout, the unit's ExecStart= and Documentation=,
#                      hpc-batchd through its link, the man pages and bash
#                      completion against every subcommand and flag of
#                      --help.
#   hpcb_deb           cpack -G DEB: control fields, dependencies, the
#                      maintainer scripts and the file list (skips without
#                      dpkg-deb).
# Both read build/bin and the man pages, so they depend on ALL being built.
add_test(NAME hpcb_install_tree
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check-install.sh tree
                 ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
add_test(NAME hpcb_deb
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check-install.sh deb
                 ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(hpcb_install_tree hpcb_deb PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
                     LABELS package)
# Both install from the same build tree (install_manifest.txt, CPack's
# staging directory).
set_tests_properties(hpcb_install_tree hpcb_deb PROPERTIES RESOURCE_LOCK hpcb_build_install)
set_tests_properties(hpcb_install_tree hpcb_deb PROPERTIES ENVIRONMENT
  "DAEMONDIR=${HPCB_INSTALL_DAEMONDIR};UNITDIR=${HPCB_INSTALL_UNITDIR};SYSUSERSDIR=${HPCB_INSTALL_SYSUSERSDIR};TMPFILESDIR=${HPCB_INSTALL_TMPFILESDIR};BASHCOMPDIR=${HPCB_INSTALL_BASHCOMPDIR};BINDIR=${CMAKE_INSTALL_BINDIR};SBINDIR=${CMAKE_INSTALL_SBINDIR};MANDIR=${CMAKE_INSTALL_MANDIR};DOCDIR=${CMAKE_INSTALL_DOCDIR}")
