/* The shared option parser (cli.h): the GNU getopt_long grammar with sgfabric's messages. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cli_init(struct cli *c, const char *prog, int argc, char **argv)
{
  memset(c, 0, sizeof *c);
  c->prog = prog;
  c->argc = argc;
  c->argv = argv;
  c->next = 1;
}

void cli_add_table(struct cli *c, const struct cli_option *table)
{
  if (c->n_tables < CLI_MAX_TABLES)
    c->tables[c->n_tables++] = table;
}

int cli_usage_error(const struct cli *c, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", c->prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return CLI_USAGE;
}

int cli_unexpected(const struct cli *c)
{
  return cli_usage_error(c, "unexpected argument '%s' (see %s --help)", c->value, c->prog);
}

static const struct cli_option *find_long(const struct cli *c, const char *name, size_t len, int *table)
{
  for (int t = 0; t < c->n_tables; t++)
    for (const struct cli_option *o = c->tables[t]; o->name; o++)
      if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
        *table = t;
        return o;
      }
  return NULL;
}

static const struct cli_option *find_short(const struct cli *c, char letter, int *table)
{
  for (int t = 0; t < c->n_tables; t++)
    for (const struct cli_option *o = c->tables[t]; o->name; o++)
      if (o->short_name && o->short_name == letter) {
        *table = t;
        return o;
      }
  return NULL;
}

static int unknown_option(struct cli *c, const char *arg, const char *name, size_t len)
{
  char word[80];
  snprintf(word, sizeof word, "%.*s", (int)len, name);
  struct cli_suggestion s;
  cli_suggest_begin(&s, word);
  for (int t = 0; t < c->n_tables; t++)
    for (const struct cli_option *o = c->tables[t]; o->name; o++)
      cli_suggest_consider(&s, o->name);
  cli_suggest_consider(&s, "help");
  const char *best = cli_suggest_result(&s);
  if (best)
    fprintf(stderr, "%s: unknown option '%s' (did you mean --%s?); see %s --help\n", c->prog, arg, best, c->prog);
  else
    fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", c->prog, arg, c->prog);
  return CLI_ERROR;
}

int cli_next(struct cli *c)
{
  c->opt = NULL;
  c->value = NULL;
  c->spelled[0] = '\0';
  if (c->next >= c->argc)
    return CLI_DONE;
  const char *arg = c->argv[c->next++];
  if (c->only_positional || arg[0] != '-' || arg[1] == '\0') {
    c->value = arg;
    return CLI_POSITIONAL;
  }
  if (strcmp(arg, "--") == 0) {
    c->only_positional = 1;
    return cli_next(c);
  }
  if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
    return CLI_HELP;
  const struct cli_option *o;
  const char *inline_value = NULL;
  int table = 0;
  if (arg[1] == '-') {
    const char *name = arg + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    o = find_long(c, name, len, &table);
    if (o == NULL)
      return unknown_option(c, arg, name, len);
    snprintf(c->spelled, sizeof c->spelled, "--%s", o->name);
    inline_value = eq ? eq + 1 : NULL;
  } else {
    o = find_short(c, arg[1], &table);
    if (o == NULL) {
      fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", c->prog, arg, c->prog);
      return CLI_ERROR;
    }
    snprintf(c->spelled, sizeof c->spelled, "-%c", arg[1]);
    inline_value = arg[2] ? arg + 2 : NULL;
    if (inline_value && o->arg == CLI_FLAG) {
      fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", c->prog, arg, c->prog);
      return CLI_ERROR;
    }
  }
  c->opt = o;
  c->table = table;
  if (o->arg == CLI_FLAG) {
    if (inline_value) {
      fprintf(stderr, "%s: %s takes no value (found '%s')\n", c->prog, c->spelled, arg);
      return CLI_ERROR;
    }
    return o->id;
  }
  if (inline_value == NULL && o->arg == CLI_OPTIONAL) {
    const char *next = c->next < c->argc && !c->only_positional ? c->argv[c->next] : NULL;
    if (next == NULL || next[0] == '-')
      return o->id; /* no value: c->value stays NULL */
    c->next++;
    inline_value = next;
  }
  if (inline_value == NULL) {
    if (c->next >= c->argc) {
      fprintf(stderr, "%s: %s needs a value%s%s\n", c->prog, c->spelled, o->metavar ? " " : "",
              o->metavar ? o->metavar : "");
      return CLI_ERROR;
    }
    inline_value = c->argv[c->next++];
  }
  if (*inline_value == '\0') {
    fprintf(stderr, "%s: %s needs a value, found an empty one\n", c->prog, c->spelled);
    return CLI_ERROR;
  }
  c->value = inline_value;
  return o->id;
}

/* ---- integers ----------------------------------------------------------------------------- */

