/* The flow file of "sgfabric flows": CSV with the header src,dst,bytes,start_us, one transfer
 * per row (GPU indices as numbered by the platform, bytes > 0, start in microseconds). Read and
 * checked completely before anything is simulated; every refusal names FILE:LINE. */
#ifndef SGFABRIC_FLOWS_CSV_H
#define SGFABRIC_FLOWS_CSV_H

#include <stddef.h>
#include <stdio.h>

struct flow_row {
  int src, dst;
  double bytes;
  double start_us;
  double fct_us;
};

struct flow_table {
  struct flow_row *rows;
  int n;
  int *by_source;    /* row indices grouped by source GPU, each group by start time then row */
  int *source_first; /* by_source[source_first[g] .. source_first[g+1]) are GPU g's rows */
};

/* Reads the rows of in (named path in messages) for a platform of n_gpus GPUs into t (zeroed
 * first). Returns 0, or -1 with "PATH:LINE: message" in err; t->rows is then freed. */
int flows_csv_read(FILE *in, const char *path, int n_gpus, struct flow_table *t, char *err, size_t errlen);
/* Opens path and reads it with flows_csv_read. */
int flows_csv_load(const char *path, int n_gpus, struct flow_table *t, char *err, size_t errlen);
/* Frees the table's arrays. */
void flows_csv_free(struct flow_table *t);

#endif
