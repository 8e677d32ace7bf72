/* check.h: a failed SGF_CHECK and an exhausted allocation stop the process with file:line and
 * the reason on stderr, by abort(); a passing check costs nothing visible. Each case runs in a
 * child process whose stderr and end are read back. */
#include <CUnit/Basic.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cunit_main.h"

/* Runs fn in a child; returns its terminating signal (0 if it exited) and its stderr in out. */
static int run_child(void (*fn)(void), char *out, size_t outlen)
{
  int pipefd[2];
  if (pipe(pipefd) != 0)
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    dup2(pipefd[1], 2);
    fn();
    _exit(0);
  }
  close(pipefd[1]);
  size_t n = 0;
  ssize_t got;
  while (n + 1 < outlen && (got = read(pipefd[0], out + n, outlen - n - 1)) > 0)
    n += (size_t)got;
  out[n] = '\0';
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

enum { FAILING_CHECK_LINE = __LINE__ + 4 }; /* the line of the SGF_CHECK below */
static void failing_check(void)
{
  int credits = 3;
  SGF_CHECK(credits >= 5, "%d credits for a %d-block packet", credits, 5);
}

static void passing_check(void) { SGF_CHECK(1 + 1 == 2, "arithmetic"); }

static void huge_allocation(void)
{
  /* More than any machine has: malloc fails, the helper names the size and the caller. */
  void *p = sgf_xmalloc(SIZE_MAX / 2);
  (void)p;
}

static void test_check_in_child(void)
{
  char err[512], want[128];
  int sig = run_child(failing_check, err, sizeof err);
  CU_ASSERT_EQUAL(sig, SIGABRT);
  snprintf(want, sizeof want, "test_check.c:%d: internal error: 3 credits for a 5-block packet\n",
           (int)FAILING_CHECK_LINE);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "sgfabric: "));

  CU_ASSERT_EQUAL(run_child(passing_check, err, sizeof err), 0);
  CU_ASSERT_STRING_EQUAL(err, "");
}

static void test_exhausted_allocation_names_size(void)
{
  char err[512];
  int sig = run_child(huge_allocation, err, sizeof err);
  CU_ASSERT_EQUAL(sig, SIGABRT);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "test_check.c:"));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of memory"));
  char size[64];
  snprintf(size, sizeof size, "(%zu bytes asked for)", (size_t)(SIZE_MAX / 2));
  CU_ASSERT_PTR_NOT_NULL(strstr(err, size));
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "check";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "failed_check_names_file_line_and_reason", test_check_in_child },
  { "exhausted_allocation_names_size", test_exhausted_allocation_names_size },
  { NULL, NULL },
};
