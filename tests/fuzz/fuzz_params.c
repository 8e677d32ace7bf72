/* libFuzzer harness: parameters. Each input line is "area/name:value" (what follows --cfg=);
 * the values set are then loaded by the fabric core, InfiniBand and RoCE models on a two-GPU
 * switch, which parse the text parameters (SL2VL and VL arbitration tables, presets, ports). */
#include "fabric.h"
#include "fuzz_support.h"
#include "ib.h"
#include "param.h"
#include "roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fabric_register_params();
  ib_register_params();
  roce_register_params();
  char *text = fuzz_string(data, size);
  struct param_set *set = fab_param_set_new();
  char err[512];
  for (char *line = text, *next; line != NULL; line = next) {
    next = strchr(line, '\n');
    if (next != NULL)
      *next++ = '\0';
    fab_param_set_cfg(set, line, err, sizeof err);
  }
  /* A fabric per model and fidelity: the models' own checks of the values. */
  const struct fab_model *models[] = { ib_model(), roce_model() };
  for (int m = 0; m < 2; m++)
    for (int fid = 0; fid < 2; fid++) {
      struct topo *t = fab_topo_single_switch(2, 12.5e9, 1e-6, 300e-9);
      struct fabric *fab =
          fabric_new(t, set, models[m], fid ? FAB_FIDELITY_FLOW : FAB_FIDELITY_PACKET, 1, err, sizeof err);
      fabric_free(fab);
      fab_topo_free(t);
    }
  char *json = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&json, &len);
  fab_param_write_json(set, out, "");
  fclose(out);
  free(json);
  fab_param_set_free(set);
  free(text);
  return 0;
}
