/* Atomic results directories and the manifest. */
#include "results.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_out.h"
#include "sgf_version.h"
#include "sha256.h"

int results_begin(struct results *r, const char *dir, char *err, size_t errlen)
{
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/')
    len--;
  if (len == 0 || len + 32 >= sizeof r->dir) {
    snprintf(err, errlen, "--out: invalid directory name '%s'", dir);
    return -1;
  }
  memcpy(r->dir, dir, len);
  r->dir[len] = '\0';
  snprintf(r->tmp, sizeof r->tmp, "%s.tmp-%ld", r->dir, (long)getpid());
  if (mkdir(r->tmp, 0777) != 0) {
    snprintf(err, errlen, "--out %s: cannot create %s: %s", r->dir, r->tmp, strerror(errno));
    return -1;
  }
  return 0;
}

FILE *results_open(struct results *r, const char *name)
{
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", r->tmp, name);
  return fopen(path, "w");
}

int results_close(FILE *f)
{
  if (f == NULL)
    return -1;
  int failed = ferror(f);
  if (fclose(f) != 0)
    failed = 1;
  return failed ? -1 : 0;
}

/* Removes a results directory: regular files and results subdirectories (sgfabric compare keeps
 * one run per fabric); returns -1 if it holds anything else. */
static int remove_flat_dir(const char *dir)
{
  DIR *d = opendir(dir);
  if (d == NULL)
    return errno == ENOENT ? 0 : -1;
  struct dirent *e;
  int rc = 0;
  char path[4400];
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) != 0)
      rc = -1;
    else if (S_ISDIR(st.st_mode)) {
      if (remove_flat_dir(path) != 0)
        rc = -1;
    } else if (!S_ISREG(st.st_mode) || unlink(path) != 0)
      rc = -1;
  }
  closedir(d);
  if (rc == 0 && rmdir(dir) != 0)
    rc = -1;
  return rc;
}

int results_commit(struct results *r, char *err, size_t errlen)
{
  struct stat st;
  if (stat(r->dir, &st) == 0) {
    if (!S_ISDIR(st.st_mode) || remove_flat_dir(r->dir) != 0) {
      snprintf(err, errlen, "--out %s: exists and is not a results directory of files; not replaced", r->dir);
      results_abort(r);
      return -1;
    }
  }
  if (rename(r->tmp, r->dir) != 0) {
    snprintf(err, errlen, "--out %s: cannot move results into place: %s", r->dir, strerror(errno));
    results_abort(r);
    return -1;
  }
  return 0;
}

void results_abort(struct results *r)
{
  if (r->tmp[0])
    remove_flat_dir(r->tmp);
}

void json_string(FILE *out, const char *s) { json_write_string(out, s); }

int results_write_manifest(struct results *r, int argc, char **argv, const char *const *inputs, int n_inputs,
                           uint64_t seed)
{
  FILE *f = results_open(r, "manifest.json");
  if (f == NULL)
    return -1;
  fprintf(f, "{\n  \"command\": [");
  for (int i = 0; i < argc; i++) {
    json_string(f, argv[i]);
    fprintf(f, "%s", i + 1 < argc ? ", " : "");
  }
  fprintf(f, "],\n  \"inputs\": {");
  int rc = 0;
  for (int i = 0; i < n_inputs; i++) {
    char hex[65];
    if (sha256_file(inputs[i], hex) != 0) {
      rc = -1;
      continue;
    }
    fprintf(f, "%s\n    ", i ? "," : "");
    json_string(f, inputs[i]);
    fprintf(f, ": {\"sha256\": \"%s\"}", hex);
  }
  fprintf(f, "\n  },\n  \"seed\": %llu,\n", (unsigned long long)seed);
  fprintf(f, "  \"sgfabric_version\": \"%s\",\n  \"simgrid_version\": \"%s\"\n}\n", SGF_VERSION, SGF_SIMGRID_VERSION);
  if (results_close(f) != 0)
    rc = -1;
  return rc;
}
