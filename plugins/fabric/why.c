/* The "why" accounting: which flows crossed which links, the collisions of a collective's
 * concurrent transfers, a utilisation heatmap (why.h). */
#include "why.h"

#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "json_out.h"
#include "rng.h"
#include "check.h"

/* Bits of a collective edge's flags (struct why_edge) */
#define WHY_COUNTED 1u /* counted in edges: a transfer of it crossed a switch-to-switch link */
#define WHY_SHARED 2u  /* counted in edges_shared */
#define WHY_GROUP 4u   /* counted in edges_group_shared */
/* fab_flow.why_flags: the flow object is registered on its path's ports */
#define WHY_ON 1u

/* A collective's edge: its transfers from one GPU to another, one pipelined transfer or a
 * ring's steps each a transfer of its own (coll/ring), counted once either way, so that the
 * counts of a run whose rings move step by step and of one whose rings are pipelined compare. */
struct why_edge {
  uint32_t call; /* 0: an empty slot */
  int32_t src, dst;
  uint8_t flags;
};

struct why_port {
  struct fab_flow **act; /* flows crossing it now */
  int n, cap;
  int peak;   /* most flows at once */
  long flows; /* flows that crossed it */
  double tag_bytes[FAB_MAX_TAGS];
};

struct fab_why {
  struct why_port *ports; /* per topology port */
  int *fport;             /* fabric (not NVLink) ports, in index order */
  int *fidx;              /* per port: its index in fport, -1 for NVLink */
  int nf;
  long edges, edges_shared;
  long edges_group_shared; /* shared a switch link with another collective of their group */
  struct why_edge *edge;   /* open addressing by (call, src, dst), a power of two of slots */
  size_t n_edges, cap_edges;
  int paths_known; /* flow paths are the packets' paths (not per-packet adaptive routing) */
  /* heatmap */
  double bin_s;
  double *samples; /* [nf][2 * WHY_BINS] */
  double *last_tx; /* packet fidelity: tx_bytes at the previous sample */
  int nbins;
  int sampled;   /* a sample was taken */
  double last_s; /* its date */
};

static int is_switch_link(const struct topo *t, int p)
{
  const struct topo_port *tp = &t->ports[p];
  return t->nodes[tp->node].kind == TOPO_SWITCH && t->nodes[tp->peer_node].kind == TOPO_SWITCH;
}

int fab_why_enable(struct fabric *fab)
{
  const struct topo *t = fab->topo;
  struct fab_why *w = calloc(1, sizeof *w);
  if (w == NULL)
    return -1;
  w->ports = calloc((size_t)t->n_ports, sizeof *w->ports);
  w->fport = malloc(sizeof(int) * (size_t)(t->n_ports + 1));
  w->fidx = malloc(sizeof(int) * (size_t)(t->n_ports + 1));
  if (w->ports == NULL || w->fport == NULL || w->fidx == NULL) {
    fab_why_free(w);
    return -1;
  }
  for (int p = 0; p < t->n_ports; p++) {
    w->fidx[p] = t->ports[p].is_nvlink ? -1 : w->nf;
    if (!t->ports[p].is_nvlink)
      w->fport[w->nf++] = p;
  }
  w->samples = calloc((size_t)w->nf * 2 * WHY_BINS + 1, sizeof(double));
  w->last_tx = calloc((size_t)w->nf + 1, sizeof(double));
  if (w->samples == NULL || w->last_tx == NULL) {
    fab_why_free(w);
    return -1;
  }
  w->bin_s = WHY_FIRST_BIN_S;
  /* At packet fidelity a model that routes packet by packet (InfiniBand's adaptive routing keeps
   * packets in its switches and picks their ports) sends them off the flow's path. */
  w->paths_known = fab->fidelity == FAB_FIDELITY_FLOW || fab->model->packet.next_packet == NULL;
  fab->why = w;
  return 0;
}

void fab_why_free(struct fab_why *w)
{
  if (w == NULL)
    return;
  if (w->ports) {
    /* the port count is not kept: fport's last entry bounds the ports that hold lists */
    for (int i = 0; i < w->nf; i++)
      free(w->ports[w->fport[i]].act);
  }
  free(w->ports);
  free(w->fport);
  free(w->fidx);
  free(w->samples);
  free(w->last_tx);
  free(w->edge);
  free(w);
}

