/*
 * test_event.c - unit tests of core/event.c: field accessors, deterministic
 * event ids, and the event_to_json -> event_from_json round trip (field by
 * field and as text), plus the decoder's refusals.
 */
#include "../core/event.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Fills ev with one field of every type and awkward values. */
static void fill(struct event *ev, const char *longstr, size_t longlen)
{
    event_init(ev);
    ev->ts_ms = 1762485301123LL;
    ev->created_ms = 1762485302000LL;
    ev->kind = "metric";
    ev->dataset = "gpu.dmon";
    ev->host = "n\"1";
    ev->path = "/var/log/gpu/dmon.log";
    ev->offset = 168;
    event_make_id(ev, ev->host, ev->path, 0, ev->offset, "line", 4);
    event_add_int(ev, "gpu.index", 3);
    event_add_int(ev, "gpu.dmon.neg", -42);
    event_add_int(ev, "gpu.dmon.big", 123456789012345678LL);
    event_add_num(ev, "gpu.power.usage", 391.42);
    event_add_num(ev, "gpu.dmon.tiny", 1e-300);
    event_add_bool(ev, "gpu.throttling.thermal.active", 1);
    event_add_bool(ev, "gpu.throttling.reason.sw_power_cap", 0);
    event_add_str(ev, "gpu.name", "NVIDIA H100 80GB HBM3", 21);
    const char *esc = "tab\there \"q\" back\\slash \xe2\x82\xac";
    event_add_str(ev, "gpu.dmon.esc", esc, strlen(esc));
    event_add_str(ev, "gpu.dmon.empty", "", 0);
    event_add_str(ev, "gpu.dmon.long", longstr, longlen);
    event_add_int(ev, "odd\"key", 1);
    ev->original = "    3    391 raw";
    ev->original_len = 16;
}

TEST(accessors)
{
    struct event ev;
    event_init(&ev);
    CHECK_EQ_INT(ev.offset, -1);
    event_add_int(&ev, "a.b", 5);
    event_add_str(&ev, "s", "xyz", 3);
    event_add_bool(&ev, "f", 1);
    double d = 0;
    CHECK(event_get_num(&ev, "a.b", &d) && d == 5);
    CHECK(event_get_num(&ev, "f", &d) && d == 1);
    CHECK(!event_get_num(&ev, "s", &d));
    CHECK(!event_get_num(&ev, "missing", &d));
    size_t n = 0;
    const char *s = event_get_str(&ev, "s", &n);
    CHECK(s && n == 3 && !memcmp(s, "xyz", 3));
    CHECK(event_get_str(&ev, "a.b", &n) == NULL);
    event_set_str(&ev, "s", "longer value", 12);
    s = event_get_str(&ev, "s", &n);
    CHECK(s && n == 12 && !strcmp(s, "longer value"));
    event_set_str(&ev, "new", "v", 1);
    CHECK_EQ_INT(ev.nf, 4);
    event_reset(&ev);
    CHECK_EQ_INT(ev.nf, 0);
    CHECK_EQ_INT(ev.offset, -1);
    CHECK(event_get(&ev, "a.b") == NULL);
    /* many fields: the array grows */
    static char keys[100][16];   /* "k" and any int: the compiler checks the bound */
    for (int i = 0; i < 100; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        event_add_int(&ev, keys[i], i);
    }
    CHECK(event_get_num(&ev, "k99", &d) && d == 99);
    event_free(&ev);
}

