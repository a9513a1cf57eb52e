target_link_libraries(hpcb_executor_lib PUBLIC hpcb::protocol PkgConfig::SECCOMP PkgConfig::CAPNG)

add_executable(hpc-batchd launcher_main.cc)
target_link_libraries(hpc-batchd PRIVATE hpcb_executor_lib)

add_executable(hpc-batch-executor executor_main.cc)
target_link_libraries(hpc-batch-executor PRIVATE hpcb_executor_lib)
