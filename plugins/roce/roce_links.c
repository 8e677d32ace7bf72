/* The roce getters on SimGrid's link handles (roce.h), in the style of SimGrid's own link plugins
 * (sg_link_get_usage): the port that transmits on the link direction (sgf_link_port) of the
 * fabric SimGrid is running (sgf_fabric), at packet fidelity: these mechanisms are not
 * simulated at flow fidelity, where the getters answer -1. Kept apart from the model, which
 * needs no SimGrid. */
#include "roce.h"
#include "sg_fabric.h"

double sg_roce_link_get_paused_time(const_sg_link_t link)
{
  int port = sgf_link_packet_port(link); /* -1: no fabric at packet fidelity, or not its link */
  return port < 0 ? -1 : sg_roce_get_port_paused_time(sgf_fabric(), port);
}

int64_t sg_roce_link_get_pauses_received(const_sg_link_t link)
{
  int port = sgf_link_packet_port(link); /* -1: no fabric at packet fidelity, or not its link */
  return port < 0 ? -1 : (int64_t)sg_roce_get_port_pauses_received(sgf_fabric(), port);
}
