/* The shared main of the CUnit tests (cunit_main.h). With arguments, only the tests named run
 * (`test_roce_fabric qp_keeps_its_rate`); a name the suite does not have is an error. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_main.h"

static int named(const char *name, int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], name))
      return 1;
  return argc <= 1;
}

int main(int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    const struct sgf_unit_test *t = sgf_unit_tests;
    while (t->name && strcmp(t->name, argv[i]))
      t++;
    if (t->name == NULL) {
      fprintf(stderr, "%s: suite %s has no test named '%s'\n", argv[0], sgf_unit_suite, argv[i]);
      return 2;
    }
  }
  if (CU_initialize_registry() != CUE_SUCCESS)
    return CU_get_error();
  CU_pSuite suite = CU_add_suite(sgf_unit_suite, NULL, NULL);
  if (suite == NULL)
    return CU_get_error();
  for (const struct sgf_unit_test *t = sgf_unit_tests; t->name; t++)
    if (named(t->name, argc, argv) && CU_add_test(suite, t->name, t->fn) == NULL)
      return CU_get_error();
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures != 0;
}
