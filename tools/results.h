/* A results directory, written atomically: everything goes to a sibling temporary directory
 * that replaces DIR only when complete, so a failed run leaves no partial output. */
#ifndef SGFABRIC_RESULTS_H
#define SGFABRIC_RESULTS_H

#include <stdint.h>
#include <stdio.h>

#include "json_out.h"

struct results {
  char dir[4096];
  char tmp[4160];
};

/* Creates the temporary directory next to dir. Returns 0 or -1 with a message. */
int results_begin(struct results *r, const char *dir, char *err, size_t errlen);
/* Opens a file of the results for writing. */
FILE *results_open(struct results *r, const char *name);
/* Closes f; returns -1 if anything written to it failed. */
int results_close(FILE *f);
/* Replaces dir (if it exists, it must hold only files) with the temporary directory. */
int results_commit(struct results *r, char *err, size_t errlen);
/* Removes the temporary directory and its files. */
void results_abort(struct results *r);

/* Writes manifest.json: command line, SHA-256 of each input, seed, versions. */
int results_write_manifest(struct results *r, int argc, char **argv, const char *const *inputs, int n_inputs,
                           uint64_t seed);

/* Writes s as a JSON string literal (json_write_string of plugins/fabric/json_out.h). */
void json_string(FILE *out, const char *s);

#endif
