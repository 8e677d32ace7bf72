/* An 8-to-1 incast through an sgfabric fabric plugin, from a plain SimGrid C program.
 *
 *   sgfabric platform --gpus 16 --radix 8 -o cluster.xml
 *   ./incast_c cluster.xml ib       (or roce, or ideal)
 *
 * GPUs 8..15 (the second node) each send 16 MiB to GPU 0 at time 0. The program prints each
 * transfer's completion date and what the fabric's plugin counted: with ib, the time ports
 * waited for credits, in all and at one sender's NIC; with roce, PFC pause
 * frames, ECN marks and CNPs. */
#include <sgfabric.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES (16.0 * 1024 * 1024)

static double g_last_delivery; /* the incast's completion: the last transfer's */

/* One actor per sender: argv[1] is the destination GPU. */
static void sender(int argc, char *argv[])
{
  (void)argc;
  int src = sgf_host_gpu(sg_host_self());
  int dst = atoi(argv[1]);
  double done = sgf_wait(sgf_isend(src, dst, BYTES, 0));
  printf("gpu%d -> gpu%d: %.0f bytes delivered at %.6f s\n", src, dst, BYTES, done);
  if (done > g_last_delivery)
    g_last_delivery = done;
}

int main(int argc, char *argv[])
{
  simgrid_init(&argc, argv);
  if (argc != 3) {
    fprintf(stderr, "usage: %s PLATFORM.xml ib|roce|ideal\n", argv[0]);
    return 2;
  }
  const char *fabric = argv[2];
  if (strcmp(fabric, "ib") == 0)
    sg_ib_plugin_init(); /* before the platform is loaded, as every SimGrid plugin */
  else if (strcmp(fabric, "roce") == 0)
    sg_roce_plugin_init();
  else if (strcmp(fabric, "ideal") != 0) {
    fprintf(stderr, "%s: unknown fabric '%s' (ib, roce or ideal)\n", argv[0], fabric);
    return 2;
  }
  char err[512];
  struct sgf_load_options opt = { .fidelity = "packet", .seed = 1, .cfg = NULL };
  struct fabric *fab = sgf_load_platform(argv[1], &opt, err, sizeof err);
  if (fab == NULL) {
    fprintf(stderr, "%s: %s\n", argv[0], err);
    return 1;
  }

  char *args[] = { "sender", "0", NULL };
  for (int gpu = 8; gpu < 16; gpu++) {
    char name[32];
    snprintf(name, sizeof name, "gpu%d", gpu);
    sg_host_t host = sg_host_by_name(name);
    if (host == NULL || sgf_host_gpu(host) != gpu) {
      fprintf(stderr, "%s: %s has no host %s (16 GPUs needed)\n", argv[0], argv[1], name);
      sgf_unload();
      return 1;
    }
    sg_actor_create("sender", host, sender, 2, args);
  }
  simgrid_run();

  /* GPU 8's NIC port: the up direction of its link to its leaf (link ids name their two ends,
   * lower first, "gpu8--leaf2" with 4 GPUs per leaf; SimGrid splits each into _UP and _DOWN). */
  const_sg_link_t nic = sg_link_by_name("gpu8--leaf2_UP");
  int port = sgf_link_port(nic);
  /* SimGrid's clock may run past it: model timers (DCQCN's rate recovery) keep ticking. */
  printf("incast done at %.6f s on %s\n", g_last_delivery, fabric);
  /* The per-port getters take the fabric's port index; their sg_*_link_get_* forms take SimGrid's
   * link handle (the same port). */
  if (strcmp(fabric, "ib") == 0)
    printf("ib: %.6f s of credit stalls over all ports, %.6f s at GPU 8's NIC (port %d), %.6f s by its link\n",
           sg_ib_get_credit_stall_time(fab), port >= 0 ? sg_ib_get_port_stall_time(fab, port) : -1.0, port,
           sg_ib_link_get_stall_time(nic));
  else if (strcmp(fabric, "roce") == 0)
    printf("roce: %llu PFC pause frames, %llu ECN marks, %llu CNPs; GPU 8's NIC paused %.6f s by %lld PAUSE frames\n",
           (unsigned long long)sg_roce_get_pause_frames(fab), (unsigned long long)sg_roce_get_ecn_marks(fab),
           (unsigned long long)sg_roce_get_cnps(fab), sg_roce_link_get_paused_time(nic),
           (long long)sg_roce_link_get_pauses_received(nic));
  sgf_unload();
  return 0;
}
