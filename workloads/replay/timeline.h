/* An iteration timeline: spans recorded during a replay, written at the end as a trace-event
 * JSON file (Google, "Trace Event Format", the JSON Object Format: {"traceEvents": [...],
 * "displayTimeUnit": ...}) that the Perfetto UI and chrome://tracing open.
 *
 * Every span is a complete event ("ph": "X") with its timestamp and duration in microseconds.
 * A process (pid) is a rank or the collectives; a thread (tid) is one of its tracks. Spans are
 * kept in memory (about 64 bytes each) up to a limit; past it later spans are dropped and
 * counted, so the file says how many are missing (otherData.dropped_events). Nothing of this
 * runs when no timeline is asked for: the replay holds a NULL timeline and checks for it. */
#ifndef SGFABRIC_TIMELINE_H
#define SGFABRIC_TIMELINE_H

#include <stdio.h>

/* The default limit on recorded spans (about 320 MB of memory at the limit). */
#define TIMELINE_DEFAULT_MAX_EVENTS 5000000L

struct timeline;

/* What an argument holds when unset: not written. */
#define TIMELINE_NO_INT (-2147483647 - 1)
#define TIMELINE_NO_NUMBER (-1.0)

/* One span, or a counter's value from start_s on (kind). name, cat and algo are ids of
 * timeline_intern. */
enum timeline_kind { TIMELINE_SPAN, TIMELINE_COUNTER };
struct timeline_span {
  double start_s, end_s;
  int kind; /* enum timeline_kind */
  int pid, tid;
  int name, cat;
  int micro, layer, ops, members; /* TIMELINE_NO_INT when unset */
  int algo;                       /* -1 when unset */
  double bytes, busbw_GBps;       /* TIMELINE_NO_NUMBER (< 0) when unset */
};

/* max_events <= 0: TIMELINE_DEFAULT_MAX_EVENTS. Returns NULL when out of memory. */
struct timeline *timeline_create(long max_events);
void timeline_free(struct timeline *tl);

/* The id of a string (copied once; the same string gives the same id). -1 when out of memory. */
int timeline_intern(struct timeline *tl, const char *s);
/* The id of a new copy of s, without looking for an equal string (for many distinct names). */
int timeline_string(struct timeline *tl, const char *s);
/* Names a process and sets its place in the UI's list (sort_index). */
int timeline_name_process(struct timeline *tl, int pid, const char *name, int sort_index);
/* Names a thread of every process that uses it (tid < TIMELINE_MAX_NAMED_TIDS). */
#define TIMELINE_MAX_NAMED_TIDS 64
int timeline_name_thread(struct timeline *tl, int tid, const char *name);
/* Marks pid as a process whose spans may overlap on a tid: when written, each tid of pid is
 * split into lanes ("NAME #k") so that spans on one lane are disjoint. */
void timeline_set_lane_process(struct timeline *tl, int pid);

/* Records a span with start_s <= end_s (a span the other way round is recorded as empty). */
void timeline_add(struct timeline *tl, const struct timeline_span *span);
/* A counter event ("ph": "C"): the counter name of process pid is value from t_s on, until its
 * next event (a step function, as the viewers draw it). */
void timeline_add_counter(struct timeline *tl, int pid, int name, double t_s, double value);
/* A span with every argument unset. */
struct timeline_span timeline_span_init(int pid, int tid, int name, int cat, double start_s, double end_s);

long timeline_events(const struct timeline *tl);
long timeline_dropped(const struct timeline *tl);
long timeline_max_events(const struct timeline *tl);

/* Writes the JSON file: metadata (process and thread names), then the spans ordered by pid,
 * tid, start, longest first, then order of recording (deterministic). other_json: NULL, or more
 * members of "otherData" ("key": value, ...). Returns 0, or -1 when out of memory. */
int timeline_write(struct timeline *tl, FILE *f, const char *other_json);

#endif
