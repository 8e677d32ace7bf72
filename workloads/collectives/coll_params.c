/* The collectives' parameter table, read once per run into struct coll_params. */
#include "coll_params.h"

const struct param_def coll_param_table[] = {
    {"coll/algorithm", PARAM_ENUM, UNIT_NONE, "auto", 0, 0, "auto|ring|tree|hierarchical",
     "All-reduce algorithm; auto: hierarchical when every node holds the same number (>1) of a multi-node "
     "group's members, else ring",
     "NCCL_ALGO (Ring, Tree); hierarchical as in NCCL's NVLS/CollNet split and SimAI"},
    {"coll/ring", PARAM_ENUM, UNIT_NONE, "auto", 0, 0, "auto|steps|pipelined",
     "Rings move step by step, or as one pipelined transfer per edge plus the later steps' latency; auto: "
     "pipelined at flow fidelity, steps at packet fidelity",
     "equal times on rings whose edges share no link (tests/unit/workloads/test_wl_coll)"},
    {"coll/channels", PARAM_INT, UNIT_NONE, "1", 1, 32, NULL,
     "Parallel rings or trees a collective is split into (NCCL channels)", "NCCL_MIN_NCHANNELS"},
    {"coll/chunk", PARAM_REAL, UNIT_BYTES, "4MB", 4096, 1e12, NULL,
     "Pipelining unit of tree all-reduce and broadcast chains", "NCCL_BUFFSIZE default 4 MiB"},
    {NULL, 0, 0, NULL, 0, 0, NULL, NULL, NULL},
};

void coll_register_params(void) { param_register(coll_param_table); }

void coll_params_from(const struct param_set *set, struct coll_params *p)
{
  coll_params_init(p);
  p->algo = (enum coll_algo)param_get_choice(set, "coll/algorithm");
  p->ring_mode = (enum coll_ring_mode)param_get_choice(set, "coll/ring");
  p->channels = param_get_int(set, "coll/channels");
  p->chunk_bytes = param_get(set, "coll/chunk");
}