TEST(ids)
{
    struct event a, b;
    event_init(&a);
    event_init(&b);
    event_make_id(&a, "h", "/p", 0, 100, "line", 4);
    event_make_id(&b, "h", "/p", 0, 100, "line", 4);
    CHECK_EQ_STR(a.id, b.id);
    CHECK_EQ_INT(strlen(a.id), 32);
    event_make_id(&b, "h", "/p", 0, 101, "line", 4);
    CHECK(strcmp(a.id, b.id) != 0);
    event_make_id(&b, "h2", "/p", 0, 100, "line", 4);
    CHECK(strcmp(a.id, b.id) != 0);
    event_make_id(&b, "h", "/q", 0, 100, "line", 4);
    CHECK(strcmp(a.id, b.id) != 0);
    event_make_id(&b, "h", "/p", 0, 100, "linE", 4);
    CHECK(strcmp(a.id, b.id) != 0);
    /* the same line at the same offset of the next file of a rotated path */
    char g1[33], g2[33];
    event_make_id(&b, "h", "/p", 1, 100, "line", 4);
    CHECK(strcmp(a.id, b.id) != 0);
    memcpy(g1, b.id, sizeof g1);
    event_make_id(&b, "h", "/p", 2, 100, "line", 4);
    memcpy(g2, b.id, sizeof g2);
    CHECK(strcmp(g1, g2) != 0 && strcmp(a.id, g2) != 0);
    event_make_id(&b, "h", "/p", 1, 100, "line", 4);
    CHECK_EQ_STR(b.id, g1);
    /* stdin ("-" / NULL source) is its own identity and stable */
    event_make_id(&a, "h", NULL, 0, 0, "x", 1);
    event_make_id(&b, "h", NULL, 0, 0, "x", 1);
    CHECK_EQ_STR(a.id, b.id);
    event_make_id(&b, NULL, NULL, 0, 0, "x", 1);
    CHECK(strcmp(a.id, b.id) != 0);
    event_free(&a);
    event_free(&b);
}

TEST(ids_hash_every_tail_length)
{
    /* the last 0..7 bytes of a fed string are read from the word that ends
     * with them: ids of every length 0..40, from unaligned starts, as the
     * byte-at-a-time code made them (digest pinned from that code) */
    const char *data = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    char all[41 * 32 + 1], hex[33];
    for (int n = 0; n <= 40; n++) {
        struct hash128 h;
        hash128_init(&h);
        hash128_feed(&h, data + (n % 5), (size_t)n);
        hash128_hex(&h, hex);
        memcpy(all + 32 * n, hex, 32);
    }
    all[41 * 32] = '\0';
    char got[17];
    snprintf(got, sizeof got, "%016llx", (unsigned long long)hash64(all, strlen(all), 0));
    CHECK_EQ_STR(got, "8fcd8027fa4bdf23");
    CHECK(!memcmp(all + 32 * 7, "41fabe1c7a07e95507e5b7de9c7f862b", 32));
    CHECK(!memcmp(all + 32 * 13, "7292b6050b0953ae3e6fae3f609e1668", 32));
}

/* event.id as composed from the hash API (the reference of event_make_id). */
static void id_ref(char out[33], const char *host, const char *source, uint64_t gen, int64_t off,
                   const char *line, size_t len)
{
    struct hash128 h;
    hash128_init(&h);
    hash128_feed(&h, host ? host : "", host ? strlen(host) : 0);
    hash128_feed(&h, source ? source : "-", source ? strlen(source) : 1);
    if (gen) {
        hash128_feed(&h, "\0gen", 4);
        hash128_feed_u64(&h, gen);
    }
    hash128_feed_u64(&h, (uint64_t)off);
    hash128_feed(&h, line, len);
    hash128_hex(&h, out);
}

TEST(ids_prefix_follows_content)
{
    /* event_make_id keeps the hash of the last host and source: a name
     * changed in place (same address, same or other length), a long name
     * and NULLs must give the ids the hash API gives */
    struct event ev;
    event_init(&ev);
    char host[80] = "node-a", src[400] = "/var/log/dmon.log", want[33];
    static const struct { const char *host, *src; } steps[] = {
        { "node-a", "/var/log/dmon.log" }, { "node-a", "/var/log/dmon.log" }, { "node-b", "/var/log/dmon.log" },
        { "node-b", "/var/log/dmon.loh" }, { "node-bb", "/var/log/dmon.log" }, { "", "-" },
        { "node-a", "/var/log/dmon.log" },
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(steps); i++) {
        snprintf(host, sizeof host, "%s", steps[i].host);
        snprintf(src, sizeof src, "%s", steps[i].src);
        for (int64_t off = 0; off < 3; off++) {
            event_make_id(&ev, host, src, (uint64_t)off, off * 50, "  0  300  40", 12);
            id_ref(want, host, src, (uint64_t)off, off * 50, "  0  300  40", 12);
            CHECK_EQ_STR(ev.id, want);
        }
    }
    memset(host, 'h', 79);
    host[79] = '\0';
    memset(src, 's', 399);
    src[399] = '\0';
    for (int k = 0; k < 2; k++) {
        event_make_id(&ev, host, src, 0, 7, "x", 1);
        id_ref(want, host, src, 0, 7, "x", 1);
        CHECK_EQ_STR(ev.id, want);
        src[398] = 't';
    }
    event_make_id(&ev, NULL, NULL, 0, 7, "x", 1);
    id_ref(want, NULL, NULL, 0, 7, "x", 1);
    CHECK_EQ_STR(ev.id, want);
    event_make_id(&ev, "", "-", 0, 7, "x", 1);
    CHECK_EQ_STR(ev.id, want);
    event_free(&ev);
}

