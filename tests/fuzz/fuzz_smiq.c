/* fuzz_smiq.c - libFuzzer target: the nvidia-smi -q parser over arbitrary
 * lines (see fuzz_common.h for the checks on every emitted event). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_parser(&parser_smiq, NULL, data, size);
    return 0;
}
