/* Parameter tables: every tunable of every fabric model, declared once.
 *
 * Each model (fabric core, ib, roce) declares one static table of rows: name in SimGrid's
 * "area/name" style, type, unit, default, range, one-line description and source. The rows
 * generate `sgfabric params` and docs/parameters.md; values are set from platform <prop>s and
 * then from `--cfg=area/name:value` arguments (later wins), each checked against its range
 * with an error naming the parameter (the Redis static_configs[] / ns-3 AddAttribute idea). */
#ifndef SGFABRIC_PARAM_H
#define SGFABRIC_PARAM_H

#include <stddef.h>
#include <stdio.h>

#include "units.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PARAM_REAL, PARAM_INT, PARAM_BOOL, PARAM_ENUM, PARAM_TEXT } param_type;

struct param_def {
  const char *name;         /* "area/name", e.g. "fabric/mtu" */
  param_type type;          /* how the value is read */
  unit_kind unit;           /* unit of REAL/INT values (UNIT_NONE for plain numbers) */
  const char *default_text; /* default, as a user would type it */
  double min, max;          /* inclusive range of REAL/INT values, and of TEXT values given as a number */
  const char *choices;      /* ENUM: the allowed words separated by '|'. TEXT: the keywords it takes
                            * besides a number of its unit within [min, max] (min < max) or alone
                            * (min == max); NULL: free text its model checks */
  const char *description;  /* one line: what it does */
  const char *source;       /* where the default comes from */
};

struct param_value {
  double number;      /* REAL/INT/BOOL value; ENUM: index of the choice */
  char text[96];      /* the value as given (ENUM word, TEXT value) */
  const char *origin; /* "default", "platform", "--cfg" */
};

/* Registers a model's table (static storage). Registering the same table twice is a no-op. */
void fab_param_register(const struct param_def *defs);

/* The values of one run: one per registered row. */
struct param_set;
struct param_set *fab_param_set_new(void);
void fab_param_set_free(struct param_set *set);

/* Sets one value from text. Returns 0, or -1 with a message naming the parameter in err. */
int fab_param_set_text(struct param_set *set, const char *name, const char *value, const char *origin, char *err,
                       size_t errlen);
/* Parses "area/name:value" (the part after --cfg=). */
int fab_param_set_cfg(struct param_set *set, const char *arg, char *err, size_t errlen);
/* Whether a registered parameter has this name. */
int fab_param_exists(const char *name);
/* Whether the name's area ("ib" in "ib/mtu") belongs to a registered table. */
int fab_param_area_known(const char *name);

/* Reads a value; asking for an unregistered name is a programming error and aborts. */
double fab_param_get(const struct param_set *set, const char *name);
int fab_param_get_int(const struct param_set *set, const char *name);
const char *fab_param_get_text(const struct param_set *set, const char *name);
/* ENUM: the index of the chosen word among the choices. */
int fab_param_get_choice(const struct param_set *set, const char *name);

/* Lists the registered rows of one area ("roce" lists roce/...; NULL: every row) with name,
 * default, unit, range, description and source: a header line, then each row with its
 * description wrapped to width columns; or a markdown table. Returns the rows printed. */
int fab_param_print_table(FILE *out, const char *area, int markdown, int width);
/* The names of the registered rows ("fabric/mtu", ...), in table order; at most max. */
size_t fab_param_list_names(const char **names, size_t max);
/* The areas of the registered rows ("fabric", "coll", "ib", ...), in table order. */
size_t fab_param_list_areas(const char **areas, size_t max);
/* Writes the values of the set as a JSON object body ("name": value, ...). */
void fab_param_write_json(const struct param_set *set, FILE *out, const char *indent);

#ifdef __cplusplus
}
#endif

#endif
