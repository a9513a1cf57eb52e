# The broker server's tests (files server_*_tests.cc, kept out of the
# *_test.cc glob of hpcb_broker_tests so the two binaries do not overlap).
add_executable(hpcb_broker_server_tests
  ${CMAKE_CURRENT_LIST_DIR}/server_job_record_tests.cc
  ${CMAKE_CURRENT_LIST_DIR}/server_permissions_tests.cc
  ${CMAKE_CURRENT_LIST_DIR}/server_job_rules_tests.cc
  ${CMAKE_CURRENT_LIST_DIR}/server_core_tests.cc)
target_link_libraries(hpcb_broker_server_tests PRIVATE hpcb::broker hpcb::protocol hpcb_testing
  GTest::gtest_main GTest::gmock Threads::Threads)
gtest_discover_tests(hpcb_broker_server_tests DISCOVERY_TIMEOUT 30)
