/* A third fabric model, small enough to read in one go: how to write one (docs/ARCHITECTURE.md,
 * "Writing a model"), and a test that the model interface is enough for it.
 *
 * "lossless" is a lossless Ethernet without congestion control: a switch counts, per ingress
 * port, the bytes it holds that came through it; above lossless_threshold it sends the upstream
 * port a PAUSE, and once they drained to half of it a RESUME. Both take the link's delay to
 * arrive (model timers); a RESUME decided while its PAUSE is still on the wire cancels that
 * PAUSE instead (fabric_timer_cancel). Paused ports do not transmit (may_send). The model uses
 * only the public model interface: its state is allocated by the core (state_size), its
 * counters are returned as data.
 *
 * The test runs an 8-to-1 incast through one switch at packet fidelity with the ideal model and
 * with this one: the same bytes arrive at the same time (pausing the senders costs no
 * throughput at the bottleneck), the switch holds far fewer bytes, PAUSE frames were sent and
 * every RESUME matched them, and the counters appear in the counters the core writes. A second
 * run makes every PAUSE be cancelled on the wire. */
#include <CUnit/Basic.h>
#include <string.h>

#include "check.h"
#include "test_support.h"
#include "cunit_main.h"

/* ---- the model ---- */

enum lossless_timer { LOSSLESS_PAUSE_ARRIVE, LOSSLESS_RESUME_ARRIVE }; /* arg: the upstream port */

struct lossless {
  double threshold_B;      /* XOFF at this many bytes held per ingress, XON at half */
  double *held_B;          /* per port p: bytes p delivered into its peer switch still there */
  uint8_t *xoff;           /* per port p: its peer switch asked p to pause */
  uint8_t *paused;         /* per port p: the PAUSE reached p, no RESUME since */
  fab_timer_id *pause_air; /* per port p: a PAUSE on its way to p (0: none) */
  uint64_t pauses, resumes, cancelled;
};

static double g_threshold_B = 16384; /* the test's setting (a real model reads a parameter) */

static int lossless_init(struct fabric *fab, char *err, size_t errlen)
{
  struct lossless *st = fabric_model_priv(fab); /* zeroed by the core, state_size bytes */
  size_t n = (size_t)fab->topo->n_ports + 1;
  if (g_threshold_B < fab->mtu) {
    snprintf(err, errlen, "lossless threshold %.0f B is below one MTU", g_threshold_B);
    return -1;
  }
  st->threshold_B = g_threshold_B;
  st->held_B = sgf_xcalloc(n, sizeof *st->held_B);
  st->xoff = sgf_xcalloc(n, sizeof *st->xoff);
  st->paused = sgf_xcalloc(n, sizeof *st->paused);
  st->pause_air = sgf_xcalloc(n, sizeof *st->pause_air);
  return 0;
}

static void lossless_fini(struct fabric *fab)
{
  struct lossless *st = fabric_model_priv(fab);
  free(st->held_B);
  free(st->xoff);
  free(st->paused);
  free(st->pause_air); /* the core frees st itself */
}

static int lossless_may_send(struct fabric *fab, int port, int queue, const struct fab_packet *pkt)
{
  (void)queue, (void)pkt;
  const struct lossless *st = fabric_model_priv(fab);
  return !st->paused[port];
}

static int lossless_on_arrive(struct fabric *fab, int node, struct fab_packet *pkt)
{
  struct lossless *st = fabric_model_priv(fab);
  int in = pkt->in_port;
  if (fab->topo->nodes[node].kind != TOPO_SWITCH)
    return FAB_ARRIVE_FORWARD;
  st->held_B[in] += pkt->bytes;
  if (!st->xoff[in] && st->held_B[in] >= st->threshold_B) {
    st->xoff[in] = 1;
    st->pauses++;
    st->pause_air[in] =
        fabric_timer_arm(fab, fab->now + fab->topo->ports[in].latency_s, LOSSLESS_PAUSE_ARRIVE, NULL, (uint32_t)in);
  }
  return FAB_ARRIVE_FORWARD; /* the engine queues it at its egress port */
}

