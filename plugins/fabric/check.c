/* The stop of check.h: the one place that prints why before abort(). */
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void sgf_fatal(const char *file, int line, const char *fmt, ...)
{
  fflush(stdout);
  fprintf(stderr, "sgfabric: %s:%d: internal error: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

static _Noreturn void out_of_memory(size_t bytes, const char *file, int line)
{
  fflush(stdout);
  fprintf(stderr, "sgfabric: %s:%d: out of memory (%zu bytes asked for)\n", file, line, bytes);
  abort();
}

void *sgf_xmalloc_at(size_t bytes, const char *file, int line)
{
  void *p = malloc(bytes ? bytes : 1);
  if (p == NULL)
    out_of_memory(bytes, file, line);
  return p;
}

void *sgf_xcalloc_at(size_t n, size_t size, const char *file, int line)
{
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (p == NULL)
    out_of_memory(n * size, file, line);
  return p;
}

void *sgf_xrealloc_at(void *p, size_t bytes, const char *file, int line)
{
  void *q = realloc(p, bytes ? bytes : 1);
  if (q == NULL)
    out_of_memory(bytes, file, line);
  return q;
}

char *sgf_xstrdup_at(const char *s, const char *file, int line)
{
  size_t n = strlen(s) + 1;
  char *d = sgf_xmalloc_at(n, file, line);
  memcpy(d, s, n);
  return d;
}
