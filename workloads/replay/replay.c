/* Workload replay: rank actors, comm streams, collective matching, point-to-point messages.
 *
 * SimGrid hooks used: sg_actor_create (one actor per rank on its GPU host), sg_actor_sleep_for
 * (compute), sg_sem_acquire/release (blocking on communication), simgrid_get_clock. Everything
 * else runs inside fabric callbacks, driven by the fabric model (plugins/fabric/sg_fabric.c).
 *
 * The events engine (replay/engine:events) runs the same programs without an actor per rank: a
 * rank is a program counter and what it blocks on, stepped inside the fabric's events (a compute
 * run is a fabric timer, a wake-up an event at the current date). One SimGrid actor per job only
 * keeps SimGrid's engine running until the job's last rank ends. Context switches and simcalls
 * were most of the cost of a 10,000-rank iteration; the model is the same, but ranks that act at
 * the same date act in another order, so results are not byte-identical to the actor engine's. */
#include "replay.h"
#include "why.h"

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "straggler.h"
#include "timeline.h"
#include "check.h"

/* A communication stream of one rank: ops of one group kind, started in issue order. */
struct stream {
  int *queue;
  int head, tail, cap;
  int busy;          /* op in flight, -1 when idle */
  double busy_since; /* when it started (timeline) */
};

struct rank_state {
  struct replay_job *job;
  int rank, gpu;
  int micro_started; /* micro-batches this rank has started (progress report) */
  const struct wl_program *prog;
  const double *op_time; /* per op of prog: its compute time (0 for other ops), shared by the ranks
                          * that run the same program */
  uint8_t *done;         /* per op */
  sg_sem_t sem;
  int waiting_op; /* op the actor is blocked on, -1 when running */
  struct stream streams[WL_GROUP_COUNT];
  int coll_seq[WL_GROUP_COUNT];
  int outstanding; /* communication ops issued and not done */
  double compute_s, exposed_s[WL_GROUP_COUNT], bubble_s, end_s;
  double compute_class_s[WL_CC_COUNT]; /* compute_s per kernel class */
  int finished;
  double msg_sent_s; /* when the message the actor last waited for was sent */
  /* Per group: the last collective whose members had all joined, and when they had. */
  int joined_op[WL_GROUP_COUNT];
  double joined_s[WL_GROUP_COUNT];
  double slowdown;    /* its GPU's compute time multiplier (straggler.h) */
  struct fab_rng rng; /* its compute noise */
  /* The events engine's place in the program (an actor keeps it on its stack). */
  int pc;               /* the op being run */
  int dep;              /* its dependencies found done so far */
  int block_op;         /* what it blocks on (enum rank_block says how) */
  int compute_last;     /* BLOCK_COMPUTE: the op after the run */
  uint8_t blocked;      /* enum rank_block */
  uint8_t block_group;  /* BLOCK_END: the group the end waits on */
  double block_start_s; /* when it blocked */
  double block_sent_s;  /* BLOCK_RECV: when the message was sent, -1 if not yet */
  double compute_dur_s; /* BLOCK_COMPUTE: the run's duration */
};

/* What a rank of the events engine waits for. */
enum rank_block { BLOCK_NONE, BLOCK_DEP, BLOCK_OP, BLOCK_RECV, BLOCK_COMPUTE, BLOCK_END };

/* A collective call matched across its members: (group kind, first member, sequence). */
struct coll_call {
  struct replay_job *job;
  uint64_t key;
  struct coll_call *next;
  struct coll_instance *instance;
  enum wl_group group;
  int n, joined;
  int *ranks; /* [n] members */
  int *ops;   /* [n] op id at each member */
  /* ranks and ops follow in the same allocation */
};

/* A point-to-point message (sender, receiver, tag): who arrived first. */
struct message {
  int src, dst;
  long tag;
  struct message *next; /* hash chain, or the free list */
  int sent;             /* the send was posted */
  int arrived;          /* its transfer completed */
  int recv_op;          /* the receiver's op waiting for it, -1 */
  double sent_s;        /* when the send was posted */
};

#define TABLE_BITS 16
#define TABLE_SIZE (1u << TABLE_BITS)

/* One job's replay. Several jobs share the fabric in one simulation (replay_start once per job);
 * the code below reads and writes "the current job", g_replay, which every entry point (a rank
 * actor resuming, a fabric callback) sets to its own job first. */
struct replay_job {
  struct replay_config cfg;
  struct rank_state *ranks;
  int n_ranks;
  double **op_time; /* per program of the trace: its ops' compute times */
  int n_op_time;
  struct coll_call *calls[TABLE_SIZE];
  struct message *messages[TABLE_SIZE];
  struct message *free_messages; /* recycled messages */
  struct send_ctx *free_sends;   /* recycled send contexts */
  int *gpus_scratch;             /* coll_issue's member GPUs */
  int gpus_scratch_n;
  struct replay_coll_stats coll[COLL_KIND_COUNT][WL_GROUP_COUNT];
  struct replay_coll_stats p2p[WL_GROUP_COUNT];
  double next_progress_s;
  int finished;
  long activity;         /* ops done and kernels run so far: the link sampler's sign of life */
  int computing;         /* ranks in a compute sleep */
  double *link_last;     /* [ports] the link sampler's last value (-1: none yet), */
  double *link_tx;       /* and the port's tx_bytes then (packet fidelity) */
  int *link_name;        /* [ports] counter names */
  double link_sampled_s; /* date of the last sample */
  sg_sem_t driver_sem;   /* events engine: released when the last rank ends */
  struct timeline *tl;   /* NULL: no timeline, no cost */
  struct {               /* the timeline's string ids */
    int compute[WL_PHASE_COUNT], wait[WL_GROUP_COUNT], comm[COLL_KIND_COUNT][WL_GROUP_COUNT], send[WL_GROUP_COUNT];
    int algo[COLL_ALGO_COUNT];
    int bubble, iteration, program, idle;
    int cat_compute, cat_wait, cat_bubble, cat_comm, cat_coll, cat_iteration, cat_idle;
  } id;
};

static struct replay_job *g_jobs[REPLAY_MAX_JOBS];
static int g_n_jobs;
static struct replay_job *g_job; /* the current job */
#define g_replay (*g_job)

