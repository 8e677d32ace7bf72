/* The shared option parser: both value forms, short options, flags, errors, strict integers and
 * the "did you mean" distance (optimal string alignment: Boytsov, "Indexing methods for
 * approximate dictionary searching", ACM JEA 2011, section 2.2). */
#include "cli.h"

#include <CUnit/Basic.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "cunit_main.h"

enum { OPT_OUT, OPT_SEED, OPT_ZERO1, OPT_TP, OPT_RECOMPUTE };

static const struct cli_option table[] = {
  { "out", 'o', CLI_VALUE, OPT_OUT, "DIR", "output" },
  { "seed", 0, CLI_VALUE, OPT_SEED, "N", "seed" },
  { "zero1", 0, CLI_FLAG, OPT_ZERO1, NULL, "flag" },
  { "tp", 0, CLI_VALUE, OPT_TP, "T", "tp" },
  { "tensor-model-parallel-size", 0, CLI_VALUE, OPT_TP, "T", NULL },
  { "recompute", 0, CLI_OPTIONAL, OPT_RECOMPUTE, "[MODE]", "optional value" },
  CLI_TABLE_END,
};

/* Parses argv (NULL-terminated) and records "id=value" per option, or "E" for an error. */
static void parse(const char **args, char *trace, size_t len)
{
  char *argv[32];
  int argc = 0;
  argv[argc++] = "test";
  for (; *args; args++)
    argv[argc++] = (char *)*args;
  argv[argc] = NULL;
  struct cli c;
  cli_init(&c, "test", argc, argv);
  cli_add_table(&c, table);
  trace[0] = '\0';
  FILE *saved = stderr;
  stderr = fopen("/dev/null", "w"); /* the error messages are not what is checked here */
  for (int id; (id = cli_next(&c)) != CLI_DONE;) {
    size_t used = strlen(trace);
    if (id == CLI_ERROR) {
      snprintf(trace + used, len - used, "E;");
      break;
    }
    snprintf(trace + used, len - used, "%d=%s;", id, c.value ? c.value : "");
  }
  fclose(stderr);
  stderr = saved;
}

static void test_cli_value_forms_are_equal(void)
{
  char a[256], b[256], s[256];
  parse((const char *[]){ "--out", "d", "--seed", "7", "--zero1", NULL }, a, sizeof a);
  parse((const char *[]){ "--out=d", "--seed=7", "--zero1", NULL }, b, sizeof b);
  parse((const char *[]){ "-o", "d", "--seed", "7", "--zero1", NULL }, s, sizeof s);
  CU_ASSERT_STRING_EQUAL(a, "0=d;1=7;2=;");
  CU_ASSERT_STRING_EQUAL(a, b);
  CU_ASSERT_STRING_EQUAL(a, s);
  parse((const char *[]){ "-od", NULL }, s, sizeof s);
  CU_ASSERT_STRING_EQUAL(s, "0=d;");
  /* An alias returns the id of the option it names. */
  parse((const char *[]){ "--tensor-model-parallel-size=4", NULL }, s, sizeof s);
  CU_ASSERT_STRING_EQUAL(s, "3=4;");
  /* After "--" everything is positional (CLI_POSITIONAL = -3). */
  parse((const char *[]){ "--", "--out", NULL }, s, sizeof s);
  CU_ASSERT_STRING_EQUAL(s, "-3=--out;");
}

/* An optional value: after '=', or the next argument unless it starts with '-'; none (value NULL,
 * recorded empty) at the end, before an option, or after "--". */
