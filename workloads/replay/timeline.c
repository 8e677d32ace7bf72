/* Iteration timeline: spans in memory, one trace-event JSON file at the end (timeline.h). */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "json_out.h"

struct process_name {
  int pid, sort_index, name;
};

struct timeline {
  struct timeline_span *spans;
  long n, cap, max, dropped;
  char **strings;
  int n_strings, cap_strings;
  struct process_name *procs;
  int n_procs, cap_procs;
  int thread_names[TIMELINE_MAX_NAMED_TIDS]; /* string id + 1, 0 when unnamed */
  int *lane_pids;
  int n_lane_pids;
};

struct timeline *timeline_create(long max_events)
{
  struct timeline *tl = calloc(1, sizeof *tl);
  if (tl)
    tl->max = max_events > 0 ? max_events : TIMELINE_DEFAULT_MAX_EVENTS;
  return tl;
}

void timeline_free(struct timeline *tl)
{
  if (tl == NULL)
    return;
  for (int i = 0; i < tl->n_strings; i++)
    free(tl->strings[i]);
  free(tl->strings);
  free(tl->spans);
  free(tl->procs);
  free(tl->lane_pids);
  free(tl);
}

int timeline_intern(struct timeline *tl, const char *s)
{
  for (int i = 0; i < tl->n_strings; i++)
    if (strcmp(tl->strings[i], s) == 0)
      return i;
  return timeline_string(tl, s);
}

int timeline_string(struct timeline *tl, const char *s)
{
  if (tl->n_strings == tl->cap_strings) {
    int cap = tl->cap_strings ? 2 * tl->cap_strings : 64;
    char **p = realloc(tl->strings, sizeof *p * (size_t)cap);
    if (p == NULL)
      return -1;
    tl->strings = p;
    tl->cap_strings = cap;
  }
  char *copy = strdup(s);
  if (copy == NULL)
    return -1;
  tl->strings[tl->n_strings] = copy;
  return tl->n_strings++;
}

int timeline_name_process(struct timeline *tl, int pid, const char *name, int sort_index)
{
  int id = timeline_intern(tl, name);
  if (id < 0)
    return -1;
  if (tl->n_procs == tl->cap_procs) {
    int cap = tl->cap_procs ? 2 * tl->cap_procs : 64;
    struct process_name *p = realloc(tl->procs, sizeof *p * (size_t)cap);
    if (p == NULL)
      return -1;
    tl->procs = p;
    tl->cap_procs = cap;
  }
  tl->procs[tl->n_procs++] = (struct process_name){ pid, sort_index, id };
  return 0;
}

int timeline_name_thread(struct timeline *tl, int tid, const char *name)
{
  if (tid < 0 || tid >= TIMELINE_MAX_NAMED_TIDS)
    return -1;
  int id = timeline_intern(tl, name);
  if (id < 0)
    return -1;
  tl->thread_names[tid] = id + 1;
  return 0;
}

void timeline_set_lane_process(struct timeline *tl, int pid)
{
  int *p = realloc(tl->lane_pids, sizeof *p * (size_t)(tl->n_lane_pids + 1));
  if (p == NULL)
    return;
  tl->lane_pids = p;
  tl->lane_pids[tl->n_lane_pids++] = pid;
}

struct timeline_span timeline_span_init(int pid, int tid, int name, int cat, double start_s, double end_s)
{
  return (struct timeline_span){ .kind = TIMELINE_SPAN,
                                 .start_s = start_s,
                                 .end_s = end_s > start_s ? end_s : start_s,
                                 .pid = pid,
                                 .tid = tid,
                                 .name = name,
                                 .cat = cat,
                                 .micro = TIMELINE_NO_INT,
                                 .layer = TIMELINE_NO_INT,
                                 .ops = TIMELINE_NO_INT,
                                 .members = TIMELINE_NO_INT,
                                 .algo = -1,
                                 .bytes = TIMELINE_NO_NUMBER,
                                 .busbw_GBps = TIMELINE_NO_NUMBER };
}

void timeline_add(struct timeline *tl, const struct timeline_span *span)
{
  if (tl->n == tl->max) {
    tl->dropped++;
    return;
  }
  if (tl->n == tl->cap) {
    long cap = tl->cap ? 2 * tl->cap : 4096;
    if (cap > tl->max)
      cap = tl->max;
    struct timeline_span *p = realloc(tl->spans, sizeof *p * (size_t)cap);
    if (p == NULL) { /* as past the limit: the file says how many are missing */
      tl->max = tl->n;
      tl->dropped++;
      return;
    }
    tl->spans = p;
    tl->cap = cap;
  }
  struct timeline_span *s = &tl->spans[tl->n++];
  *s = *span;
  if (s->end_s < s->start_s)
    s->end_s = s->start_s;
}

