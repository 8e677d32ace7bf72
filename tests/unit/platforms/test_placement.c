/* Placement policies (deployments/placement.h): every GPU used at most once, the policies' shapes
 * (GPU-granular, whole nodes with rails kept, nodes dealt round-robin, a seeded shuffle), and the
 * refusals. */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "cunit_main.h"

#define GPUS 64
#define PER_NODE 8

static int place(enum placement_policy p, const int *sizes, int n, uint64_t seed, int **out)
{
  char err[256];
  return placement_place(p, sizes, n, GPUS, PER_NODE, seed, out, err, sizeof err);
}

static int disjoint(int **rank_gpu, const int *sizes, int n)
{
  int used[GPUS] = { 0 };
  for (int j = 0; j < n; j++)
    for (int r = 0; r < sizes[j]; r++) {
      int g = rank_gpu[j][r];
      if (g < 0 || g >= GPUS || used[g]++)
        return 0;
    }
  return 1;
}

static void free_all(int **rank_gpu, int n)
{
  for (int j = 0; j < n; j++)
    free(rank_gpu[j]);
}

static void test_contiguous_packs_gpu_by_gpu(void)
{
  int sizes[] = { 12, 8 }, *out[2];
  CU_ASSERT_EQUAL_FATAL(place(PLACE_CONTIGUOUS, sizes, 2, 1, out), 0);
  CU_ASSERT(disjoint(out, sizes, 2));
  CU_ASSERT_EQUAL(out[0][11], 11);
  CU_ASSERT_EQUAL(out[1][0], 12); /* the second job starts mid-node: its rank 0 on rail 4 */
  free_all(out, 2);
}

static void test_rail_aligned_gives_whole_nodes(void)
{
  int sizes[] = { 12, 8 }, *out[2];
  CU_ASSERT_EQUAL_FATAL(place(PLACE_RAIL_ALIGNED, sizes, 2, 1, out), 0);
  CU_ASSERT(disjoint(out, sizes, 2));
  for (int j = 0; j < 2; j++)
    for (int r = 0; r < sizes[j]; r++)
      CU_ASSERT_EQUAL(out[j][r] % PER_NODE, r % PER_NODE); /* rank r on rail r mod 8 */
  CU_ASSERT_EQUAL(out[1][0], 16);                          /* job 0 took nodes 0 and 1 (4 GPUs of node 1 idle) */
  free_all(out, 2);
}

static void test_fragmented_deals_nodes_round_robin(void)
{
  int sizes[] = { 16, 16, 8 }, *out[3];
  CU_ASSERT_EQUAL_FATAL(place(PLACE_FRAGMENTED, sizes, 3, 1, out), 0);
  CU_ASSERT(disjoint(out, sizes, 3));
  /* nodes 0, 3 to job 0; 1, 4 to job 1; 2 to job 2 */
  CU_ASSERT_EQUAL(out[0][0] / PER_NODE, 0);
  CU_ASSERT_EQUAL(out[0][8] / PER_NODE, 3);
  CU_ASSERT_EQUAL(out[1][0] / PER_NODE, 1);
  CU_ASSERT_EQUAL(out[1][8] / PER_NODE, 4);
  CU_ASSERT_EQUAL(out[2][0] / PER_NODE, 2);
  for (int r = 0; r < 16; r++)
    CU_ASSERT_EQUAL(out[1][r] % PER_NODE, r % PER_NODE);
  free_all(out, 3);
}

static void test_random_is_seeded(void)
{
  int sizes[] = { 24, 24 }, *a[2], *b[2], *c[2];
  CU_ASSERT_EQUAL_FATAL(place(PLACE_RANDOM, sizes, 2, 7, a), 0);
  CU_ASSERT_EQUAL_FATAL(place(PLACE_RANDOM, sizes, 2, 7, b), 0);
  CU_ASSERT_EQUAL_FATAL(place(PLACE_RANDOM, sizes, 2, 8, c), 0);
  CU_ASSERT(disjoint(a, sizes, 2));
  CU_ASSERT(memcmp(a[0], b[0], sizeof(int) * 24) == 0 && memcmp(a[1], b[1], sizeof(int) * 24) == 0);
  CU_ASSERT(memcmp(a[0], c[0], sizeof(int) * 24) != 0);
  int in_order = 1;
  for (int r = 1; r < 24; r++)
    in_order &= a[0][r] == a[0][r - 1] + 1;
  CU_ASSERT_FALSE(in_order);
  free_all(a, 2);
  free_all(b, 2);
  free_all(c, 2);
}

static void test_refusals(void)
{
  int too_many[] = { 40, 32 }, *out[2];
  CU_ASSERT_EQUAL(place(PLACE_CONTIGUOUS, too_many, 2, 1, out), -1);
  int nodes[] = { 60, 2 }; /* 62 GPUs fit GPU by GPU, but need 9 whole nodes of 8 */
  CU_ASSERT_EQUAL(place(PLACE_CONTIGUOUS, nodes, 2, 1, out), 0);
  free_all(out, 2);
  CU_ASSERT_EQUAL(place(PLACE_RAIL_ALIGNED, nodes, 2, 1, out), -1);
  CU_ASSERT_EQUAL(place(PLACE_FRAGMENTED, nodes, 2, 1, out), -1);
  enum placement_policy p;
  char err[256];
  CU_ASSERT_EQUAL(placement_parse("rail-aligned", &p, err, sizeof err), 0);
  CU_ASSERT_EQUAL(p, PLACE_RAIL_ALIGNED);
  CU_ASSERT_EQUAL(placement_parse("packed", &p, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "fragmented"));
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "placement";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "contiguous_packs_gpu_by_gpu", test_contiguous_packs_gpu_by_gpu },
  { "rail_aligned_gives_whole_nodes", test_rail_aligned_gives_whole_nodes },
  { "fragmented_deals_nodes_round_robin", test_fragmented_deals_nodes_round_robin },
  { "random_is_seeded", test_random_is_seeded },
  { "refusals", test_refusals },
  { NULL, NULL },
};
