/* The timeline writer (workloads/replay/timeline.c), without a simulation:
 *  - a lane process spreads overlapping spans over lanes (greedy by start), reusing a lane once
 *    it is free; other processes keep their tid;
 *  - spans are written by pid, tid, start, the enclosing span first, whatever the recording
 *    order, and the output is the same on every write;
 *  - past the event limit spans are dropped and counted, in the file too;
 *  - names are JSON-escaped; counters are "C" events with their value. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline.h"
#include "cunit_main.h"

/* The file timeline_write makes, as a string (caller frees). */
static char *written(struct timeline *tl)
{
  FILE *f = tmpfile();
  CU_ASSERT_FATAL(f != NULL);
  CU_ASSERT_EQUAL(timeline_write(tl, f, "\"x\": 1"), 0);
  long len = ftell(f);
  char *text = calloc(1, (size_t)len + 1);
  CU_ASSERT_FATAL(text != NULL);
  rewind(f);
  CU_ASSERT_EQUAL(fread(text, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  return text;
}

/* Where needle is in out, -1 if nowhere. */
static long pos(const char *out, const char *needle)
{
  const char *p = strstr(out, needle);
  return p ? (long)(p - out) : -1;
}

static void add(struct timeline *tl, int pid, int tid, const char *name, double start, double end)
{
  int id = timeline_intern(tl, name);
  struct timeline_span s = timeline_span_init(pid, tid, id, id, start, end);
  timeline_add(tl, &s);
}

static void test_lanes(void)
{
  struct timeline *tl = timeline_create(0);
  timeline_set_lane_process(tl, 9);
  timeline_name_thread(tl, 4, "dp");
  add(tl, 9, 4, "a", 0, 10);  /* lane 0 */
  add(tl, 9, 4, "b", 5, 15);  /* overlaps a: lane 1 */
  add(tl, 9, 4, "c", 6, 7);   /* overlaps both: lane 2 */
  add(tl, 9, 4, "d", 10, 12); /* a is over: lane 0 again */
  add(tl, 1, 4, "e", 0, 10);  /* not a lane process: tid 4 as it is */
  add(tl, 1, 4, "f", 2, 3);   /* nested in e, same track */
  char *out = written(tl);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"name\": \"a\", \"cat\": \"a\", \"pid\": 9, \"tid\": 4000001,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"name\": \"b\", \"cat\": \"b\", \"pid\": 9, \"tid\": 4000002,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"name\": \"c\", \"cat\": \"c\", \"pid\": 9, \"tid\": 4000003,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"name\": \"d\", \"cat\": \"d\", \"pid\": 9, \"tid\": 4000001,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"name\": \"e\", \"cat\": \"e\", \"pid\": 1, \"tid\": 4,"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"pid\": 9, \"tid\": 4000003, \"ts\": 0, \"args\": {\"name\": \"dp #2\"}"));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"pid\": 1, \"tid\": 4, \"ts\": 0, \"args\": {\"name\": \"dp\"}"));
  free(out);
  timeline_free(tl);
}

static void test_order_and_determinism(void)
{
  struct timeline *tl = timeline_create(0);
  add(tl, 2, 1, "inner", 1, 2);
  add(tl, 2, 1, "later", 5, 6);
  add(tl, 1, 1, "other pid", 9, 10);
  add(tl, 2, 1, "outer", 1, 4); /* same start as inner, longer: written before it */
  char *out = written(tl);
  long other = pos(out, "\"other pid\""), outer = pos(out, "\"outer\""), inner = pos(out, "\"inner\""),
       later = pos(out, "\"later\"");
  CU_ASSERT(other >= 0 && other < outer && outer < inner && inner < later);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"dur\": 3000000,")); /* outer: 3 s in microseconds */
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"x\": 1}"));         /* the caller's otherData */
  char *again = written(tl);
  CU_ASSERT_STRING_EQUAL(out, again);
  free(out);
  free(again);
  timeline_free(tl);
}

static void test_limit(void)
{
  struct timeline *tl = timeline_create(3);
  for (int i = 0; i < 5; i++)
    add(tl, 1, 1, "s", i, i + 1);
  CU_ASSERT_EQUAL(timeline_events(tl), 3);
  CU_ASSERT_EQUAL(timeline_dropped(tl), 2);
  char *out = written(tl);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"events\": 3, \"max_events\": 3, \"dropped_events\": 2"));
  CU_ASSERT_PTR_NULL(strstr(out, "\"ts\": 3000000")); /* the fourth span was dropped */
  free(out);
  timeline_free(tl);
}

static void test_escaping_and_counters(void)
{
  struct timeline *tl = timeline_create(0);
  timeline_name_process(tl, 1, "rank \"0\"", 0);
  add(tl, 1, 1, "a\\b", 0, 1);
  int link = timeline_string(tl, "l1 s0>s1");
  timeline_add_counter(tl, 7, link, 2e-6, 0.5);
  timeline_add_counter(tl, 7, link, 1e-6, 0.25); /* written first: in order of time */
  char *out = written(tl);
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"name\": \"rank \\\"0\\\"\""));
  CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"name\": \"a\\\\b\""));
  long first = pos(out, "{\"ph\": \"C\", \"name\": \"l1 s0>s1\", \"pid\": 7, \"tid\": 0, \"ts\": 1, "
                        "\"args\": {\"utilisation\": 0.25}}");
  long second = pos(out, "\"ts\": 2, \"args\": {\"utilisation\": 0.5}}");
  CU_ASSERT(first >= 0 && second > first);
  CU_ASSERT_PTR_NULL(strstr(out, "\"pid\": 7, \"tid\": 0, \"ts\": 0, \"args\": {\"name\"")); /* no thread name */
  free(out);
  timeline_free(tl);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "timeline";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "timeline_lanes", test_lanes },
  { "timeline_order_and_determinism", test_order_and_determinism },
  { "timeline_limit", test_limit },
  { "timeline_escaping_and_counters", test_escaping_and_counters },
  { NULL, NULL },
};
