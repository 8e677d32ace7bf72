/* libFuzzer harness: deployment files (deployments/deployment.c) for 16 ranks on 16 GPUs. An
 * accepted placement puts every rank on a distinct GPU. */
#include "deployment.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char err[512];
  int *map = deployment_parse((const char *)data, size, "fuzz.xml", 16, 16, err, sizeof err);
  if (map == NULL) {
    if (strncmp(err, "fuzz.xml", 8) != 0)
      abort(); /* every refusal names the file */
    return 0;
  }
  int used[16] = { 0 };
  for (int r = 0; r < 16; r++) {
    if (map[r] < 0 || map[r] >= 16 || used[map[r]]++)
      abort();
  }
  free(map);
  return 0;
}