/* Timeline tracks: the rank's pid is rank + 1 (pid 0 is special to Perfetto, the Linux idle
 * task); tid 1 the iteration, 2 the rank's main stream (its kernels and its waits), then one per
 * comm stream. The collectives are the process after the last rank, a tid per group from
 * TL_TID_COLL0 (thread names are shared by the processes: the two ranges must not meet). */
enum { TL_TID_ITERATION = 1, TL_TID_MAIN = 2, TL_TID_STREAM0 = 3, TL_TID_COLL0 = 32 };
#define TL_RANK_PID(rank) ((rank) + 1)
#define TL_COLL_PID (g_replay.n_ranks + 1)
#define TL_LINK_PID (g_replay.n_ranks + 2)

static void tl_span(int pid, int tid, int name, int cat, double start, double end)
{
  struct timeline_span s = timeline_span_init(pid, tid, name, cat, start, end);
  timeline_add(g_replay.tl, &s);
}

/* What the actor of r waited for from start to end (exposed communication), if it waited. */
static void tl_wait(const struct rank_state *r, enum wl_group g, double start, double end)
{
  if (g_replay.tl && end > start)
    tl_span(TL_RANK_PID(r->rank), TL_TID_MAIN, g_replay.id.wait[g], g_replay.id.cat_wait, start, end);
}

/* Zeroed memory that is never NULL (check.h stops with the size and the caller's line). */
#define xmalloc(bytes) sgf_xcalloc(1, (bytes))

static uint32_t hash64(uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (uint32_t)(x & (TABLE_SIZE - 1));
}

/* The fabric's clock follows SimGrid's when an actor acts. */
static void sync_clock(void)
{
  double now = simgrid_get_clock();
  if (g_replay.cfg.fab->now < now)
    g_replay.cfg.fab->now = now;
}

/* Now: SimGrid's clock in a rank actor; the fabric's in the events engine, whose ranks act inside
 * the fabric's events, at their exact dates. */
static double replay_clock(void) { return g_replay.cfg.event_engine ? g_replay.cfg.fab->now : simgrid_get_clock(); }

static void rank_resume(struct fabric *fab, void *ctx);

/* The op r blocks on is done: its actor runs again, or (events engine) it steps at this date, after
 * the events already due (as SimGrid runs the actors it woke after the fabric's step). */
static void rank_wake(struct rank_state *r)
{
  if (g_replay.cfg.event_engine)
    fabric_call_at(g_replay.cfg.fab, g_replay.cfg.fab->now, rank_resume, r);
  else
    sg_sem_release(r->sem);
}

static enum coll_kind coll_of(enum wl_coll c)
{
  switch (c) {
  case WL_COLL_REDUCE_SCATTER: return COLL_REDUCE_SCATTER;
  case WL_COLL_ALLGATHER: return COLL_ALLGATHER;
  case WL_COLL_ALLTOALL: return COLL_ALLTOALL;
  case WL_COLL_BROADCAST: return COLL_BROADCAST;
  case WL_COLL_ALLREDUCE:
  default: return COLL_ALLREDUCE;
  }
}

static void stream_start_next(struct rank_state *r, enum wl_group g);

/* An op finished: wake the actor if it waits for it, move its stream on. */
static void op_done(struct rank_state *r, int op)
{
  r->done[op] = 1;
  r->outstanding--;
  g_replay.activity++;
  const struct wl_op *o = &r->prog->ops[op];
  struct stream *s = &r->streams[o->group];
  if (o->kind != WL_OP_RECV && s->busy == op) {
    if (g_replay.tl) {
      int name = o->kind == WL_OP_COLL ? g_replay.id.comm[coll_of(o->coll)][o->group] : g_replay.id.send[o->group];
      struct timeline_span span = timeline_span_init(TL_RANK_PID(r->rank), TL_TID_STREAM0 + (int)o->group, name,
                                                     g_replay.id.cat_comm, s->busy_since, g_replay.cfg.fab->now);
      span.bytes = o->bytes;
      span.micro = o->micro;
      if (o->layer >= 0)
        span.layer = o->layer;
      timeline_add(g_replay.tl, &span);
    }
    s->busy = -1;
    stream_start_next(r, o->group);
  }
  if (r->waiting_op == op || (r->waiting_op == -2 && r->outstanding == 0)) {
    r->waiting_op = -1;
    rank_wake(r);
  }
}

static void coll_member_done(void *ctx, int member)
{
  struct coll_call *call = ctx;
  g_job = call->job;
  op_done(&g_replay.ranks[call->ranks[member]], call->ops[member]);
}

static void coll_finished(void *ctx, const struct coll_report *report)
{
  struct coll_call *call = ctx;
  g_job = call->job;
  struct replay_coll_stats *st = &g_replay.coll[report->kind][call->group];
  double time = report->end_s - report->start_s;
  st->count++;
  st->bytes += report->bytes;
  st->time_s += time;
  st->bus_bytes += report->bytes * coll_busbw_factor(report->kind, report->n);
  st->algo_mask |= 1 << report->algo;
  st->proto_mask |= 1 << report->proto;
  st->ring_forms |= report->ring_forms;
  if (g_replay.tl) { /* from the first member's call to the last member's completion */
    struct timeline_span span =
        timeline_span_init(TL_COLL_PID, TL_TID_COLL0 + (int)call->group, g_replay.id.comm[report->kind][call->group],
                           g_replay.id.cat_coll, report->start_s, report->end_s);
    span.bytes = report->bytes;
    span.busbw_GBps = time > 0 ? report->bytes * coll_busbw_factor(report->kind, report->n) / time / 1e9 : 0;
    span.members = report->n;
    if (g_replay.id.algo[report->algo] < 0)
      g_replay.id.algo[report->algo] = timeline_intern(g_replay.tl, coll_algo_name(report->algo));
    span.algo = g_replay.id.algo[report->algo];
    timeline_add(g_replay.tl, &span);
  }
  free(call);
}

