/* fuzz_jsonl.c - libFuzzer target: the JSON lines parser (W&B, other
 * loggers, gpulog events) over arbitrary lines (see fuzz_common.h for the
 * checks on every emitted event). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_parser(&parser_jsonl, NULL, data, size);
    return 0;
}
