/* SimGrid side of the fabric: transfers as semaphores released by the fabric model.
 *
 * SimGrid hooks used: a custom kernel model (s4u::Engine::add_model, in sg_fabric_model.cpp),
 * whose next_occurring_event/update_actions_state call sgf_model_next/sgf_model_advance below;
 * sg_sem_* to block and wake actors; simgrid_get_clock to date the posts. */
#include "sg_fabric.h"

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xbt/log.h>

#include "platform.h"
#include "check.h"

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
    t = sgf_xcalloc(1, sizeof *t);
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

/* ---- the library's loader (sgfabric.h) ------------------------------------------------------ */

/* What sgf_load_platform built, freed by sgf_unload. */
static struct {
  struct platform *platform;
  struct param_set *params;
  struct fabric *fab;
} g_loaded;

void sgf_unload(void)
{
  if (g_loaded.fab == g_fabric)
    g_fabric = NULL;
  fabric_free(g_loaded.fab);
  platform_free(g_loaded.platform);
  fab_param_set_free(g_loaded.params);
  memset(&g_loaded, 0, sizeof g_loaded);
}

struct fabric *sgf_load_platform(const char *path, const struct sgf_load_options *opt, char *err, size_t errlen)
{
  static const struct sgf_load_options defaults = { .fidelity = NULL, .seed = 1, .cfg = NULL };
  if (opt == NULL)
    opt = &defaults;
  if (g_fabric != NULL || sg_host_count() > 0) {
    snprintf(err, errlen, "%s: a platform is loaded already (load it once, with sgf_load_platform only)", path);
    return NULL;
  }
  fab_fidelity fidelity = FAB_FIDELITY_FLOW;
  if (opt->fidelity != NULL && strcmp(opt->fidelity, "flow") != 0) {
    if (strcmp(opt->fidelity, "packet") != 0) {
      snprintf(err, errlen, "fidelity '%s' is not flow or packet", opt->fidelity);
      return NULL;
    }
    fidelity = FAB_FIDELITY_PACKET;
  }
  const struct fab_model *model = fabric_plugin_model();
  if (model == NULL)
    model = &fab_model_ideal;
  fabric_register_params();
  fabric_plugin_mark_loaded();
  g_loaded.params = fab_param_set_new();
  if (g_loaded.params == NULL || (g_loaded.platform = platform_load(path, err, errlen)) == NULL ||
      platform_apply_params(g_loaded.platform, g_loaded.params, err, errlen) != 0)
    goto fail;
  for (const char *const *c = opt->cfg; c && *c; c++) {
    char message[256];
    if (fab_param_set_cfg(g_loaded.params, *c, message, sizeof message) != 0) {
      snprintf(err, errlen, "%s: %s", *c, message);
      goto fail;
    }
  }
  g_loaded.fab = fabric_new(g_loaded.platform->topo, g_loaded.params, model, fidelity, opt->seed, err, errlen);
  if (g_loaded.fab == NULL || sgf_glue_load_platform(path, err, errlen) != 0)
    goto fail;
  sgf_install(g_loaded.fab);
  return g_loaded.fab;
fail:
  sgf_unload();
  return NULL;
}

int sgf_host_gpu(const_sg_host_t host)
{
  if (g_fabric == NULL || host == NULL)
    return -1;
  const struct topo *t = g_fabric->topo;
  int node = fab_topo_find_node(t, sg_host_get_name(host));
  return node >= 0 && t->nodes[node].kind == TOPO_GPU ? t->nodes[node].index : -1;
}

int sgf_link_port(const_sg_link_t link)
{
  if (g_fabric == NULL || link == NULL)
    return -1;
  /* The platform's links are SPLITDUPLEX: SimGrid names the two directions of link id L "L_UP"
   * and "L_DOWN"; sgfabric's UP transmits from the lower end (toward the core). */
  const char *name = sg_link_get_name(link);
  size_t len = strlen(name);
  int upper_end;
  if (len > 3 && strcmp(name + len - 3, "_UP") == 0)
    upper_end = 0, len -= 3;
  else if (len > 5 && strcmp(name + len - 5, "_DOWN") == 0)
    upper_end = 1, len -= 5;
  else
    return -1;
  const struct topo *t = g_fabric->topo;
  for (int l = 0; l < t->n_links; l++)
    if (strncmp(t->links[l].name, name, len) == 0 && t->links[l].name[len] == '\0')
      return t->links[l].port[upper_end];
  return -1;
}

int sgf_link_packet_port(const_sg_link_t link)
{
  return g_fabric != NULL && g_fabric->fidelity == FAB_FIDELITY_PACKET ? sgf_link_port(link) : -1;
}
