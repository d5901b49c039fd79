/*
 * fuzz_event_json.c - libFuzzer target: event_from_json over arbitrary bytes.
 * Whatever it accepts must encode (event_to_json) to valid JSON that decodes
 * again, and one decode/encode round later the text must be a fixed point.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct event ev, back;
    static struct buf a, b;
    static int init;
    if (!init) {
        gl_tz_set("UTC");
        event_init(&ev);
        event_init(&back);
        buf_init(&a);
        buf_init(&b);
        init = 1;
    }
    char err[GL_ERRLEN];
    if (event_from_json(&ev, (const char *)data, size, err, sizeof err) != GL_OK) {
        if (!err[0]) { fprintf(stderr, "fuzz: refusal without a reason\n"); abort(); }
        return 0;
    }
    buf_reset(&a);
    event_to_json(&ev, &a);
    json_error_t je;
    json_t *j = json_loadb(a.p, a.len, 0, &je);
    if (!j || !json_is_object(j)) {
        fprintf(stderr, "fuzz: re-encoded event is not valid JSON: %s\n%.*s\n", je.text, (int)a.len, a.p);
        abort();
    }
    json_decref(j);
    if (event_from_json(&back, a.p, a.len, err, sizeof err) != GL_OK) {
        fprintf(stderr, "fuzz: re-encoded event refused: %s\n%.*s\n", err, (int)a.len, a.p);
        abort();
    }
    buf_reset(&b);
    event_to_json(&back, &b);
    /* second round: decode(b) must encode to b again */
    if (event_from_json(&back, b.p, b.len, err, sizeof err) != GL_OK) {
        fprintf(stderr, "fuzz: second round refused: %s\n", err);
        abort();
    }
    buf_reset(&a);
    event_to_json(&back, &a);
    if (a.len != b.len || memcmp(a.p, b.p, a.len)) {
        fprintf(stderr, "fuzz: encoding is not a fixed point:\n%.*s\n%.*s\n", (int)b.len, b.p, (int)a.len, a.p);
        abort();
    }
    return 0;
}
