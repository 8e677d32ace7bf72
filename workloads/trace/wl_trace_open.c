/* Format dispatch: "simai:FILE" goes to the SimAI importer, "chakra:PREFIX" to the Chakra
 * execution-trace importer, anything else is native. */
#include <string.h>

#include "wl_chakra.h"
#include "wl_simai.h"
#include "wl_trace.h"

struct wl_trace *wl_trace_open_on(const char *spec, int platform_gpus, char *err, size_t errlen)
{
  if (strncmp(spec, "simai:", 6) == 0)
    return wl_simai_load(spec + 6, platform_gpus, err, errlen);
  if (strncmp(spec, "chakra:", 7) == 0)
    return wl_chakra_load(spec + 7, err, errlen);
  return wl_trace_load(spec, err, errlen);
}

struct wl_trace *wl_trace_open(const char *spec, char *err, size_t errlen)
{
  return wl_trace_open_on(spec, 0, err, errlen);
}
