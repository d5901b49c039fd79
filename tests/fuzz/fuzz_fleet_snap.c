/*
 * fuzz_fleet_snap.c - libFuzzer target: the fleet correlator's state of a
 * partition (detect/fleet_snap.c, fleet_load), read from a state topic.
 * Arbitrary bytes are loaded into a fresh correlator (small caps: 64 keys,
 * 256 members). A refusal must carry a reason ("fleet state: ...") and
 * leave the correlator empty and the offset untouched; an accepted state
 * must save again into a state that loads into another correlator with the
 * same members, offset and open fleet incidents, and both must take GPU
 * incident records and ticks (records they write are checked: valid JSON,
 * the fleet incident fields) without undefined behaviour.
 */
#include "../../detect/fleet.h"
#include "../../core/common.h"
#include "../../core/event.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every record written: JSON that parses, with the fleet incident's fields. */
static void check_rec(void *ctx, const struct event *rec)
{
    (void)ctx;
    struct buf b;
    buf_init(&b);
    event_to_json(rec, &b);
    json_error_t je;
    json_t *j = json_loadb(b.p, b.len, JSON_REJECT_DUPLICATES, &je);
    if (!j || !json_is_string(json_object_get(j, "anomaly.incident_id")) ||
        !json_is_integer(json_object_get(j, "anomaly.gpu_count")) || !json_is_string(json_object_get(j, "event.reason"))) {
        fprintf(stderr, "fuzz: bad record: %.*s\n", (int)b.len, b.p);
        abort();
    }
    json_decref(j);
    buf_free(&b);
}

static struct fleet *mk(void)
{
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    c.max_keys = 64;
    c.max_members = 256;
    char err[256];
    struct fleet *f = fleet_new(&c, check_rec, NULL, err, sizeof err);
    if (!f) abort();
    return f;
}

/* A GPU incident start and end on host "n1" of a key a state may hold, and ticks. */
static void exercise(struct fleet *f)
{
    struct event ev;
    event_init(&ev);
    for (int t = 0; t < 2; t++) {
        event_reset(&ev);
        ev.kind = "alert";
        ev.dataset = "gpu.incident";
        ev.host = "n1";
        ev.offset = -1;
        ev.ts_ms = 1762473600000LL + t * 1000;
        event_add_int(&ev, "gpu.index", 0);
        event_add_str(&ev, "event.type", t ? "end" : "start", t ? 3 : 5);
        event_add_str(&ev, "anomaly.incident_id", "0123456789abcdef0123456789abcdef", 32);
        event_add_str(&ev, "anomaly.rules", "a", 1);
        event_add_str(&ev, "labels.rack", "r1", 2);
        fleet_feed(f, &ev, 1);
    }
    event_free(&ev);
    fleet_tick(f, 1000);
    fleet_tick(f, 10000000);
    fleet_flush(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fleet *f = mk();
    char err[512] = "";
    int64_t off = -5;
    if (fleet_load(f, 1, data, size, &off, err, sizeof err) != GL_OK) {
        const struct fleet_stats *st = fleet_get_stats(f);
        if (strncmp(err, "fleet state: ", 13) || off != -5 || st->tracked || st->keys || st->open) {
            fprintf(stderr, "fuzz: refusal without a reason or with state left: '%s'\n", err);
            abort();
        }
        fleet_free(f);
        return 0;
    }
    struct buf again;
    buf_init(&again);
    if (fleet_save(f, 1, off, &again, err, sizeof err) != GL_OK) abort();
    struct fleet *g = mk();
    int64_t off2 = -5;
    if (fleet_load(g, 1, again.p, again.len, &off2, err, sizeof err) != GL_OK) {
        fprintf(stderr, "fuzz: a saved state is refused: %s\n", err);
        abort();
    }
    if (off2 != off || fleet_get_stats(g)->tracked != fleet_get_stats(f)->tracked ||
        fleet_get_stats(g)->open != fleet_get_stats(f)->open) {
        fprintf(stderr, "fuzz: the saved state loads to other state\n");
        abort();
    }
    buf_free(&again);
    exercise(f);
    exercise(g);
    fleet_free(f);
    fleet_free(g);
    return 0;
}
