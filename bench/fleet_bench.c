/* fleet_bench.c - the fleet correlator (gpulog fleet, detect/fleet.h) on one
 * core: records of an anomalies topic per second and the memory its state
 * holds. The records (JSON lines held in memory, as the consumer gets them)
 * are a fleet of 2,000 hosts x 8 GPUs, 40 racks: independent GPU incidents
 * (start, end, the Xid episode before an Xid incident), one every 20 s on a
 * random GPU (4,320 a day), and every 3 hours a correlated fault on 40 GPUs
 * of 5 hosts of one rack.
 * Measured in the same run, best of ROUNDS passes each:
 *   decode:          event_from_json of every line (the baseline: what any
 *                    consumer of the topic does per record, detect included)
 *   decode + fleet:  the same, each event then fed to the correlator (and a
 *                    tick every 1,000 records)
 * and the correlator's own cost (the difference) per record. Then a storm of
 * distinct (signature, group) keys and GPUs at the default caps: the state's
 * bytes and the process's resident memory stay bounded.
 * Targets: decode + fleet >= 250,000 records/s on one core (the anomalies
 * topic of a 16,000-GPU fleet carries thousands a second in an incident
 * storm); state <= 32 MiB at the default caps.
 * usage: fleet_bench [records] [rounds]
 */
#include "../detect/fleet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t nrec;
static size_t ncorr;   /* correlated faults generated */
static void count(void *ctx, const struct event *r) { (void)ctx; (void)r; nrec++; }

/* Appends one record line (gpu.incident start/end, or the Xid episode) to out. */
static void line(struct buf *out, const char *dataset, const char *type, int host, int gpu, const char *rule, int64_t start,
                 int64_t ts, int xid)
{
    char tb[25], sb[25], id[33];
    gl_fmt_ts(ts, tb);
    gl_fmt_ts(start, sb);
    struct hash128 h;
    hash128_init(&h);
    hash128_feed_u64(&h, (uint64_t)host);
    hash128_feed_u64(&h, (uint64_t)gpu);
    hash128_feed_u64(&h, (uint64_t)start);
    hash128_hex(&h, id);
    buf_printf(out, "{\"@timestamp\":\"%s\",\"event.kind\":\"alert\",\"event.dataset\":\"%s\",\"event.id\":\"%s\","
                    "\"agent.name\":\"gpulog\",\"agent.version\":\"0.1.0\",\"host.name\":\"node-%04d\",\"gpu.index\":%d,"
                    "\"event.type\":\"%s\",\"rule.id\":\"%s\",\"rule.name\":\"x\",\"event.start\":\"%s\","
                    "\"event.risk_score\":55,\"event.severity\":2,\"event.reason\":\"bench\",\"labels.rack\":\"r%02d\"",
               tb, dataset, id, host, gpu, type, dataset[4] == 'i' ? "gpu.incident" : rule, sb, host / 50);
    if (xid >= 0) buf_printf(out, ",\"gpu.xid.code\":%d", xid);
    if (dataset[4] == 'i') buf_printf(out, ",\"anomaly.incident_id\":\"%s\",\"anomaly.rules\":\"%s\",\"anomaly.rule_count\":1", id, rule);
    buf_puts(out, "}\n");
}

/* n records of the fleet described above into out; the line offsets into *at. */
static size_t make_records(size_t n, struct buf *out, size_t **at)
{
    static const char *rules[] = { "gpu.temp.high", "gpu.power.cap", "gpu.xid", "gpu.clock.drop", "gpu.ecc.sbe" };
    int64_t t0 = 1762473600000LL;
    uint64_t st = 88172645463325252ULL;
    size_t k = 0;
    for (int64_t s = 0; k < n; s += 20) {
        st ^= st << 13; st ^= st >> 7; st ^= st << 17;
        int host = (int)(st % 2000), gpu = (int)((st >> 16) % 8), r = (int)((st >> 24) % 5);
        int64_t start = t0 + s * 1000;
        if (r == 2) { line(out, "gpu.anomaly", "start", host, gpu, rules[r], start, start, 13 + (int)(st >> 32) % 3 * 30); k++; }
        line(out, "gpu.incident", "start", host, gpu, rules[r], start, start, -1);
        line(out, "gpu.incident", "end", host, gpu, rules[r], start, start + 300000, -1);
        k += 2;
        if (s % 10800 == 0 && ++ncorr)   /* a correlated fault: 40 GPUs of 5 hosts of one rack */
            for (int i = 0; i < 40 && k < n; i++, k += 2) {
                int ch = (int)(s / 10800 % 40) * 50 + i % 5;
                line(out, "gpu.incident", "start", ch, i / 5, "gpu.temp.high", start + i * 13000, start + i * 13000, -1);
                line(out, "gpu.incident", "end", ch, i / 5, "gpu.temp.high", start + i * 13000, start + 900000 + i * 1000, -1);
            }
    }
    size_t m = 0, cap = 1024;
    *at = xmalloc(cap * sizeof **at);
    (*at)[0] = 0;
    for (size_t i = 0; i < out->len; i++) {
        if (out->p[i] != '\n') continue;
        if (m + 2 >= cap) *at = xrealloc(*at, (cap *= 2) * sizeof **at);
        (*at)[++m] = i + 1;
    }
    return m;
}

