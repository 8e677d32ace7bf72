/* Runs a libFuzzer harness without libFuzzer, on the files or directories given: how the seed
 * corpus and every past finding (tests/fuzz/regressions/<parser>/) are replayed by ctest with
 * gcc, in the Release and the ASan + UBSan builds. A harness aborts when an invariant breaks;
 * the sanitizers catch memory errors and leaks. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *data = malloc(cap);
  size_t got;
  while (data != NULL && (got = fread(data + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) {
      cap *= 2;
      uint8_t *grown = realloc(data, cap);
      if (grown == NULL)
        free(data);
      data = grown;
    }
  }
  fclose(f);
  if (data == NULL)
    return -1;
  LLVMFuzzerTestOneInput(data, len);
  free(data);
  return 0;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
  int files = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (replay_file(argv[i]) != 0)
        return 1;
      files++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (d == NULL)
      return 1;
    char *names[4096];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 4096)
      if (e->d_name[0] != '.')
        names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], compare_names); /* same order everywhere */
    for (int k = 0; k < n; k++) {
      char path[4200];
      snprintf(path, sizeof path, "%s/%s", argv[i], names[k]);
      printf("replay %s\n", path);
      if (replay_file(path) != 0)
        return 1;
      free(names[k]);
      files++;
    }
  }
  printf("%d inputs replayed without a finding\n", files);
  return files > 0 ? 0 : 1;
}
