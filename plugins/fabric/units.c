/* Unit parsing: the only place where "400Gbps" becomes 5e10 bytes per second. */
#include "units.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct suffix {
  const char *text;
  double factor;
};

/* Longest suffixes first within each prefix so that "Gbps" is not read as "G" + "bps". */
static const struct suffix rate_suffixes[] = { { "Tbps", 1e12 / 8 },
                                               { "Gbps", 1e9 / 8 },
                                               { "Mbps", 1e6 / 8 },
                                               { "kbps", 1e3 / 8 },
                                               { "Kbps", 1e3 / 8 },
                                               { "bps", 1.0 / 8 },
                                               { "Tb/s", 1e12 / 8 },
                                               { "Gb/s", 1e9 / 8 },
                                               { "Mb/s", 1e6 / 8 },
                                               { "kb/s", 1e3 / 8 },
                                               { "b/s", 1.0 / 8 },
                                               { "TBps", 1e12 },
                                               { "GBps", 1e9 },
                                               { "MBps", 1e6 },
                                               { "kBps", 1e3 },
                                               { "KBps", 1e3 },
                                               { "Bps", 1.0 },
                                               { "TB/s", 1e12 },
                                               { "GB/s", 1e9 },
                                               { "MB/s", 1e6 },
                                               { "kB/s", 1e3 },
                                               { "B/s", 1.0 },
                                               { "Tibps", 1099511627776.0 / 8 },
                                               { "Gibps", 1073741824.0 / 8 },
                                               { "Mibps", 1048576.0 / 8 },
                                               { "GiBps", 1073741824.0 },
                                               { "MiBps", 1048576.0 },
                                               { NULL, 0 } };

static const struct suffix time_suffixes[] = { { "ps", 1e-12 }, { "ns", 1e-9 },  { "us", 1e-6 },  { "ms", 1e-3 },
                                               { "s", 1.0 },    { "min", 60.0 }, { "h", 3600.0 }, { NULL, 0 } };

static const struct suffix size_suffixes[] = { { "TiB", 1099511627776.0 },
                                               { "GiB", 1073741824.0 },
                                               { "MiB", 1048576.0 },
                                               { "KiB", 1024.0 },
                                               { "TB", 1e12 },
                                               { "GB", 1e9 },
                                               { "MB", 1e6 },
                                               { "kB", 1e3 },
                                               { "KB", 1e3 },
                                               { "B", 1.0 },
                                               { "", 1.0 },
                                               { NULL, 0 } };

static int parse_with(const char *text, const struct suffix *table, double *out)
{
  if (text == NULL)
    return -1;
  while (*text == ' ' || *text == '\t')
    text++;
  if (*text == '\0' || *text == '-' || *text == '+')
    return -1;
  char *end = NULL;
  double number = strtod(text, &end);
  if (end == text || !isfinite(number) || number < 0)
    return -1;
  size_t len = strlen(end);
  while (len > 0 && (end[len - 1] == ' ' || end[len - 1] == '\t'))
    len--;
  for (const struct suffix *s = table; s->text != NULL; s++) {
    if (strlen(s->text) == len && strncmp(end, s->text, len) == 0) {
      /* "1e300TB" is a finite number times a finite factor but overflows to inf: the
       * header promises a finite value, so check after scaling, not only before. */
      double scaled = number * s->factor;
      if (!isfinite(scaled))
        return -1;
      *out = scaled;
      return 0;
    }
  }
  return -1;
}

int fab_unit_parse_rate(const char *text, double *bytes_per_s) { return parse_with(text, rate_suffixes, bytes_per_s); }
int fab_unit_parse_time(const char *text, double *seconds) { return parse_with(text, time_suffixes, seconds); }
int fab_unit_parse_size(const char *text, double *bytes) { return parse_with(text, size_suffixes, bytes); }

int fab_unit_parse_number(const char *text, double *value)
{
  if (text == NULL)
    return -1;
  char *end = NULL;
  double number = strtod(text, &end);
  if (end == text || !isfinite(number))
    return -1;
  while (*end == ' ' || *end == '\t')
    end++;
  if (*end != '\0')
    return -1;
  *value = number;
  return 0;
}