void timeline_add_counter(struct timeline *tl, int pid, int name, double t_s, double value)
{
  struct timeline_span s = timeline_span_init(pid, 0, name, name, t_s, t_s);
  s.kind = TIMELINE_COUNTER;
  s.busbw_GBps = value; /* the value (counters have no bandwidth) */
  timeline_add(tl, &s);
}

long timeline_events(const struct timeline *tl) { return tl->n; }
long timeline_dropped(const struct timeline *tl) { return tl->dropped; }
long timeline_max_events(const struct timeline *tl) { return tl->max; }

/* The strings of the timeline being sorted (qsort passes no context). */
static char **g_sort_strings;

/* Sorting: spans with their index of recording, so that equal keys keep that order. */
struct order {
  const struct timeline_span *s;
  long index;
  int lane; /* lane processes: the lane within the span's tid; -1 otherwise */
};

static int span_order(const void *a, const void *b)
{
  const struct order *x = a, *y = b;
  if (x->s->pid != y->s->pid)
    return x->s->pid < y->s->pid ? -1 : 1;
  if (x->s->tid != y->s->tid)
    return x->s->tid < y->s->tid ? -1 : 1;
  if (x->s->kind == TIMELINE_COUNTER && y->s->kind == TIMELINE_COUNTER && x->s->name != y->s->name)
    return strcmp(g_sort_strings[x->s->name], g_sort_strings[y->s->name]); /* one counter after the other */
  if (x->lane != y->lane)
    return x->lane < y->lane ? -1 : 1;
  if (x->s->start_s != y->s->start_s)
    return x->s->start_s < y->s->start_s ? -1 : 1;
  if (x->s->end_s != y->s->end_s) /* the enclosing span first */
    return x->s->end_s > y->s->end_s ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

static int is_lane_pid(const struct timeline *tl, int pid)
{
  for (int i = 0; i < tl->n_lane_pids; i++)
    if (tl->lane_pids[i] == pid)
      return 1;
  return 0;
}

static void write_meta(FILE *f, int *first, const char *what, int pid, int tid, const char *key, const char *text,
                       long number)
{
  fprintf(f, "%s\n{\"ph\": \"M\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": 0, \"args\": {\"%s\": ",
          *first ? "" : ",", what, pid, tid, key);
  if (text)
    json_write_string(f, text);
  else
    fprintf(f, "%ld", number);
  fprintf(f, "}}");
  *first = 0;
}

/* The tid written for lane k of tid t of a lane process: t * LANE_STRIDE + k + 1, so that the
 * lanes of different tids never meet (tids are small, lanes fewer than LANE_STRIDE). */
#define LANE_STRIDE 1000000

int timeline_write(struct timeline *tl, FILE *f, const char *other_json)
{
  struct order *o = malloc(sizeof *o * (size_t)(tl->n ? tl->n : 1));
  if (o == NULL)
    return -1;
  for (long i = 0; i < tl->n; i++)
    o[i] = (struct order){ &tl->spans[i], i, -1 };
  g_sort_strings = tl->strings;
  qsort(o, (size_t)tl->n, sizeof *o, span_order);
  /* Lanes: on a lane process, a span goes to the first lane of its tid free at its start
   * (greedy interval partitioning in order of start: as few lanes as spans overlap at most). */
  long max_lanes = 0;
  double *lane_end = NULL;
  for (long i = 0, j; i < tl->n; i = j) {
    for (j = i; j < tl->n && o[j].s->pid == o[i].s->pid && o[j].s->tid == o[i].s->tid; j++)
      ;
    if (!is_lane_pid(tl, o[i].s->pid))
      continue;
    long lanes = 0;
    for (long k = i; k < j; k++) {
      long lane = 0;
      while (lane < lanes && lane_end[lane] > o[k].s->start_s)
        lane++;
      if (lane == lanes) {
        if (lanes == max_lanes) {
          long cap = max_lanes ? 2 * max_lanes : 16;
          double *p = realloc(lane_end, sizeof *p * (size_t)cap);
          if (p == NULL) {
            free(lane_end);
            free(o);
            return -1;
          }
          lane_end = p;
          max_lanes = cap;
        }
        lanes++;
      }
      lane_end[lane] = o[k].s->end_s;
      o[k].lane = (int)(lane < LANE_STRIDE - 1 ? lane : LANE_STRIDE - 1);
    }
  }
  free(lane_end);
  qsort(o, (size_t)tl->n, sizeof *o, span_order);

  fprintf(f,
          "{\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"generator\": \"sgfabric\", \"time_unit\": \"us\", "
          "\"events\": %ld, \"max_events\": %ld, \"dropped_events\": %ld%s%s},\n\"traceEvents\": [",
          tl->n, tl->max, tl->dropped, other_json ? ", " : "", other_json ? other_json : "");
  int first = 1;
  for (int i = 0; i < tl->n_procs; i++) {
    write_meta(f, &first, "process_name", tl->procs[i].pid, 0, "name", tl->strings[tl->procs[i].name], 0);
    write_meta(f, &first, "process_sort_index", tl->procs[i].pid, 0, "sort_index", NULL, tl->procs[i].sort_index);
  }
  /* Thread names, once per (pid, tid, lane) that has spans. */
  for (long i = 0; i < tl->n; i++) {
    const struct timeline_span *s = o[i].s;
    if (s->kind == TIMELINE_COUNTER)
      continue; /* counters are tracks of their process, named by themselves */
    if (i > 0 && o[i - 1].s->pid == s->pid && o[i - 1].s->tid == s->tid && o[i - 1].lane == o[i].lane)
      continue;
    const char *base = s->tid >= 0 && s->tid < TIMELINE_MAX_NAMED_TIDS && tl->thread_names[s->tid]
                           ? tl->strings[tl->thread_names[s->tid] - 1]
                           : NULL;
    char name[160];
    if (o[i].lane >= 0)
      snprintf(name, sizeof name, "%s #%d", base ? base : "track", o[i].lane);
    else
      snprintf(name, sizeof name, "%s", base ? base : "track");
    int tid = o[i].lane >= 0 ? s->tid * LANE_STRIDE + o[i].lane + 1 : s->tid;
    write_meta(f, &first, "thread_name", s->pid, tid, "name", name, 0);
    write_meta(f, &first, "thread_sort_index", s->pid, tid, "sort_index", NULL, tid);
  }
  for (long i = 0; i < tl->n; i++) {
    const struct timeline_span *s = o[i].s;
    int tid = o[i].lane >= 0 ? s->tid * LANE_STRIDE + o[i].lane + 1 : s->tid;
    if (s->kind == TIMELINE_COUNTER) {
      fprintf(f, "%s\n{\"ph\": \"C\", \"name\": ", first ? "" : ",");
      first = 0;
      json_write_string(f, tl->strings[s->name]);
      fprintf(f, ", \"pid\": %d, \"tid\": 0, \"ts\": %s, \"args\": {\"utilisation\": %s}}", s->pid,
              JSON_NUMBER(s->start_s * 1e6), JSON_NUMBER(s->busbw_GBps));
      continue;
    }
    fprintf(f, "%s\n{\"ph\": \"X\", \"name\": ", first ? "" : ",");
    first = 0;
    json_write_string(f, tl->strings[s->name]);
    fprintf(f, ", \"cat\": ");
    json_write_string(f, tl->strings[s->cat]);
    /* Microseconds (the format's unit); the duration from the same seconds as the start, so that
     * a span and the next one on a track meet where they met in the simulation. */
    fprintf(f, ", \"pid\": %d, \"tid\": %d, \"ts\": %s, \"dur\": %s, \"args\": {", s->pid, tid,
            JSON_NUMBER(s->start_s * 1e6), JSON_NUMBER((s->end_s - s->start_s) * 1e6));
    const char *sep = "";
    if (s->micro != TIMELINE_NO_INT) {
      fprintf(f, "%s\"micro_batch\": %d", sep, s->micro);
      sep = ", ";
    }
    if (s->layer != TIMELINE_NO_INT) {
      fprintf(f, "%s\"layer\": %d", sep, s->layer);
      sep = ", ";
    }
    if (s->ops != TIMELINE_NO_INT) {
      fprintf(f, "%s\"ops\": %d", sep, s->ops);
      sep = ", ";
    }
    if (s->members != TIMELINE_NO_INT) {
      fprintf(f, "%s\"members\": %d", sep, s->members);
      sep = ", ";
    }
    if (s->bytes >= 0) {
      fprintf(f, "%s\"bytes\": %s", sep, JSON_NUMBER(s->bytes));
      sep = ", ";
    }
    if (s->busbw_GBps >= 0) {
      fprintf(f, "%s\"busbw_GBps\": %s", sep, JSON_NUMBER(s->busbw_GBps));
      sep = ", ";
    }
    if (s->algo >= 0) {
      fprintf(f, "%s\"algorithm\": ", sep);
      json_write_string(f, tl->strings[s->algo]);
      sep = ", ";
    }
    fprintf(f, "%s\"start_s\": %s, \"end_s\": %s}}", sep, JSON_NUMBER(s->start_s), JSON_NUMBER(s->end_s));
  }
  fprintf(f, "\n]}\n");
  free(o);
  return 0;
}
