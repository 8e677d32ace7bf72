/* libFuzzer harness: SimAI/AICB workload import (workloads/simai/wl_simai.c). */
#include "fuzz_support.h"
#include "wl_simai.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *copy, err[512];
  FILE *in = fuzz_stream(data, size, &copy);
  struct wl_trace *t = wl_simai_read(in, "fuzz.txt", 64, err, sizeof err);
  fclose(in);
  free(copy);
  if (t == NULL && strncmp(err, "fuzz.txt", 8) != 0)
    abort(); /* every refusal names the file */
  wl_trace_free(t);
  return 0;
}