TEST(json_header_strings_fast_path)
{
    /* host.name and log.file.path are copied as they are when no byte
     * needs escaping, a test made 16 or 8 bytes at a time: every length
     * around those sizes, every position, each byte class; the output must
     * be buf_put_json_str's */
    static const unsigned char probe[] = { 0x01, 0x1f, ' ', '"', '\\', '~', 0x7f, 0x80, 0xc3, 0xff, 'a' };
    struct event ev;
    event_init(&ev);
    struct buf out, want;
    buf_init(&out);
    buf_init(&want);
    char s[48];
    int bad = 0;
    for (size_t n = 1; n <= 40; n++)
        for (size_t pos = 0; pos < n; pos++)
            for (size_t k = 0; k < sizeof probe; k++) {
                memset(s, 'h', n);
                s[n] = '\0';
                s[pos] = (char)probe[k];
                event_reset(&ev);
                ev.ts_ms = 1762485301123LL;
                ev.host = s;
                ev.path = s;
                buf_reset(&out);
                event_to_json(&ev, &out);
                buf_reset(&want);
                buf_puts(&want, ",\"host.name\":");
                buf_put_json_str(&want, s, n);
                buf_puts(&want, ",\"agent.name\":\"gpulog\",\"agent.version\":\"" GPULOG_VERSION "\",\"log.file.path\":");
                buf_put_json_str(&want, s, n);
                buf_putc(&want, '}');
                if (!strstr(out.p, want.p) && bad++ < 3) printf("  n=%zu pos=%zu byte=0x%02x: %s\n", n, pos, probe[k], out.p);
            }
    CHECK_EQ_INT(bad, 0);
    buf_free(&out);
    buf_free(&want);
    event_free(&ev);
}

TEST(json_keys_with_known_length)
{
    /* fields added with their key length (the table parsers) encode as
     * the same fields added without it, keys of every length 1..40 */
    struct event a, b;
    event_init(&a);
    event_init(&b);
    static char keys[40][41];
    for (int n = 1; n <= 40; n++) {
        for (int i = 0; i < n; i++) keys[n - 1][i] = (char)('a' + (n + i) % 26);
        keys[n - 1][n > 4 ? 2 : 0] = '.';
        keys[n - 1][n] = '\0';
        event_add_int(&a, keys[n - 1], n * 1000003LL - 7);
        event_add_int_k(&b, keys[n - 1], (size_t)n, n * 1000003LL - 7);
        event_add_bool(&a, keys[n - 1], n & 1);
        event_add_bool_k(&b, keys[n - 1], (size_t)n, n & 1);
        event_add_num(&a, keys[n - 1], n + 0.25);
        event_add_num_k(&b, keys[n - 1], (size_t)n, n + 0.25);
    }
    /* with event_key_info (length and the plain verdict) too, and keys
     * that need escaping: their verdict says so, they are escaped */
    struct event c;
    event_init(&c);
    for (int n = 1; n <= 40; n++) {
        event_add_int_k(&c, keys[n - 1], event_key_info(keys[n - 1]), n * 1000003LL - 7);
        event_add_bool_k(&c, keys[n - 1], event_key_info(keys[n - 1]), n & 1);
        event_add_num_k(&c, keys[n - 1], event_key_info(keys[n - 1]), n + 0.25);
    }
    static const char *const odd[] = { "odd\"key", "back\\slash", "tab\tkey", "caf\xc3\xa9.pct" };
    for (size_t i = 0; i < GL_ARRAY_LEN(odd); i++) {
        CHECK_EQ_INT(event_key_info(odd[i]), strlen(odd[i]));   /* no plain flag */
        event_add_int(&a, odd[i], 1);
        event_add_int_k(&b, odd[i], strlen(odd[i]), 1);
        event_add_int_k(&c, odd[i], event_key_info(odd[i]), 1);
    }
    CHECK_EQ_INT(event_key_info("gpu.power.usage"), 15 | EV_KLEN_PLAIN);
    struct buf ja, jb, jc;
    buf_init(&ja);
    buf_init(&jb);
    buf_init(&jc);
    event_to_json(&a, &ja);
    event_to_json(&b, &jb);
    event_to_json(&c, &jc);
    CHECK_EQ_STR(jb.p, ja.p);
    CHECK_EQ_STR(jc.p, ja.p);
    CHECK(strstr(ja.p, ",\"odd\\\"key\":1,\"back\\\\slash\":1,\"tab\\tkey\":1,") != NULL);
    buf_free(&jc);
    event_free(&c);
    CHECK(strstr(ja.p, ",\"op.rstuvwxyzabcdefghijklmnopqrstuvwxyzab\":40000113,") != NULL);
    CHECK(strstr(ja.p, ",\".ef\":3000002,\".ef\":true,\".ef\":3.25,") != NULL);
    buf_free(&ja);
    buf_free(&jb);
    event_free(&a);
    event_free(&b);
}

