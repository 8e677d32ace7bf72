/* Unit parsing and the parameter table: values, units, ranges and the messages users see. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "fabric.h"
#include "param.h"
#include "units.h"

static int close_to(double a, double b) { return fabs(a - b) <= 1e-12 * fabs(b); }

static void test_units_parse_rates_times_sizes(void)
{
  double v;
  CU_ASSERT(unit_parse_rate("400Gbps", &v) == 0 && close_to(v, 50e9));
  CU_ASSERT(unit_parse_rate("400Gb/s", &v) == 0 && close_to(v, 50e9));
  CU_ASSERT(unit_parse_rate("450GBps", &v) == 0 && close_to(v, 450e9));
  CU_ASSERT(unit_parse_rate("100Mbps", &v) == 0 && close_to(v, 12.5e6));
  CU_ASSERT(unit_parse_time("1us", &v) == 0 && close_to(v, 1e-6));
  CU_ASSERT(unit_parse_time("500ns", &v) == 0 && close_to(v, 5e-7));
  CU_ASSERT(unit_parse_time("2.5ms", &v) == 0 && close_to(v, 2.5e-3));
  CU_ASSERT(unit_parse_size("9MB", &v) == 0 && close_to(v, 9e6));
  CU_ASSERT(unit_parse_size("100KB", &v) == 0 && close_to(v, 1e5));
  CU_ASSERT(unit_parse_size("4KiB", &v) == 0 && close_to(v, 4096));
  CU_ASSERT(unit_parse_size("4096", &v) == 0 && close_to(v, 4096));
}

static void test_units_refuse_bad_text(void)
{
  double v = 123;
  CU_ASSERT_EQUAL(unit_parse_rate("400", &v), -1);      /* a rate needs its unit */
  CU_ASSERT_EQUAL(unit_parse_rate("-5Gbps", &v), -1);   /* negative */
  CU_ASSERT_EQUAL(unit_parse_rate("fastGbps", &v), -1);
  CU_ASSERT_EQUAL(unit_parse_time("1", &v), -1);
  CU_ASSERT_EQUAL(unit_parse_time("1parsec", &v), -1);
  CU_ASSERT_EQUAL(unit_parse_size("9XB", &v), -1);
  CU_ASSERT_EQUAL(unit_parse_size("", &v), -1);
  CU_ASSERT_EQUAL(unit_parse_size("nanMB", &v), -1);
  CU_ASSERT_EQUAL(v, 123);
}

static void test_param_defaults_and_overrides(void)
{
  fabric_register_params();
  struct param_set *set = param_set_new();
  char err[256];
  CU_ASSERT_EQUAL(param_get(set, "fabric/mtu"), 4096);
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/mtu:2048", err, sizeof err), 0);
  CU_ASSERT_EQUAL(param_get(set, "fabric/mtu"), 2048);
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/nic-latency:1us", err, sizeof err), 0);
  CU_ASSERT(close_to(param_get(set, "fabric/nic-latency"), 1e-6));
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/switching:store-and-forward", err, sizeof err), 0);
  CU_ASSERT_EQUAL(param_get_choice(set, "fabric/switching"), FAB_SWITCHING_STORE_AND_FORWARD);
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/link-stats:off", err, sizeof err), 0);
  CU_ASSERT_EQUAL(param_get(set, "fabric/link-stats"), 0);
  param_set_free(set);
}

static void test_param_errors_name_the_parameter(void)
{
  fabric_register_params();
  struct param_set *set = param_set_new();
  char err[256];
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/nope:1", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "fabric/nope"));
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/mtu:10", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "fabric/mtu"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of range"));
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/mtu:4000.5", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "integer"));
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/nic-latency:5", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "fabric/nic-latency"));
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/switching:wormhole", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "cut-through|store-and-forward"));
  CU_ASSERT_EQUAL(param_set_cfg(set, "fabric/mtu", err, sizeof err), -1);
  CU_ASSERT_EQUAL(param_get(set, "fabric/mtu"), 4096); /* refused values leave the old one */
  param_set_free(set);
}

int main(void)
{
  CU_initialize_registry();
  CU_pSuite s = CU_add_suite("units_params", NULL, NULL);
  CU_add_test(s, "units_parse_rates_times_sizes", test_units_parse_rates_times_sizes);
  CU_add_test(s, "units_refuse_bad_text", test_units_refuse_bad_text);
  CU_add_test(s, "param_defaults_and_overrides", test_param_defaults_and_overrides);
  CU_add_test(s, "param_errors_name_the_parameter", test_param_errors_name_the_parameter);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  int failures = (int)CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures != 0;
}
