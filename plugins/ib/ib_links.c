/* The ib getters on SimGrid's link handles (ib.h), in the style of SimGrid's own link plugins
 * (sg_link_get_usage): the port that transmits on the link direction (sgf_link_port) of the
 * fabric SimGrid is running (sgf_fabric), at packet fidelity: these mechanisms are not
 * simulated at flow fidelity, where the getters answer -1. Kept apart from the model, which
 * needs no SimGrid. */
#include "ib.h"
#include "sg_fabric.h"

double sg_ib_link_get_stall_time(const_sg_link_t link)
{
  int port = sgf_link_packet_port(link); /* -1: no fabric at packet fidelity, or not its link */
  return port < 0 ? -1 : sg_ib_get_port_stall_time(sgf_fabric(), port);
}

double sg_ib_link_get_peak_buffer(const_sg_link_t link)
{
  int port = sgf_link_packet_port(link); /* -1: no fabric at packet fidelity, or not its link */
  return port < 0 ? -1 : sg_ib_get_port_peak_buffer(sgf_fabric(), port);
}

int32_t sg_ib_link_get_credits(const_sg_link_t link, int vl)
{
  int port = sgf_link_packet_port(link); /* -1: no fabric at packet fidelity, or not its link */
  return port < 0 ? -1 : sg_ib_get_port_credits(sgf_fabric(), port, vl);
}
