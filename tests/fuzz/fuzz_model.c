/* libFuzzer harness: model description files (workloads/model/wl_model.c). An accepted model
 * has every dimension the FLOP counts divide by. */
#include "fuzz_support.h"
#include "wl_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *copy, err[512];
  FILE *in = fuzz_stream(data, size, &copy);
  struct wl_model m;
  if (wl_model_read(in, "fuzz.model", &m, err, sizeof err) == 0) {
    if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.ffn < 1 || m.vocab < 1 || m.seq < 1 || m.kv_heads < 0)
      abort();
    (void)wl_model_params_total(&m);
  } else if (strncmp(err, "fuzz.model", 10) != 0)
    abort(); /* every refusal names the file */
  fclose(in);
  free(copy);
  return 0;
}
