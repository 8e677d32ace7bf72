/* The unit tests' shared main (cunit_main.c): a test file defines its suite's name and a table of
 * its tests, ended by {NULL, NULL}; the main registers them with CUnit, runs them verbosely and
 * exits non-zero when any assertion failed. */
#ifndef SGF_CUNIT_MAIN_H
#define SGF_CUNIT_MAIN_H

#include <CUnit/CUnit.h>
#include <stddef.h>

struct sgf_unit_test {
  const char *name;
  CU_TestFunc fn;
};

extern const char sgf_unit_suite[];
extern const struct sgf_unit_test sgf_unit_tests[];

#endif