/* One pass over the lines: decode, and with f feed the correlator. CPU seconds. */
static double pass(const struct buf *text, const size_t *at, size_t n, struct fleet *f, uint64_t *peak)
{
    struct event ev;
    event_init(&ev);
    char err[GL_ERRLEN];
    double t = cpu_now();
    for (size_t i = 0; i < n; i++) {
        if (event_from_json(&ev, text->p + at[i], at[i + 1] - at[i] - 1, err, sizeof err) != GL_OK) {
            fprintf(stderr, "fleet_bench: line %zu: %s\n", i + 1, err);
            exit(1);
        }
        if (!f) continue;
        fleet_feed(f, &ev, (int)(i % 12));
        if (i % 1000 == 999) {
            fleet_tick(f, (int64_t)(i / 1000) * 1000);
            if (fleet_get_stats(f)->bytes > *peak) *peak = fleet_get_stats(f)->bytes;
        }
    }
    t = cpu_now() - t;
    event_free(&ev);
    return t;
}

int main(int argc, char **argv)
{
    size_t want = argc > 1 ? (size_t)atoll(argv[1]) : 500000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    struct buf text;
    buf_init(&text);
    size_t *at;
    size_t n = make_records(want, &text, &at);
    struct fleet_conf c;
    fleet_conf_defaults(&c);
    char err[256];
    double best_d = -1, best_f = -1;
    uint64_t peak = 0, starts = 0, ends = 0, members = 0;
    for (int r = 0; r < rounds; r++) {
        double d = pass(&text, at, n, NULL, &peak);
        if (best_d < 0 || d < best_d) best_d = d;
        struct fleet *f = fleet_new(&c, count, NULL, err, sizeof err);
        if (!f) { fprintf(stderr, "fleet_bench: %s\n", err); return 1; }
        double t = pass(&text, at, n, f, &peak);
        if (best_f < 0 || t < best_f) best_f = t;
        starts = fleet_get_stats(f)->starts;
        ends = fleet_get_stats(f)->ends;
        members = fleet_get_stats(f)->members;
        fleet_free(f);
    }
    printf("fleet_bench: %zu records (%.1f MB of JSON; %llu GPU incidents of 2,000 hosts x 8 GPUs), best of %d\n", n,
           (double)text.len / 1e6, (unsigned long long)members, rounds);
    printf("  %-34s %10s %14s %12s\n", "pass", "CPU s", "records/s", "ns/record");
    printf("  %-34s %10.3f %14.0f %12.0f\n", "decode (baseline)", best_d, n / best_d, best_d * 1e9 / n);
    printf("  %-34s %10.3f %14.0f %12.0f\n", "decode + fleet correlator", best_f, n / best_f, best_f * 1e9 / n);
    printf("  the correlator's own cost: %.0f ns/record (%.2f million records/s on one core); %llu fleet incidents "
           "(%llu ended) from the %zu correlated faults, state peak %.1f MiB\n",
           (best_f - best_d) * 1e9 / n, n / (best_f - best_d) / 1e6, (unsigned long long)starts,
           (unsigned long long)ends, ncorr, (double)peak / 1048576.0);
    printf("  decode + fleet: %.0f records/s, %.2f of the baseline's (target >= 250,000 records/s: %s)\n", n / best_f,
           best_d / best_f, n / best_f >= 250000 ? "met" : "NOT met");

    /* storms at the default caps, GPU incidents that never end: (a) every
     * record a new key (rule x rack), (b) three keys, every record a new GPU */
    for (int kind = 0; kind < 2; kind++) {
        struct fleet *f = fleet_new(&c, count, NULL, err, sizeof err);
        int64_t rss0 = gl_rss_bytes();
        struct event ev;
        event_init(&ev);
        char host[32], rule[32], rack[16], id[33];
        uint64_t speak = 0;
        for (int i = 0; i < 2000000; i++) {
            event_reset(&ev);
            snprintf(host, sizeof host, "storm-%d", kind ? i / 8 : i % 100000);
            snprintf(rule, sizeof rule, "rule.%d", kind ? i % 3 : i % 4999);
            snprintf(rack, sizeof rack, "r%d", kind ? 0 : i % 5003);
            struct hash128 h;
            hash128_init(&h);
            hash128_feed_u64(&h, (uint64_t)i);
            hash128_hex(&h, id);
            ev.kind = "alert";
            ev.dataset = "gpu.incident";
            ev.host = host;
            ev.offset = -1;
            ev.ts_ms = 1762473600000LL + i;
            event_add_int(&ev, "gpu.index", i % 8);
            event_add_str(&ev, "event.type", "start", 5);
            event_add_str(&ev, "anomaly.incident_id", id, 32);
            event_add_str(&ev, "anomaly.rules", rule, strlen(rule));
            event_add_str(&ev, "labels.rack", rack, strlen(rack));
            fleet_feed(f, &ev, 0);
            if (i % 1024 == 0 && fleet_get_stats(f)->bytes > speak) speak = fleet_get_stats(f)->bytes;
        }
        event_free(&ev);
        int64_t rss1 = gl_rss_bytes();
        const struct fleet_stats *st = fleet_get_stats(f);
        printf("  storm of 2,000,000 GPU incidents, %s, at the default caps (%lld keys, %lld GPU incidents): %llu keys "
               "and %llu GPU incidents kept, state peak %.1f MiB (target <= 32 MiB: %s), resident memory +%.1f MiB\n",
               kind ? "3 keys, each a new GPU" : "each a new key", (long long)c.max_keys, (long long)c.max_members,
               (unsigned long long)st->keys, (unsigned long long)st->tracked, (double)speak / 1048576.0,
               speak <= 32u << 20 ? "met" : "NOT met", (double)(rss1 - rss0) / 1048576.0);
        fleet_free(f);
    }
    free(at);
    buf_free(&text);
    return 0;
}