/* Plain decimal digits with an optional leading '-': no spaces, no '+', no 0x, no junk. */
static int plain_integer(const char *text, int allow_minus)
{
  const char *p = text;
  if (allow_minus && *p == '-')
    p++;
  if (*p == '\0')
    return 0;
  for (; *p; p++)
    if (!isdigit((unsigned char)*p))
      return 0;
  return 1;
}

int cli_parse_long(const char *text, long min, long max, long *out)
{
  if (!plain_integer(text, 1))
    return -1;
  errno = 0;
  long v = strtol(text, NULL, 10);
  if (errno != 0 || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int cli_parse_u64(const char *text, uint64_t *out)
{
  if (!plain_integer(text, 0))
    return -1;
  errno = 0;
  unsigned long long v = strtoull(text, NULL, 10);
  if (errno != 0 || v > UINT64_MAX)
    return -1;
  *out = (uint64_t)v;
  return 0;
}

int cli_long(struct cli *c, long min, long max, long *out)
{
  if (cli_parse_long(c->value, min, max, out) == 0)
    return 0;
  if (max == LONG_MAX)
    fprintf(stderr, "%s: %s: '%s' is not an integer >= %ld\n", c->prog, c->spelled, c->value, min);
  else
    fprintf(stderr, "%s: %s: '%s' is not an integer in [%ld, %ld]\n", c->prog, c->spelled, c->value, min, max);
  return -1;
}

int cli_int(struct cli *c, int min, int max, int *out)
{
  long v;
  if (cli_parse_long(c->value, min, max, &v) != 0) {
    fprintf(stderr, "%s: %s: '%s' is not an integer in [%d, %d]\n", c->prog, c->spelled, c->value, min, max);
    return -1;
  }
  *out = (int)v;
  return 0;
}

int cli_u64(struct cli *c, uint64_t *out)
{
  if (cli_parse_u64(c->value, out) == 0)
    return 0;
  fprintf(stderr, "%s: %s: '%s' is not an integer in [0, %" PRIu64 "]\n", c->prog, c->spelled, c->value,
          (uint64_t)UINT64_MAX);
  return -1;
}

/* ---- help ------------------------------------------------------------------------------- */

static int named_in(const struct cli_option *table, const char *name)
{
  for (; table && table->name; table++)
    if (strcmp(table->name, name) == 0)
      return 1;
  return 0;
}

void cli_print_options(FILE *out, const struct cli_option *table, const struct cli_option *skip)
{
  for (const struct cli_option *o = table; o->name; o++) {
    if (o->help == NULL || named_in(skip, o->name))
      continue;
    char left[64];
    if (o->short_name)
      snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name, o->metavar ? " " : "",
               o->metavar ? o->metavar : "");
    else
      snprintf(left, sizeof left, "--%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
    if (strlen(left) > 26)
      fprintf(out, "  %s\n  %-26s %s\n", left, "", o->help);
    else
      fprintf(out, "  %-26s %s\n", left, o->help);
  }
}

/* ---- did you mean ------------------------------------------------------------------------ */

int cli_edit_distance(const char *a, const char *b)
{
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64) /* option and model names are short; long words are not typos of them */
    return INT_MAX / 2;
  int d[65][65];
  for (size_t i = 0; i <= n; i++)
    d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++)
    d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
      int best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best)
        best = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < best)
        best = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m];
}

void cli_suggest_begin(struct cli_suggestion *s, const char *word)
{
  s->word = word;
  s->best = NULL;
  s->best_distance = INT_MAX;
}

void cli_suggest_consider(struct cli_suggestion *s, const char *candidate)
{
  size_t len = strlen(s->word);
  int d = cli_edit_distance(s->word, candidate);
  /* A word that starts a candidate ("gpt3" for "gpt3-175b") is as good as a one-letter typo. */
  if (len >= 2 && strncasecmp(candidate, s->word, len) == 0 && d > 1)
    d = 1;
  /* Close enough to be a typo: two edits, or a third of the word for long words. */
  int limit = len / 3 > 2 ? (int)(len / 3) : 2;
  if (len <= 2)
    limit = 1;
  if (d <= limit && d < s->best_distance) {
    s->best = candidate;
    s->best_distance = d;
  }
}

const char *cli_suggest_result(const struct cli_suggestion *s) { return s->best; }

void cli_did_you_mean(char *buf, size_t len, const char *word, const char *const *candidates, const char *prefix)
{
  struct cli_suggestion s;
  cli_suggest_begin(&s, word);
  for (; *candidates; candidates++)
    cli_suggest_consider(&s, *candidates);
  if (s.best) {
    size_t used = strlen(buf);
    if (used < len)
      snprintf(buf + used, len - used, " (did you mean %s%s?)", prefix ? prefix : "", s.best);
  }
}
