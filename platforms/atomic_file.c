/* Atomic, regular-only output files (see the header). */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The signals held while a file is written: an interrupt then never leaves a temporary file. */
static sigset_t g_held, g_before;

static void hold_signals(void)
{
  sigemptyset(&g_held);
  sigaddset(&g_held, SIGINT);
  sigaddset(&g_held, SIGTERM);
  sigaddset(&g_held, SIGHUP);
  sigprocmask(SIG_BLOCK, &g_held, &g_before);
}

/* Whether one of the held signals is pending (it acts as soon as they are released). */
static int interrupted(void)
{
  sigset_t pending;
  if (sigpending(&pending) != 0)
    return 0;
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
         sigismember(&pending, SIGHUP) == 1;
}

FILE *atomic_file_open(struct atomic_file *a, const char *path, char *err, size_t errlen)
{
  memset(a, 0, sizeof *a);
  if (path[0] == '\0' || strlen(path) >= sizeof a->path) {
    snprintf(err, errlen, "invalid output file name '%s'", path);
    return NULL;
  }
  struct stat st;
  if (lstat(path, &st) == 0) {
    const char *what = S_ISLNK(st.st_mode)    ? "a symbolic link"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a fifo"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISREG(st.st_mode)  ? NULL
                                              : "not a regular file";
    if (what) {
      snprintf(err, errlen, "%s: is %s; only a regular file is written (give a file name), nothing was touched", path,
               what);
      return NULL;
    }
  } else if (errno != ENOENT) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  snprintf(a->path, sizeof a->path, "%s", path);
  snprintf(a->tmp, sizeof a->tmp, "%s.tmp-XXXXXX", path);
  hold_signals();
  int fd = mkstemp(a->tmp);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot create a file in its directory: %s", path, strerror(errno));
    a->tmp[0] = '\0';
    sigprocmask(SIG_SETMASK, &g_before, NULL);
    return NULL;
  }
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask); /* mkstemp makes it 0600; the file is an ordinary one */
  a->f = fdopen(fd, "w");
  if (a->f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    atomic_file_abort(a);
    return NULL;
  }
  return a->f;
}

int atomic_file_commit(struct atomic_file *a, char *err, size_t errlen)
{
  int failed = ferror(a->f);
  int saved = failed ? errno : 0; /* that of the write that failed */
  if (fclose(a->f) != 0) {
    failed = 1;
    saved = errno;
  }
  a->f = NULL;
  if (failed) {
    snprintf(err, errlen, "%s: write failed: %s; nothing written", a->path, saved ? strerror(saved) : "I/O error");
    atomic_file_abort(a);
    return -1;
  }
  if (interrupted()) {
    snprintf(err, errlen, "%s: interrupted, nothing written", a->path);
    atomic_file_abort(a);
    return -1;
  }
  /* The target may have been replaced by something else meanwhile: check again. */
  struct stat st;
  if (lstat(a->path, &st) == 0 && !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s: is no longer a regular file; nothing written", a->path);
    atomic_file_abort(a);
    return -1;
  }
  if (rename(a->tmp, a->path) != 0) {
    snprintf(err, errlen, "%s: cannot rename the written file into place: %s", a->path, strerror(errno));
    atomic_file_abort(a);
    return -1;
  }
  a->tmp[0] = '\0';
  sigprocmask(SIG_SETMASK, &g_before, NULL);
  return 0;
}

void atomic_file_abort(struct atomic_file *a)
{
  if (a->f)
    fclose(a->f);
  a->f = NULL;
  if (a->tmp[0]) {
    unlink(a->tmp);
    a->tmp[0] = '\0';
    sigprocmask(SIG_SETMASK, &g_before, NULL);
  }
}
