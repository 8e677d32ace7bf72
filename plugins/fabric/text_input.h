/* Reading the text inputs users write (flow CSV, workload traces, model files, SimAI files):
 * one place that opens them with messages naming the file, and reads lines that name their
 * number when something other than text is found.
 *
 *   text_input_open   "F: cannot open the flow file: No such file or directory",
 *                     "F: is a directory, not a flow file"
 *   text_input_line   one line without its end of line (\n, \r\n), a UTF-8 byte order mark
 *                     removed from line 1 (editors on Windows add one; it is invisible in a
 *                     message that shows the line), "F:N: NUL byte at column C: not a text file"
 *
 * Integers that name something (a rank, a GPU index, a count) are read with
 * text_parse_index: decimal digits only, so "4294967296" or "7junk" is refused rather than
 * wrapped or cut. */
#ifndef SGFABRIC_TEXT_INPUT_H
#define SGFABRIC_TEXT_INPUT_H

#include <stddef.h>
#include <stdio.h>

/* Opens path for reading; what names the kind of file in messages ("flow file"). Returns the
 * stream or NULL with "PATH: ..." in err (strerror, or "is a directory"). */
FILE *text_input_open(const char *path, const char *what, char *err, size_t errlen);

/* Reads the whole file (an XML input) into a NUL-terminated buffer the caller frees; NULL with
 * "PATH: ..." in err (the messages of text_input_open, "read error: ...", "larger than MAX"). */
char *text_input_slurp(const char *path, const char *what, size_t max, size_t *len, char *err, size_t errlen);

struct text_input {
  FILE *in;
  const char *path; /* for messages */
  int line;         /* number of the line last returned (1-based) */
  size_t max_len;   /* longest line accepted (bytes without the end of line), 0 for no limit */
  char *buf;
  size_t cap;
};

/* A reader over an open stream (the caller keeps ownership of it). */
void text_input_init(struct text_input *t, FILE *in, const char *path, size_t max_len);
/* Frees the line buffer. */
void text_input_free(struct text_input *t);
/* Reads the next line into *line (valid until the next call, may be modified by the caller).
 * Returns 1 for a line, 0 at end of file, -1 with "PATH:LINE: ..." in err (NUL byte, line too
 * long, read error with strerror). */
int text_input_line(struct text_input *t, char **line, size_t *len, char *err, size_t errlen);

/* A non-negative decimal integer of digits only (no sign, blank, '0x', exponent, leading zero
 * unless it is "0") that is at most max. Returns 0 and the value, -1 if it is not one. */
int text_parse_index(const char *text, long long max, long long *value);

/* Whether a date an input sets, us microseconds (field at path:line, written text), lies
 * beyond FAB_MAX_DATE_S, where dates no longer time a packet; if so, err gets the message
 * ("F:N: start_us must be at most 100000000000 (...), found 1e30"). */
int text_date_us_too_late(double us, const char *path, int line, const char *field, const char *text, char *err,
                          size_t errlen);

#endif
