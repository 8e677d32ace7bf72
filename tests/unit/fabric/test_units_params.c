/* Unit parsing and the parameter table: values, units, ranges and the messages users see. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "json_out.h"
#include "param.h"
#include "text_input.h"
#include "units.h"
#include "cunit_main.h"

static int close_to(double a, double b) { return fabs(a - b) <= 1e-12 * fabs(b); }

static void test_units_parse_rates_times_sizes(void)
{
  double v;
  CU_ASSERT(fab_unit_parse_rate("400Gbps", &v) == 0 && close_to(v, 50e9));
  CU_ASSERT(fab_unit_parse_rate("400Gb/s", &v) == 0 && close_to(v, 50e9));
  CU_ASSERT(fab_unit_parse_rate("450GBps", &v) == 0 && close_to(v, 450e9));
  CU_ASSERT(fab_unit_parse_rate("100Mbps", &v) == 0 && close_to(v, 12.5e6));
  CU_ASSERT(fab_unit_parse_time("1us", &v) == 0 && close_to(v, 1e-6));
  CU_ASSERT(fab_unit_parse_time("500ns", &v) == 0 && close_to(v, 5e-7));
  CU_ASSERT(fab_unit_parse_time("2.5ms", &v) == 0 && close_to(v, 2.5e-3));
  CU_ASSERT(fab_unit_parse_size("9MB", &v) == 0 && close_to(v, 9e6));
  CU_ASSERT(fab_unit_parse_size("100KB", &v) == 0 && close_to(v, 1e5));
  CU_ASSERT(fab_unit_parse_size("4KiB", &v) == 0 && close_to(v, 4096));
  CU_ASSERT(fab_unit_parse_size("4096", &v) == 0 && close_to(v, 4096));
}

static void test_units_refuse_bad_text(void)
{
  double v = 123;
  CU_ASSERT_EQUAL(fab_unit_parse_rate("400", &v), -1);    /* a rate needs its unit */
  CU_ASSERT_EQUAL(fab_unit_parse_rate("-5Gbps", &v), -1); /* negative */
  CU_ASSERT_EQUAL(fab_unit_parse_rate("fastGbps", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_time("1", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_time("1parsec", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_size("9XB", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_size("", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_size("nanMB", &v), -1);
  CU_ASSERT_EQUAL(v, 123);
}

static void test_param_defaults_and_overrides(void)
{
  fabric_register_params();
  struct param_set *set = fab_param_set_new();
  char err[256];
  CU_ASSERT_EQUAL(fab_param_get(set, "fabric/mtu"), 4096);
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/mtu:2048", err, sizeof err), 0);
  CU_ASSERT_EQUAL(fab_param_get(set, "fabric/mtu"), 2048);
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/nic-latency:1us", err, sizeof err), 0);
  CU_ASSERT(close_to(fab_param_get(set, "fabric/nic-latency"), 1e-6));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/switching:store-and-forward", err, sizeof err), 0);
  CU_ASSERT_EQUAL(fab_param_get_choice(set, "fabric/switching"), FAB_SWITCHING_STORE_AND_FORWARD);
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/link-stats:off", err, sizeof err), 0);
  CU_ASSERT_EQUAL(fab_param_get(set, "fabric/link-stats"), 0);
  fab_param_set_free(set);
}

static void test_param_errors_name_the_parameter(void)
{
  fabric_register_params();
  struct param_set *set = fab_param_set_new();
  char err[256];
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/nope:1", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "fabric/nope"));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/mtu:10", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "fabric/mtu"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of range"));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/mtu:4000.5", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "integer"));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/nic-latency:5", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "fabric/nic-latency"));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/switching:wormhole", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "cut-through|store-and-forward"));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "fabric/mtu", err, sizeof err), -1);
  CU_ASSERT_EQUAL(fab_param_get(set, "fabric/mtu"), 4096); /* refused values leave the old one */
  fab_param_set_free(set);
}

/* A finite number times a finite unit can overflow: the value promised finite must be checked
 * after scaling ("1e300TB" gave inf, which reached summary.json). */