static int fields_equal(const struct event *a, const struct event *b, const char *key)
{
    const struct ev_field *fa = event_get(a, key), *fb = event_get(b, key);
    if (!fa || !fb) { printf("  %s missing (%p %p)\n", key, (void *)fa, (void *)fb); return 0; }
    if (fa->type != fb->type) {
        /* whole doubles are written as integers: accept that one change */
        if (fa->type == EV_NUM && fb->type == EV_INT && fa->v.d == (double)fb->v.i) return 1;
        printf("  %s: type %d vs %d\n", key, fa->type, fb->type);
        return 0;
    }
    switch (fa->type) {
    case EV_INT: return fa->v.i == fb->v.i;
    case EV_NUM: return fa->v.d == fb->v.d;
    case EV_BOOL: return fa->v.b == fb->v.b;
    case EV_STR: return fa->v.s.len == fb->v.s.len &&
                        !memcmp(event_str(a, fa), event_str(b, fb), fa->v.s.len);
    }
    return 0;
}

TEST(json_round_trip)
{
    size_t longlen = 100000;
    char *longstr = xmalloc(longlen);
    for (size_t i = 0; i < longlen; i++) longstr[i] = (char)('a' + i % 26);
    struct event ev, back;
    fill(&ev, longstr, longlen);
    event_init(&back);
    struct buf j1, j2;
    buf_init(&j1);
    buf_init(&j2);
    event_to_json(&ev, &j1);
    /* valid JSON, one object, flat */
    json_error_t je;
    json_t *root = json_loadb(j1.p, j1.len, JSON_REJECT_DUPLICATES, &je);
    CHECK(root && json_is_object(root));
    CHECK_EQ_STR(json_string_value(json_object_get(root, "@timestamp")), "2025-11-07T03:15:01.123Z");
    CHECK_EQ_STR(json_string_value(json_object_get(root, "event.created")), "2025-11-07T03:15:02.000Z");
    CHECK_EQ_STR(json_string_value(json_object_get(root, "agent.name")), "gpulog");
    CHECK_EQ_STR(json_string_value(json_object_get(root, "agent.version")), GPULOG_VERSION);
    CHECK_EQ_STR(json_string_value(json_object_get(root, "event.original")), "    3    391 raw");
    CHECK(json_is_integer(json_object_get(root, "gpu.index")));
    CHECK(json_is_real(json_object_get(root, "gpu.power.usage")));
    CHECK(json_is_true(json_object_get(root, "gpu.throttling.thermal.active")));
    CHECK(json_is_false(json_object_get(root, "gpu.throttling.reason.sw_power_cap")));
    CHECK_EQ_INT(json_integer_value(json_object_get(root, "odd\"key")), 1);
    json_decref(root);

    char err[GL_ERRLEN] = "";
    CHECK_EQ_INT(event_from_json(&back, j1.p, j1.len, err, sizeof err), GL_OK);
    CHECK_EQ_INT(back.ts_ms, ev.ts_ms);
    CHECK_EQ_INT(back.created_ms, ev.created_ms);
    CHECK_EQ_STR(back.kind, ev.kind);
    CHECK_EQ_STR(back.dataset, ev.dataset);
    CHECK_EQ_STR(back.host, ev.host);
    CHECK_EQ_STR(back.path, ev.path);
    CHECK_EQ_INT(back.offset, ev.offset);
    CHECK_EQ_STR(back.id, ev.id);
    for (size_t i = 0; i < ev.nf; i++)
        if (!fields_equal(&ev, &back, ev.f[i].key)) { printf("  field %s\n", ev.f[i].key); CHECK(0); }
    /* the decoder keeps event.original as a plain string field */
    size_t on = 0;
    const char *o = event_get_str(&back, "event.original", &on);
    CHECK(o && on == 16 && !memcmp(o, "    3    391 raw", 16));
    /* and encoding what was decoded gives the same text */
    event_to_json(&back, &j2);
    CHECK(j1.len == j2.len && !memcmp(j1.p, j2.p, j1.len));
    if (j1.len != j2.len || memcmp(j1.p, j2.p, j1.len))
        printf("  first:  %.300s\n  second: %.300s\n", j1.p, j2.p);
    buf_free(&j1);
    buf_free(&j2);
    event_free(&ev);
    event_free(&back);
    free(longstr);
}

