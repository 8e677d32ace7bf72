/* Parameter tables: registration, typed parsing with range checks, listing. */
#include "param.h"

#include "json_out.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PARAM_MAX_TABLES 16

static const struct param_def *g_tables[PARAM_MAX_TABLES];
static int g_table_count;

struct param_set {
  const struct param_def **defs; /* every registered row, in registration order */
  struct param_value *values;
  size_t count;
};

void fab_param_register(const struct param_def *defs)
{
  for (int i = 0; i < g_table_count; i++)
    if (g_tables[i] == defs)
      return;
  SGF_CHECK(g_table_count < PARAM_MAX_TABLES, "more than %d parameter tables", PARAM_MAX_TABLES);
  g_tables[g_table_count++] = defs;
}

static const struct param_def *find_def(const char *name, size_t *index)
{
  size_t k = 0;
  for (int t = 0; t < g_table_count; t++)
    for (const struct param_def *d = g_tables[t]; d->name != NULL; d++, k++)
      if (strcmp(d->name, name) == 0) {
        if (index)
          *index = k;
        return d;
      }
  return NULL;
}

int fab_param_exists(const char *name) { return find_def(name, NULL) != NULL; }

int fab_param_area_known(const char *name)
{
  const char *slash = strchr(name, '/');
  if (slash == NULL)
    return 0;
  size_t len = (size_t)(slash - name);
  for (int t = 0; t < g_table_count; t++)
    if (g_tables[t][0].name && strncmp(g_tables[t][0].name, name, len + 1) == 0)
      return 1;
  return 0;
}

static int choice_index(const char *choices, const char *word)
{
  size_t wlen = strlen(word);
  int index = 0;
  const char *p = choices;
  while (*p) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == wlen && strncmp(p, word, len) == 0)
      return index;
    index++;
    if (!bar)
      break;
    p = bar + 1;
  }
  return -1;
}

static int parse_value(const struct param_def *d, const char *text, struct param_value *v, char *err, size_t errlen)
{
  double number = 0;
  switch (d->type) {
  case PARAM_BOOL:
    if (!strcmp(text, "on") || !strcmp(text, "1") || !strcmp(text, "true") || !strcmp(text, "yes"))
      number = 1;
    else if (!strcmp(text, "off") || !strcmp(text, "0") || !strcmp(text, "false") || !strcmp(text, "no"))
      number = 0;
    else {
      snprintf(err, errlen, "parameter '%s': '%s' is not on/off", d->name, text);
      return -1;
    }
    break;
  case PARAM_ENUM: {
    int index = choice_index(d->choices, text);
    if (index < 0) {
      snprintf(err, errlen, "parameter '%s': '%s' is not one of %s", d->name, text, d->choices);
      return -1;
    }
    number = index;
    break;
  }
  case PARAM_TEXT:
    /* A text row with choices is "one of these words, or (if it has a range) a value of its
     * unit within the range": check it here, like the numeric rows, so that a value the model
     * reads later (dcqcn-rai:1e300TBps, pfc-headroom:-1) is refused with its name. */
    if (d->choices == NULL || choice_index(d->choices, text) >= 0)
      break;
    if (!(d->min < d->max)) {
      snprintf(err, errlen, "parameter '%s': '%s' is not one of %s", d->name, text, d->choices);
      return -1;
    }
    if (fab_unit_parse(d->unit, text, &number) != 0 &&
        !(d->unit == UNIT_NONE && fab_unit_parse_number(text, &number) == 0)) {
      char why[64];
      snprintf(err, errlen, "parameter '%s': '%s' is not %s or a %s: it %s", d->name, text, d->choices,
               d->unit == UNIT_BPS       ? "rate with a unit (e.g. 400Gbps)"
               : d->unit == UNIT_SECONDS ? "duration with a unit (e.g. 1us)"
               : d->unit == UNIT_BYTES   ? "size (e.g. 9MB)"
                                         : "number",
               fab_unit_parse_why(d->unit, text, why, sizeof why));
      return -1;
    }
    if (!(number >= d->min && number <= d->max)) {
      char lo[32], hi[32];
      fab_unit_format(d->unit, d->min, lo, sizeof lo);
      fab_unit_format(d->unit, d->max, hi, sizeof hi);
      snprintf(err, errlen, "parameter '%s': %s is out of range [%s, %s]", d->name, text, lo, hi);
      return -1;
    }
    break;
  case PARAM_REAL:
  case PARAM_INT:
    if (fab_unit_parse(d->unit, text, &number) != 0 &&
        !(d->unit == UNIT_NONE && fab_unit_parse_number(text, &number) == 0)) {
      char why[64];
      if (d->unit == UNIT_NONE)
        snprintf(err, errlen, "parameter '%s': '%s' is not a number: it %s", d->name, text,
                 fab_unit_parse_why(d->unit, text, why, sizeof why));
      else
        snprintf(err, errlen, "parameter '%s': '%s' is not a non-negative %s with a unit (e.g. %s): it %s", d->name,
                 text,
                 d->unit == UNIT_BPS       ? "rate"
                 : d->unit == UNIT_SECONDS ? "duration"
                                           : "size",
                 d->unit == UNIT_BPS       ? "400Gbps"
                 : d->unit == UNIT_SECONDS ? "1us"
                                           : "9MB",
                 fab_unit_parse_why(d->unit, text, why, sizeof why));
      return -1;
    }
    if (d->type == PARAM_INT && number != floor(number)) {
      snprintf(err, errlen, "parameter '%s': '%s' is not an integer", d->name, text);
      return -1;
    }
    if (!(number >= d->min && number <= d->max)) {
      char lo[32], hi[32];
      fab_unit_format(d->unit, d->min, lo, sizeof lo);
      fab_unit_format(d->unit, d->max, hi, sizeof hi);
      snprintf(err, errlen, "parameter '%s': %s is out of range [%s, %s]", d->name, text, lo, hi);
      return -1;
    }
    break;
  }
  if (strlen(text) >= sizeof v->text) {
    snprintf(err, errlen, "parameter '%s': value too long", d->name);
    return -1;
  }
  v->number = number;
  strcpy(v->text, text);
  return 0;
}

