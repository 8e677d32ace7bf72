/* Writing JSON values: the one place that decides how a string or a number appears in
 * summary.json, comparison.json and manifest.json.
 *
 * Strings come from users (platform node names, --cfg values, file names) and may hold quotes,
 * backslashes, control bytes or bytes that are not UTF-8; numbers may be inf or NaN after a
 * division by zero. JSON (RFC 8259) allows neither raw control characters in strings (section 7)
 * nor inf/NaN (section 6), so both are encoded here, never by hand in a format string. */
#ifndef SGFABRIC_JSON_OUT_H
#define SGFABRIC_JSON_OUT_H

#include <stdio.h>

/* Writes s as a JSON string literal with its quotes: '"' and '\\' escaped, control bytes as
 * \u00XX, each byte of an invalid UTF-8 sequence as \ufffd (RFC 8259 section 8.1 asks for UTF-8). */
void json_write_string(FILE *out, const char *s);
/* The same, or null when s is NULL (a value this run does not have). */
void json_write_string_or_null(FILE *out, const char *s);

/* Writes a number with 17 significant digits (round-trips a double), or null when it is not
 * finite. */
void json_write_number(FILE *out, double value);

/* The same number as text in buf (at least JSON_NUMBER_LEN bytes), for format strings:
 * fprintf(f, "\"x\": %s", JSON_NUMBER(x)). */
#define JSON_NUMBER_LEN 32
const char *json_number_text(char *buf, double value);
#define JSON_NUMBER(value) json_number_text((char[JSON_NUMBER_LEN]){ 0 }, (value))

#endif
