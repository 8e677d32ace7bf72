/* libFuzzer harness: the flow file of "sgfabric flows" (tools/flows_csv.c) on a 16-GPU platform.
 * Every accepted row must name two distinct GPUs of the platform and a positive size. */
#include <math.h>

#include "flows_csv.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *copy, err[512];
  FILE *in = fuzz_stream(data, size, &copy);
  struct flow_table t;
  if (flows_csv_read(in, "fuzz.csv", 16, &t, err, sizeof err) == 0) {
    for (int i = 0; i < t.n; i++) {
      const struct flow_row *r = &t.rows[i];
      if (r->src < 0 || r->src >= 16 || r->dst < 0 || r->dst >= 16 || r->src == r->dst || !(r->bytes > 0) ||
          !isfinite(r->bytes) || !(r->start_us >= 0) || !isfinite(r->start_us))
        abort();
    }
    flows_csv_free(&t);
  } else if (strncmp(err, "fuzz.csv", 8) != 0)
    abort(); /* every refusal names the file */
  fclose(in);
  free(copy);
  return 0;
}
