/* Output files written whole or not at all, and never anything but a regular file: the data go
 * to a temporary file next to the target, renamed over it once complete. An existing target
 * that is not a regular file (a device such as /dev/null, a directory, a fifo, a socket) or is
 * a symbolic link is refused before anything is written: renaming over it would replace it. */
#ifndef SGFABRIC_ATOMIC_FILE_H
#define SGFABRIC_ATOMIC_FILE_H

#include <stdio.h>

struct atomic_file {
  char path[4096];
  char tmp[4200];
  FILE *f;
};

/* Opens the temporary file for path; NULL with a message naming path if path may not be
 * written or the temporary file cannot be created. */
FILE *atomic_file_open(struct atomic_file *a, const char *path, char *err, size_t errlen);
/* Closes the file and renames it over path; -1 with a message (and nothing left behind) if
 * anything written failed, or if SIGINT, SIGTERM or SIGHUP arrived meanwhile: those signals
 * are held while the file is written, then act as usual once the temporary file is gone. */
int atomic_file_commit(struct atomic_file *a, char *err, size_t errlen);
/* Closes and removes the temporary file. */
void atomic_file_abort(struct atomic_file *a);

#endif
