# The multi-host testbed as a CTest fixture. Include this from any tests/ folder;
# it defines the fixture once per build tree. Tests that need hosts add
#   FIXTURES_REQUIRED testbed  RESOURCE_LOCK ferry_testbed  LABELS testbed
#   ENVIRONMENT "FERRY_TESTBED=${FERRY_TESTBED_DIR};FERRY_TESTBED_SCRIPT=${FERRY_TESTBED_SCRIPT}"
# and read ${FERRY_TESTBED_DIR}/hosts.json (or hosts.env).
set(FERRY_TESTBED_SCRIPT "${CMAKE_SOURCE_DIR}/tests/testbed/testbed.sh" CACHE INTERNAL "")
set(FERRY_TESTBED_DIR "${CMAKE_BINARY_DIR}/testbed-state" CACHE INTERNAL "")
set(FERRY_TESTBED_HOSTS 3 CACHE STRING "Hosts the testbed fixture brings up")
get_property(_ferry_testbed_defined GLOBAL PROPERTY FERRY_TESTBED_FIXTURE_DEFINED)
if(NOT _ferry_testbed_defined)
  set_property(GLOBAL PROPERTY FERRY_TESTBED_FIXTURE_DEFINED TRUE)
  add_test(NAME testbed_up
    COMMAND ${FERRY_TESTBED_SCRIPT} up ${FERRY_TESTBED_HOSTS} ${FERRY_TESTBED_DIR})
  set_tests_properties(testbed_up PROPERTIES
    FIXTURES_SETUP testbed LABELS testbed TIMEOUT 120 RESOURCE_LOCK ferry_testbed)
  add_test(NAME testbed_down COMMAND ${FERRY_TESTBED_SCRIPT} down ${FERRY_TESTBED_DIR})
  set_tests_properties(testbed_down PROPERTIES
    FIXTURES_CLEANUP testbed LABELS testbed TIMEOUT 120 RESOURCE_LOCK ferry_testbed)
endif()
