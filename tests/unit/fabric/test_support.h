/* Helpers shared by the engine tests: shipped and generated platforms, fabrics without SimGrid. */
#ifndef SGFABRIC_TEST_SUPPORT_H
#define SGFABRIC_TEST_SUPPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fabric.h"
#include "platform.h"
#include "platform_cli.h"

#ifndef SGF_SOURCE_DIR
#error "SGF_SOURCE_DIR must name the source tree"
#endif

static inline struct platform *load_shipped(const char *name)
{
  char path[1024], err[512];
  snprintf(path, sizeof path, "%s/platforms/%s", SGF_SOURCE_DIR, name);
  struct platform *p = platform_load(path, err, sizeof err);
  if (p == NULL)
    fprintf(stderr, "%s\n", err);
  return p;
}

/* Generates a platform with the platform subcommand's options into a temporary file. */
static inline struct platform *load_generated(const char *const *options, int n)
{
  char path[] = "/tmp/sgf-test-platform-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return NULL;
  close(fd);
  char *argv[64];
  int argc = 0;
  argv[argc++] = "platform";
  for (int i = 0; i < n; i++)
    argv[argc++] = (char *)options[i];
  argv[argc++] = "-o";
  argv[argc++] = path;
  argv[argc] = NULL;
  struct platform *p = NULL;
  if (platform_cli_main(argc, argv) == 0) {
    char err[512];
    p = platform_load(path, err, sizeof err);
    if (p == NULL)
      fprintf(stderr, "%s\n", err);
  }
  unlink(path);
  return p;
}

static inline struct param_set *default_params(void)
{
  fabric_register_params();
  return fab_param_set_new();
}

#endif
