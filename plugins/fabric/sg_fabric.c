/* SimGrid side of the fabric: transfers as semaphores released by the fabric model.
 *
 * SimGrid hooks used: a custom kernel model (s4u::Engine::add_model, in sg_fabric_model.cpp),
 * whose next_occurring_event/update_actions_state call sgf_model_next/sgf_model_advance below;
 * sg_sem_* to block and wake actors; simgrid_get_clock to date the posts. */
#include "sg_fabric.h"

#include <simgrid/engine.h>
#include <simgrid/semaphore.h>
#include <stdlib.h>
#include <xbt/log.h>

XBT_LOG_EXTERNAL_CATEGORY(ker_engine); /* SimGrid's engine: where its deadlock report comes from */

/* The one fabric of this process (SimGrid runs one simulation per process). */
static struct fabric *g_fabric;

struct sgf_transfer {
  sg_sem_t sem;
  double finish_s;
  int done;
  struct sgf_transfer *free_next;
};

static struct sgf_transfer *g_free_transfers;

void sgf_install(struct fabric *fab)
{
  g_fabric = fab;
  sgf_glue_add_model();
}

struct fabric *sgf_fabric(void) { return g_fabric; }

static void transfer_done(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  struct sgf_transfer *t = ctx;
  t->done = 1;
  t->finish_s = flow->finish_s;
  sg_sem_release(t->sem);
}

sgf_transfer_t *sgf_isend_at(int src_gpu, int dst_gpu, double bytes, int tag, double start_s)
{
  struct sgf_transfer *t = g_free_transfers;
  if (t)
    g_free_transfers = t->free_next;
  else {
    t = calloc(1, sizeof *t);
    if (t == NULL)
      abort();
    t->sem = sg_sem_init(0);
  }
  t->done = 0;
  t->finish_s = -1;
  double now = simgrid_get_clock();
  if (g_fabric->now < now)
    g_fabric->now = now;
  fabric_post(g_fabric, src_gpu, dst_gpu, bytes, start_s, tag, transfer_done, t);
  return t;
}

sgf_transfer_t *sgf_isend(int src_gpu, int dst_gpu, double bytes, int tag)
{
  return sgf_isend_at(src_gpu, dst_gpu, bytes, tag, simgrid_get_clock());
}

double sgf_wait(sgf_transfer_t *t)
{
  sg_sem_acquire(t->sem);
  double finish = t->finish_s;
  t->free_next = g_free_transfers;
  g_free_transfers = t;
  return finish;
}

void sgf_wait_all(sgf_transfer_t **t, int n)
{
  for (int i = 0; i < n; i++)
    sgf_wait(t[i]);
}

int sgf_test(const sgf_transfer_t *t) { return t->done; }

/* SimGrid advances its clock by the returned delay and then asks us to process up to the new
 * date, which floating point may place a hair before our event: events within this relative
 * distance of the date are processed, with the fabric's own exact dates. */
#define SGF_DATE_SLACK 1e-12

double sgf_model_next(double now)
{
  double next = fabric_next_time(g_fabric);
  if (next < 0)
    return -1;
  return next > now ? next - now : 0;
}

void sgf_model_advance(double now)
{
  double slack = SGF_DATE_SLACK * (now > 1 ? now : 1);
  fabric_advance(g_fabric, now + slack);
  /* The watchdog stopped the fabric: the actors waiting on transfers will never wake, and
   * SimGrid's deadlock report would only hide the livelock report the tool prints instead. */
  if (fabric_stalled(g_fabric))
    xbt_log_threshold_set(&_XBT_LOGV(ker_engine), xbt_log_priority_infinite);
}