struct param_set *fab_param_set_new(void)
{
  struct param_set *set = calloc(1, sizeof *set);
  for (int t = 0; t < g_table_count; t++)
    for (const struct param_def *d = g_tables[t]; d->name != NULL; d++)
      set->count++;
  set->defs = calloc(set->count ? set->count : 1, sizeof *set->defs);
  set->values = calloc(set->count ? set->count : 1, sizeof *set->values);
  size_t k = 0;
  for (int t = 0; t < g_table_count; t++)
    for (const struct param_def *d = g_tables[t]; d->name != NULL; d++, k++) {
      char err[256];
      set->defs[k] = d;
      SGF_CHECK(parse_value(d, d->default_text, &set->values[k], err, sizeof err) == 0,
                "bad default in the parameter table: %s", err);
      set->values[k].origin = "default";
    }
  return set;
}

void fab_param_set_free(struct param_set *set)
{
  if (set == NULL)
    return;
  free(set->defs);
  free(set->values);
  free(set);
}

int fab_param_set_text(struct param_set *set, const char *name, const char *value, const char *origin, char *err,
                       size_t errlen)
{
  size_t index;
  const struct param_def *d = find_def(name, &index);
  if (d == NULL) {
    snprintf(err, errlen, "unknown parameter '%s' (sgfabric params lists them all)", name);
    return -1;
  }
  struct param_value v;
  if (parse_value(d, value, &v, err, errlen) != 0)
    return -1;
  v.origin = origin;
  set->values[index] = v;
  return 0;
}

int fab_param_set_cfg(struct param_set *set, const char *arg, char *err, size_t errlen)
{
  const char *colon = strchr(arg, ':');
  if (colon == NULL || colon == arg) {
    snprintf(err, errlen, "--cfg=%s: expected --cfg=area/name:value", arg);
    return -1;
  }
  char name[128];
  size_t len = (size_t)(colon - arg);
  if (len >= sizeof name) {
    snprintf(err, errlen, "--cfg=%s: parameter name too long", arg);
    return -1;
  }
  memcpy(name, arg, len);
  name[len] = '\0';
  return fab_param_set_text(set, name, colon + 1, "--cfg", err, errlen);
}

static const struct param_value *lookup(const struct param_set *set, const char *name)
{
  for (size_t i = 0; i < set->count; i++)
    if (strcmp(set->defs[i]->name, name) == 0)
      return &set->values[i];
  sgf_fatal(__FILE__, __LINE__, "parameter '%s' is not registered", name);
}

double fab_param_get(const struct param_set *set, const char *name) { return lookup(set, name)->number; }
int fab_param_get_int(const struct param_set *set, const char *name) { return (int)lookup(set, name)->number; }
const char *fab_param_get_text(const struct param_set *set, const char *name) { return lookup(set, name)->text; }
int fab_param_get_choice(const struct param_set *set, const char *name) { return (int)lookup(set, name)->number; }

static const char *type_name(const struct param_def *d)
{
  switch (d->type) {
  case PARAM_BOOL: return "on|off";
  case PARAM_ENUM: return d->choices;
  case PARAM_TEXT:
    if (d->choices == NULL)
      return "text";
    if (d->min < d->max) {
      static char both[96]; /* printing only, one row at a time */
      snprintf(both, sizeof both, "%s|%s", d->unit == UNIT_NONE ? "number" : fab_unit_name(d->unit), d->choices);
      return both;
    }
    return d->choices;
  case PARAM_INT: return d->unit == UNIT_NONE ? "integer" : fab_unit_name(d->unit);
  case PARAM_REAL:
  default: return d->unit == UNIT_NONE ? "number" : fab_unit_name(d->unit);
  }
}

