/* libFuzzer harness: sgfabric's own platform reader and validator (plugins/fabric/platform.c,
 * libxml2), without SimGrid. An accepted platform's model parameters are applied to a
 * parameter set as a run would. */
#include "fabric.h"
#include "fuzz_support.h"
#include "ib.h"
#include "param.h"
#include "platform.h"
#include "roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fabric_register_params();
  ib_register_params();
  roce_register_params();
  char err[512];
  struct platform *p = platform_parse((const char *)data, size, "fuzz.xml", err, sizeof err);
  if (p == NULL) {
    if (strncmp(err, "fuzz.xml", 8) != 0)
      abort(); /* every refusal names the file */
    return 0;
  }
  struct param_set *set = fab_param_set_new();
  platform_apply_params(p, set, err, sizeof err);
  fab_param_set_free(set);
  platform_free(p);
  return 0;
}
