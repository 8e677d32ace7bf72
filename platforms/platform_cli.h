/* The "sgfabric platform" subcommand: writes a fat-tree platform file (docs/platforms.md). */
#ifndef SGFABRIC_PLATFORM_CLI_H
#define SGFABRIC_PLATFORM_CLI_H

/* argv[0] is the subcommand name ("platform"). Returns the process exit status: 0 on success,
 * 2 for a usage error (unknown or malformed option, impossible topology), 1 when the file
 * cannot be written. Errors go to stderr as "sgfabric platform: <message>". */
int platform_cli_main(int argc, char **argv);

/* The same, for a caller that writes the file where it will not stay (compare writes into a
 * temporary directory that is renamed at the end): when argv ends with "-o FILE", the command
 * recorded in the file's sgfabric/command prop says "-o recorded_out" instead, so that the file
 * does not depend on the temporary name (NULL: record argv as it is). */
int platform_cli_generate(int argc, char **argv, const char *recorded_out);

/* The options of "sgfabric platform" (cli.h), for the subcommands that build a platform. */
struct cli_option;
const struct cli_option *platform_cli_options(void);

#endif