static int port_add(struct why_port *wp, struct fab_flow *flow)
{
  if (wp->n == wp->cap) {
    int cap = wp->cap ? 2 * wp->cap : 8;
    struct fab_flow **a = realloc(wp->act, sizeof *a * (size_t)cap);
    if (a == NULL)
      return -1;
    wp->act = a;
    wp->cap = cap;
  }
  wp->act[wp->n++] = flow;
  if (wp->n > wp->peak)
    wp->peak = wp->n;
  return 0;
}

static struct fab_flow *whole(struct fab_flow *f) { return f->parent ? f->parent : f; }

static size_t edge_slot(const struct why_edge *table, size_t cap, uint32_t call, int src, int dst)
{
  uint64_t h = fab_rng_mix64(fab_rng_mix64(call) ^ ((uint64_t)(uint32_t)src << 32 | (uint32_t)dst));
  size_t i = (size_t)h & (cap - 1);
  while (table[i].call != 0 && !(table[i].call == call && table[i].src == src && table[i].dst == dst))
    i = (i + 1) & (cap - 1);
  return i;
}

/* The edge of collective call from src to dst, added on first sight. */
static struct why_edge *edge_of(struct fab_why *w, uint32_t call, int src, int dst)
{
  if (2 * (w->n_edges + 1) > w->cap_edges) {
    size_t cap = w->cap_edges ? 2 * w->cap_edges : 1024;
    struct why_edge *table = calloc(cap, sizeof *table);
    SGF_CHECK(table != NULL, "out of memory for the link accounting");
    for (size_t i = 0; i < w->cap_edges; i++)
      if (w->edge[i].call != 0)
        table[edge_slot(table, cap, w->edge[i].call, w->edge[i].src, w->edge[i].dst)] = w->edge[i];
    free(w->edge);
    w->edge = table;
    w->cap_edges = cap;
  }
  struct why_edge *e = &w->edge[edge_slot(w->edge, w->cap_edges, call, src, dst)];
  if (e->call == 0) {
    *e = (struct why_edge){ call, src, dst, 0 };
    w->n_edges++;
  }
  return e;
}

/* The edge of collective call from src to dst if it was added, else NULL (never adds one). */
static struct why_edge *edge_find(const struct fab_why *w, uint32_t call, int src, int dst)
{
  if (w->cap_edges == 0)
    return NULL;
  struct why_edge *e = &w->edge[edge_slot(w->edge, w->cap_edges, call, src, dst)];
  return e->call != 0 ? e : NULL;
}

/* Counts an edge once in *count, the first time it gets the flag bit. */
static void mark(struct why_edge *e, unsigned bit, long *count)
{
  if (!(e->flags & bit)) {
    e->flags |= (uint8_t)bit;
    (*count)++;
  }
}

void fab_why_flow_start(struct fabric *fab, struct fab_flow *flow)
{
  struct fab_why *w = fab->why;
  const struct topo *t = fab->topo;
  struct fab_flow *me = whole(flow);
  uint32_t call = flow->call ? flow->call : flow->parent ? flow->parent->call : 0;
  struct why_edge *mine = NULL; /* its edge, added at its first switch-to-switch link */
  for (int h = 0; h < flow->hops; h++) {
    int p = flow->path[h];
    if (w->fidx[p] < 0)
      continue;
    struct why_port *wp = &w->ports[p];
    wp->flows++;
    wp->tag_bytes[flow->tag] += flow->bytes;
    if (call != 0) {
      if (is_switch_link(t, p)) {
        if (mine == NULL) {
          mine = edge_of(w, call, me->src_gpu, me->dst_gpu);
          mark(mine, WHY_COUNTED, &w->edges);
        }
        /* Another transfer on this link at the same time, between another pair of GPUs (not a part
         * of the same transfer, nor a later step between the same two GPUs): of the same
         * collective instance (a collision inside one collective), or of another instance of the
         * same group (two data-parallel rings, say, whose edges ECMP put on one link: each then
         * goes at the shared link's pace). A transfer spread evenly over every minimal path shares
         * each of them by design: not a collision. */
        for (int i = 0; !flow->spread && i < wp->n; i++) {
          struct fab_flow *o = whole(wp->act[i]);
          uint32_t ocall = wp->act[i]->call ? wp->act[i]->call : o->call;
          if (ocall == 0 || o == me || wp->act[i]->spread || (o->src_gpu == me->src_gpu && o->dst_gpu == me->dst_gpu))
            continue;
          if (ocall != call && wp->act[i]->tag != flow->tag)
            continue;
          /* the other's edge was added when it came onto this link (found, not added: the
           * table does not move under mine) */
          struct why_edge *theirs = edge_find(w, ocall, o->src_gpu, o->dst_gpu);
          unsigned bit = ocall == call ? WHY_SHARED : WHY_GROUP;
          long *count = ocall == call ? &w->edges_shared : &w->edges_group_shared;
          mark(mine, bit, count);
          if (theirs != NULL)
            mark(theirs, bit, count);
        }
      }
    }
    SGF_CHECK(port_add(wp, flow) == 0, "out of memory for the link accounting");
  }
  flow->why_flags |= WHY_ON;
}