static void coll_issue(struct rank_state *r, int op)
{
  const struct wl_op *o = &r->prog->ops[op];
  const struct wl_trace *t = g_replay.cfg.trace;
  /* The match key needs only the group's first member; the whole list is built once, by the
   * member that creates the call (each member listing it would cost n^2 per collective). */
  int leader;
  int n = wl_group_members(t, r->rank, o->group, &leader, 1);
  int seq = r->coll_seq[o->group]++;
  uint64_t key = ((uint64_t)o->group << 56) ^ ((uint64_t)(unsigned)leader << 28) ^ (uint64_t)seq;
  uint32_t h = hash64(key);
  struct coll_call **link = &g_replay.calls[h], *call;
  for (call = *link; call && call->key != key; call = call->next)
    link = &call->next;
  if (call == NULL) {
    call = xmalloc(sizeof *call + 2 * sizeof(int) * (size_t)n);
    call->job = g_job;
    call->key = key;
    call->group = o->group;
    call->n = n;
    call->ranks = (int *)(call + 1);
    call->ops = call->ranks + n;
    wl_group_members(t, r->rank, o->group, call->ranks, n);
    if (n > g_replay.gpus_scratch_n) {
      free(g_replay.gpus_scratch);
      g_replay.gpus_scratch = xmalloc(sizeof(int) * (size_t)n);
      g_replay.gpus_scratch_n = n;
    }
    int *gpus = g_replay.gpus_scratch;
    for (int i = 0; i < n; i++)
      gpus[i] = g_replay.cfg.rank_gpu[call->ranks[i]];
    struct coll_desc d = {
      coll_of(o->coll), o->bytes, n, gpus, 0, (int)o->group, g_replay.cfg.fab->topo->gpus_per_node
    };
    call->instance = coll_create(g_replay.cfg.fab, &g_replay.cfg.coll, &d, coll_member_done, coll_finished, call);
    call->next = g_replay.calls[h];
    g_replay.calls[h] = call;
    link = &g_replay.calls[h];
  }
  int member = wl_group_index(t, r->rank, o->group);
  call->ops[member] = op;
  struct coll_instance *instance = call->instance;
  if (++call->joined == call->n) { /* everyone is in: forget the match, the instance lives on */
    *link = call->next;
    double now = replay_clock();
    for (int i = 0; i < call->n; i++) {
      struct rank_state *m = &g_replay.ranks[call->ranks[i]];
      m->joined_op[o->group] = call->ops[i];
      m->joined_s[o->group] = now;
    }
  }
  coll_join(instance, member);
}

static struct message *message_find(int src, int dst, long tag, int create)
{
  uint64_t key = ((uint64_t)(unsigned)src << 40) ^ ((uint64_t)(unsigned)dst << 16) ^ (uint64_t)tag;
  uint32_t h = hash64(key);
  for (struct message *m = g_replay.messages[h]; m; m = m->next)
    if (m->src == src && m->dst == dst && m->tag == tag)
      return m;
  if (!create)
    return NULL;
  struct message *m = g_replay.free_messages;
  if (m) {
    g_replay.free_messages = m->next;
    memset(m, 0, sizeof *m);
  } else {
    m = xmalloc(sizeof *m);
  }
  m->src = src;
  m->dst = dst;
  m->tag = tag;
  m->recv_op = -1;
  m->next = g_replay.messages[h];
  g_replay.messages[h] = m;
  return m;
}

static void message_forget(struct message *m)
{
  uint64_t key = ((uint64_t)(unsigned)m->src << 40) ^ ((uint64_t)(unsigned)m->dst << 16) ^ (uint64_t)m->tag;
  struct message **link = &g_replay.messages[hash64(key)];
  while (*link != m)
    link = &(*link)->next;
  *link = m->next;
  m->next = g_replay.free_messages;
  g_replay.free_messages = m;
}

struct send_ctx {
  struct replay_job *job;
  int rank, op;
  struct message *msg;
  struct send_ctx *free_next;
};

static void send_finished(struct fabric *fab, struct fab_flow *flow, void *ctx)
{
  (void)fab;
  (void)flow;
  struct send_ctx *sc = ctx;
  g_job = sc->job;
  struct message *m = sc->msg;
  m->arrived = 1;
  op_done(&g_replay.ranks[sc->rank], sc->op);
  if (m->recv_op >= 0) {
    int op = m->recv_op;
    struct rank_state *receiver = &g_replay.ranks[m->dst];
    receiver->msg_sent_s = m->sent_s;
    message_forget(m);
    op_done(receiver, op);
  }
  sc->free_next = g_replay.free_sends;
  g_replay.free_sends = sc;
}

static void send_issue(struct rank_state *r, int op)
{
  const struct wl_op *o = &r->prog->ops[op];
  int peer = wl_op_peer_rank(g_replay.cfg.trace, r->rank, o);
  struct message *m = message_find(r->rank, peer, o->tag, 1);
  m->sent = 1;
  m->sent_s = g_replay.cfg.fab->now;
  struct send_ctx *sc = g_replay.free_sends;
  if (sc)
    g_replay.free_sends = sc->free_next;
  else
    sc = xmalloc(sizeof *sc);
  *sc = (struct send_ctx){ g_job, r->rank, op, m, NULL };
  struct replay_coll_stats *st = &g_replay.p2p[o->group];
  st->count++;
  st->bytes += o->bytes;
  fabric_post(g_replay.cfg.fab, r->gpu, g_replay.cfg.rank_gpu[peer], o->bytes, g_replay.cfg.fab->now, (int)o->group,
              send_finished, sc);
}

static void stream_start_next(struct rank_state *r, enum wl_group g)
{
  struct stream *s = &r->streams[g];
  if (s->busy >= 0 || s->head == s->tail)
    return;
  int op = s->queue[s->head++];
  if (s->head == s->tail)
    s->head = s->tail = 0;
  s->busy = op;
  s->busy_since = g_replay.cfg.fab->now;
  if (r->prog->ops[op].kind == WL_OP_COLL)
    coll_issue(r, op);
  else
    send_issue(r, op);
}

static void stream_push(struct rank_state *r, int op)
{
  enum wl_group g = r->prog->ops[op].group;
  struct stream *s = &r->streams[g];
  if (s->tail == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->queue = sgf_xrealloc(s->queue, sizeof(int) * (size_t)s->cap);
  }
  s->queue[s->tail++] = op;
  r->outstanding++;
  stream_start_next(r, g);
}

