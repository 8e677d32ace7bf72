/* Unit parsing for every quantity a user types: rates, times, sizes.
 *
 * Internally sgfabric works in SI base units held in doubles, like SimGrid:
 * seconds, bytes, bytes per second. Conversion happens only here, at the edge.
 *
 *   rate: "400Gbps" "400Gb/s" "50GBps" "100Mbps" "1e9Bps"  -> bytes per second
 *         (b = bit, B = byte; k/M/G/T are powers of 1000, Ki/Mi/Gi/Ti of 1024)
 *   time: "1us" "500ns" "2.5ms" "1s" "100ps"                 -> seconds
 *   size: "9MB" "100KB" "4096B" "4KiB" "4096"                -> bytes
 *         (sizes follow SimGrid and the switch data sheets: kB/KB = 1000, KiB = 1024)
 *
 * A rate or a time needs its unit; a size or a plain count may omit it (bytes).
 */
#ifndef SGFABRIC_UNITS_H
#define SGFABRIC_UNITS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  UNIT_NONE,    /* a plain number (count, probability, ratio) */
  UNIT_BYTES,   /* a size in bytes */
  UNIT_SECONDS, /* a duration in seconds */
  UNIT_BPS,     /* a rate in bytes per second */
} unit_kind;

/* Each parser returns 0 and stores the value, or -1 (value untouched) when the text is
 * not a finite, non-negative number followed by a known unit of that kind. */
int fab_unit_parse_rate(const char *text, double *bytes_per_s);
int fab_unit_parse_time(const char *text, double *seconds);
int fab_unit_parse_size(const char *text, double *bytes);
int fab_unit_parse_number(const char *text, double *value);
int fab_unit_parse(unit_kind kind, const char *text, double *value);

/* Why fab_unit_parse(kind, text) refused text, as a phrase for messages: "is not a number",
 * "is negative", "is too large (overflows after scaling)", "has an unknown unit 'XB'",
 * "needs a unit", "has trailing text 'x'"; NULL if it parses. */
const char *fab_unit_parse_why(unit_kind kind, const char *text, char *buf, int buflen);

/* The unit's canonical suffix for messages and tables ("B", "s", "B/s", ""). */
const char *fab_unit_name(unit_kind kind);

/* Formats a value with a readable unit ("400Gbps", "1.5us", "9MB") into buf. */
void fab_unit_format(unit_kind kind, double value, char *buf, int buflen);

#ifdef __cplusplus
}
#endif

#endif
