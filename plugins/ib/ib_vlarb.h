/* InfiniBand SL-to-VL mapping and VL arbitration.
 *
 * IBTA Vol. 1, 7.6.6 (SL to VL mapping) and 7.6.9 (VL arbitration): an output port serves its
 * data VLs from two tables of {VL, weight} entries, high and low priority. Weights count 64-byte
 * units; an entry may send while its remaining weight is above zero (a packet may overdraw it),
 * then the table moves to its next entry; an entry whose VL has nothing eligible is skipped.
 * The high table is served first, but after LimitOfHighPriority × 4 KB of high-priority bytes
 * a waiting low-priority packet goes next (limit 255: unlimited; limit 0: one high-priority
 * packet per low-priority opportunity). Entries of weight 0 are
 * unused. */
#ifndef SGFABRIC_IB_VLARB_H
#define SGFABRIC_IB_VLARB_H

#include <stddef.h>
#include <stdint.h>

#define IB_MAX_VLS 8
#define IB_NUM_SLS 16
#define IB_VLARB_ENTRIES 64

struct ib_vlarb_entry {
  uint8_t vl;     /* data VL */
  uint8_t weight; /* 64-byte units, 0..255 */
};

/* The arbitration configuration of every port (read-only after init). */
struct ib_vlarb_table {
  struct ib_vlarb_entry entry[2][IB_VLARB_ENTRIES]; /* [0] high, [1] low priority */
  int count[2];                                     /* entries used per table */
  int high_limit;                                   /* LimitOfHighPriority, 4 KB units; 255: unlimited */
};

/* Per-output-port arbitration state. */
struct ib_vlarb_state {
  uint8_t index[2];   /* current entry per table */
  int32_t left[2];    /* bytes the current entry may still send (<= 0: take the next entry) */
  int32_t high_bytes; /* high-priority bytes since a low-priority packet went */
  int8_t last_table;  /* table of the last pick */
};

/* Parses "VL:weight,VL:weight,..." (or "none") into table t (0 high, 1 low). Returns 0, or -1
 * with a message in err (a VL >= num_vls, a weight above 255, more than 64 entries). */
int ib_vlarb_parse(struct ib_vlarb_table *tab, int t, const char *text, int num_vls, char *err, size_t errlen);
/* Fills table t with weight for each of the VLs 0..num_vls-1. */
void ib_vlarb_equal(struct ib_vlarb_table *tab, int t, int num_vls, uint8_t weight);
/* Whether a VL appears with a non-zero weight in a table. */
int ib_vlarb_serves(const struct ib_vlarb_table *tab, int vl);

/* The VL to serve now among those set in eligible (bit v: VL v has a packet that may go), or -1. */
int ib_vlarb_pick(const struct ib_vlarb_table *tab, struct ib_vlarb_state *s, uint32_t eligible);
/* Charges the bytes of the packet just picked on vl to the entry that picked it. */
void ib_vlarb_charge(const struct ib_vlarb_table *tab, struct ib_vlarb_state *s, uint32_t bytes);

/* Parses the SL-to-VL map: "mod" (SL mod num_vls) or up to 16 comma-separated VLs, SL s beyond
 * the list mapping to s mod num_vls. Returns 0 or -1 with a message. */
int ib_sl2vl_parse(uint8_t map[IB_NUM_SLS], const char *text, int num_vls, char *err, size_t errlen);

#endif
