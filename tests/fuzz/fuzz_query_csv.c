/* fuzz_query_csv.c - libFuzzer target: the query_csv parser over arbitrary lines
 * (see fuzz_common.h for the checks on every emitted event). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_parser(&parser_query_csv, "index,name,utilization.gpu,power.draw", data, size);
    return 0;
}
