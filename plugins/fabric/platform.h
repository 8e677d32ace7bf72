/* Reading a platform file: the SimGrid platform XML that describes the cluster, read again with
 * libxml2 to build the fabric's switch graph (SimGrid keeps only hosts and links of it).
 *
 * The file's zone carries "sgfabric/..." props (the fat-tree parameters, docs/platforms.md) and
 * may carry model parameters ("ib/...", "roce/...", "fabric/..."). Hosts are GPUs named gpu<i>;
 * routers are nvs<n>, leaf<i>, spine<i>, agg<i>, core<i>; a link's id names its two ends,
 * "lower--upper" with an optional "#k" for parallel links. After reading, the graph is checked
 * against the declared fat-tree: every link the parameters imply, nothing else. */
#ifndef SGFABRIC_PLATFORM_H
#define SGFABRIC_PLATFORM_H

#include <stddef.h>

#include "param.h"
#include "topo.h"

struct platform_prop {
  char *name;
  char *value;
  int line;
};

struct platform {
  char *path;
  struct topo *topo;
  struct platform_prop *props; /* every zone prop, in file order */
  int n_props;
  int gpus_per_node;
  char gpu_type[32];
};

/* Reads and checks path. Returns NULL with "FILE:LINE: message" in err. */
struct platform *platform_load(const char *path, char *err, size_t errlen);
/* Parses len bytes of XML (named path in messages) with libxml2's options; on failure NULL with
 * "PATH:LINE: malformed XML: <libxml2's first error>" in err. The error goes through the parse's
 * own context, not a process-wide handler (the deployment reader shares it). */
struct _xmlDoc;
struct _xmlDoc *platform_xml_read(const char *text, size_t len, const char *path, int options, char *err,
                                  size_t errlen);
/* The same from len bytes of XML (named path in messages). */
struct platform *platform_parse(const char *text, size_t len, const char *path, char *err, size_t errlen);
void platform_free(struct platform *p);

/* Applies the zone's model-parameter props ("ib/...", ...) to set. Returns 0, or -1 with
 * "FILE:LINE: message" in err. Props of areas no table registered are ignored. */
int platform_apply_params(const struct platform *p, struct param_set *set, char *err, size_t errlen);

/* The value of a zone prop, or NULL. */
const char *platform_prop(const struct platform *p, const char *name);

#endif
