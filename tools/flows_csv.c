/* Flow file reader: strict fields, FILE:LINE messages. */
#include "flows_csv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "text_input.h"

#define FLOWS_HEADER "src,dst,bytes,start_us"

static int parse_real(const char *text, double *out)
{
  if (*text == '\0' || *text == ' ' || *text == '\t')
    return -1;
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  while (*end == ' ' || *end == '\t')
    end++;
  /* strtod also reads "0x1p3", "inf" and "nan": a flow file holds decimal numbers only. */
  if (end == text || *end != '\0' || errno != 0 || !isfinite(v) || strpbrk(text, "xXnN") != NULL)
    return -1;
  *out = v;
  return 0;
}

/* A GPU index: digits only, below n_gpus (4294967296 or "3junk" is refused, not wrapped). */
static int parse_gpu(const char *text, int n_gpus, int *out)
{
  long long v;
  while (*text == ' ' || *text == '\t')
    text++;
  char buf[32];
  size_t len = strlen(text);
  while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
    len--;
  if (len == 0 || len >= sizeof buf)
    return len == 0 ? -1 : -2;
  memcpy(buf, text, len);
  buf[len] = '\0';
  if (text_parse_index(buf, 1LL << 40, &v) != 0)
    return strspn(buf, "0123456789") == len ? -2 : -1;
  if (v >= n_gpus)
    return -2;
  *out = (int)v;
  return 0;
}

int flows_csv_read(FILE *in, const char *path, int n_gpus, struct flow_table *t, char *err, size_t errlen)
{
  struct text_input ti;
  text_input_init(&ti, in, path, 1022);
  memset(t, 0, sizeof *t);
  char *line;
  int cap = 0, rc = -1, got = text_input_line(&ti, &line, NULL, err, errlen);
  if (got < 0)
    goto out;
  if (got == 0) {
    snprintf(err, errlen, "%s:1: empty flow file (expected the header " FLOWS_HEADER ")", path);
    goto out;
  }
  if (strcmp(line, FLOWS_HEADER) != 0) {
    snprintf(err, errlen, "%s:1: header must be '" FLOWS_HEADER "', found '%.200s'", path, line);
    goto out;
  }
  while ((got = text_input_line(&ti, &line, NULL, err, errlen)) > 0) {
    int lineno = ti.line;
    if (line[0] == '\0' || line[0] == '#')
      continue;
    char *fields[5];
    int nf = 0;
    char *p = line;
    while (nf < 5) {
      fields[nf++] = p;
      char *comma = strchr(p, ',');
      if (comma == NULL)
        break;
      *comma = '\0';
      p = comma + 1;
    }
    if (nf != 4) {
      snprintf(err, errlen, "%s:%d: expected 4 fields src,dst,bytes,start_us, found %s%d", path, lineno,
               nf == 5 ? "more than " : "", nf == 5 ? 4 : nf);
      goto out;
    }
    static const char *names[] = { "src", "dst", "bytes", "start_us" };
    int gpu[2];
    for (int k = 0; k < 2; k++) {
      int bad = parse_gpu(fields[k], n_gpus, &gpu[k]);
      if (bad == -1) {
        snprintf(err, errlen, "%s:%d: %s '%.40s' is not an integer", path, lineno, names[k], fields[k]);
        goto out;
      }
      if (bad == -2) {
        snprintf(err, errlen, "%s:%d: %s %.40s is not a GPU of the platform (0..%d)", path, lineno, names[k], fields[k],
                 n_gpus - 1);
        goto out;
      }
    }
    double v[2];
    for (int k = 0; k < 2; k++)
      if (parse_real(fields[k + 2], &v[k]) != 0) {
        snprintf(err, errlen, "%s:%d: %s '%.40s' is not a number", path, lineno, names[k + 2], fields[k + 2]);
        goto out;
      }
    if (v[0] <= 0) {
      snprintf(err, errlen, "%s:%d: bytes must be positive, found %.40s", path, lineno, fields[2]);
      goto out;
    }
    /* Transfers are whole bytes (a fraction of a byte cannot be put in a packet), at most 2^50. */
    if (v[0] != floor(v[0]) || v[0] > FAB_MAX_TRANSFER_BYTES) {
      snprintf(err, errlen,
               "%s:%d: bytes must be a whole number of bytes from 1 to 2^50 (1125899906842624), found %.40s", path,
               lineno, fields[2]);
      goto out;
    }
    if (v[1] < 0) {
      snprintf(err, errlen, "%s:%d: start_us must be non-negative, found %.40s", path, lineno, fields[3]);
      goto out;
    }
    if (text_date_us_too_late(v[1], path, lineno, "start_us", fields[3], err, errlen))
      goto out;
    if (gpu[0] == gpu[1]) {
      snprintf(err, errlen, "%s:%d: src and dst are the same GPU (%d)", path, lineno, gpu[0]);
      goto out;
    }
    if (t->n == cap) {
      if (cap >= (1 << 29)) {
        snprintf(err, errlen, "%s:%d: more than %d flows", path, lineno, cap);
        goto out;
      }
      cap = cap ? 2 * cap : 1024;
      struct flow_row *grown = realloc(t->rows, (size_t)cap * sizeof *t->rows);
      if (grown == NULL) {
        snprintf(err, errlen, "%s:%d: out of memory", path, lineno);
        goto out;
      }
      t->rows = grown;
    }
    t->rows[t->n++] = (struct flow_row){ gpu[0], gpu[1], v[0], v[1], -1 };
  }
  if (got < 0)
    goto out;
  if (t->n == 0) {
    snprintf(err, errlen, "%s: no flows after the header", path);
    goto out;
  }
  rc = 0;
out:
  text_input_free(&ti);
  if (rc != 0)
    flows_csv_free(t);
  return rc;
}

int flows_csv_load(const char *path, int n_gpus, struct flow_table *t, char *err, size_t errlen)
{
  memset(t, 0, sizeof *t);
  FILE *in = text_input_open(path, "flow file", err, errlen);
  if (in == NULL)
    return -1;
  int rc = flows_csv_read(in, path, n_gpus, t, err, errlen);
  fclose(in);
  return rc;
}

void flows_csv_free(struct flow_table *t)
{
  free(t->rows);
  free(t->by_source);
  free(t->source_first);
  memset(t, 0, sizeof *t);
}