void fab_why_flow_end(struct fabric *fab, struct fab_flow *flow)
{
  struct fab_why *w = fab->why;
  if (!(flow->why_flags & WHY_ON))
    return;
  flow->why_flags &= (uint8_t)~WHY_ON;
  for (int h = 0; h < flow->hops; h++) {
    int p = flow->path[h];
    if (w->fidx[p] < 0)
      continue;
    struct why_port *wp = &w->ports[p];
    for (int i = 0; i < wp->n; i++)
      if (wp->act[i] == flow) {
        /* order does not matter for the counts; keep it anyway (memmove) for determinism of scans */
        memmove(&wp->act[i], &wp->act[i + 1], sizeof *wp->act * (size_t)(wp->n - i - 1));
        wp->n--;
        break;
      }
  }
}

double fab_why_bin_s(const struct fabric *fab) { return fab->why ? fab->why->bin_s : 0; }

static void append(struct fab_why *w, const double *value)
{
  if (w->nbins == 2 * WHY_BINS) { /* halve the resolution */
    for (int i = 0; i < w->nf; i++) {
      double *s = &w->samples[(size_t)i * 2 * WHY_BINS];
      for (int b = 0; b < WHY_BINS; b++)
        s[b] = (s[2 * b] + s[2 * b + 1]) / 2;
    }
    w->nbins = WHY_BINS;
    w->bin_s *= 2;
  }
  for (int i = 0; i < w->nf; i++)
    w->samples[(size_t)i * 2 * WHY_BINS + (size_t)w->nbins] = value[i];
  w->nbins++;
}

/* Utilisation of every fabric port: at flow fidelity the rates of the flows crossing it now over
 * its line rate; at packet fidelity the bytes sent since the previous sample over what it could
 * have sent in dt. */
static void measure(struct fabric *fab, double dt, double *value)
{
  struct fab_why *w = fab->why;
  const struct topo *t = fab->topo;
  memset(value, 0, sizeof(double) * (size_t)w->nf);
  if (fab->fidelity == FAB_FIDELITY_FLOW) {
    size_t n;
    struct fab_flow **flows = fabric_active_flows(fab, &n);
    for (size_t i = 0; i < n; i++)
      for (int h = 0; h < flows[i]->hops; h++) {
        int k = w->fidx[flows[i]->path[h]];
        if (k >= 0)
          value[k] += fab_flow_wire_rate(flows[i]); /* with what it resends */
      }
    for (int i = 0; i < w->nf; i++)
      value[i] /= t->ports[w->fport[i]].rate_Bps;
  } else {
    for (int i = 0; i < w->nf; i++) {
      double tx = fab->ports[w->fport[i]].tx_bytes;
      value[i] = dt > 0 ? (tx - w->last_tx[i]) / (t->ports[w->fport[i]].rate_Bps * dt) : 0;
      w->last_tx[i] = tx;
    }
  }
}