static void lossless_on_tx_done(struct fabric *fab, int port, const struct fab_tx_done *tx)
{
  struct lossless *st = fabric_model_priv(fab);
  int in = tx->in_port;
  if (in < 0 || fab->topo->nodes[fab->topo->ports[port].node].kind != TOPO_SWITCH)
    return;
  st->held_B[in] -= tx->bytes;
  if (!st->xoff[in] || st->held_B[in] > st->threshold_B / 2)
    return;
  st->xoff[in] = 0;
  if (fabric_timer_cancel(fab, st->pause_air[in])) {
    st->cancelled++; /* the PAUSE has not arrived yet: it never will, no RESUME needed */
    return;
  }
  st->resumes++;
  fabric_timer_arm(fab, fab->now + fab->topo->ports[in].latency_s, LOSSLESS_RESUME_ARRIVE, NULL, (uint32_t)in);
}

static void lossless_on_timer(struct fabric *fab, int kind, void *ptr, uint32_t arg)
{
  (void)ptr;
  struct lossless *st = fabric_model_priv(fab);
  int port = (int)arg;
  if (kind == LOSSLESS_PAUSE_ARRIVE) {
    st->pause_air[port] = 0;
    st->paused[port] = 1;
  } else {
    st->paused[port] = 0;
    fabric_port_kick(fab, port); /* may_send's answer changed */
  }
}

static void lossless_counters(struct fabric *fab, struct fab_counters *out)
{
  const struct lossless *st = fabric_model_priv(fab);
  int packet = fab->fidelity == FAB_FIDELITY_PACKET; /* flow fidelity does not model pauses */
  fabric_counter_count(out, "lossless_pause_frames", packet, st->pauses);
  fabric_counter_count(out, "lossless_resume_frames", packet, st->resumes);
  fabric_counter_count(out, "lossless_pauses_cancelled", packet, st->cancelled);
}

static const struct fab_model lossless_model = {
  .name = "lossless",
  .state_size = sizeof(struct lossless),
  .lifecycle = { .init = lossless_init, .fini = lossless_fini, .counters = lossless_counters },
  .packet = { .may_send = lossless_may_send, .on_arrive = lossless_on_arrive, .on_tx_done = lossless_on_tx_done },
  .timers = { .on_timer = lossless_on_timer },
};

/* ---- the test ---- */

#define SENDERS 8
#define BYTES 2e6

struct outcome {
  double end_s, delivered, peak_switch_B;
  uint64_t drops;
};

/* senders GPUs (1..senders) send BYTES each to GPU 0 over links of the given delay. */
static void run_incast(const struct fab_model *model, int senders, double latency_s, struct outcome *o,
                       struct fab_counters *counters)
{
  struct topo *t = fab_topo_single_switch(senders + 1, 50e9, latency_s, 130e-9);
  struct param_set *params = default_params();
  char err[256];
  struct fabric *fab = fabric_new(t, params, model, FAB_FIDELITY_PACKET, 1, err, sizeof err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fab);
  for (int s = 1; s <= senders; s++)
    fabric_post(fab, s, 0, BYTES, 0, 0, NULL, NULL);
  fabric_run(fab);
  o->end_s = fab->stats.last_delivery_s;
  o->delivered = fab->stats.bytes_delivered;
  o->drops = fab->stats.drops;
  o->peak_switch_B = 0;
  for (int p = 0; p < t->n_ports; p++)
    if (t->nodes[t->ports[p].node].kind == TOPO_SWITCH && fabric_port_view(fab, p)->peak_queued > o->peak_switch_B)
      o->peak_switch_B = fabric_port_view(fab, p)->peak_queued;
  if (counters)
    fabric_counters(fab, counters);
  if (model == &lossless_model) {
    const struct lossless *st = fabric_model_priv(fab);
    for (int p = 0; p < t->n_ports; p++) {
      CU_ASSERT_EQUAL(st->held_B[p], 0); /* every byte it held left */
      CU_ASSERT_EQUAL(st->paused[p], 0); /* every pause was lifted */
    }
    CU_ASSERT_EQUAL(st->pauses, st->resumes + st->cancelled);
  }
  fabric_free(fab);
  fab_param_set_free(params);
  fab_topo_free(t);
}

static const struct fab_counter *find(const struct fab_counters *c, const char *name)
{
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->items[i].name, name))
      return &c->items[i];
  return NULL;
}

