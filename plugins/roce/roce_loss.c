/* RoCEv2 at flow fidelity: go-back-N under random loss (roce_loss.h). */
#include "roce_loss.h"

#include <math.h>

#include "rng.h"

double roce_loss_path_probability(double p_link, int fabric_hops)
{
  if (p_link <= 0 || fabric_hops <= 0)
    return 0;
  return 1 - pow(1 - p_link, fabric_hops);
}

/* Under go-back-N each loss of the expected packet costs it and the W packets sent before the
 * NACK returns, so delivering a packet takes 1 + P W / (1 - P) sends on average (Guo et al.,
 * SIGCOMM'16, section 3: go-back-N instead of go-back-0). */
double roce_loss_goodput_factor(double p_path, double window_pkts)
{
  if (p_path <= 0)
    return 1;
  return (1 - p_path) / (1 + p_path * window_pkts);
}

/* Each packet is once the one the receiver expects; its first send is lost with probability P
 * (a NACK recovers it), each later send lost again with P (the NACK went out already: the timer
 * recovers it), a geometric tail P^2 + P^3 + ... = P^2 / (1 - P). A message's last packet (and
 * its resends) lost with nothing behind it: P / (1 - P). The packet model gives 11.5 timeouts
 * (6 seeds) for one 32 MB transfer over 4 links at p = 1e-2, where this gives 12.4 (test
 * roce_fabric gbn_timeouts_at_flow_fidelity). */
double roce_loss_expected_timeouts(double p_path, double packets, double messages)
{
  if (p_path <= 0)
    return 0;
  if (p_path >= 1)
    return INFINITY;
  return (packets * p_path * p_path + messages * p_path) / (1 - p_path);
}

/* Inversion, a chunk of mean at most 16 at a time (e^-16 is far from underflow, and the sum of
 * Poisson draws is Poisson of the summed means); above a mean of 10,000 the normal approximation
 * (Box-Muller), whose relative error there is below 1 %. */
double roce_loss_draw_timeouts(double mean, uint64_t stream)
{
  if (!(mean > 0))
    return 0;
  if (!isfinite(mean))
    return INFINITY;
  uint64_t state = stream;
  if (mean > 1e4) {
    double u1 = fab_rng_unit(fab_rng_splitmix(&state)), u2 = fab_rng_unit(fab_rng_splitmix(&state));
    double z = sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2) /* 2 pi */;
    return fmax(0, round(mean + sqrt(mean) * z));
  }
  double count = 0;
  for (double left = mean; left > 0; left -= 16) {
    double chunk = left < 16 ? left : 16;
    double u = fab_rng_unit(fab_rng_splitmix(&state));
    double term = exp(-chunk), cumulative = term;
    unsigned k = 0;
    while (u >= cumulative && k < 1000) {
      k++;
      term *= chunk / k;
      cumulative += term;
    }
    count += k;
  }
  return count;
}
