target_link_libraries(hpcb_client_lib PUBLIC hpcb::protocol CLI11::CLI11)
add_executable(dispatch dispatch_main.cc)
target_link_libraries(dispatch PRIVATE hpcb_client_lib)