void fab_why_sample(struct fabric *fab, double now)
{
  struct fab_why *w = fab->why;
  if (w == NULL || (w->sampled && now <= w->last_s))
    return;
  double *value = malloc(sizeof(double) * (size_t)(w->nf + 1));
  if (value == NULL)
    return;
  double dt = w->sampled ? now - w->last_s : 0;
  measure(fab, dt, value);
  /* packet fidelity: the first sample only starts the count; each later one closes a bin */
  if (fab->fidelity == FAB_FIDELITY_FLOW || w->sampled)
    append(w, value);
  w->sampled = 1;
  w->last_s = now;
  free(value);
}

struct rank_item {
  int port;
  double key;
};

static int by_key_desc(const void *a, const void *b)
{
  const struct rank_item *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? 1 : -1;
  return x->port - y->port;
}

static void write_name(FILE *out, const struct topo *t, int p)
{
  const struct topo_port *tp = &t->ports[p];
  fprintf(out, "\"link\": ");
  json_write_string(out, t->links[tp->link].name);
  fprintf(out, ", \"from\": ");
  json_write_string(out, t->nodes[tp->node].name);
  fprintf(out, ", \"to\": ");
  json_write_string(out, t->nodes[tp->peer_node].name);
}

int fab_why_write_json(struct fabric *fab, FILE *out, double end_s, const char *const *tag_names, int n_tags)
{
  struct fab_why *w = fab->why;
  const struct topo *t = fab->topo;
  if (w == NULL)
    return -1;
  /* packet fidelity: the bytes of the last, partial interval */
  if (fab->fidelity == FAB_FIDELITY_PACKET && w->sampled && end_s > w->last_s) {
    double *value = malloc(sizeof(double) * (size_t)(w->nf + 1));
    if (value == NULL)
      return -1;
    measure(fab, end_s - w->last_s, value);
    append(w, value);
    free(value);
  }
  double active = fabric_active_time(fab);
  struct rank_item *items = malloc(sizeof *items * (size_t)(w->nf + 1));
  if (items == NULL)
    return -1;
  int known = w->paths_known;
  /* flows per switch-to-switch link: the most at once on each link that carried any */
  int sw_links = 0, peak_max = 0;
  double peak_sum = 0;
  for (int i = 0; i < w->nf; i++) {
    int p = w->fport[i];
    if (!is_switch_link(t, p) || w->ports[p].flows == 0)
      continue;
    sw_links++;
    peak_sum += w->ports[p].peak;
    if (w->ports[p].peak > peak_max)
      peak_max = w->ports[p].peak;
  }
  fprintf(out, "{\n  \"fidelity\": \"%s\",\n", fab->fidelity == FAB_FIDELITY_FLOW ? "flow" : "packet");
  fprintf(out, "  \"paths_known\": %s,\n", known ? "true" : "false");
  fprintf(out, "  \"end_s\": %s,\n", JSON_NUMBER(end_s));
  int used = 0;
  for (int i = 0; i < w->nf; i++)
    used += fab->ports[w->fport[i]].tx_bytes > 0;
  fprintf(out, "  \"links\": %d,\n  \"links_used\": %d,\n", w->nf, used);
  if (known) {
    fprintf(out, "  \"switch_links_used\": %d,\n", sw_links);
    if (sw_links)
      fprintf(out, "  \"flows_per_switch_link_max\": %d,\n", peak_max);
    else /* no switch link carried a flow: no figure, not a zero */
      fprintf(out, "  \"flows_per_switch_link_max\": null,\n");
    fprintf(out, "  \"flows_per_switch_link_mean\": %s,\n", sw_links ? JSON_NUMBER(peak_sum / sw_links) : "null");
    fprintf(out,
            "  \"collective_edges\": %ld,\n  \"collective_edges_sharing_link\": %ld,\n"
            "  \"collective_edges_sharing_link_in_group\": %ld,\n",
            w->edges, w->edges_shared, w->edges_group_shared);
  } else {
    fprintf(out, "  \"switch_links_used\": null,\n  \"flows_per_switch_link_max\": null,\n"
                 "  \"flows_per_switch_link_mean\": null,\n  \"collective_edges\": null,\n"
                 "  \"collective_edges_sharing_link\": null,\n  \"collective_edges_sharing_link_in_group\": null,\n");
  }
  /* the most utilised link directions */
  for (int i = 0; i < w->nf; i++) {
    int p = w->fport[i];
    items[i].port = p;
    items[i].key = active > 0 ? fab->ports[p].tx_bytes / (t->ports[p].rate_Bps * active) : 0;
  }
  qsort(items, (size_t)w->nf, sizeof *items, by_key_desc);
  int top = w->nf < WHY_TOP_LINKS ? w->nf : WHY_TOP_LINKS;
  double bmax = 0, bsum = 0;
  int bn = 0;
  fprintf(out, "  \"top_links\": [");
  for (int k = 0; k < top && items[k].key > 0; k++) {
    int p = items[k].port;
    const struct why_port *wp = &w->ports[p];
    fprintf(out, "%s\n    {", k ? "," : "");
    write_name(out, t, p);
    fprintf(out, ", \"switch_link\": %s, \"utilisation\": %s, \"bytes\": %s", is_switch_link(t, p) ? "true" : "false",
            JSON_NUMBER(items[k].key), JSON_NUMBER(fab->ports[p].tx_bytes));
    if (known) {
      fprintf(out, ", \"flows\": %ld, \"peak_flows\": %d, \"groups\": {", wp->flows, wp->peak);
      int first = 1;
      for (int g = 0; g < FAB_MAX_TAGS; g++) {
        if (wp->tag_bytes[g] <= 0)
          continue;
        fprintf(out, "%s", first ? "" : ", ");
        if (g < n_tags && tag_names[g])
          json_write_string(out, tag_names[g]);
        else
          fprintf(out, "\"tag%d\"", g);
        fprintf(out, ": %s", JSON_NUMBER(wp->tag_bytes[g]));
        first = 0;
      }
      fprintf(out, "}}");
      bn++;
      bsum += wp->peak;
      if (wp->peak > bmax)
        bmax = wp->peak;
    } else {
      fprintf(out, ", \"flows\": null, \"peak_flows\": null, \"groups\": null}");
    }
  }
  fprintf(out, "\n  ],\n");
  if (known && bn > 0)
    fprintf(out, "  \"flows_per_busiest_link_max\": %s,\n  \"flows_per_busiest_link_mean\": %s,\n", JSON_NUMBER(bmax),
            JSON_NUMBER(bsum / bn));
  else
    fprintf(out, "  \"flows_per_busiest_link_max\": null,\n  \"flows_per_busiest_link_mean\": null,\n");
  /* the heatmap: the links that carried the most bytes, in that order */
  for (int i = 0; i < w->nf; i++) {
    items[i].port = w->fport[i];
    items[i].key = fab->ports[w->fport[i]].tx_bytes;
  }
  qsort(items, (size_t)w->nf, sizeof *items, by_key_desc);
  int rows = 0;
  while (rows < w->nf && rows < WHY_HEATMAP_LINKS && items[rows].key > 0)
    rows++;
  fprintf(out, "  \"heatmap\": {\n    \"bin_s\": %s,\n    \"bins\": %d,\n    \"value\": \"%s\",\n",
          JSON_NUMBER(w->bin_s), w->nbins,
          fab->fidelity == FAB_FIDELITY_FLOW ? "mean of the utilisation at each bin's sampling dates"
                                             : "bytes sent in the bin over the line rate x the bin");
  fprintf(out, "    \"links\": [");
  for (int r = 0; r < rows; r++) {
    const struct topo_port *tp = &t->ports[items[r].port];
    char name[128];
    snprintf(name, sizeof name, "%s>%s", t->nodes[tp->node].name, t->nodes[tp->peer_node].name);
    fprintf(out, "%s", r ? ", " : "");
    json_write_string(out, name);
  }
  fprintf(out, "],\n    \"utilisation\": [");
  for (int r = 0; r < rows; r++) {
    const double *s = &w->samples[(size_t)w->fidx[items[r].port] * 2 * WHY_BINS];
    fprintf(out, "%s\n      [", r ? "," : "");
    for (int b = 0; b < w->nbins; b++)
      fprintf(out, "%s%s", b ? ", " : "", JSON_NUMBER(s[b]));
    fprintf(out, "]");
  }
  fprintf(out, "\n    ]\n  }\n}\n");
  free(items);
  return ferror(out) ? -1 : 0;
}
