/* A results directory (--out DIR), written so that a user's files are never lost:
 *
 * - DIR may be replaced only when it is a previous result of sgfabric (its manifest.json carries
 *   the format marker RESULTS_FORMAT) or when the user said --force; never when it is, or holds,
 *   the current directory or an input. This is checked before anything is simulated.
 * - Everything is written to a temporary sibling directory, created before the simulation (so
 *   that an unwritable or impossible DIR is reported at once), renamed into place when complete.
 * - The old DIR is moved aside first and only its own files (those its manifest lists) are
 *   deleted after the new one is in place; anything else it held is kept, and reported.
 * - An interrupted run (SIGINT, SIGTERM, SIGHUP) or a failed one removes the temporary directory,
 *   leaves every other file as it was and, for a signal, prints one line and exits 128 + signal. */
#ifndef SGFABRIC_RESULTS_H
#define SGFABRIC_RESULTS_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The value of manifest.json's "format" key: what makes a directory a result of sgfabric. */
#define RESULTS_FORMAT "sgfabric-results/1"
/* Exit status of a refused --out (a usage error). */
#define RESULTS_REFUSED 2

#define RESULTS_MAX_ENTRIES 64
#define RESULTS_MAX_NAME 128
#define RESULTS_MAX_CHILDREN 8

#include "json_out.h"

struct results {
  char command[32]; /* "sgfabric run", for messages */
  char dir[4096];   /* --out as given, without trailing '/' (messages) */
  char path[4096];  /* the same, absolute and canonical (the operations) */
  char tmp[4160];   /* the temporary sibling */
  int tmp_fd;       /* tmp, open: the signal handler unlinks its entries relative to it */
  int force;
  char interrupt_line[96]; /* "sgfabric run: interrupted, nothing written\n" */
  /* The entries written to tmp, in order ("name" or "name/" for a sub-result): manifest.json
   * lists them, and the signal handler unlinks them. n_entries grows only after the name is
   * stored, so the handler never reads a half-written name. */
  char entries[RESULTS_MAX_ENTRIES][RESULTS_MAX_NAME];
  volatile sig_atomic_t n_entries;
};

/* What the handler of SIGINT, SIGTERM and SIGHUP does. */
enum results_signals {
  /* Removes the temporary directory, prints "COMMAND: interrupted, nothing written", _exit(128 +
   * signal). For flows and run, whose simulation runs in SimGrid's main loop and never returns
   * to us until the end: the handler uses only async-signal-safe calls (unlinkat of the
   * registered entries, rmdir, write, _exit). */
  RESULTS_SIGNALS_EXIT,
  /* Records the signal and sends SIGTERM to the registered child processes; the caller polls
   * results_interrupted() (compare, which only waits for its children). */
  RESULTS_SIGNALS_FLAG,
};

/* Checks that dir may be written (see above; force allows replacing a directory that is not a
 * result) and creates the temporary directory. inputs (n_inputs, NULL entries skipped) are the
 * files the run reads. Returns 0, or the exit status with a message: RESULTS_REFUSED for a
 * directory that must not be replaced, 1 when it cannot be created. */
int results_begin(struct results *r, const char *command, const char *dir, int force, const char *const *inputs,
                  int n_inputs, char *err, size_t errlen);
/* Installs the handlers of SIGINT, SIGTERM and SIGHUP for the results begun last, and of
 * SIGABRT (removes the temporary directory, then aborts as before). Call again after
 * simgrid_init: SimGrid installs its own SIGINT handler there. */
void results_catch_signals(enum results_signals mode);
/* The signal received in RESULTS_SIGNALS_FLAG mode, 0 if none. */
int results_interrupted(void);
/* Removes the temporary directory, prints the interruption line; returns the exit status
 * 128 + signal. */
int results_interrupted_exit(struct results *r);
/* Child processes to signal with SIGTERM when interrupted (RESULTS_SIGNALS_FLAG). */
void results_add_child(pid_t pid);
void results_remove_child(pid_t pid);

/* Records an entry that something else writes into the temporary directory (a child's result
 * directory: "name/"; a file a script writes). Returns 0 or -1 (too many, or a bad name). */
int results_register(struct results *r, const char *name);
/* Opens a file of the results for writing (and records it). */
FILE *results_open(struct results *r, const char *name);
/* Closes f; returns -1 if anything written to it failed. */
int results_close(FILE *f);
/* Puts the temporary directory in place of dir, then deletes the old result's own files.
 * Returns 0, or the exit status with a message (the temporary directory is then removed). */
int results_commit(struct results *r, char *err, size_t errlen);
/* Removes the temporary directory and everything in it (all of it was written by this run). */
void results_abort(struct results *r);

/* Writes manifest.json: the format marker, command line, SHA-256 of each input, seed, versions
 * and the entries written so far (the files a later run may delete when it replaces this one). */
int results_write_manifest(struct results *r, int argc, char **argv, const char *const *inputs, int n_inputs,
                           uint64_t seed);

/* What manifest.json records, for the writers that need more than the command's own inputs. */
struct manifest_desc {
  int argc;
  char **argv;                 /* the subcommand's arguments, argv[0] its name */
  const char *const *inputs;   /* paths as recorded (relative to the working directory, or to base) */
  const char *const *given_as; /* NULL, or per input NULL or the path the command line gave for it */
  int n_inputs;
  const char *base; /* NULL, or the directory the input paths are relative to */
  uint64_t seed;
  const char *extra_json; /* NULL, or more members ("key": value, ...) written as they are */
};
/* Writes manifest.json from d: also the working directory, so that "sgfabric replay" finds the
 * inputs the command line named relatively. */
int results_write_manifest_desc(struct results *r, const struct manifest_desc *d);

/* Copies the file src to dst (an input copied into a results directory); 0 or -1 with errno. */
int results_copy_file(const char *src, const char *dst);

#endif