/* r waited from start to end for op: the time is charged to op's group. */
static void wait_charge(struct rank_state *r, int op, double start, double end)
{
  const struct wl_op *o = &r->prog->ops[op];
  /* A collective between pipeline stages (embedding, model-parallel groups) first waits for the
   * slowest stage to reach it: the schedule's imbalance, pipeline bubble as a receive waiting for
   * an unsent message is; then for its transfer, exposed communication. */
  double joined = start;
  if (o->kind == WL_OP_COLL && (o->group == WL_GROUP_EMB || o->group == WL_GROUP_MP) && r->joined_op[o->group] == op)
    joined = r->joined_s[o->group] < start ? start : r->joined_s[o->group] > end ? end : r->joined_s[o->group];
  r->bubble_s += joined - start;
  r->exposed_s[o->group] += end - joined;
  if (g_replay.tl && joined > start)
    tl_span(TL_RANK_PID(r->rank), TL_TID_MAIN, g_replay.id.bubble, g_replay.id.cat_bubble, start, joined);
  tl_wait(r, o->group, joined, end);
}

/* Posts the receive op: 1 if its message has arrived already (op done), else 0 with r waiting
 * for it and *sent_s the date its send was posted (-1: not yet). */
static int recv_post(struct rank_state *r, int op, double *sent_s)
{
  const struct wl_op *o = &r->prog->ops[op];
  int peer = wl_op_peer_rank(g_replay.cfg.trace, r->rank, o);
  struct message *m = message_find(peer, r->rank, o->tag, 1);
  r->outstanding++;
  if (m->arrived) {
    message_forget(m);
    r->done[op] = 1;
    r->outstanding--;
    return 1;
  }
  m->recv_op = op;
  *sent_s = m->sent ? m->sent_s : -1;
  r->waiting_op = op;
  return 0;
}

/* r waited from start to end for the message of a receive: until the sender posted it r sat in
 * the pipeline bubble; from then on it waited on the pipeline's communication. */
static void recv_charge(struct rank_state *r, int op, double start, double sent, double end)
{
  const struct wl_op *o = &r->prog->ops[op];
  if (sent < 0)
    sent = r->msg_sent_s > start ? r->msg_sent_s : start;
  if (sent < start)
    sent = start;
  r->bubble_s += sent - start;
  r->exposed_s[o->group] += end - sent;
  if (g_replay.tl && sent > start)
    tl_span(TL_RANK_PID(r->rank), TL_TID_MAIN, g_replay.id.bubble, g_replay.id.cat_bubble, start, sent);
  tl_wait(r, o->group, sent, end);
}

static void progress(void)
{
  if (!g_replay.cfg.progress)
    return;
  double now = replay_clock();
  if (now < g_replay.next_progress_s && g_replay.finished < g_replay.n_ranks) /* the last line is always shown */
    return;
  g_replay.next_progress_s = now + 0.05;
  /* The slowest unfinished rank tells how far the iteration is: micro-batch k of m. */
  int m = g_replay.cfg.trace->microbatches, k = m;
  for (int i = 0; i < g_replay.n_ranks; i++)
    if (!g_replay.ranks[i].finished && g_replay.ranks[i].micro_started < k)
      k = g_replay.ranks[i].micro_started;
  char micro[48] = "";
  if (m > 0) /* SimAI imports have no micro-batches */
    snprintf(micro, sizeof micro, "micro-batch %d/%d, ", k, m);
  fprintf(stderr, "\r  simulated %.3f s, %s%d/%d ranks done (%.0f %%)   ", now, micro, g_replay.finished,
          g_replay.n_ranks, 100.0 * g_replay.finished / g_replay.n_ranks);
}

/* The run of compute ops that starts at op: a run without dependencies is one kernel sequence.
 * Returns the op after it; *duration is its time with the GPU's slowdown and this run's noise
 * (straggler.h), charged to the kernel classes. The rank counts as computing until compute_ran. */
static int compute_run(struct rank_state *r, int op, double *duration)
{
  const struct wl_program *p = r->prog;
  double total = 0, by_class[WL_CC_COUNT] = { 0 };
  int last = op;
  while (last < p->nops && p->ops[last].kind == WL_OP_COMPUTE && (last == op || p->ops[last].ndeps == 0)) {
    double t = r->op_time[last];
    total += t;
    by_class[p->ops[last].cclass < WL_CC_COUNT ? p->ops[last].cclass : WL_CC_GEMM] += t;
    last++;
  }
  double factor = r->slowdown * straggler_jitter(&r->rng, g_replay.cfg.jitter_sigma);
  total *= factor;
  for (int c = 0; c < WL_CC_COUNT; c++)
    r->compute_class_s[c] += by_class[c] * factor;
  *duration = total;
  g_replay.computing++;
  return last;
}

/* The run [op, last) of compute_run ended at end, having started at start. */
static void compute_ran(struct rank_state *r, int op, int last, double duration, double start, double end)
{
  const struct wl_op *o = &r->prog->ops[op];
  g_replay.computing--;
  g_replay.activity++;
  r->compute_s += duration;
  if (g_replay.tl && duration > 0) {
    struct timeline_span span = timeline_span_init(TL_RANK_PID(r->rank), TL_TID_MAIN, g_replay.id.compute[o->phase],
                                                   g_replay.id.cat_compute, start, end);
    span.micro = o->micro;
    if (o->layer >= 0)
      span.layer = o->layer;
    span.ops = last - op;
    timeline_add(g_replay.tl, &span);
  }
  for (int k = op; k < last; k++)
    r->done[k] = 1;
  progress();
}

/* The group the end of r's program waits on: its first busy stream's. */
static enum wl_group end_wait_group(const struct rank_state *r)
{
  for (int g = 0; g < WL_GROUP_COUNT; g++)
    if (r->streams[g].busy >= 0)
      return (enum wl_group)g;
  return WL_GROUP_DP;
}

static void rank_ended(struct rank_state *r, double now)
{
  r->end_s = now;
  r->finished = 1;
  g_replay.finished++;
  progress();
  if (g_replay.cfg.event_engine && g_replay.finished == g_replay.n_ranks)
    sg_sem_release(g_replay.driver_sem);
}

/* r blocks on op (how: enum rank_block) from now. */
static void rank_block(struct rank_state *r, enum rank_block how, int op, double now)
{
  r->blocked = (uint8_t)how;
  r->block_op = op;
  r->block_start_s = now;
  r->waiting_op = op;
}

/* Runs r's program from where it stands, at date now, until it blocks or ends: where it blocks it
 * records what it waits for and returns, and the next call, once that is done, charges the wait
 * and goes on. Both engines run the programs through it: an actor calls it again when its
 * semaphore is released or its compute sleep ends (rank_actor); the events engine from the
 * fabric's events (rank_resume). */