TEST(json_minimal_header)
{
    /* no created time, host, path or offset: those keys are omitted */
    struct event ev;
    event_init(&ev);
    ev.ts_ms = 0;
    ev.kind = "event";
    ev.dataset = "gpu.xid";
    memcpy(ev.id, "0123456789abcdef0123456789abcdef", 33);
    struct buf b;
    buf_init(&b);
    event_to_json(&ev, &b);
    CHECK_EQ_STR(b.p, "{\"@timestamp\":\"1970-01-01T00:00:00.000Z\",\"event.kind\":\"event\","
                      "\"event.dataset\":\"gpu.xid\",\"event.id\":\"0123456789abcdef0123456789abcdef\","
                      "\"agent.name\":\"gpulog\",\"agent.version\":\"" GPULOG_VERSION "\"}");
    buf_free(&b);
    event_free(&ev);
}

TEST(json_decode_refusals)
{
    struct event ev;
    event_init(&ev);
    char err[GL_ERRLEN];
    static const char *const bad[] = {
        "", "{", "[]", "42", "{\"event.kind\":\"metric\"}",
        "{\"@timestamp\":\"yesterday\"}", "{\"@timestamp\":5}",
        "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"a\":1,\"a\":2}",
        "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\"} trailing",
        /* header keys of the wrong type would come out twice on re-encoding */
        "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"event.kind\":5}",
        "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"host.name\":true}",
        "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"log.offset\":\"7\"}",
    };
    for (size_t i = 0; i < GL_ARRAY_LEN(bad); i++) {
        err[0] = '\0';
        if (event_from_json(&ev, bad[i], strlen(bad[i]), err, sizeof err) != GL_ERROR || !err[0]) {
            printf("  accepted: %s\n", bad[i]);
            CHECK(0);
        }
    }
    /* nested values and nulls are skipped, scalars kept */
    const char *ok = "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"x\":null,\"y\":[1],\"z\":{\"a\":1},\"n\":2.5}";
    CHECK_EQ_INT(event_from_json(&ev, ok, strlen(ok), err, sizeof err), GL_OK);
    CHECK_EQ_INT(ev.nf, 1);
    double d;
    CHECK(event_get_num(&ev, "n", &d) && d == 2.5);
    event_free(&ev);
}

TEST(json_header_strings_escaped)
{
    /* kind, dataset and id read from JSON may hold any characters: the
     * re-encoded event must still be valid JSON with the same values */
    const char *in = "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"event.id\":\"x\\\"y\","
                     "\"event.kind\":\"a\\\\b\",\"event.dataset\":\"\\n\"}";
    struct event ev;
    event_init(&ev);
    char err[GL_ERRLEN];
    CHECK_EQ_INT(event_from_json(&ev, in, strlen(in), err, sizeof err), GL_OK);
    struct buf b;
    buf_init(&b);
    event_to_json(&ev, &b);
    json_error_t je;
    json_t *j = json_loadb(b.p, b.len, JSON_REJECT_DUPLICATES, &je);
    CHECK(j != NULL);
    if (!j) printf("  %s: %s\n", je.text, b.p);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "event.id")), "x\"y");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "event.kind")), "a\\b");
    CHECK_EQ_STR(json_string_value(json_object_get(j, "event.dataset")), "\n");
    json_decref(j);
    buf_free(&b);
    event_free(&ev);
}

static long rss_kb(void)
{
    return (long)(gl_rss_bytes() / 1024);
}

/* a topic whose events carry a million distinct keys (and ten thousand host
 * names) must not grow the decoder without bound; schema keys still decode
 * once the table is full. Runs last: it fills the process-wide table. */
