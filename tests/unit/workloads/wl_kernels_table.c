/* Prints the kernel model's predicted against published throughput (docs/compute-model.md, "Predicted
 * vs published kernel throughput"); test_wl_kernels checks every row within its tolerance. */
#include <stdio.h>

#include "wl_kernels.h"

int main(void)
{
  double worst = wl_kernels_print_table(stdout);
  printf("\nLargest error relative to its tolerance: %.2f\n", worst);
  return 0;
}
