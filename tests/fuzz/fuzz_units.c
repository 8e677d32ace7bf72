/* libFuzzer harness: unit parsing (plugins/fabric/units.c) and strict indices (text_input.c).
 * Checks the promises of units.h: a value is finite and non-negative when parsing succeeds,
 * untouched when it fails, and fab_unit_parse_why explains every failure. */
#include <math.h>

#include "fuzz_support.h"
#include "text_input.h"
#include "units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_string(data, size);
  const unit_kind kinds[] = { UNIT_NONE, UNIT_BYTES, UNIT_SECONDS, UNIT_BPS };
  for (int k = 0; k < 4; k++) {
    double value = -42;
    char why[64], formatted[64];
    if (fab_unit_parse(kinds[k], text, &value) == 0) {
      if (!isfinite(value) || (kinds[k] != UNIT_NONE && value < 0))
        abort(); /* units.h: finite, non-negative */
      if (fab_unit_parse_why(kinds[k], text, why, sizeof why) != NULL)
        abort();
      fab_unit_format(kinds[k], value, formatted, sizeof formatted);
    } else {
      if (value != -42)
        abort(); /* value untouched on failure */
      if (fab_unit_parse_why(kinds[k], text, why, sizeof why) == NULL)
        abort();
    }
  }
  long long index;
  if (text_parse_index(text, 1000000, &index) == 0 && (index < 0 || index > 1000000))
    abort();
  free(text);
  return 0;
}
