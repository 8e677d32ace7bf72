/* The shared main of the CUnit tests (cunit_main.h). */
#include <CUnit/Basic.h>

#include "cunit_main.h"

int main(void)
{
  if (CU_initialize_registry() != CUE_SUCCESS)
    return CU_get_error();
  CU_pSuite suite = CU_add_suite(sgf_unit_suite, NULL, NULL);
  if (suite == NULL)
    return CU_get_error();
  for (const struct sgf_unit_test *t = sgf_unit_tests; t->name; t++)
    if (CU_add_test(suite, t->name, t->fn) == NULL)
      return CU_get_error();
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  unsigned failures = CU_get_number_of_failures();
  CU_cleanup_registry();
  return failures != 0;
}
