/* Failures mid-run: a schedule takes links, switches and NICs down and up at given simulated
 * times, at both fidelities.
 *
 * Flow fidelity:
 * A link that fails has capacity 0 at once: the flows crossing it stall (rate 0), and the bytes
 * they had in flight on it (rate x round trip, at most what they sent) are lost and sent again
 * (counted as retransmitted, added back to what they have left). The routing learns of the
 * failure only after the model's recovery delay (fab_model.recovery_delay: InfiniBand's subnet
 * manager re-sweep or its switch-local self-healing, RoCE's BFD detection plus the routing
 * update); then every flow still crossing a failed link is re-routed over live links (the
 * model's own routing: D-mod-K tables or adaptive routing for InfiniBand, ECMP for RoCE). A flow
 * with no live path waits. A link that comes back up carries traffic again at once (the flows
 * still routed over it resume); after the same delay the routing uses it again for new flows
 * (flows already re-routed keep their new path).
 *
 * Packet fidelity: a failed link's ports transmit nothing; the packets on its wires are lost when
 * they would arrive (port epochs), those queued for its egress ports are dropped, and so are the
 * packets routed to it before the routing knows (or with no live way on). Each is counted (the
 * fabric's drops, the event's packets_dropped) and the model told (fab_model's
 * packet.on_packet_lost, packet.on_link_state): its transport recovers the loss (RoCE
 * go-back-N; InfiniBand's RC transport, ib_transport.c) and InfiniBand resets the link's
 * credits. After the recovery delay packet flows crossing a failed link take a live path; a flow
 * that met a failure is watched by the communicator timeout from its last delivery.
 *
 * Above the fabric, NCCL's watchdog: a transfer that has made no progress for the timeout fails
 * the job (fabric_job_failed), which stops the fabric as the livelock watchdog does. */
#ifndef SGFABRIC_FAILURE_H
#define SGFABRIC_FAILURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fabric.h"
#include "topo.h"

#ifdef __cplusplus
extern "C" {
#endif

struct fabric;
struct fab_flow;

struct fab_fail_event {
  double time_s;
  int up;          /* 0: down, 1: up */
  char target[64]; /* as the file names it */
  int line;        /* of the schedule file (0 for --cfg) */
  int *links;      /* the links it takes down or up */
  int n_links;
  /* what happened */
  int applied;                         /* its date came during the run */
  double delay_s;                      /* recovery delay applied */
  double recovered_s;                  /* when the routing was updated (-1: not yet) */
  unsigned long long flows_affected;   /* flows stalled on its links: at the failure, or started over them
                                       * before the routing knew */
  unsigned long long flows_rerouted;   /* flows moved to a live path when the routing was updated */
  unsigned long long flows_unroutable; /* flows left with no live path then */
  double bytes_retransmitted;
  /* packet fidelity */
  unsigned long long packets_dropped; /* lost on its links: on the wire, queued for them, or reaching them
                                       * before the routing knew */
  double bytes_dropped;               /* their payload */
};

struct fab_failures {
  char path[256];
  struct fab_fail_event *events;
  int n_events;
  double timeout_s;             /* 0: none */
  int *link_down;               /* per link: held down */
  int *link_event;              /* per link: the event that took it down last (-1: none) */
  uint64_t *fault_free_downset; /* the routing without failures (a flow that has no live path keeps
                                 * its old one, stalled) */
  double job_failed_s;          /* -1: the job did not fail */
  char job_failed_msg[512];
  double check_s;      /* the timeout check armed last (-1: none) */
  uintptr_t check_gen; /* its number: an older check finds another and does nothing */
  /* packet fidelity */
  uint8_t *port_epoch;         /* per port: bumped when its link goes down; a packet sent on it with
                                * another epoch was on the wire then, and is lost */
  struct fab_flow **pkt_flows; /* the active flows of the packet engine */
  size_t n_pkt_flows, cap_pkt_flows;
};

/* Reads a schedule: CSV with header time_us,action,target, one event per line, action down|up,
 * target a link id ("leaf0--spine1") or a node name (a switch, a GPU: all its fabric links).
 * Blank lines and lines starting with # are skipped. Returns NULL with "FILE:LINE: ..." in err. */
struct fab_failures *fab_failures_load(const char *path, const struct topo *t, char *err, size_t errlen);
void fab_failures_free(struct fab_failures *f);

/* Installs the schedule on a fabric (which then owns it): its events go into the calendar.
 * timeout_s: the communicator timeout (0: none). Returns 0, or -1 with a message. */
int fabric_failures_install(struct fabric *fab, struct fab_failures *f, double timeout_s, char *err, size_t errlen);

/* Called by the fabric when a flow starts and when routing it failed: see failure.c. */
int fabric_failures_route_fallback(struct fabric *fab, struct fab_flow *flow);
void fabric_failures_flow_started(struct fabric *fab, struct fab_flow *flow);
void fabric_failures_flow_finished(struct fabric *fab, struct fab_flow *flow);

/* ---- packet fidelity ----
 * Whether a port's link is down (always 0 without a schedule). */
static inline int fabric_port_down(const struct fabric *fab, int port);
/* A packet sent on port now carries the port's link epoch; at its arrival it was lost on the wire
 * if the link failed since (or is down). */
void fabric_failures_stamp(const struct fabric *fab, struct fab_packet *pkt, int port);
int fabric_failures_lost_on_wire(const struct fabric *fab, const struct fab_packet *pkt);
/* A packet lost to a failed link at port (see fab_model's packet.on_packet_lost for queued):
 * counted in the fabric's drops and the event's packets_dropped, its flow watched by the
 * communicator timeout, the model told; the packet is freed. */
void fabric_failures_packet_lost(struct fabric *fab, int port, struct fab_packet *pkt, int queued);
/* The port a packet with no live route at its node is counted against: the last hop toward its
 * destination (a NIC link down leaves its GPU unreachable once the routing knows). */
int fabric_failures_dead_end_port(const struct fabric *fab, const struct fab_packet *pkt);
/* A transport sent bytes of flow again: counted against the event whose failure the flow met. */
void fabric_failures_retransmitted(struct fabric *fab, const struct fab_flow *flow, double bytes);
/* A transport gave up (InfiniBand: the QP's retry count ran out): the job fails now with msg. */
void fabric_failures_fail_job(struct fabric *fab, const char *msg);
/* The packet engine drops every packet queued at a port whose link went down (pkt_engine.c). */
void fab_pkt_engine_flush_port(struct fabric *fab, int port);

/* Whether the job failed (communicator timeout), and when (seconds); the message names the
 * transfer and the link. */
static inline int fabric_port_down(const struct fabric *fab, int port)
{
  return fab->port_failed != NULL && fab->port_failed[port];
}
static inline double fabric_failures_job_failed(const struct fab_failures *f) { return f ? f->job_failed_s : -1; }
/* Writes summary.json's "failures" member (and "job_failed_at_s" when the job failed), each
 * line starting with indent, ending with ",\n". */
void fabric_failures_write_json(const struct fabric *fab, FILE *out, const char *indent);
/* One line per event that happened, each starting with prefix (for the commands without
 * summary.json: coll). */
void fabric_failures_print(const struct fabric *fab, FILE *out, const char *prefix);

#ifdef __cplusplus
}
#endif

#endif