int fab_unit_parse(unit_kind kind, const char *text, double *value)
{
  switch (kind) {
  case UNIT_BYTES: return fab_unit_parse_size(text, value);
  case UNIT_SECONDS: return fab_unit_parse_time(text, value);
  case UNIT_BPS: return fab_unit_parse_rate(text, value);
  case UNIT_NONE:
  default: return fab_unit_parse_number(text, value);
  }
}

const char *fab_unit_parse_why(unit_kind kind, const char *text, char *buf, int buflen)
{
  double value;
  if (fab_unit_parse(kind, text, &value) == 0)
    return NULL;
  if (text == NULL)
    return "is missing";
  const char *p = text;
  while (*p == ' ' || *p == '\t')
    p++;
  char *end = NULL;
  double number = strtod(p, &end);
  if (*p == '\0' || end == p) {
    snprintf(buf, (size_t)buflen, "is not a number");
    return buf;
  }
  if (isnan(number)) {
    snprintf(buf, (size_t)buflen, "is not a number (NaN)");
    return buf;
  }
  if (number < 0 || *p == '-') {
    snprintf(buf, (size_t)buflen, "is negative");
    return buf;
  }
  if (!isfinite(number)) {
    snprintf(buf, (size_t)buflen, "is too large (not a finite number)");
    return buf;
  }
  while (*end == ' ' || *end == '\t')
    end++;
  if (kind == UNIT_NONE) {
    snprintf(buf, (size_t)buflen, "has trailing text '%.24s'", end);
    return buf;
  }
  if (*end == '\0') {
    snprintf(buf, (size_t)buflen, "needs a unit (e.g. %s)", kind == UNIT_BPS ? "400Gbps" : "1us");
    return buf;
  }
  /* A known unit that failed can only have overflowed (or been written with a '+'). */
  const struct suffix *table = kind == UNIT_BPS ? rate_suffixes : kind == UNIT_SECONDS ? time_suffixes : size_suffixes;
  size_t len = strlen(end);
  while (len > 0 && (end[len - 1] == ' ' || end[len - 1] == '\t'))
    len--;
  for (const struct suffix *s = table; s->text != NULL; s++)
    if (strlen(s->text) == len && strncmp(end, s->text, len) == 0) {
      snprintf(buf, (size_t)buflen, *p == '+' ? "starts with '+'" : "is too large (overflows after scaling)");
      return buf;
    }
  snprintf(buf, (size_t)buflen, "has an unknown unit '%.*s'", (int)(len > 24 ? 24 : len), end);
  return buf;
}

const char *fab_unit_name(unit_kind kind)
{
  switch (kind) {
  case UNIT_BYTES: return "B";
  case UNIT_SECONDS: return "s";
  case UNIT_BPS: return "B/s";
  case UNIT_NONE:
  default: return "";
  }
}

void fab_unit_format(unit_kind kind, double value, char *buf, int buflen)
{
  switch (kind) {
  case UNIT_BPS: {
    double bits = value * 8;
    if (bits >= 1e12 && fmod(bits, 1e9) == 0)
      snprintf(buf, buflen, "%gTbps", bits / 1e12);
    else if (bits >= 1e9)
      snprintf(buf, buflen, "%gGbps", bits / 1e9);
    else if (bits >= 1e6)
      snprintf(buf, buflen, "%gMbps", bits / 1e6);
    else
      snprintf(buf, buflen, "%gbps", bits);
    break;
  }
  case UNIT_SECONDS:
    if (value == 0)
      snprintf(buf, buflen, "0s");
    else if (value < 1e-6)
      snprintf(buf, buflen, "%gns", value * 1e9);
    else if (value < 1e-3)
      snprintf(buf, buflen, "%gus", value * 1e6);
    else if (value < 1)
      snprintf(buf, buflen, "%gms", value * 1e3);
    else
      snprintf(buf, buflen, "%gs", value);
    break;
  case UNIT_BYTES:
    if (value >= 1e6 && fmod(value, 1e5) == 0)
      snprintf(buf, buflen, "%gMB", value / 1e6);
    else if (value >= 1e3 && fmod(value, 1e2) == 0)
      snprintf(buf, buflen, "%gKB", value / 1e3);
    else
      snprintf(buf, buflen, "%gB", value);
    break;
  case UNIT_NONE:
  default: snprintf(buf, buflen, "%g", value); break;
  }
}
