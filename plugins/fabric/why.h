/* The "why" accounting of a fabric (off unless a caller enables it: sgfabric run --why, which
 * sgfabric compare asks for): per link direction, the flows that crossed it (how many, how many at
 * once at most, the bytes of each traffic class), the collisions of one collective's concurrent
 * transfers on switch-to-switch links (what ECMP hashing does and adaptive routing avoids), and a
 * utilisation heatmap sampled over time. Nothing here changes a run's results: it only looks at
 * the flows' paths and the ports' counters. */
#ifndef SGFABRIC_WHY_H
#define SGFABRIC_WHY_H

#include <stdio.h>

struct fabric;
struct fab_flow;
struct fab_why;

/* Heatmap bins kept: samples are taken every bin_s; when 2 x WHY_BINS are held, neighbours are
 * averaged pairwise and bin_s doubles, so any iteration ends with WHY_BINS to 2 x WHY_BINS bins. */
#define WHY_BINS 64
/* The first sampling interval (10 us). */
#define WHY_FIRST_BIN_S 1e-5
/* Links written in top_links and in the heatmap. */
#define WHY_TOP_LINKS 10
#define WHY_HEATMAP_LINKS 24

/* Enables the accounting on fab (before any flow is posted); 0, or -1 when out of memory. */
int fab_why_enable(struct fabric *fab);
void fab_why_free(struct fab_why *why);
/* Called by the fabric core when a flow's path is set (hops > 0, bytes > 0), and when it ends. */
void fab_why_flow_start(struct fabric *fab, struct fab_flow *flow);
void fab_why_flow_end(struct fabric *fab, struct fab_flow *flow);
/* The current sampling interval: the caller samples at 0, bin_s, 2 bin_s, ... */
double fab_why_bin_s(const struct fabric *fab);
/* Takes the sample of date now (a multiple of the current interval). */
void fab_why_sample(struct fabric *fab, double now);
/* Writes why.json: end_s is the iteration's end (the heatmap's last, partial bin ends there);
 * tag_names[t] names traffic class t (NULL: unnamed, written as "tagT"). Returns 0 or -1. */
int fab_why_write_json(struct fabric *fab, FILE *out, double end_s, const char *const *tag_names, int n_tags);

#endif
