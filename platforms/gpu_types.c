/* GPU table. Peaks are the vendor's dense (no sparsity) BF16 tensor figures. */
#include "gpu_types.h"

#include "cli.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

static const struct gpu_type gpu_types[] = {
  /* NVIDIA A100 SXM4 80GB data sheet: 312 TFLOPS BF16 dense, 2,039 GB/s HBM2e,
     * NVLink3 600 GB/s bidirectional. NVIDIA DGX A100 data sheet: 8 single-port ConnectX-6
     * 200 Gb/s HDR InfiniBand NICs for 8 GPUs, one 200G NIC per GPU. */
  { "A100", 312e12, 2039e9, 80e9, 300e9, 200e9 / 8, "NVIDIA A100 data sheet (SXM4 80GB)" },
  /* NVIDIA H100 SXM5 data sheet: 989 TFLOPS BF16 dense (1,979 with sparsity), 3.35 TB/s
     * HBM3, NVLink4 900 GB/s bidirectional. NVIDIA DGX H100 data sheet: 8 ConnectX-7 400 Gb/s
     * NDR NICs (in 4 OSFP cages) for 8 GPUs, one 400G NIC per GPU. */
  { "H100", 989.4e12, 3.35e12, 80e9, 450e9, 400e9 / 8, "NVIDIA H100 data sheet (SXM5)" },
  /* NVIDIA H200 SXM data sheet: same compute die as H100, 4.8 TB/s HBM3e, 141 GB. */
  { "H200", 989.4e12, 4.8e12, 141e9, 450e9, 400e9 / 8, "NVIDIA H200 data sheet (SXM)" },
  /* NVIDIA B200 (DGX B200) data sheet: 2.25 PFLOPS BF16 dense per GPU (4.5 sparse), 8 TB/s
     * HBM3e, NVLink5 1.8 TB/s bidirectional; DGX B200 pairs each GPU with a 400G NIC. */
  { "B200", 2.25e15, 8e12, 180e9, 900e9, 400e9 / 8, "NVIDIA DGX B200 data sheet" },
  { NULL, 0, 0, 0, 0, 0, NULL },
};

const struct gpu_type *gpu_type_table(void) { return gpu_types; }

static int prefix_matches(const char *row, const char *name)
{
  size_t n = strlen(row);
  for (size_t i = 0; i < n; i++)
    if (name[i] == '\0' || toupper((unsigned char)name[i]) != row[i])
      return 0;
  /* "H100", "H100-SXM", "h100_sxm5" all name the H100 row; "H1000" does not. */
  return name[n] == '\0' || name[n] == '-' || name[n] == '_' || name[n] == ' ';
}

const struct gpu_type *gpu_type_find(const char *name)
{
  if (name == NULL)
    return NULL;
  for (const struct gpu_type *g = gpu_types; g->name != NULL; g++)
    if (prefix_matches(g->name, name))
      return g;
  return NULL;
}

const char *gpu_type_suggest(const char *name)
{
  struct cli_suggestion s;
  cli_suggest_begin(&s, name);
  for (const struct gpu_type *g = gpu_types; g->name != NULL; g++)
    cli_suggest_consider(&s, g->name);
  return cli_suggest_result(&s);
}
