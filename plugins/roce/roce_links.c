/* The roce getters on SimGrid's link handles (roce.h), in the style of SimGrid's own link plugins
 * (sg_link_get_usage): the port that transmits on the link direction (sgf_link_port) of the
 * fabric SimGrid is running (sgf_fabric). Kept apart from the model, which needs no SimGrid. */
#include "roce.h"
#include "sg_fabric.h"

/* The port behind link on the running fabric, or -1 (no fabric, or not one of its links). */
static int running_port(const_sg_link_t link, struct fabric **fab)
{
  *fab = sgf_fabric();
  return *fab != NULL && link != NULL ? sgf_link_port(link) : -1;
}

double sg_roce_link_get_paused_time(const_sg_link_t link)
{
  struct fabric *fab;
  int port = running_port(link, &fab);
  return port < 0 ? -1 : sg_roce_get_port_paused_time(fab, port);
}

int64_t sg_roce_link_get_pauses_received(const_sg_link_t link)
{
  struct fabric *fab;
  int port = running_port(link, &fab);
  return port < 0 ? -1 : (int64_t)sg_roce_get_port_pauses_received(fab, port);
}