static void rank_step(struct rank_state *r, double now)
{
  struct fabric *fab = g_replay.cfg.fab;
  const struct wl_program *p = r->prog;
  switch ((enum rank_block)r->blocked) { /* what it waited for is done: charge the wait */
  case BLOCK_DEP:
    wait_charge(r, r->block_op, r->block_start_s, now);
    r->dep++;
    break;
  case BLOCK_OP:
    wait_charge(r, r->block_op, r->block_start_s, now);
    r->pc++, r->dep = 0;
    break;
  case BLOCK_RECV:
    recv_charge(r, r->block_op, r->block_start_s, r->block_sent_s, now);
    r->pc++, r->dep = 0;
    break;
  case BLOCK_COMPUTE:
    compute_ran(r, r->pc, r->compute_last, r->compute_dur_s, r->block_start_s, now);
    r->pc = r->compute_last, r->dep = 0;
    break;
  case BLOCK_END:
    r->blocked = BLOCK_NONE;
    r->exposed_s[r->block_group] += now - r->block_start_s;
    tl_wait(r, (enum wl_group)r->block_group, r->block_start_s, now);
    rank_ended(r, now);
    return;
  case BLOCK_NONE: break;
  }
  r->blocked = BLOCK_NONE;
  while (r->pc < p->nops) {
    const struct wl_op *o = &p->ops[r->pc];
    if (o->micro + 1 > r->micro_started)
      r->micro_started = o->micro + 1;
    int ndeps;
    const int *deps = wl_op_deps(p, o, &ndeps);
    for (; r->dep < ndeps; r->dep++)
      if (!r->done[deps[r->dep]]) {
        rank_block(r, BLOCK_DEP, deps[r->dep], now);
        return;
      }
    switch (o->kind) {
    case WL_OP_COMPUTE: {
      double duration;
      int last = compute_run(r, r->pc, &duration);
      if (duration > 0) {
        r->blocked = BLOCK_COMPUTE;
        r->compute_last = last;
        r->compute_dur_s = duration;
        r->block_start_s = now;
        if (g_replay.cfg.event_engine) /* an actor sleeps instead (rank_actor) */
          fabric_call_at(fab, now + duration, rank_resume, r);
        return;
      }
      compute_ran(r, r->pc, last, 0, now, now);
      r->pc = last, r->dep = 0;
      continue;
    }
    case WL_OP_COLL:
    case WL_OP_SEND:
      stream_push(r, r->pc);
      if (!o->is_async && !r->done[r->pc]) {
        rank_block(r, BLOCK_OP, r->pc, now);
        return;
      }
      break;
    case WL_OP_RECV: {
      double sent;
      if (!recv_post(r, r->pc, &sent)) {
        rank_block(r, BLOCK_RECV, r->pc, now);
        r->block_sent_s = sent;
        return;
      }
      break;
    }
    case WL_OP_WAIT:
    default: r->done[r->pc] = 1; break;
    }
    r->pc++, r->dep = 0;
  }
  if (r->outstanding > 0) { /* the end of the program waits for everything still outstanding */
    rank_block(r, BLOCK_END, -2, now);
    r->block_group = (uint8_t)end_wait_group(r);
    return;
  }
  rank_ended(r, now);
}

static void rank_resume(struct fabric *fab, void *ctx)
{
  struct rank_state *r = ctx;
  g_job = r->job;
  rank_step(r, fab->now);
}

/* A rank as a SimGrid actor: it steps its program at SimGrid's date, and blocks the actor where
 * the program blocks: a compute run sleeps, anything else waits on the rank's semaphore, which
 * op_done releases. */
static void rank_actor(int argc, char **argv)
{
  (void)argc;
  g_job = g_jobs[atoi(argv[2])];
  struct rank_state *r = &g_replay.ranks[atoi(argv[1])];
  for (;;) {
    sync_clock();
    rank_step(r, simgrid_get_clock());
    if (r->finished)
      return;
    if (r->blocked == BLOCK_COMPUTE)
      sg_actor_sleep_for(r->compute_dur_s);
    else
      sg_sem_acquire(r->sem);
    g_job = r->job;
  }
}

/* Events engine: SimGrid's engine stops when no actor is left, so one actor per job waits for the
 * job's last rank; the fabric's model, which runs the ranks, keeps the clock moving meanwhile. */
static void replay_driver(int argc, char **argv)
{
  (void)argc;
  g_job = g_jobs[atoi(argv[1])];
  sg_sem_acquire(g_replay.driver_sem);
}

