/* InfiniBand algorithms without a fabric: credit accounting, VL arbitration, SL-to-VL map,
 * D-mod-K forwarding tables. */
#include <CUnit/Basic.h>
#include <string.h>

#include "ib_credit.h"
#include "ib_lft.h"
#include "ib_vlarb.h"
#include "route.h"
#include "test_support.h"
#include "cunit_main.h"

static void test_ib_credit_blocks_round_up(void)
{
  CU_ASSERT_EQUAL(ib_credit_blocks(4096, 64), 64);
  CU_ASSERT_EQUAL(ib_credit_blocks(4097, 64), 65);
  CU_ASSERT_EQUAL(ib_credit_blocks(1, 64), 1);
}

static void test_ib_credit_stall_when_zero(void)
{
  struct ib_credit c;
  ib_credit_init(&c, 128);
  CU_ASSERT(ib_credit_has(&c, 64));
  ib_credit_consume(&c, 64);
  ib_credit_consume(&c, 64);
  CU_ASSERT_EQUAL(c.free_blocks, 0);
  CU_ASSERT_FALSE(ib_credit_has(&c, 1));
  ib_credit_return(&c, 64);
  CU_ASSERT(ib_credit_has(&c, 64));
  CU_ASSERT_FALSE(ib_credit_has(&c, 65));
}

static void test_ib_vlarb_weights_one_to_three(void)
{
  struct ib_vlarb_table tab;
  memset(&tab, 0, sizeof tab);
  char err[128];
  CU_ASSERT_EQUAL(ib_vlarb_parse(&tab, 1, "0:64,1:192", 2, err, sizeof err), 0);
  tab.high_limit = 255;
  struct ib_vlarb_state s;
  memset(&s, 0, sizeof s);
  int sent[2] = { 0, 0 };
  for (int i = 0; i < 400; i++) {
    int vl = ib_vlarb_pick(&tab, &s, 3);
    CU_ASSERT_FATAL(vl == 0 || vl == 1);
    sent[vl]++;
    ib_vlarb_charge(&tab, &s, 4096);
  }
  CU_ASSERT_EQUAL(sent[0], 100);
  CU_ASSERT_EQUAL(sent[1], 300);
  /* An idle VL gives its turn away. */
  CU_ASSERT_EQUAL(ib_vlarb_pick(&tab, &s, 1u << 1), 1);
  CU_ASSERT_EQUAL(ib_vlarb_pick(&tab, &s, 0), -1);
}

static void test_ib_vlarb_high_priority_limit(void)
{
  struct ib_vlarb_table tab;
  memset(&tab, 0, sizeof tab);
  char err[128];
  CU_ASSERT_EQUAL(ib_vlarb_parse(&tab, 0, "1:255", 2, err, sizeof err), 0);
  CU_ASSERT_EQUAL(ib_vlarb_parse(&tab, 1, "0:64", 2, err, sizeof err), 0);
  tab.high_limit = 2; /* 8 KB of high priority, then a low-priority packet */
  struct ib_vlarb_state s;
  memset(&s, 0, sizeof s);
  int seq[6];
  for (int i = 0; i < 6; i++) {
    seq[i] = ib_vlarb_pick(&tab, &s, 3);
    ib_vlarb_charge(&tab, &s, 4096);
  }
  int expected[6] = { 1, 1, 0, 1, 1, 0 };
  CU_ASSERT_EQUAL(memcmp(seq, expected, sizeof seq), 0);
  /* IBTA Vol.1 7.6.9: with LimitOfHighPriority 0 a single high-priority packet goes before the
   * low-priority table gets an opportunity (formerly 0 starved the high table: every pick went
   * low while a low-priority packet waited). */
  tab.high_limit = 0;
  memset(&s, 0, sizeof s);
  for (int i = 0; i < 6; i++) {
    seq[i] = ib_vlarb_pick(&tab, &s, 3);
    ib_vlarb_charge(&tab, &s, i % 2 ? 4096 : 256); /* one packet, whatever its size */
  }
  int alternate[6] = { 1, 0, 1, 0, 1, 0 };
  CU_ASSERT_EQUAL(memcmp(seq, alternate, sizeof seq), 0);
  CU_ASSERT_EQUAL(ib_vlarb_pick(&tab, &s, 1u << 1), 1); /* no low packet waiting: high goes on */
  ib_vlarb_charge(&tab, &s, 4096);
  CU_ASSERT_EQUAL(ib_vlarb_pick(&tab, &s, 1u << 1), 1);
}

static void test_ib_vlarb_parse_refuses_missing_vl(void)
{
  struct ib_vlarb_table tab;
  char err[128] = "";
  CU_ASSERT_EQUAL(ib_vlarb_parse(&tab, 1, "0:64,3:64", 2, err, sizeof err), -1);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "VL 3"));
  uint8_t map[IB_NUM_SLS];
  CU_ASSERT_EQUAL(ib_sl2vl_parse(map, "0,1,1", 2, err, sizeof err), 0);
  CU_ASSERT_EQUAL(map[2], 1);
  CU_ASSERT_EQUAL(map[3], 1); /* beyond the list: SL mod num-vls */
  CU_ASSERT_EQUAL(ib_sl2vl_parse(map, "0,2", 2, err, sizeof err), -1);
}

/* On a full-bisection fat-tree the D-mod-K paths of a shift permutation never share a port. */
static void test_ib_lft_shift_is_collision_free(void)
{
  struct platform *p = load_shipped("ft2-128.xml");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  const struct topo *t = p->topo;
  struct ib_lft lft;
  CU_ASSERT_EQUAL_FATAL(ib_lft_init(&lft, t), 0);
  int by_rank[128];
  for (int g = 0; g < 128; g++)
    by_rank[lft.rank[g]] = g;
  int *load = calloc((size_t)t->n_ports, sizeof *load);
  int worst_shift = 0;
  for (int shift = 1; shift < 128; shift++) {
    memset(load, 0, (size_t)t->n_ports * sizeof *load);
    for (int r = 0; r < 128; r++) {
      int path[ROUTE_MAX_HOPS];
      int hops = ib_lft_path(&lft, t, by_rank[r], by_rank[(r + shift) % 128], path, ROUTE_MAX_HOPS);
      CU_ASSERT_FATAL(hops > 0);
      for (int h = 0; h < hops; h++)
        if (++load[path[h]] > 1)
          worst_shift = shift;
    }
  }
  CU_ASSERT_EQUAL(worst_shift, 0);
  free(load);
  ib_lft_free(&lft);
  platform_free(p);
}

/* The suite, run by the shared CUnit main (tests/unit/cunit_main.c). */
const char sgf_unit_suite[] = "ib_units";
const struct sgf_unit_test sgf_unit_tests[] = {
  { "credit blocks round up", test_ib_credit_blocks_round_up },
  { "credit stall when zero", test_ib_credit_stall_when_zero },
  { "VL arbitration weights 1:3", test_ib_vlarb_weights_one_to_three },
  { "VL arbitration high-priority limit", test_ib_vlarb_high_priority_limit },
  { "tables naming a missing VL refused", test_ib_vlarb_parse_refuses_missing_vl },
  { "D-mod-K shift permutations collision-free", test_ib_lft_shift_is_collision_free },
  { NULL, NULL },
};
