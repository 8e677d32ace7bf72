/* Failure schedules for the tests: a schedule's text (the CSV of --failures) through a temporary
 * file, as a user's file goes through fab_failures_load. */
#ifndef SGFABRIC_TEST_FAILURES_SUPPORT_H
#define SGFABRIC_TEST_FAILURES_SUPPORT_H

#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failure.h"

/* The schedule of text on topology t, or NULL with the loader's message on stderr. */
static inline struct fab_failures *failures_from_text(const struct topo *t, const char *text)
{
  char path[] = "/tmp/sgf-test-failures-XXXXXX", err[512];
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  CU_ASSERT_FATAL(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  struct fab_failures *f = fab_failures_load(path, t, err, sizeof err);
  if (f == NULL)
    fprintf(stderr, "\n    %s", err);
  unlink(path);
  return f;
}

#endif
