/* The GPU table: the few numbers of each accelerator that the platform and the compute
 * model need. One row per type; every number cites its data sheet in gpu_types.c. */
#ifndef SGFABRIC_GPU_TYPES_H
#define SGFABRIC_GPU_TYPES_H

struct gpu_type {
  const char *name;        /* canonical name, as given to --gpu ("H100") */
  double bf16_dense_flops; /* dense BF16 tensor-core peak, FLOP/s (MFU denominator) */
  double hbm_Bps;          /* HBM bandwidth, bytes/s */
  double hbm_bytes;        /* HBM capacity, bytes */
  double nvlink_Bps;       /* NVLink bandwidth per GPU per direction, bytes/s */
  double nic_Bps;          /* default scale-out NIC rate per GPU, bytes/s */
  const char *source;      /* where the numbers come from */
};

/* Returns the row whose name matches (case-insensitive; "H100-SXM" and "h100" both find
 * H100), or NULL. */
const struct gpu_type *gpu_type_find(const char *name);

/* The table's name closest to a misspelled one ("A10" gives "A100"), or NULL. */
const char *gpu_type_suggest(const char *name);

/* The table, terminated by a row whose name is NULL. */
const struct gpu_type *gpu_type_table(void);

#endif