/* The flat decoder (event_from_json) against the jansson reference on JSON
 * edges, and its layout shortcut: a message that starts like the last one
 * and then repeats a key is still refused. */
TEST(json_flat_edges)
{
    struct event a, b;
    event_init(&a);
    event_init(&b);
    char err[GL_ERRLEN];
#define TS "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\""
    static const struct { const char *json; size_t len; int ok; } cases[] = {
        { TS ",\"a\":1,\"b\":2}", 0, 1 },
        { TS ",\"a\":1,\"a\":3}", 0, 0 },          /* after a layout [ts,a,b]: differs at the 3rd key */
        { TS ",\"a\":1,\"b\":2,\"a\":4}", 0, 0 },  /* longer than the layout */
        { TS ",\"a\":1,\"\\u0062\":2,\"b\":5}", 0, 0 },   /* escaped duplicate */
        { TS ",\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"}", 0, 1 },
        { TS ",\"s\":\"\\ud83d\"}", 0, 0 },
        { TS ",\"s\":\"\\ude00\"}", 0, 0 },
        { TS ",\"s\":\"a\\u0000\"}", 0, 0 },
        { TS ",\"s\":\"\xed\xa0\x80\"}", 0, 0 },  /* a surrogate in UTF-8 */
        { TS ",\"s\":\"\xc0\xaf\"}", 0, 0 },      /* overlong */
        { TS ",\"s\":\"\xf4\x8f\xbf\xbf\"}", 0, 1 },
        { TS ",\"i\":9223372036854775807,\"j\":-9223372036854775808,\"k\":-0,\"r\":-0.0,\"e\":1e2,\"f\":1.0}", 0, 1 },
        { TS ",\"i\":9223372036854775808}", 0, 0 },
        { TS ",\"r\":1e309}", 0, 0 },
        { TS ",\"r\":01}", 0, 0 },
        { TS ",\"r\":1.}", 0, 0 },
        { TS ",\"r\":.5}", 0, 0 },
        { TS ",\"n\":[{\"x\":1,\"x\":2}]}", 0, 0 },
        { TS ",\"n\":[{\"x\":1,\"y\":{\"x\":2}}]}", 0, 1 },
        { TS ",\"a\":1,}", 0, 0 },
        { TS ",\"a\":1\0}", sizeof(TS ",\"a\":1\0}") - 1, 1 },      /* jansson drops one NUL after a number */
        { TS ",\"a\":true\0\0}", sizeof(TS ",\"a\":true\0\0}") - 1, 0 },
        { TS ",\"a\":\"x\"\0}", sizeof(TS ",\"a\":\"x\"\0}") - 1, 0 },
    };
#undef TS
    for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
        size_t n = cases[i].len ? cases[i].len : strlen(cases[i].json);
        int r1 = event_from_json(&a, cases[i].json, n, err, sizeof err);
        int r2 = event_from_json_jansson(&b, cases[i].json, n, err, sizeof err);
        if ((r1 == GL_OK) != cases[i].ok || r1 != r2) {
            printf("  case %zu: flat %d, jansson %d, want %s: %.*s\n", i, r1, r2, cases[i].ok ? "ok" : "refused",
                   (int)n, cases[i].json);
            CHECK(0);
            continue;
        }
        if (r1 != GL_OK) continue;
        CHECK_EQ_INT(a.nf, b.nf);
        for (size_t k = 0; k < a.nf && k < b.nf; k++) {
            CHECK(a.f[k].key == b.f[k].key);
            CHECK_EQ_INT(a.f[k].type, b.f[k].type);
            if (a.f[k].type == EV_NUM) CHECK(!memcmp(&a.f[k].v.d, &b.f[k].v.d, sizeof(double)));
            else if (a.f[k].type == EV_STR)
                CHECK(a.f[k].v.s.len == b.f[k].v.s.len && !memcmp(event_str(&a, &a.f[k]), event_str(&b, &b.f[k]), a.f[k].v.s.len));
            else CHECK(a.f[k].v.i == b.f[k].v.i);
        }
    }
    /* the numbers keep jansson's classes and values */
    const char *nums = "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"k\":-0,\"r\":-0.0,\"e\":1e2,\"f\":0.1}";
    CHECK_EQ_INT(event_from_json(&a, nums, strlen(nums), err, sizeof err), GL_OK);
    CHECK(a.nf == 4 && a.f[0].type == EV_INT && a.f[0].v.i == 0);
    CHECK(a.f[1].type == EV_NUM && a.f[1].v.d == 0 && signbit(a.f[1].v.d));
    CHECK(a.f[2].type == EV_NUM && a.f[2].v.d == 100);
    CHECK(a.f[3].type == EV_NUM && a.f[3].v.d == 0.1);
    event_free(&a);
    event_free(&b);
}

