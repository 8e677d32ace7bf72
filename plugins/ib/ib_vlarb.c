/* InfiniBand VL arbitration (IBTA Vol. 1, 7.6.9) and SL-to-VL mapping (7.6.6). */
#include "ib_vlarb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ib_vlarb_parse(struct ib_vlarb_table *tab, int t, const char *text, int num_vls, char *err, size_t errlen)
{
  tab->count[t] = 0;
  if (strcmp(text, "none") == 0 || text[0] == '\0')
    return 0;
  const char *p = text;
  while (*p) {
    char *end;
    long vl = strtol(p, &end, 10);
    if (end == p || *end != ':') {
      snprintf(err, errlen, "'%s' is not a list of VL:weight entries", text);
      return -1;
    }
    p = end + 1;
    long weight = strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0')) {
      snprintf(err, errlen, "'%s' is not a list of VL:weight entries", text);
      return -1;
    }
    if (vl < 0 || vl >= num_vls) {
      snprintf(err, errlen, "names VL %ld but only VLs 0 to %d exist (ib/num-vls is %d)", vl, num_vls - 1, num_vls);
      return -1;
    }
    if (weight < 0 || weight > 255) {
      snprintf(err, errlen, "weight %ld is outside 0..255 (64-byte units)", weight);
      return -1;
    }
    if (tab->count[t] == IB_VLARB_ENTRIES) {
      snprintf(err, errlen, "more than %d entries", IB_VLARB_ENTRIES);
      return -1;
    }
    tab->entry[t][tab->count[t]++] = (struct ib_vlarb_entry){ (uint8_t)vl, (uint8_t)weight };
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}

void ib_vlarb_equal(struct ib_vlarb_table *tab, int t, int num_vls, uint8_t weight)
{
  tab->count[t] = num_vls;
  for (int v = 0; v < num_vls; v++)
    tab->entry[t][v] = (struct ib_vlarb_entry){ (uint8_t)v, weight };
}

int ib_vlarb_serves(const struct ib_vlarb_table *tab, int vl)
{
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < tab->count[t]; i++)
      if (tab->entry[t][i].vl == vl && tab->entry[t][i].weight > 0)
        return 1;
  return 0;
}

/* The entry of table t to serve, moving past exhausted and ineligible entries; -1 if none. */
static int table_pick(const struct ib_vlarb_table *tab, struct ib_vlarb_state *s, int t, uint32_t eligible)
{
  int n = tab->count[t];
  for (int step = 0; step <= n; step++) {
    const struct ib_vlarb_entry *e = &tab->entry[t][s->index[t]];
    if (e->weight > 0 && (eligible >> e->vl) & 1) {
      if (s->left[t] <= 0)
        s->left[t] = 64 * (int32_t)e->weight;
      return e->vl;
    }
    s->index[t] = (uint8_t)((s->index[t] + 1) % n);
    s->left[t] = 0;
  }
  return -1;
}

static int table_has(const struct ib_vlarb_table *tab, int t, uint32_t eligible)
{
  for (int i = 0; i < tab->count[t]; i++)
    if (tab->entry[t][i].weight > 0 && (eligible >> tab->entry[t][i].vl) & 1)
      return 1;
  return 0;
}

int ib_vlarb_pick(const struct ib_vlarb_table *tab, struct ib_vlarb_state *s, uint32_t eligible)
{
  if (eligible == 0)
    return -1;
  int high = table_has(tab, 0, eligible);
  int low = table_has(tab, 1, eligible);
  /* LimitOfHighPriority (IBTA Vol.1 7.6.9): high-priority packets may go while fewer than
   * limit x 4 KB were sent since the low table last had its opportunity (the last packet may
   * overrun); 0 is not "never": a single high-priority packet goes, then the low table gets
   * its opportunity. 255: no limit. */
  int over_limit =
      tab->high_limit < 255 && (tab->high_limit == 0 ? s->high_bytes > 0 : s->high_bytes >= 4096 * tab->high_limit);
  int t = high && !(low && over_limit) ? 0 : low ? 1 : -1;
  if (t < 0)
    return -1;
  s->last_table = (int8_t)t;
  return table_pick(tab, s, t, eligible);
}

void ib_vlarb_charge(const struct ib_vlarb_table *tab, struct ib_vlarb_state *s, uint32_t bytes)
{
  int t = s->last_table;
  if (t == 0)
    s->high_bytes += (int32_t)bytes;
  else
    s->high_bytes = 0;
  s->left[t] -= (int32_t)bytes;
  if (s->left[t] <= 0 && tab->count[t] > 0) {
    s->index[t] = (uint8_t)((s->index[t] + 1) % tab->count[t]);
    s->left[t] = 0;
  }
}

int ib_sl2vl_parse(uint8_t map[IB_NUM_SLS], const char *text, int num_vls, char *err, size_t errlen)
{
  for (int s = 0; s < IB_NUM_SLS; s++)
    map[s] = (uint8_t)(s % num_vls);
  if (strcmp(text, "mod") == 0)
    return 0;
  const char *p = text;
  for (int s = 0; *p; s++) {
    char *end;
    long vl = strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || s >= IB_NUM_SLS) {
      snprintf(err, errlen, "'%s' is not 'mod' or up to 16 comma-separated VLs", text);
      return -1;
    }
    if (vl < 0 || vl >= num_vls) {
      snprintf(err, errlen, "maps SL %d to VL %ld but only VLs 0 to %d exist (ib/num-vls is %d)", s, vl, num_vls - 1,
               num_vls);
      return -1;
    }
    map[s] = (uint8_t)vl;
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}
