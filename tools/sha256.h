/* SHA-256 (FIPS 180-4) of a file, for the manifest's record of every input. */
#ifndef SGFABRIC_SHA256_H
#define SGFABRIC_SHA256_H

/* Writes the 64 hex digits and a NUL into hex[65]. Returns 0, or -1 if the file cannot be read. */
int sha256_file(const char *path, char hex[65]);
/* Same for a buffer. */
void sha256_buffer(const void *data, unsigned long len, char hex[65]);

#endif
