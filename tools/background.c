/* Background flows beside a job (background.h). */
#include "background.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "fabric.h"
#include "flows_csv.h"
#include "json_out.h"

/* Background flow k has id BACKGROUND_ID_BASE + k: above any id the job's sequence reaches. */
#define BACKGROUND_ID_BASE (UINT64_C(1) << 62)

struct background {
  struct flow_table table;
  double *finish_s; /* per row; -1 until its last byte arrives */
};

struct background *background_load(const char *path, int n_gpus, char *err, size_t errlen)
{
  struct background *b = sgf_xcalloc(1, sizeof *b);
  if (flows_csv_load(path, n_gpus, &b->table, err, errlen) != 0) {
    free(b);
    return NULL;
  }
  b->finish_s = sgf_xmalloc(sizeof *b->finish_s * (size_t)(b->table.n ? b->table.n : 1));
  for (int i = 0; i < b->table.n; i++)
    b->finish_s[i] = -1;
  return b;
}

static void flow_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  *(double *)ctx = flow->finish_s;
}

void background_post(struct background *b, struct fabric *fab, int tag)
{
  for (int i = 0; i < b->table.n; i++) {
    const struct flow_row *r = &b->table.rows[i];
    struct fab_flow *flow =
        fabric_post(fab, r->src, r->dst, r->bytes, r->start_us * 1e-6, tag, flow_done, &b->finish_s[i]);
    fabric_flow_renumber(fab, flow, BACKGROUND_ID_BASE + (uint64_t)i);
  }
}

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void background_write_json(FILE *f, const struct background *b, double iteration_s)
{
  const struct flow_table *t = &b->table;
  double bytes = 0, last = -1;
  int finished = 0, by_iteration_end = 0;
  double *fct = sgf_xmalloc(sizeof *fct * (size_t)(t->n ? t->n : 1));
  for (int i = 0; i < t->n; i++) {
    bytes += t->rows[i].bytes;
    if (b->finish_s[i] < 0)
      continue;
    fct[finished++] = b->finish_s[i] - t->rows[i].start_us * 1e-6;
    by_iteration_end += b->finish_s[i] <= iteration_s;
    if (b->finish_s[i] > last)
      last = b->finish_s[i];
  }
  double mean = 0;
  for (int i = 0; i < finished; i++)
    mean += fct[i];
  qsort(fct, (size_t)finished, sizeof *fct, by_value);
  fprintf(f, "  \"background\": {\"flows\": %d, \"bytes\": %s, \"finished\": %d, \"finished_by_iteration_end\": %d, ",
          t->n, JSON_NUMBER(bytes), finished, by_iteration_end);
  if (finished > 0) {
    /* p99: the nearest-rank percentile. */
    int k = (int)ceil(0.99 * finished) - 1;
    fprintf(f, "\"fct_mean_s\": %s, \"fct_p99_s\": %s, \"last_finish_s\": %s},\n", JSON_NUMBER(mean / finished),
            JSON_NUMBER(fct[k < 0 ? 0 : k]), JSON_NUMBER(last));
  } else {
    fprintf(f, "\"fct_mean_s\": null, \"fct_p99_s\": null, \"last_finish_s\": null},\n");
  }
  free(fct);
}

void background_free(struct background *b)
{
  if (b == NULL)
    return;
  flows_csv_free(&b->table);
  free(b->finish_s);
  free(b);
}
