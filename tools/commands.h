/* The subcommands of the sgfabric tool; each takes argv with argv[0] = its name. */
#ifndef SGFABRIC_COMMANDS_H
#define SGFABRIC_COMMANDS_H

int cmd_flows(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_deployment(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_coll(int argc, char **argv);
int cmd_sweep(int argc, char **argv);

#endif
