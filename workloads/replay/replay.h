/* Replay of a workload trace on SimGrid: one actor per rank walks its stage's program.
 *
 * Compute ops sleep the actor for the roofline time. Communication ops go to the rank's comm
 * stream of their group kind (one FIFO per group kind, as NCCL serialises the operations of a
 * communicator); collectives are dataflow graphs of fabric transfers (workloads/collectives),
 * point-to-point sends are eager transfers matched to receives by (sender, receiver, tag). A
 * blocking op, a wait or a receive blocks the actor on its semaphore until the fabric completes
 * what it waits for; the time it waits is charged to the group it waited on (exposed
 * communication), or to the pipeline bubble when a receive waits for a message not yet sent.
 * Ranks that end before the last one wait on the pipeline's cool-down (bubble) and on stragglers.
 * With replay/engine:events the ranks have no actors: each is stepped inside the fabric's events
 * (replay.c), the same programs and charges, another order among ranks acting at one date. */
#ifndef SGFABRIC_REPLAY_H
#define SGFABRIC_REPLAY_H

#include <stdio.h>

#include "coll.h"
#include "timeline.h"
#include "fabric.h"
#include "gpu_types.h"
#include "wl_compute.h"
#include "wl_trace.h"

struct replay_config {
  const struct wl_trace *trace;
  struct fabric *fab;
  const int *rank_gpu;        /* [gpus] GPU of each rank */
  const struct gpu_type *gpu; /* compute peak and HBM */
  struct wl_compute_params compute;
  struct coll_params coll;
  int progress;               /* print progress on stderr */
  struct timeline *timeline;  /* NULL, or where the spans of the iteration go (timeline.h) */
  double link_sample_s;       /* > 0 with a timeline: every link direction's utilisation is
                                  * sampled this often into it */
  const double *gpu_slowdown; /* NULL, or per platform GPU: its compute time multiplier */
  double jitter_sigma;        /* log-normal noise of each compute run (straggler.h), 0: none */
  uint64_t seed;              /* the run's: the noise's streams */
  int event_engine;           /* 1: ranks are stepped inside the fabric's events, without an actor
                               * each (replay/engine:events) */
};

/* Statistics of one (collective, group) pair, over every instance. */
struct replay_coll_stats {
  long count;
  double bytes;     /* per member buffer, summed over instances */
  double time_s;    /* from the first member's call to the last member's completion, summed */
  double bus_bytes; /* bytes x nccl-tests' bus factor, summed: bus_bytes / time_s is the busbw of
                     * the same aggregate as algbw = bytes / time_s */
  int algo_mask;    /* algorithms used (1 << enum coll_algo) */
  int proto_mask;   /* NCCL protocols used (1 << enum coll_proto) */
  int ring_forms;   /* how their rings moved (COLL_RINGS_* of every call) */
};

struct replay_results {
  double iteration_s;                  /* last rank's end */
  double compute_s;                    /* mean over ranks */
  double compute_class_s[WL_CC_COUNT]; /* compute_s per kernel class, mean over ranks */
  double exposed_s[WL_GROUP_COUNT];    /* mean over ranks, per group */
  double bubble_s;                     /* mean over ranks */
  double straggler_s;                  /* mean over ranks: waiting past the typical end */
  double other_s;                      /* mean over ranks: the rest (waiting at the end) */
  double typical_end_s;                /* latest over stages of the stage's median end */
  struct {                             /* the rank that computed longest (lowest index on ties) */
    int rank, gpu;
    double compute_s;
  } slowest_compute;
  struct { /* the rank that ended the iteration (lowest index on ties) */
    int rank, gpu, stage;
    double exposed_s[WL_GROUP_COUNT]; /* its own waits, per group */
  } slowest;
  struct replay_coll_stats coll[COLL_KIND_COUNT][WL_GROUP_COUNT];
  struct replay_coll_stats p2p[WL_GROUP_COUNT];
  long ranks_finished;
};

/* The replay's parameters (replay/engine), registered with the run's. */
extern const struct param_def replay_param_table[];
void replay_register_params(void);
/* 1 when the run's replay/engine is events. */
int replay_event_engine_from(const struct param_set *set);

/* Jobs one simulation runs side by side on one fabric (each with its trace and placement). */
#define REPLAY_MAX_JOBS 8

/* Creates a job's rank actors (SimGrid must be initialised and the platform loaded); call once
 * per job, all with the same fabric, before simgrid_run(). Returns the job's index (0, 1, ...), or
 * -1 with the reason in err (too many jobs; a timeline or --why with more than one job). */
int replay_start(const struct replay_config *cfg, char *err, size_t errlen);
/* After simgrid_run(): gathers a job's results and frees its state. Returns 0, or -1 if some rank
 * never finished (a deadlocked trace). */
int replay_finish(int job, struct replay_results *out, char *err, size_t errlen);

#endif
