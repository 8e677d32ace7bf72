/* One command-line grammar for every sgfabric subcommand.
 *
 * Every subcommand describes its options in a table and reads them with cli_next(), so that all
 * of them accept the same forms (GNU getopt_long conventions):
 *   --name value   --name=value   -o value   -ovalue   -h / --help   "--" ends the options
 * Option names are matched exactly (no abbreviations: a prefix that is unique today would become
 * ambiguous when an option is added). An unknown or misspelled option is refused with the
 * closest valid name ("did you mean --fabric?"); integer values are parsed strictly (no junk, no
 * wrap-around) and range-checked, and the error names the option. Usage errors exit with
 * CLI_USAGE (2), errors met while running with CLI_FAILURE (1). */
#ifndef SGFABRIC_CLI_H
#define SGFABRIC_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_USAGE 2   /* exit status of a usage error: bad option, bad value, missing option */
#define CLI_FAILURE 1 /* exit status of an error met while running: unreadable input, write error */

/* CLI_OPTIONAL: a value after '=', or the next argument when it does not start with '-'; without
 * one, cli_next() returns the id with value NULL (--recompute alone, --recompute selective). */
enum cli_arg { CLI_FLAG, CLI_VALUE, CLI_OPTIONAL };

struct cli_option {
  const char *name;    /* long name without the dashes: "out" */
  char short_name;     /* one-letter synonym ('o'), or 0 */
  enum cli_arg arg;    /* CLI_FLAG takes no value, CLI_VALUE takes one, CLI_OPTIONAL may take one */
  int id;              /* what cli_next() returns; aliases share an id */
  const char *metavar; /* the value in --help ("DIR"), NULL for a flag */
  const char *help;    /* one line for --help; NULL: not listed (an alias listed elsewhere) */
};
/* The last row of every table. */
#define CLI_TABLE_END                                                                                                  \
  {                                                                                                                    \
    NULL, 0, CLI_FLAG, 0, NULL, NULL                                                                                   \
  }

/* What cli_next() returns besides an option's id (ids are >= 0). */
enum { CLI_DONE = -1, CLI_ERROR = -2, CLI_POSITIONAL = -3, CLI_HELP = -4 };

#define CLI_MAX_TABLES 4

struct cli {
  const char *prog; /* "sgfabric run": the prefix of every message */
  int argc;
  char **argv;
  int next; /* index of the next argument to read */
  int only_positional;
  const struct cli_option *tables[CLI_MAX_TABLES];
  int n_tables;
  /* Set by cli_next(): */
  const struct cli_option *opt; /* the option read (NULL for a positional argument) */
  int table;                    /* index of the table it came from */
  const char *value;            /* its value, or the positional argument */
  char spelled[80];             /* the option as written, without "=value": "--seed", "-o" */
};

/* argv[0] is the subcommand's name; reading starts at argv[1]. */
void cli_init(struct cli *c, const char *prog, int argc, char **argv);
/* Adds a table of options (terminated by CLI_TABLE_END); the first table that names an option
 * wins, so a subcommand can take over an option of a table it borrows. */
void cli_add_table(struct cli *c, const struct cli_option *table);
/* Reads the next argument: an option's id, CLI_POSITIONAL, CLI_HELP (-h, --help), CLI_DONE, or
 * CLI_ERROR after printing "PROG: message" on stderr (unknown option, with the closest valid
 * name; missing or empty value; a value given to a flag). */
int cli_next(struct cli *c);

/* The value of the option just read as an integer in [min, max]; prints an error naming the
 * option and returns -1 on junk, overflow or a value out of range. */
int cli_long(struct cli *c, long min, long max, long *out);
int cli_int(struct cli *c, int min, int max, int *out);
int cli_u64(struct cli *c, uint64_t *out);
/* The same checks on any text, without a message: 0, or -1 when it is not such an integer. */
int cli_parse_long(const char *text, long min, long max, long *out);
int cli_parse_u64(const char *text, uint64_t *out);

/* Prints "PROG: message" on stderr; returns CLI_USAGE, for `return cli_usage_error(...)`. */
int cli_usage_error(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Refuses a positional argument the subcommand does not take. */
int cli_unexpected(const struct cli *c);

/* Prints the listed rows of a table as "  --name METAVAR   help" (skipping the names of skip, a
 * table whose options are printed elsewhere, if not NULL). */
void cli_print_options(FILE *out, const struct cli_option *table, const struct cli_option *skip);

/* "Did you mean": the candidate closest to a misspelled word (Damerau-Levenshtein distance,
 * ignoring case), kept only when it is close enough to be a typo or the word is its prefix. */
struct cli_suggestion {
  const char *word;
  const char *best;
  int best_distance;
};
void cli_suggest_begin(struct cli_suggestion *s, const char *word);
void cli_suggest_consider(struct cli_suggestion *s, const char *candidate);
/* The best candidate, or NULL when none is close. */
const char *cli_suggest_result(const struct cli_suggestion *s);
/* Appends " (did you mean BEST?)" to buf when there is a close candidate among a NULL-terminated
 * list; prefix is prepended to the candidate in the message ("--" for options). */
void cli_did_you_mean(char *buf, size_t len, const char *word, const char *const *candidates, const char *prefix);
/* Optimal-string-alignment distance (insertions, deletions, substitutions and transpositions of
 * adjacent characters), ignoring ASCII case. */
int cli_edit_distance(const char *a, const char *b);

#endif
