/* Loads a generated platform with SimGrid itself and checks its host count: the file must
 * be valid for SimGrid's own parser, not only for the fabric's libxml2 reader.
 * usage: load_platform FILE EXPECTED_HOSTS */
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  simgrid_init(&argc, argv);
  if (argc != 3) {
    fprintf(stderr, "usage: %s FILE EXPECTED_HOSTS\n", argv[0]);
    return 2;
  }
  simgrid_load_platform(argv[1]);
  size_t hosts = sg_host_count();
  size_t expected = strtoul(argv[2], NULL, 10);
  if (hosts != expected) {
    fprintf(stderr, "%s: %zu hosts, expected %zu\n", argv[1], hosts, expected);
    return 1;
  }
  printf("%s: %zu hosts\n", argv[1], hosts);
  return 0;
}