/* The timeline's names: interned once, so that recording a span costs no string work. */
static int timeline_setup(char *err, size_t errlen)
{
  struct timeline *tl = g_replay.tl;
  int bad = 0;
  char name[96];
  for (int p = 0; p < WL_PHASE_COUNT; p++)
    bad |= (g_replay.id.compute[p] = timeline_intern(tl, wl_phase_name((enum wl_phase)p))) < 0;
  for (int g = 0; g < WL_GROUP_COUNT; g++) {
    const char *group = wl_group_name((enum wl_group)g);
    snprintf(name, sizeof name, "wait %s", group);
    bad |= (g_replay.id.wait[g] = timeline_intern(tl, name)) < 0;
    snprintf(name, sizeof name, "send %s", group);
    bad |= (g_replay.id.send[g] = timeline_intern(tl, name)) < 0;
    for (int k = 0; k < COLL_KIND_COUNT; k++) {
      snprintf(name, sizeof name, "%s %s", coll_kind_name((enum coll_kind)k), group);
      bad |= (g_replay.id.comm[k][g] = timeline_intern(tl, name)) < 0;
    }
    if (g != WL_GROUP_NONE)
      bad |= timeline_name_thread(tl, TL_TID_STREAM0 + g, group) != 0 ||
             timeline_name_thread(tl, TL_TID_COLL0 + g, group) != 0;
  }
  /* The in-network algorithms' names are interned when first used: a timeline without them
   * stays as it was. */
  for (int a = 0; a < COLL_ALGO_COUNT; a++)
    g_replay.id.algo[a] = -1;
  for (int a = 0; a <= COLL_ALGO_HIERARCHICAL; a++)
    bad |= (g_replay.id.algo[a] = timeline_intern(tl, coll_algo_name((enum coll_algo)a))) < 0;
  bad |= (g_replay.id.bubble = timeline_intern(tl, "bubble")) < 0;
  bad |= (g_replay.id.iteration = timeline_intern(tl, "iteration")) < 0;
  bad |= (g_replay.id.program = timeline_intern(tl, "program")) < 0;
  bad |= (g_replay.id.idle = timeline_intern(tl, "idle until the last rank ends")) < 0;
  bad |= (g_replay.id.cat_compute = timeline_intern(tl, "compute")) < 0;
  bad |= (g_replay.id.cat_wait = timeline_intern(tl, "wait")) < 0;
  bad |= (g_replay.id.cat_bubble = timeline_intern(tl, "bubble")) < 0;
  bad |= (g_replay.id.cat_comm = timeline_intern(tl, "comm")) < 0;
  bad |= (g_replay.id.cat_coll = timeline_intern(tl, "collective")) < 0;
  bad |= (g_replay.id.cat_iteration = timeline_intern(tl, "iteration")) < 0;
  bad |= (g_replay.id.cat_idle = timeline_intern(tl, "idle")) < 0;
  bad |= timeline_name_thread(tl, TL_TID_ITERATION, "iteration") != 0;
  bad |= timeline_name_thread(tl, TL_TID_MAIN, "compute") != 0;
  /* The collectives' spans of one group overlap (every data-parallel replica runs its own):
   * the writer spreads them over lanes. Listed first in the UI. */
  timeline_set_lane_process(tl, TL_COLL_PID);
  bad |= timeline_name_process(tl, TL_COLL_PID, "collectives", -1) != 0;
  for (int rank = 0; rank < g_replay.n_ranks && !bad; rank++) {
    snprintf(name, sizeof name, "rank %d (gpu%d)", rank, g_replay.cfg.rank_gpu[rank]);
    bad |= timeline_name_process(tl, TL_RANK_PID(rank), name, rank) != 0;
  }
  if (!bad && g_replay.cfg.link_sample_s > 0) {
    const struct topo *t = g_replay.cfg.fab->topo;
    bad |= timeline_name_process(tl, TL_LINK_PID, "links (utilisation)", -2) != 0;
    g_replay.link_last = xmalloc(sizeof(double) * (size_t)t->n_ports);
    g_replay.link_tx = xmalloc(sizeof(double) * (size_t)t->n_ports);
    g_replay.link_name = xmalloc(sizeof(int) * (size_t)t->n_ports);
    for (int p = 0; p < t->n_ports && !bad; p++) {
      const struct topo_port *tp = &t->ports[p];
      char link[512]; /* as links.csv names a link direction: link, from, to */
      snprintf(link, sizeof link, "%s %s>%s", t->links[tp->link].name, t->nodes[tp->node].name,
               t->nodes[tp->peer_node].name);
      g_replay.link_last[p] = -1;
      bad |= (g_replay.link_name[p] = timeline_string(tl, link)) < 0;
    }
  }
  if (bad)
    snprintf(err, errlen, "out of memory for the timeline");
  return bad ? -1 : 0;
}

/* The utilisation of every link direction at now: at flow fidelity the max-min rates of the
 * flows crossing it over its line rate (exact between two samples' rate changes); at packet
 * fidelity the bytes it sent since the previous sample over what its line rate could have sent,
 * written at that sample's date. A value is written only when it changed: a counter holds its
 * value until its next event. */
static void link_sample(double now, double dt)
{
  const struct fabric *fab = g_replay.cfg.fab;
  const struct topo *t = fab->topo;
  double *value = xmalloc(sizeof(double) * (size_t)t->n_ports);
  double at = now;
  if (fab->fidelity == FAB_FIDELITY_FLOW) {
    size_t n;
    struct fab_flow **flows = fabric_active_flows(fab, &n);
    for (size_t i = 0; i < n; i++)
      for (int h = 0; h < flows[i]->hops; h++)
        value[flows[i]->path[h]] += flows[i]->rate_Bps;
    for (int p = 0; p < t->n_ports; p++)
      value[p] /= t->ports[p].rate_Bps;
  } else {
    at = now - dt;
    for (int p = 0; p < t->n_ports; p++) {
      value[p] = dt > 0 ? (fab->ports[p].tx_bytes - g_replay.link_tx[p]) / (t->ports[p].rate_Bps * dt) : 0;
      g_replay.link_tx[p] = fab->ports[p].tx_bytes;
    }
  }
  if (at >= 0)
    for (int p = 0; p < t->n_ports; p++)
      if (value[p] != g_replay.link_last[p]) {
        timeline_add_counter(g_replay.tl, TL_LINK_PID, g_replay.link_name[p], at, value[p]);
        g_replay.link_last[p] = value[p];
      }
  free(value);
}

/* Samples the links while the ranks run. A daemon: SimGrid ends it with the last rank. It stops
 * by itself when nothing moved over a whole interval (no kernel, no completion, no active flow,
 * no rank computing): the ranks are deadlocked, and a sampler that went on would keep the
 * simulation alive for ever. */
static void link_sampler(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  sg_actor_daemonize(sg_actor_self());
  g_job = g_jobs[0];
  double dt = g_replay.cfg.link_sample_s;
  long seen = -1;
  while (g_replay.finished < g_replay.n_ranks) {
    double now = simgrid_get_clock();
    link_sample(now, now - g_replay.link_sampled_s);
    g_replay.link_sampled_s = now;
    if (g_replay.activity == seen && g_replay.computing == 0 && g_replay.cfg.fab->active_flows == 0)
      break;
    seen = g_replay.activity;
    sg_actor_sleep_for(dt);
  }
}

/* Samples the links for the "why" heatmap (why.h) at 0, bin, 2 bin, ... as the fabric's interval
 * grows; stops as link_sampler does. */
static void why_sampler(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  sg_actor_daemonize(sg_actor_self());
  g_job = g_jobs[0];
  struct fabric *fab = g_replay.cfg.fab;
  long seen = -1;
  double next = 0;
  while (g_replay.finished < g_replay.n_ranks) {
    double now = simgrid_get_clock();
    fab_why_sample(fab, now);
    /* a collective's timers (kernel launch, protocol latencies) are pending events, not flows */
    if (g_replay.activity == seen && g_replay.computing == 0 && fab->active_flows == 0 && fabric_next_time(fab) < 0)
      break;
    seen = g_replay.activity;
    double bin = fab_why_bin_s(fab);
    /* the next multiple of the (maybe doubled) interval */
    next = (floor(now / bin + 1e-9) + 1) * bin;
    sg_actor_sleep_for(next - now > 0 ? next - now : bin);
    g_job = g_jobs[0];
  }
}

