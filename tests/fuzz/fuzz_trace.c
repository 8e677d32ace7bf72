/* libFuzzer harness: the native workload trace (workloads/trace/wl_trace_io.c). An accepted
 * trace is written back (to memory) and read again: the writer's output must be accepted. */
#include "fuzz_support.h"
#include "wl_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *copy, err[512];
  FILE *in = fuzz_stream(data, size, &copy);
  struct wl_trace *t = wl_trace_read(in, "fuzz.trace", err, sizeof err);
  fclose(in);
  free(copy);
  if (t == NULL) {
    if (strncmp(err, "fuzz.trace", 10) != 0)
      abort(); /* every refusal names the file */
    return 0;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (wl_trace_write(t, out) != 0)
    abort();
  fclose(out);
  wl_trace_free(t);
  FILE *again = fmemopen(text, len, "r");
  struct wl_trace *u = wl_trace_read(again, "rewritten.trace", err, sizeof err);
  if (u == NULL) {
    fprintf(stderr, "a written trace is refused: %s\n", err);
    abort();
  }
  fclose(again);
  wl_trace_free(u);
  free(text);
  return 0;
}
