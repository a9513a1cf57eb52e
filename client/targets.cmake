target_link_libraries(hpcb_client_lib PUBLIC hpcb::protocol CLI11::CLI11)
add_executable(dispatch dispatch_main.cc)
target_link_libraries(dispatch PRIVATE hpcb_client_lib)
# dispatch runs once per submission, so its start-up is part of every
# submit: binding libstdc++'s symbols at load (-z now) cost ~0.8 ms here.
target_link_options(dispatch PRIVATE -static-libstdc++ -static-libgcc)
set_target_properties(dispatch PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${HPCB_BIN_DIR})
