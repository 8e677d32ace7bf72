/* Pipeline schedules, in the order Megatron-LM's schedules.py runs them. */
#include "wl_gen.h"

int wl_schedule_1f1b(int p, int s, int m, struct wl_sched_step *out)
{
  int warmup = p - s - 1 < m ? p - s - 1 : m, n = 0, f = 0, b = 0;
  for (int i = 0; i < warmup; i++)
    out[n++] = (struct wl_sched_step){ 0, f++, 0 };
  for (int i = 0; i < m - warmup; i++) {
    out[n++] = (struct wl_sched_step){ 0, f++, 0 };
    out[n++] = (struct wl_sched_step){ 1, b++, 0 };
  }
  while (b < m)
    out[n++] = (struct wl_sched_step){ 1, b++, 0 };
  return n;
}

/* Micro-step k of the interleaved schedule: groups of p micro-batches cycle through the v
 * chunks (get_model_chunk_id and the microbatch id arithmetic of Megatron-LM). */
static struct wl_sched_step interleaved_step(int p, int v, int k, int backward)
{
  int chunk = (k / p) % v;
  struct wl_sched_step st = { backward, (k / (p * v)) * p + k % p, backward ? v - 1 - chunk : chunk };
  return st;
}

int wl_schedule_interleaved(int p, int s, int m, int v, struct wl_sched_step *out)
{
  int total = m * v, n = 0;
  int warmup = m == p ? total : (p - s - 1) * 2 + (v - 1) * p;
  if (warmup > total)
    warmup = total;
  for (int k = 0; k < warmup; k++)
    out[n++] = interleaved_step(p, v, k, 0);
  for (int k = 0; k < total - warmup; k++) {
    out[n++] = interleaved_step(p, v, k + warmup, 0);
    out[n++] = interleaved_step(p, v, k, 1);
  }
  for (int k = total - warmup; k < total; k++)
    out[n++] = interleaved_step(p, v, k, 1);
  return n;
}