/* A message far larger than usual (100,000 keys at the top and as many in a
 * nested object, a long escaped string) decodes, its scratch is given back,
 * and the next ordinary message decodes as before. */
TEST(json_outsized_message)
{
    struct event ev;
    event_init(&ev);
    char err[GL_ERRLEN];
    struct buf j;
    buf_init(&j);
    buf_puts(&j, "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\"");
    for (int k = 0; k < 100000; k++) buf_printf(&j, ",\"k%d\":null", k);
    buf_puts(&j, ",\"n\":{");
    for (int k = 0; k < 100000; k++) buf_printf(&j, "%s\"k%d\":1", k ? "," : "", k);
    buf_puts(&j, "},\"s\":\"");
    for (int k = 0; k < 50000; k++) buf_puts(&j, "\\u00e9");
    buf_puts(&j, "\"}");
    CHECK_EQ_INT(event_from_json(&ev, j.p, j.len, err, sizeof err), GL_OK);
    size_t n = 0;
    CHECK(event_get_str(&ev, "s", &n) && n == 100000);
    CHECK_EQ_INT(event_from_json_jansson(&ev, j.p, j.len, err, sizeof err), GL_OK);
    /* the same with a duplicate deep in the nested object is refused */
    j.len -= 2 + 6 * 50000 + 7;   /* back to the nested object's end */
    buf_puts(&j, ",\"k99999\":2}}");
    CHECK_EQ_INT(event_from_json(&ev, j.p, j.len, err, sizeof err), GL_ERROR);
    CHECK_EQ_INT(event_from_json_jansson(&ev, j.p, j.len, err, sizeof err), GL_ERROR);
    const char *ok = "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\",\"gpu.temperature.gpu\":3,\"k2\":null}";
    CHECK_EQ_INT(event_from_json(&ev, ok, strlen(ok), err, sizeof err), GL_OK);
    double d;
    CHECK(ev.nf == 1 && event_get_num(&ev, "gpu.temperature.gpu", &d) && d == 3);
    buf_free(&j);
    event_free(&ev);
}

/* Messages alternating between layouts (8 GPUs, some without a memory
 * temperature) decode as jansson decodes them, and a repeated key after a
 * prefix that equals a known layout is still refused. */
TEST(json_layouts)
{
    struct event a, b;
    event_init(&a);
    event_init(&b);
    char err[GL_ERRLEN];
#define TS "{\"@timestamp\":\"2025-11-07T03:15:01.000Z\""
    static const char *const msgs[] = {
        TS ",\"la\":1,\"lb\":2,\"lc\":3}", TS ",\"la\":4,\"lc\":6}", TS ",\"la\":7,\"lb\":8,\"lc\":9}",
        TS ",\"la\":1,\"ld\":null,\"lc\":3}", TS ",\"la\":4,\"lc\":6}", TS ",\"la\":1,\"ld\":5,\"lc\":3}",
        TS ",\"la\":1,\"lb\":2,\"lc\":3,\"le\":\"x\"}", TS ",\"la\":4,\"lc\":6}",
    };
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < GL_ARRAY_LEN(msgs); i++) {
            CHECK_EQ_INT(event_from_json(&a, msgs[i], strlen(msgs[i]), err, sizeof err), GL_OK);
            CHECK_EQ_INT(event_from_json_jansson(&b, msgs[i], strlen(msgs[i]), err, sizeof err), GL_OK);
            CHECK_EQ_INT(a.nf, b.nf);
            for (size_t k = 0; k < a.nf && k < b.nf; k++) {
                CHECK(a.f[k].key == b.f[k].key);
                CHECK(a.f[k].type == b.f[k].type && (a.f[k].type == EV_STR || a.f[k].v.i == b.f[k].v.i));
            }
        }
    }
    static const char *const dups[] = {
        TS ",\"la\":1,\"lc\":3,\"la\":2}", TS ",\"la\":1,\"lb\":2,\"la\":3}", TS ",\"la\":1,\"lb\":2,\"lc\":3,\"lb\":4}",
        TS ",\"la\":1,\"lb\":2,\"lc\":3,\"le\":\"x\",\"@timestamp\":\"2025-11-07T03:15:01.000Z\"}",
    };
