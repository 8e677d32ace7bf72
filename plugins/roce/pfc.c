/* PFC thresholds and ingress accounting of pfc.h. */
#include "pfc.h"

double pfc_xoff(const struct pfc_params *p, double shared_free_B)
{
  if (p->kind == PFC_STATIC)
    return p->xoff_B;
  return shared_free_B > 0 ? p->alpha * shared_free_B : 0;
}

double pfc_xoff_of_k(const struct pfc_params *p, double shared_free_B, double k)
{
  if (p->kind == PFC_STATIC)
    return p->xoff_B;
  return shared_free_B > 0 ? p->alpha * shared_free_B / (1 + k * p->alpha) : 0;
}

double pfc_xon(const struct pfc_params *p, double xoff_B)
{
  if (p->kind == PFC_STATIC)
    return p->xon_B;
  return xoff_B - p->resume_offset_B;
}

enum pfc_admit pfc_admit(const struct pfc_params *p, struct pfc_pg *pg, double bytes, double xoff_B,
                         double headroom_size_B)
{
  if (!p->enabled || (pg->headroom_B == 0 && pg->shared_B + bytes <= xoff_B)) {
    pg->shared_B += bytes;
    return PFC_ADMIT_SHARED;
  }
  if (pg->headroom_B + bytes <= headroom_size_B) {
    pg->headroom_B += bytes;
    return PFC_ADMIT_HEADROOM;
  }
  return PFC_ADMIT_DROP;
}

double pfc_release(struct pfc_pg *pg, double bytes)
{
  double from_headroom = bytes < pg->headroom_B ? bytes : pg->headroom_B;
  pg->headroom_B -= from_headroom;
  pg->shared_B -= bytes - from_headroom;
  if (pg->shared_B < 1e-6)
    pg->shared_B = 0;
  return bytes - from_headroom;
}

int pfc_should_pause(const struct pfc_params *p, const struct pfc_pg *pg, double xoff_B)
{
  return p->enabled && !pg->is_xoff && (pg->headroom_B > 0 || pg->shared_B >= xoff_B);
}

int pfc_should_resume(const struct pfc_params *p, const struct pfc_pg *pg, double xoff_B)
{
  /* A PG with nothing left in the shared pool resumes even when XON is below zero (a dynamic
   * XOFF under the resume offset, the buffer nearly full): otherwise it would stay paused, its
   * PAUSE refreshed for ever, with no byte of its own left to release. HPCC ns-3 switch-mmu.cc
   * CheckShouldResume: hdrm == 0 && (shared_used == 0 || shared_used + offset <= threshold). */
  return pg->is_xoff && pg->headroom_B <= 0 && (pg->shared_B <= 0 || pg->shared_B <= pfc_xon(p, xoff_B));
}

double pfc_pause_time_s(const struct pfc_params *p, double rate_Bps) { return p->quanta * 512 / (8 * rate_Bps); }

double pfc_headroom_mlx5(double rate_Bps, double latency_s, double mtu_B)
{
  double cable_m = latency_s / 5e-9;
  return (301 + 2.16 * cable_m) * (rate_Bps * 8 / 1e9) + 2.72 * mtu_B;
}

double pfc_headroom_inflight(double rate_Bps, double latency_s, double response_s, double frame_B)
{
  return rate_Bps * (2 * latency_s + response_s) + 2 * frame_B;
}

double pfc_headroom_hpcc(double rate_Bps, double latency_s, double response_s, double frame_B)
{
  double hpcc = 3 * rate_Bps * latency_s;
  double inflight = pfc_headroom_inflight(rate_Bps, latency_s, response_s, frame_B);
  return hpcc > inflight ? hpcc : inflight;
}