/* The compute time of each op of prog, computed once per program (the ranks of a pipeline stage
 * share one; the kernel model is not free at 10,000 ranks). */
static const double *program_op_times(const struct wl_trace *t, const struct wl_program *prog)
{
  int n = t->rank_programs ? t->layout.gpus : t->layout.pp;
  long idx = t->rank_programs ? prog - t->rank_programs : prog - t->programs;
  if (g_replay.op_time == NULL) {
    g_replay.op_time = xmalloc(sizeof(double *) * (size_t)n);
    g_replay.n_op_time = n;
  }
  if (g_replay.op_time[idx] == NULL) {
    double *times = xmalloc(sizeof(double) * (size_t)(prog->nops > 0 ? prog->nops : 1));
    for (int i = 0; i < prog->nops; i++)
      times[i] = wl_compute_time(&g_replay.cfg.compute, g_replay.cfg.gpu, prog, &prog->ops[i]);
    g_replay.op_time[idx] = times;
  }
  return g_replay.op_time[idx];
}

int replay_start(const struct replay_config *cfg, char *err, size_t errlen)
{
  if (g_n_jobs == REPLAY_MAX_JOBS) {
    snprintf(err, errlen, "at most %d jobs in one run", REPLAY_MAX_JOBS);
    return -1;
  }
  /* The samplers and the timeline follow one job. */
  if (g_n_jobs > 0 && (cfg->timeline || cfg->fab->why || g_jobs[0]->tl || g_jobs[0]->cfg.fab->why)) {
    snprintf(err, errlen, "--timeline and --why follow a single job");
    return -1;
  }
  int job = g_n_jobs;
  g_job = g_jobs[g_n_jobs++] = xmalloc(sizeof *g_job);
  g_replay.cfg = *cfg;
  const struct wl_trace *t = cfg->trace;
  g_replay.n_ranks = t->layout.gpus;
  if ((g_replay.tl = cfg->timeline) != NULL && timeline_setup(err, errlen) != 0)
    return -1;
  g_replay.ranks = xmalloc(sizeof(struct rank_state) * (size_t)g_replay.n_ranks);
  for (int rank = 0; rank < g_replay.n_ranks; rank++) {
    struct rank_state *r = &g_replay.ranks[rank];
    r->job = g_job;
    r->rank = rank;
    r->gpu = cfg->rank_gpu[rank];
    r->slowdown = cfg->gpu_slowdown ? cfg->gpu_slowdown[r->gpu] : 1;
    straggler_rng(&r->rng, cfg->seed, rank);
    r->prog = wl_rank_program(t, rank);
    if (r->prog == NULL) {
      snprintf(err, errlen, "rank %d has no program", rank);
      return -1;
    }
    r->op_time = program_op_times(t, r->prog);
    r->done = xmalloc((size_t)r->prog->nops);
    r->sem = cfg->event_engine ? NULL : sg_sem_init(0);
    r->waiting_op = -1;
    for (int g = 0; g < WL_GROUP_COUNT; g++) {
      r->streams[g].busy = -1;
      r->joined_op[g] = -1;
      r->joined_s[g] = 0;
    }
    char name[32], index[16], job_index[16], host[32];
    snprintf(name, sizeof name, job ? "job%d-rank%d" : "rank%d", job ? job : rank, rank);
    snprintf(index, sizeof index, "%d", rank);
    snprintf(job_index, sizeof job_index, "%d", job);
    snprintf(host, sizeof host, "gpu%d", r->gpu);
    sg_host_t h = sg_host_by_name(host);
    if (h == NULL) {
      snprintf(err, errlen, "rank %d is placed on %s, which the platform does not have", rank, host);
      return -1;
    }
    char *args[] = { name, index, job_index, NULL };
    if (cfg->event_engine)
      fabric_call_at(cfg->fab, 0, rank_resume, r); /* every rank starts at 0, in rank order */
    else
      sg_actor_create(name, h, rank_actor, 3, args);
  }
  if (cfg->event_engine) {
    char name[32], job_index[16], host[32];
    snprintf(name, sizeof name, "job%d-driver", job);
    snprintf(job_index, sizeof job_index, "%d", job);
    snprintf(host, sizeof host, "gpu%d", g_replay.ranks[0].gpu);
    g_replay.driver_sem = sg_sem_init(0);
    char *args[] = { name, job_index, NULL };
    sg_actor_create(name, sg_host_by_name(host), replay_driver, 2, args);
  }
  if (g_replay.tl && cfg->link_sample_s > 0) {
    char host[32];
    snprintf(host, sizeof host, "gpu%d", g_replay.ranks[0].gpu);
    sg_actor_create("link-sampler", sg_host_by_name(host), link_sampler, 0, NULL);
  }
  if (cfg->fab->why) {
    char host[32];
    snprintf(host, sizeof host, "gpu%d", g_replay.ranks[0].gpu);
    sg_actor_create("why-sampler", sg_host_by_name(host), why_sampler, 0, NULL);
  }
  return job;
}

struct stage_end {
  int stage;
  double end_s;
};

static int stage_end_order(const void *a, const void *b)
{
  const struct stage_end *x = a, *y = b;
  if (x->stage != y->stage)
    return x->stage - y->stage;
  return (x->end_s > y->end_s) - (x->end_s < y->end_s);
}

/* When the iteration would have ended had every rank ended like the typical member of its
 * pipeline stage: the latest over stages of the stage's median end (the lower middle of an even
 * count). The stages' ends differ by the pipeline's schedule; within a stage, the data-parallel
 * replicas run the same program, so a rank far past its stage's median is held up by its own
 * communication (a data-parallel ring slowed by ECMP collisions, say) and, as the iteration ends
 * with the last rank, holds up every other rank. */
