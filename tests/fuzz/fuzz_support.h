/* Shared by the libFuzzer harnesses: the input as a NUL-terminated string or as a read-only
 * stream in memory (fmemopen), so that no harness touches the file system. */
#ifndef SGF_FUZZ_SUPPORT_H
#define SGF_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libFuzzer's entry point, which every harness defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A copy of the input with a NUL appended (the caller frees it). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);
  if (s == NULL)
    abort();
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* The input as a stream; *copy must be freed after fclose. An empty input is an empty stream. */
static inline FILE *fuzz_stream(const uint8_t *data, size_t size, char **copy)
{
  *copy = fuzz_string(data, size);
  FILE *f = fmemopen(*copy, size ? size : 1, "r");
  if (f == NULL)
    abort();
  if (size == 0)
    fgetc(f); /* reads the NUL of the one-byte buffer: at end of file like an empty file */
  return f;
}

#endif
