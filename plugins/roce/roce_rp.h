/* The DCQCN reaction point of one RoCE flow: the timers and clock around the rate machine of
 * dcqcn.c. Shared by the packet model (roce_model.c, which schedules the timers as events) and
 * the fluid DCQCN model of flow fidelity (roce_dcqcn_fluid.c, which polls them every step). */
#ifndef SGFABRIC_ROCE_RP_H
#define SGFABRIC_ROCE_RP_H

#include "dcqcn.h"

struct roce_flow;

/* A CNP arrives at date now: alpha catches up with an idle timer, the cut (dcqcn_on_cnp), the
 * alpha and rate-increase timers are re-dated. Returns whether it cut. */
int roce_rp_cut(const struct dcqcn_params *p, struct dcqcn_stats *s, struct roce_flow *rf, double now);
/* One expiry of the alpha timer; it stays armed while the flow is below line rate. */
void roce_rp_alpha_expiry(const struct dcqcn_params *p, struct roce_flow *rf);
/* One expiry of the rate-increase timer (an increase if below line rate, which it returns);
 * it stays armed while the flow is below line rate. */
int roce_rp_rate_expiry(const struct dcqcn_params *p, struct dcqcn_stats *s, struct roce_flow *rf);

#endif
