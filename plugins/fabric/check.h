/* One policy for what must not fail: a broken invariant or exhausted memory stops the process
 * with file:line and the reason on stderr, then abort() (a core dump, a debugger stop). User
 * input never reaches these: bad input is an error message and an exit status (docs/bad-input.md).
 *
 *   SGF_CHECK(hops >= 0, "no route from GPU %d to GPU %d", src, dst);
 *   struct x *p = sgf_xcalloc(n, sizeof *p);
 */
#ifndef SGFABRIC_CHECK_H
#define SGFABRIC_CHECK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SGF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SGF_PRINTF(f, a)
#endif

/* Prints "sgfabric: FILE:LINE: internal error: MESSAGE" and aborts. */
_Noreturn void sgf_fatal(const char *file, int line, const char *fmt, ...) SGF_PRINTF(3, 4);

/* Stops with the reason when cond is false. */
#define SGF_CHECK(cond, ...)                                                                                           \
  do {                                                                                                                 \
    if (!(cond))                                                                                                       \
      sgf_fatal(__FILE__, __LINE__, __VA_ARGS__);                                                                      \
  } while (0)

/* malloc, calloc, realloc and strdup that never return NULL: on exhaustion they stop with the
 * size asked for and the caller's file:line. A size of 0 allocates one byte. */
void *sgf_xmalloc_at(size_t bytes, const char *file, int line);
void *sgf_xcalloc_at(size_t n, size_t size, const char *file, int line);
void *sgf_xrealloc_at(void *p, size_t bytes, const char *file, int line);
char *sgf_xstrdup_at(const char *s, const char *file, int line);
#define sgf_xmalloc(bytes) sgf_xmalloc_at((bytes), __FILE__, __LINE__)
#define sgf_xcalloc(n, size) sgf_xcalloc_at((n), (size), __FILE__, __LINE__)
#define sgf_xrealloc(p, bytes) sgf_xrealloc_at((p), (bytes), __FILE__, __LINE__)
#define sgf_xstrdup(s) sgf_xstrdup_at((s), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif

#endif
