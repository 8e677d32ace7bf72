/* Text inputs: opening with clear messages, lines with their numbers, strict indices. */
#include "text_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fabric.h"

FILE *text_input_open(const char *path, const char *what, char *err, size_t errlen)
{
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s: is a directory, not a %s", path, what);
    return NULL;
  }
  FILE *in = fopen(path, "r");
  if (in == NULL)
    snprintf(err, errlen, "%s: cannot open the %s: %s", path, what, strerror(errno));
  return in;
}

char *text_input_slurp(const char *path, const char *what, size_t max, size_t *len, char *err, size_t errlen)
{
  FILE *in = text_input_open(path, what, err, errlen);
  if (in == NULL)
    return NULL;
  char *text = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n + 65536 + 1 > cap) {
      cap = cap ? 2 * cap : 65536 + 1;
      char *grown = realloc(text, cap);
      if (grown == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
      }
      text = grown;
    }
    errno = 0;
    size_t got = fread(text + n, 1, cap - n - 1, in);
    n += got;
    if (n > max) {
      snprintf(err, errlen, "%s: larger than %zu bytes: not a %s", path, max, what);
      goto fail;
    }
    if (got == 0)
      break;
  }
  if (ferror(in)) {
    snprintf(err, errlen, "%s: read error: %s", path, strerror(errno ? errno : EIO));
    goto fail;
  }
  fclose(in);
  text[n] = '\0';
  *len = n;
  return text;
fail:
  free(text);
  fclose(in);
  return NULL;
}

void text_input_init(struct text_input *t, FILE *in, const char *path, size_t max_len)
{
  memset(t, 0, sizeof *t);
  t->in = in;
  t->path = path;
  t->max_len = max_len;
}

void text_input_free(struct text_input *t)
{
  free(t->buf);
  t->buf = NULL;
  t->cap = 0;
}

int text_input_line(struct text_input *t, char **line, size_t *len, char *err, size_t errlen)
{
  errno = 0;
  ssize_t got = getline(&t->buf, &t->cap, t->in);
  if (got < 0) {
    if (ferror(t->in)) {
      snprintf(err, errlen, "%s:%d: read error: %s", t->path, t->line + 1, strerror(errno ? errno : EIO));
      return -1;
    }
    return 0;
  }
  t->line++;
  size_t n = (size_t)got;
  /* getline counts the bytes, so a NUL inside the line is seen (fgets + strlen would cut the
   * line there and report something unrelated further on). */
  const char *nul = memchr(t->buf, '\0', n);
  if (nul != NULL) {
    snprintf(err, errlen, "%s:%d: NUL byte at column %zu: not a text file", t->path, t->line,
             (size_t)(nul - t->buf) + 1);
    return -1;
  }
  if (n > 0 && t->buf[n - 1] == '\n')
    n--;
  if (n > 0 && t->buf[n - 1] == '\r')
    n--;
  t->buf[n] = '\0';
  if (t->max_len && n > t->max_len) {
    snprintf(err, errlen, "%s:%d: line longer than %zu characters", t->path, t->line, t->max_len);
    return -1;
  }
  char *start = t->buf;
  if (t->line == 1 && n >= 3 && memcmp(start, "\xEF\xBB\xBF", 3) == 0) {
    start += 3; /* UTF-8 byte order mark */
    n -= 3;
  }
  *line = start;
  if (len)
    *len = n;
  return 1;
}

int text_parse_index(const char *text, long long max, long long *value)
{
  if (text == NULL || *text < '0' || *text > '9' || (text[0] == '0' && text[1] != '\0'))
    return -1;
  long long v = 0;
  for (const char *p = text; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    int digit = *p - '0';
    if (digit > max || v > (max - digit) / 10)
      return -1;
    v = 10 * v + digit;
  }
  *value = v;
  return 0;
}

int text_date_us_too_late(double us, const char *path, int line, const char *field, const char *text, char *err,
                          size_t errlen)
{
  if (!(us > FAB_MAX_DATE_S * 1e6))
    return 0;
  snprintf(err, errlen,
           "%s:%d: %s must be at most %.0f (%.0f s of simulated time: later dates cannot time a packet), found %.40s",
           path, line, field, FAB_MAX_DATE_S * 1e6, FAB_MAX_DATE_S, text);
  return 1;
}