static double typical_end_s(const struct wl_trace *t, const struct rank_state *ranks, int n)
{
  struct stage_end *e = xmalloc((size_t)n * sizeof *e);
  for (int rank = 0; rank < n; rank++) {
    struct wl_coord c;
    wl_rank_coord(t, rank, &c);
    e[rank] = (struct stage_end){ c.pp, ranks[rank].end_s };
  }
  qsort(e, (size_t)n, sizeof *e, stage_end_order);
  double typical = 0;
  for (int lo = 0, hi; lo < n; lo = hi) {
    for (hi = lo; hi < n && e[hi].stage == e[lo].stage; hi++)
      ;
    double median = e[lo + (hi - lo - 1) / 2].end_s;
    if (median > typical)
      typical = median;
  }
  free(e);
  return typical;
}

int replay_finish(int job, struct replay_results *out, char *err, size_t errlen)
{
  memset(out, 0, sizeof *out);
  if (job < 0 || job >= g_n_jobs || g_jobs[job] == NULL) {
    snprintf(err, errlen, "no job %d to finish", job);
    return -1;
  }
  g_job = g_jobs[job];
  int n = g_replay.n_ranks;
  int rc = 0;
  for (int rank = 0; rank < n; rank++) {
    struct rank_state *r = &g_replay.ranks[rank];
    if (!r->finished) {
      if (rc == 0)
        snprintf(err, errlen, "rank %d never finished its program (the trace deadlocks)", rank);
      rc = -1;
    }
    out->ranks_finished += r->finished;
    if (r->compute_s > out->slowest_compute.compute_s || rank == 0) {
      out->slowest_compute.rank = rank;
      out->slowest_compute.gpu = r->gpu;
      out->slowest_compute.compute_s = r->compute_s;
    }
    if (r->end_s > out->iteration_s || rank == 0) {
      out->iteration_s = r->end_s;
      out->slowest.rank = rank;
      out->slowest.gpu = r->gpu;
      memcpy(out->slowest.exposed_s, r->exposed_s, sizeof r->exposed_s);
    }
  }
  double typical_end = typical_end_s(g_replay.cfg.trace, g_replay.ranks, n);
  struct wl_coord slowest;
  wl_rank_coord(g_replay.cfg.trace, out->slowest.rank, &slowest);
  out->slowest.stage = slowest.pp;
  out->typical_end_s = typical_end;
  for (int rank = 0; rank < n; rank++) {
    struct rank_state *r = &g_replay.ranks[rank];
    /* A rank that ended before the iteration idles until its end. Up to the typical end it waits
     * on the pipeline's schedule: with a pipeline, the cool-down of a stage that finished its last
     * backward early is bubble (the warm-up shows as receives waiting for unsent messages).
     * Beyond the typical end it waits for stragglers. */
    double own_end = r->end_s > typical_end ? r->end_s : typical_end;
    double straggler = out->iteration_s - own_end;
    double cool_down = g_replay.cfg.trace->layout.pp > 1 ? own_end - r->end_s : 0;
    double bubble = r->bubble_s + cool_down;
    double accounted = r->compute_s + bubble + straggler;
    out->compute_s += r->compute_s / n;
    for (int c = 0; c < WL_CC_COUNT; c++)
      out->compute_class_s[c] += r->compute_class_s[c] / n;
    out->bubble_s += bubble / n;
    out->straggler_s += straggler / n;
    for (int g = 0; g < WL_GROUP_COUNT; g++) {
      out->exposed_s[g] += r->exposed_s[g] / n;
      accounted += r->exposed_s[g];
    }
    out->other_s += (out->iteration_s - accounted) / n;
    if (g_replay.tl) { /* every rank's iteration track ends where the iteration ends */
      tl_span(TL_RANK_PID(rank), TL_TID_ITERATION, g_replay.id.iteration, g_replay.id.cat_iteration, 0,
              out->iteration_s);
      tl_span(TL_RANK_PID(rank), TL_TID_ITERATION, g_replay.id.program, g_replay.id.cat_iteration, 0, r->end_s);
      if (r->end_s < out->iteration_s)
        tl_span(TL_RANK_PID(rank), TL_TID_ITERATION, g_replay.id.idle, g_replay.id.cat_idle, r->end_s,
                out->iteration_s);
    }
    free(r->done);
    for (int g = 0; g < WL_GROUP_COUNT; g++)
      free(r->streams[g].queue);
    if (r->sem)
      sg_sem_destroy(r->sem);
  }
  if (g_replay.driver_sem)
    sg_sem_destroy(g_replay.driver_sem);
  if (g_replay.link_last) { /* the last sample: the links at the iteration's end */
    link_sample(out->iteration_s, out->iteration_s - g_replay.link_sampled_s);
    free(g_replay.link_last);
    free(g_replay.link_tx);
    free(g_replay.link_name);
    g_replay.link_last = g_replay.link_tx = NULL;
    g_replay.link_name = NULL;
  }
  memcpy(out->coll, g_replay.coll, sizeof out->coll);
  memcpy(out->p2p, g_replay.p2p, sizeof out->p2p);
  for (uint32_t h = 0; h < TABLE_SIZE; h++) {
    while (g_replay.messages[h]) {
      struct message *m = g_replay.messages[h];
      g_replay.messages[h] = m->next;
      free(m);
    }
  }
  while (g_replay.free_messages) {
    struct message *m = g_replay.free_messages;
    g_replay.free_messages = m->next;
    free(m);
  }
  while (g_replay.free_sends) {
    struct send_ctx *sc = g_replay.free_sends;
    g_replay.free_sends = sc->free_next;
    free(sc);
  }
  free(g_replay.gpus_scratch);
  g_replay.gpus_scratch = NULL;
  g_replay.gpus_scratch_n = 0;
  free(g_replay.ranks);
  for (int i = 0; i < g_replay.n_op_time; i++)
    free(g_replay.op_time[i]);
  free(g_replay.op_time);
  g_replay.op_time = NULL;
  g_replay.n_op_time = 0;
  if (g_replay.cfg.progress)
    fprintf(stderr, "\n");
  free(g_job);
  g_jobs[job] = g_job = NULL;
  int left = 0;
  for (int j = 0; j < g_n_jobs; j++)
    left += g_jobs[j] != NULL;
  if (left == 0)
    g_n_jobs = 0;
  char late[200];
  if (rc == 0 && fabric_ended_too_late(out->iteration_s, late, sizeof late)) { /* timed at that resolution */
    snprintf(err, errlen, "the ranks %s: check the trace's compute times (time=, flops=)", late);
    rc = -1;
  }
  return rc;
}