static void test_units_refuse_overflow_after_scaling(void)
{
  double v = 7;
  CU_ASSERT_EQUAL(fab_unit_parse_size("1e300TB", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_rate("1e300TBps", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_time("1e307h", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_size("1e999", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_number("inf", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_number("nan", &v), -1);
  CU_ASSERT_EQUAL(fab_unit_parse_number("12abc", &v), -1);
  CU_ASSERT_EQUAL(v, 7);
  CU_ASSERT(fab_unit_parse_size("1e300B", &v) == 0 && v == 1e300); /* large but finite */
  char why[64];
  CU_ASSERT_PTR_NOT_NULL(strstr(fab_unit_parse_why(UNIT_BYTES, "1e300TB", why, sizeof why), "too large"));
  CU_ASSERT_PTR_NOT_NULL(strstr(fab_unit_parse_why(UNIT_BYTES, "-5MB", why, sizeof why), "negative"));
  CU_ASSERT_PTR_NOT_NULL(strstr(fab_unit_parse_why(UNIT_BYTES, "5XB", why, sizeof why), "unknown unit 'XB'"));
  CU_ASSERT_PTR_NOT_NULL(strstr(fab_unit_parse_why(UNIT_SECONDS, "5", why, sizeof why), "needs a unit"));
  CU_ASSERT_PTR_NOT_NULL(strstr(fab_unit_parse_why(UNIT_NONE, "5x", why, sizeof why), "trailing text 'x'"));
  CU_ASSERT_PTR_NOT_NULL(strstr(fab_unit_parse_why(UNIT_NONE, "nan", why, sizeof why), "NaN"));
  CU_ASSERT_PTR_NULL(fab_unit_parse_why(UNIT_BYTES, "9MB", why, sizeof why));
}

/* Every value written to JSON goes through json_out: quotes, backslashes, control bytes and
 * invalid UTF-8 escaped, inf and NaN written as null (RFC 8259 sections 6 and 7). */
static void test_json_strings_and_numbers(void)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  json_write_string(f, "x\"y\\z\n\x01");
  fputc(' ', f);
  json_write_string(f, "caf\xc3\xa9 \xff\xc3");
  fputc(' ', f);
  json_write_number(f, 1.5);
  fputc(' ', f);
  json_write_number(f, HUGE_VAL);
  fputc(' ', f);
  json_write_number(f, NAN);
  fprintf(f, " %s", JSON_NUMBER(-HUGE_VAL));
  fclose(f);
  CU_ASSERT_STRING_EQUAL(text, "\"x\\\"y\\\\z\\u000a\\u0001\" \"caf\xc3\xa9 \\ufffd\\ufffd\" 1.5 null null null");
  free(text);
}

/* A text parameter that takes a keyword or a value with a unit is range-checked when set. */
static void test_param_text_values_are_range_checked(void)
{
  static const struct param_def defs[] = {
    { "test/latency", PARAM_TEXT, UNIT_SECONDS, "keep", 0, 1e-3, "keep", "a keyword or a duration", "" },
    { "test/mode", PARAM_TEXT, UNIT_NONE, "auto", 0, 0, "auto|on|off", "one of three words", "" },
    { "test/free", PARAM_TEXT, UNIT_NONE, "any", 0, 0, NULL, "free text", "" },
    { NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
  };
  fab_param_register(defs);
  struct param_set *set = fab_param_set_new();
  char err[256];
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "test/latency:keep", err, sizeof err), 0);
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "test/latency:100ns", err, sizeof err), 0);
  CU_ASSERT_STRING_EQUAL(fab_param_get_text(set, "test/latency"), "100ns");
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "test/latency:2s", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "test/latency"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of range"));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "test/latency:1e300h", err, sizeof err), -1);
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "test/latency:fast", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "keep"));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "test/mode:on", err, sizeof err), 0);
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "test/mode:maybe", err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "auto|on|off"));
  CU_ASSERT_EQUAL(fab_param_set_cfg(set, "test/free:x\"y", err, sizeof err), 0);
  CU_ASSERT_STRING_EQUAL(fab_param_get_text(set, "test/latency"), "100ns"); /* refused values leave the old one */
  char *json = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&json, &len);
  fab_param_write_json(set, f, "");
  fclose(f);
  CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"test/free\": \"x\\\"y\""));
  free(json);
  fab_param_set_free(set);
}

