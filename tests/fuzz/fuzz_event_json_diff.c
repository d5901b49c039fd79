/*
 * fuzz_event_json_diff.c - libFuzzer target: the flat decoder
 * (event_from_json) against the jansson reference (event_from_json_jansson)
 * on arbitrary bytes. Both must accept or both refuse, and an accepted
 * input must decode to the same event: header, fields in order with the
 * same keys (the same interned pointers), types and values (reals
 * bit-for-bit), string bytes.
 */
#include "fuzz_common.h"

/* Aborts with both events' JSON when a and b differ. */
static void diff_events(const struct event *a, const struct event *b, const uint8_t *in, size_t n)
{
    const char *why = NULL;
    if (a->ts_ms != b->ts_ms) why = "@timestamp";
    else if (a->created_ms != b->created_ms) why = "event.created";
    else if (a->kind != b->kind && (!a->kind || !b->kind || strcmp(a->kind, b->kind))) why = "event.kind";
    else if (a->dataset != b->dataset && (!a->dataset || !b->dataset || strcmp(a->dataset, b->dataset))) why = "event.dataset";
    else if (a->host != b->host && (!a->host || !b->host || strcmp(a->host, b->host))) why = "host.name";
    else if (a->path != b->path && (!a->path || !b->path || strcmp(a->path, b->path))) why = "log.file.path";
    else if (a->offset != b->offset) why = "log.offset";
    else if (strcmp(a->id, b->id)) why = "event.id";
    else if (a->nf != b->nf) why = "number of fields";
    else {
        for (size_t i = 0; i < a->nf && !why; i++) {
            const struct ev_field *x = &a->f[i], *y = &b->f[i];
            if (x->key != y->key) why = "field key (interned pointer)";
            else if (x->type != y->type) why = "field type";
            else if (x->type == EV_INT && x->v.i != y->v.i) why = "integer value";
            else if (x->type == EV_NUM && memcmp(&x->v.d, &y->v.d, sizeof x->v.d)) why = "real value";
            else if (x->type == EV_BOOL && x->v.b != y->v.b) why = "boolean value";
            else if (x->type == EV_STR && (x->v.s.len != y->v.s.len ||
                                           memcmp(event_str(a, x), event_str(b, y), x->v.s.len)))
                why = "string value";
        }
    }
    if (!why) return;
    struct buf ja, jb;
    buf_init(&ja);
    buf_init(&jb);
    event_to_json(a, &ja);
    event_to_json(b, &jb);
    fprintf(stderr, "fuzz: decoders disagree on %s\ninput: %.*s\nflat:    %s\njansson: %s\n", why, (int)n,
            (const char *)in, ja.p, jb.p);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct event flat, ref;
    static int init;
    if (!init) {
        gl_tz_set("UTC");
        event_init(&flat);
        event_init(&ref);
        init = 1;
    }
    char e1[GL_ERRLEN] = "", e2[GL_ERRLEN] = "";
    int r1 = event_from_json(&flat, (const char *)data, size, e1, sizeof e1);
    int r2 = event_from_json_jansson(&ref, (const char *)data, size, e2, sizeof e2);
    if (r1 != r2) {
        fprintf(stderr, "fuzz: flat decoder %s, jansson %s\ninput (%zu bytes): %.*s\nflat: %s\njansson: %s\n",
                r1 == GL_OK ? "accepts" : "refuses", r2 == GL_OK ? "accepts" : "refuses", size, (int)size,
                (const char *)data, r1 == GL_OK ? "-" : e1, r2 == GL_OK ? "-" : e2);
        abort();
    }
    if (r1 != GL_OK) {
        if (!e1[0]) { fprintf(stderr, "fuzz: refusal without a reason\n"); abort(); }
        return 0;
    }
    diff_events(&flat, &ref, data, size);
    return 0;
}
