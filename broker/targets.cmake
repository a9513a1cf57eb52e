target_link_libraries(hpcb_broker_lib PUBLIC hpcb::protocol)
add_executable(hpc-batch-broker broker_main.cc)
target_link_libraries(hpc-batch-broker PRIVATE hpcb::broker PkgConfig::SECCOMP)
