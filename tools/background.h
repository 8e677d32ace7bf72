/* Background traffic beside a training job (sgfabric run --background FILE): storage,
 * checkpoint or another tenant's flows, from a flow file in the format of sgfabric flows
 * (src,dst,bytes,start_us), posted at their start times into the fabric the job runs on.
 *
 * The flows take ids outside the job's sequence (fabric_flow_renumber), so the job's flows keep
 * their ids, ECMP paths and tie-breaks: a background that shares no link with the job leaves
 * the job's results unchanged, and one that shares links slows it through the fabric's own
 * mechanisms (max-min or FIFO sharing, credits, PFC, DCQCN). */
#ifndef SGFABRIC_BACKGROUND_H
#define SGFABRIC_BACKGROUND_H

#include <stddef.h>
#include <stdio.h>

struct fabric;
struct background;

/* Reads path for a platform of n_gpus GPUs. NULL with "PATH:LINE: message" in err. */
struct background *background_load(const char *path, int n_gpus, char *err, size_t errlen);
/* Posts every flow (before the simulation starts) with traffic class tag. */
void background_post(struct background *b, struct fabric *fab, int tag);
/* Writes the summary.json member "background": flows, bytes, how many finished and by when, and
 * their completion times (null where none finished), followed by ",\n". */
void background_write_json(FILE *f, const struct background *b, double iteration_s);
void background_free(struct background *b);

#endif