#undef TS
    for (size_t i = 0; i < GL_ARRAY_LEN(dups); i++) {
        CHECK_EQ_INT(event_from_json(&a, dups[i], strlen(dups[i]), err, sizeof err), GL_ERROR);
        CHECK_EQ_INT(event_from_json_jansson(&b, dups[i], strlen(dups[i]), err, sizeof err), GL_ERROR);
        const char *again = msgs[i % GL_ARRAY_LEN(msgs)];   /* the layouts still work after a refusal */
        CHECK_EQ_INT(event_from_json(&a, again, strlen(again), err, sizeof err), GL_OK);
    }
    event_free(&a);
    event_free(&b);
}

TEST(json_random_keys_bounded)
{
    struct event ev;
    event_init(&ev);
    char err[256];
    struct buf j;
    buf_init(&j);
    /* a schema key seen first stays known */
    const char *first = "{\"@timestamp\":\"2025-01-01T00:00:00.000Z\",\"gpu.temperature.gpu\":50}";
    CHECK_EQ_INT(event_from_json(&ev, first, strlen(first), err, sizeof err), GL_OK);
    long before = rss_kb();
    unsigned x = 12345;
    for (int m = 0; m < 10000; m++) {
        buf_reset(&j);
        buf_printf(&j, "{\"@timestamp\":\"2025-01-01T00:00:00.000Z\",\"host.name\":\"h-%d-%u\"", m, x);
        for (int k = 0; k < 100; k++) {
            x = x * 1103515245u + 12345u;
            buf_printf(&j, ",\"k%08x%04d\":%d", x, k, k);
        }
        buf_puts(&j, "}");
        if (event_from_json(&ev, j.p, j.len, err, sizeof err) != GL_OK) { CHECK(0); break; }
    }
    long grown = rss_kb() - before;
    CHECK(event_json_interned() <= EVENT_INTERN_MAX);
    CHECK(event_json_dropped() > 900000);
    /* the last host name is right */
    char want[64];
    snprintf(want, sizeof want, "h-9999-");
    CHECK(ev.host && !strncmp(ev.host, want, strlen(want)));
    CHECK_EQ_INT(ev.nf, 0);   /* its random keys were dropped */
    CHECK_EQ_INT(event_from_json(&ev, first, strlen(first), err, sizeof err), GL_OK);
    double t;
    CHECK(event_get_num(&ev, "gpu.temperature.gpu", &t) && t == 50);
    /* more host names than the value table holds: each event keeps its own */
    for (int m = 0; m < 4 * EVENT_INTERN_MAX + 100; m++) {
        buf_reset(&j);
        buf_printf(&j, "{\"@timestamp\":\"2025-01-01T00:00:00.000Z\",\"host.name\":\"node-%07d\",\"gpu.temperature.gpu\":%d}", m, m % 90);
        if (event_from_json(&ev, j.p, j.len, err, sizeof err) != GL_OK) { CHECK(0); break; }
    }
    CHECK_EQ_STR(ev.host, "node-0262243");
    CHECK(ev.own[0] != NULL && ev.host == ev.own[0]);
    CHECK(event_get_num(&ev, "gpu.temperature.gpu", &t) && t == 262243 % 90);
#if defined(__SANITIZE_ADDRESS__)
    (void)grown;   /* ASan's redzones and quarantine say nothing about our growth */
#else
    printf("  1M distinct keys: RSS grew %ld kB, %zu strings interned, %llu fields dropped\n", grown,
           event_json_interned(), (unsigned long long)event_json_dropped());
    CHECK(grown < 32 * 1024);
#endif
    buf_free(&j);
    event_free(&ev);
}

int main(void)
{
    RUN(accessors);
    RUN(ids);
    RUN(ids_hash_every_tail_length);
    RUN(ids_prefix_follows_content);
    RUN(json_header_strings_fast_path);
    RUN(json_keys_with_known_length);
    RUN(json_round_trip);
    RUN(json_minimal_header);
    RUN(json_decode_refusals);
    RUN(json_header_strings_escaped);
    RUN(json_flat_edges);
    RUN(json_layouts);
    RUN(json_random_keys_bounded);
    RUN(json_outsized_message);
    return TEST_REPORT();
}