/* A markdown table cell: '|' would end the cell (GitHub Flavored Markdown, "Tables" extension:
 * a pipe inside a cell, even inside a code span, is written \|). */
static void markdown_cell(FILE *out, const char *text)
{
  for (const char *c = text; *c; c++) {
    if (*c == '|')
      fputc('\\', out);
    fputc(*c, out);
  }
}

/* Whether the row belongs to the area ("roce" for "roce/mtu"); NULL matches every row. */
static int in_area(const struct param_def *d, const char *area)
{
  if (area == NULL)
    return 1;
  size_t len = strlen(area);
  return strncmp(d->name, area, len) == 0 && d->name[len] == '/';
}

size_t fab_param_list_names(const char **names, size_t max)
{
  size_t n = 0;
  for (int t = 0; t < g_table_count; t++)
    for (const struct param_def *d = g_tables[t]; d->name != NULL && n < max; d++)
      names[n++] = d->name;
  return n;
}

size_t fab_param_list_areas(const char **areas, size_t max)
{
  static char names[64][32];
  size_t n = 0;
  for (int t = 0; t < g_table_count; t++)
    for (const struct param_def *d = g_tables[t]; d->name != NULL; d++) {
      size_t len = strcspn(d->name, "/");
      size_t k = 0;
      while (k < n && !(strlen(names[k]) == len && strncmp(names[k], d->name, len) == 0))
        k++;
      if (k == n && n < max && n < 64 && len < sizeof names[0]) {
        snprintf(names[n], sizeof names[n], "%.*s", (int)len, d->name);
        areas[n] = names[n];
        n++;
      }
    }
  return n;
}

/* Prints text from column indent, breaking lines at spaces so that none passes width. */
static void print_wrapped(FILE *out, const char *text, int indent, int width)
{
  int room = width - indent > 20 ? width - indent : 20;
  while (*text) {
    int len = (int)strlen(text);
    int cut = len;
    if (len > room) {
      cut = room;
      while (cut > 0 && text[cut] != ' ')
        cut--;
      if (cut == 0) /* one word longer than the line: print it whole */
        cut = (int)strcspn(text, " ");
    }
    fprintf(out, "%*s%.*s\n", indent, "", cut, text);
    text += cut;
    while (*text == ' ')
      text++;
  }
}

int fab_param_print_table(FILE *out, const char *area, int markdown, int width)
{
  int rows = 0;
  for (int t = 0; t < g_table_count; t++)
    for (const struct param_def *d = g_tables[t]; d->name != NULL; d++)
      rows += in_area(d, area);
  if (rows == 0)
    return 0;
  if (markdown)
    fprintf(out, "| name | default | unit / values | range | description | source |\n|---|---|---|---|---|---|\n");
  else
    fprintf(out, "%-28s %-14s %-16s %s\n    %s\n", "parameter", "default", "unit / values", "range",
            "description [source]");
  for (int t = 0; t < g_table_count; t++)
    for (const struct param_def *d = g_tables[t]; d->name != NULL; d++) {
      if (!in_area(d, area))
        continue;
      char range[80] = "";
      if (d->type == PARAM_REAL || d->type == PARAM_INT || (d->type == PARAM_TEXT && d->min < d->max)) {
        char lo[32], hi[32];
        fab_unit_format(d->unit, d->min, lo, sizeof lo);
        fab_unit_format(d->unit, d->max, hi, sizeof hi);
        snprintf(range, sizeof range, "[%s, %s]", lo, hi);
      }
      if (markdown) {
        const char *cells[] = { d->default_text, type_name(d), range, d->description, d->source ? d->source : "" };
        fprintf(out, "| `");
        markdown_cell(out, d->name);
        fprintf(out, "` |");
        for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++) {
          fputc(' ', out);
          markdown_cell(out, cells[k]);
          fprintf(out, " |");
        }
        fputc('\n', out);
      } else {
        char text[1024];
        fprintf(out, "%-28s %-14s %-16s %s\n", d->name, d->default_text, type_name(d), range);
        snprintf(text, sizeof text, "%s%s%s%s", d->description, d->source ? " [" : "", d->source ? d->source : "",
                 d->source ? "]" : "");
        print_wrapped(out, text, 4, width);
      }
    }
  return rows;
}

void fab_param_write_json(const struct param_set *set, FILE *out, const char *indent)
{
  for (size_t i = 0; i < set->count; i++) {
    const struct param_def *d = set->defs[i];
    fprintf(out, "%s", indent);
    json_write_string(out, d->name);
    fprintf(out, ": ");
    if (d->type == PARAM_ENUM || d->type == PARAM_TEXT)
      json_write_string(out, set->values[i].text); /* --cfg text: may hold quotes */
    else if (d->type == PARAM_BOOL)
      fprintf(out, "%s", set->values[i].number ? "true" : "false");
    else
      json_write_number(out, set->values[i].number);
    fprintf(out, "%s\n", i + 1 < set->count ? "," : "");
  }
}