static void test_cli_optional_value(void)
{
  char t[256];
  parse((const char *[]){ "--recompute", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "4=;");
  parse((const char *[]){ "--recompute", "--zero1", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "4=;2=;");
  parse((const char *[]){ "--recompute", "selective", "--zero1", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "4=selective;2=;");
  parse((const char *[]){ "--recompute=full", "-o", "d", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "4=full;0=d;");
  parse((const char *[]){ "--recompute=", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "E;");
}

static void test_cli_refusals(void)
{
  char t[256];
  parse((const char *[]){ "--outt", "d", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "E;");
  parse((const char *[]){ "--ou", "d", NULL }, t, sizeof t); /* no abbreviations */
  CU_ASSERT_STRING_EQUAL(t, "E;");
  parse((const char *[]){ "--seed", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "E;");
  parse((const char *[]){ "--seed=", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "E;");
  parse((const char *[]){ "--zero1=1", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "E;");
  parse((const char *[]){ "-x", NULL }, t, sizeof t);
  CU_ASSERT_STRING_EQUAL(t, "E;");
}

static void test_cli_integers_are_strict(void)
{
  long v = 0;
  uint64_t u = 0;
  CU_ASSERT_EQUAL(cli_parse_long("42", 0, 100, &v), 0);
  CU_ASSERT_EQUAL(v, 42);
  CU_ASSERT_EQUAL(cli_parse_long("-3", -5, 5, &v), 0);
  CU_ASSERT_EQUAL(v, -3);
  const char *junk[] = { "", " 1", "1 ", "+1", "0x10", "1e3", "8.0", "12abc", "-", "--1" };
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
    CU_ASSERT_EQUAL(cli_parse_long(junk[i], LONG_MIN, LONG_MAX, &v), -1);
  CU_ASSERT_EQUAL(cli_parse_long("101", 0, 100, &v), -1);
  CU_ASSERT_EQUAL(cli_parse_long("99999999999999999999", 0, LONG_MAX, &v), -1);
  CU_ASSERT_EQUAL(cli_parse_u64("18446744073709551615", &u), 0);
  CU_ASSERT_EQUAL(u, UINT64_MAX);
  CU_ASSERT_EQUAL(cli_parse_u64("18446744073709551616", &u), -1);
  CU_ASSERT_EQUAL(cli_parse_u64("-1", &u), -1);
}

static void test_cli_edit_distance(void)
{
  CU_ASSERT_EQUAL(cli_edit_distance("fabric", "fabric"), 0);
  CU_ASSERT_EQUAL(cli_edit_distance("fabirc", "fabric"), 1); /* one transposition */
  CU_ASSERT_EQUAL(cli_edit_distance("radx", "radix"), 1);
  CU_ASSERT_EQUAL(cli_edit_distance("H100", "h100"), 0); /* case is ignored */
  CU_ASSERT_EQUAL(cli_edit_distance("kitten", "sitting"), 3);
  CU_ASSERT_EQUAL(cli_edit_distance("", "abc"), 3);
}

static void test_cli_suggestions(void)
{
  const char *models[] = { "gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", NULL };
  char m[128] = "x";
  cli_did_you_mean(m, sizeof m, "llama3-8", models, NULL);
  CU_ASSERT_STRING_EQUAL(m, "x (did you mean llama3-8b?)");
  strcpy(m, "x");
  cli_did_you_mean(m, sizeof m, "gpt3", models, NULL); /* a word that starts a name */
  CU_ASSERT_STRING_EQUAL(m, "x (did you mean gpt3-175b?)");
  strcpy(m, "x");
  cli_did_you_mean(m, sizeof m, "resnet50", models, NULL); /* nothing close: no suggestion */
  CU_ASSERT_STRING_EQUAL(m, "x");
  const char *fabrics[] = { "ideal", "ib", "roce", NULL };
  strcpy(m, "x");
  cli_did_you_mean(m, sizeof m, "rocev2", fabrics, "--fabric ");
  CU_ASSERT_STRING_EQUAL(m, "x (did you mean --fabric roce?)");
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "cli";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "test_cli_value_forms_are_equal", test_cli_value_forms_are_equal },
  { "test_cli_optional_value", test_cli_optional_value },
  { "test_cli_refusals", test_cli_refusals },
  { "test_cli_integers_are_strict", test_cli_integers_are_strict },
  { "test_cli_edit_distance", test_cli_edit_distance },
  { "test_cli_suggestions", test_cli_suggestions },
  { NULL, NULL },
};