static void test_lossless_incast(void)
{
  struct outcome ideal, lossless;
  struct fab_counters c = { 0 };
  run_incast(&fab_model_ideal, SENDERS, 100e-9, &ideal, NULL);
  run_incast(&lossless_model, SENDERS, 100e-9, &lossless, &c);
  fprintf(stderr, "\n    ideal: end %.9g s, switch peak %.0f B; lossless: end %.9g s, switch peak %.0f B", ideal.end_s,
          ideal.peak_switch_B, lossless.end_s, lossless.peak_switch_B);
  CU_ASSERT_EQUAL(lossless.delivered, SENDERS * BYTES);
  CU_ASSERT_EQUAL(lossless.drops, 0);
  /* The bottleneck never starves: pauses cost at most a little (a RESUME's link delay). */
  CU_ASSERT(lossless.end_s <= ideal.end_s * 1.01);
  /* The ideal switch holds most of the incast; the pausing one a few thresholds. */
  CU_ASSERT(ideal.peak_switch_B > 10 * lossless.peak_switch_B);
  CU_ASSERT(lossless.peak_switch_B <= SENDERS * (g_threshold_B + 4 * 4096));
  /* Its counters come after the core's, before "drops", which stays last. */
  const struct fab_counter *pauses = find(&c, "lossless_pause_frames");
  CU_ASSERT_PTR_NOT_NULL_FATAL(pauses);
  CU_ASSERT(pauses->count > 0);
  CU_ASSERT(pauses->modelled);
  const struct fab_counter *resumes = find(&c, "lossless_resume_frames");
  const struct fab_counter *cancelled = find(&c, "lossless_pauses_cancelled");
  CU_ASSERT_PTR_NOT_NULL_FATAL(resumes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cancelled);
  fprintf(stderr, "\n    lossless: %llu PAUSE, %llu RESUME, %llu PAUSE cancelled on the wire ",
          (unsigned long long)pauses->count, (unsigned long long)resumes->count, (unsigned long long)cancelled->count);
  CU_ASSERT_EQUAL(pauses->count, resumes->count + cancelled->count);
  CU_ASSERT_STRING_EQUAL(c.items[c.n - 1].name, "drops");
  CU_ASSERT(pauses > find(&c, "peak_queue_bytes"));
  fabric_counters_free(&c);
}

/* One sender, a threshold of two packets and links of 1 us: the switch holds one packet while
 * forwarding the one before it (cut-through at line rate), so about every packet sets XOFF, and
 * the packet ahead leaves (XON) long before the PAUSE could reach the sender: every PAUSE is
 * cancelled on the wire. Were one not, the sender would stay paused for good (no RESUME is
 * ever sent) and the transfer would not complete. */
static void test_lossless_pause_cancelled(void)
{
  struct outcome ideal, lossless;
  struct fab_counters c = { 0 };
  g_threshold_B = 8192;
  run_incast(&fab_model_ideal, 1, 1e-6, &ideal, NULL);
  run_incast(&lossless_model, 1, 1e-6, &lossless, &c);
  g_threshold_B = 16384;
  CU_ASSERT_EQUAL(lossless.delivered, BYTES);
  CU_ASSERT_EQUAL(lossless.end_s, ideal.end_s); /* never paused */
  const struct fab_counter *pauses = find(&c, "lossless_pause_frames");
  const struct fab_counter *resumes = find(&c, "lossless_resume_frames");
  const struct fab_counter *cancelled = find(&c, "lossless_pauses_cancelled");
  CU_ASSERT_PTR_NOT_NULL_FATAL(pauses);
  CU_ASSERT_PTR_NOT_NULL_FATAL(resumes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cancelled);
  CU_ASSERT(pauses->count > BYTES / 4096 / 2); /* about one per packet */
  CU_ASSERT_EQUAL(cancelled->count, pauses->count);
  CU_ASSERT_EQUAL(resumes->count, 0);
  fabric_counters_free(&c);
}

/* init's error reaches fabric_new's caller, and the state the core allocated is freed (fini then
 * runs on the zeroed state: free(NULL)). */
static void test_lossless_init_error(void)
{
  struct topo *t = fab_topo_single_switch(2, 50e9, 100e-9, 130e-9);
  struct param_set *params = default_params();
  char err[256] = "";
  g_threshold_B = 100;
  struct fabric *fab = fabric_new(t, params, &lossless_model, FAB_FIDELITY_PACKET, 1, err, sizeof err);
  g_threshold_B = 16384;
  CU_ASSERT_PTR_NULL(fab);
  CU_ASSERT(strstr(err, "below one MTU") != NULL);
  fab_param_set_free(params);
  fab_topo_free(t);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "model_lossless";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "lossless_incast", test_lossless_incast },
  { "lossless_pause_cancelled", test_lossless_pause_cancelled },
  { "lossless_init_error", test_lossless_init_error },
  { NULL, NULL },
};
