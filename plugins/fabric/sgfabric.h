/* sgfabric for SimGrid programs: the InfiniBand and RoCEv2 fabric plugins, one header.
 *
 *   simgrid_init(&argc, argv);
 *   sg_ib_plugin_init();                       // or sg_roce_plugin_init(); before the platform
 *   struct sgf_load_options opt = {.fidelity = "flow", .seed = 1};
 *   if (sgf_load_platform("cluster.xml", &opt, err, sizeof err) == NULL) ...  // instead of simgrid_load_platform
 *   ... create actors; they move bytes with sgf_isend()/sgf_wait() between GPUs (sgf_host_gpu) ...
 *   simgrid_run();
 *   ... read the plugin's getters (ib.h, roce.h) ...
 *   sgf_unload();
 *
 * The platform is an sgfabric platform file (docs/platforms.md: `sgfabric platform` writes one):
 * SimGrid loads its hosts and links, and the fabric reads the topology and the model parameters
 * ("ib/...", "roce/...", "fabric/..." zone props) from the same file. examples/ has a C and a C++
 * program; docs/library.md describes the API. The loader is declared in sg_fabric.h. */
#ifndef SGFABRIC_SGFABRIC_H
#define SGFABRIC_SGFABRIC_H

#include "ib.h"
#include "roce.h"
#include "sg_fabric.h"

#endif