/* Text inputs: a UTF-8 BOM on line 1 is dropped (it is invisible in a message quoting the line),
 * CRLF ends a line, a NUL byte is named with its line and column, and an over-long line is refused. */
static void test_text_input_lines(void)
{
  static const char text[] = "\xEF\xBB\xBFsrc,dst\r\nsecond\n\xEF\xBB\xBFthird\nfo\0ur\n";
  FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
  struct text_input t;
  text_input_init(&t, f, "in.csv", 16);
  char *line, err[128];
  size_t len;
  CU_ASSERT_EQUAL(text_input_line(&t, &line, &len, err, sizeof err), 1);
  CU_ASSERT_STRING_EQUAL(line, "src,dst");
  CU_ASSERT_EQUAL(len, 7);
  CU_ASSERT_EQUAL(text_input_line(&t, &line, &len, err, sizeof err), 1);
  CU_ASSERT_STRING_EQUAL(line, "second");
  CU_ASSERT_EQUAL(text_input_line(&t, &line, &len, err, sizeof err), 1);
  CU_ASSERT_STRING_EQUAL(line, "\xEF\xBB\xBFthird"); /* only line 1 may start with a BOM */
  CU_ASSERT_EQUAL(text_input_line(&t, &line, &len, err, sizeof err), -1);
  CU_ASSERT_STRING_EQUAL(err, "in.csv:4: NUL byte at column 3: not a text file");
  text_input_free(&t);
  fclose(f);

  static const char longer[] = "0123456789abcdefg\n";
  f = fmemopen((void *)longer, sizeof longer - 1, "r");
  text_input_init(&t, f, "in.csv", 16);
  CU_ASSERT_EQUAL(text_input_line(&t, &line, &len, err, sizeof err), -1);
  CU_ASSERT_STRING_EQUAL(err, "in.csv:1: line longer than 16 characters");
  text_input_free(&t);
  fclose(f);

  CU_ASSERT_PTR_NULL(text_input_open(SGF_SOURCE_DIR "/docs", "flow file", err, sizeof err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "docs: is a directory, not a flow file"));
  CU_ASSERT_PTR_NULL(text_input_open(SGF_SOURCE_DIR "/no-such-file", "flow file", err, sizeof err));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "no-such-file: cannot open the flow file: No such file or directory"));
}

/* Ranks, GPU indices and counts: decimal digits only, no wrap-around. */
static void test_text_parse_index(void)
{
  long long v = -1;
  CU_ASSERT(text_parse_index("0", 15, &v) == 0 && v == 0);
  CU_ASSERT(text_parse_index("15", 15, &v) == 0 && v == 15);
  CU_ASSERT(text_parse_index("9223372036854775807", 9223372036854775807LL, &v) == 0 && v == 9223372036854775807LL);
  const char *bad[] = { "16", "4294967296", "99999999999999999999", "-1", "+1", " 1", "1 ", "1junk", "0x1", "1e3", "01",
                        "",   NULL };
  for (int i = 0; bad[i]; i++)
    CU_ASSERT_EQUAL(text_parse_index(bad[i], 15, &v), -1);
  CU_ASSERT_EQUAL(text_parse_index("7", 5, &v), -1); /* one digit above a small maximum */
  CU_ASSERT_EQUAL(text_parse_index("9223372036854775808", 9223372036854775807LL, &v), -1);
  CU_ASSERT_EQUAL(text_parse_index(NULL, 15, &v), -1);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "units_params";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "units_parse_rates_times_sizes", test_units_parse_rates_times_sizes },
  { "units_refuse_bad_text", test_units_refuse_bad_text },
  { "param_defaults_and_overrides", test_param_defaults_and_overrides },
  { "param_errors_name_the_parameter", test_param_errors_name_the_parameter },
  { "units_refuse_overflow_after_scaling", test_units_refuse_overflow_after_scaling },
  { "json_strings_and_numbers", test_json_strings_and_numbers },
  { "param_text_values_are_range_checked", test_param_text_values_are_range_checked },
  { "text_input_lines", test_text_input_lines },
  { "text_parse_index", test_text_parse_index },
  { NULL, NULL },
};
