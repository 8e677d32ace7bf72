/* The ib getters on SimGrid's link handles (ib.h), in the style of SimGrid's own link plugins
 * (sg_link_get_usage): the port that transmits on the link direction (sgf_link_port) of the
 * fabric SimGrid is running (sgf_fabric). Kept apart from the model, which needs no SimGrid. */
#include "ib.h"
#include "sg_fabric.h"

/* The port behind link on the running fabric, or -1 (no fabric, or not one of its links). */
static int running_port(const_sg_link_t link, struct fabric **fab)
{
  *fab = sgf_fabric();
  return *fab != NULL && link != NULL ? sgf_link_port(link) : -1;
}

double sg_ib_link_get_stall_time(const_sg_link_t link)
{
  struct fabric *fab;
  int port = running_port(link, &fab);
  return port < 0 ? -1 : sg_ib_get_port_stall_time(fab, port);
}

double sg_ib_link_get_peak_buffer(const_sg_link_t link)
{
  struct fabric *fab;
  int port = running_port(link, &fab);
  return port < 0 ? -1 : sg_ib_get_port_peak_buffer(fab, port);
}

int32_t sg_ib_link_get_credits(const_sg_link_t link, int vl)
{
  struct fabric *fab;
  int port = running_port(link, &fab);
  return port < 0 ? -1 : sg_ib_get_port_credits(fab, port, vl);
}
