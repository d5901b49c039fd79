/*
 * gen_dmon.c - writes a realistic `nvidia-smi dmon -o DT -s pucvmet` capture
 * for the parse benchmark: new 6-wide layout with the two header lines once,
 * N GPUs per sample, timestamps advancing 1 s per sample, values following
 * bounded random walks, mtemp '-' on some GPUs and sbecc/dbecc '-' on others.
 *   gen_dmon OUT LINES [GPUS]     (LINES data lines, default 8 GPUs)
 */
#include "../core/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* Moves v by at most step, kept inside [lo, hi]. */
static int walk(int v, int step, int lo, int hi)
{
    v += (int)(next_rand() % (uint32_t)(2 * step + 1)) - step;
    return v < lo ? lo : v > hi ? hi : v;
}

struct gpu { int pwr, gtemp, mtemp, sm, mem, mclk, pclk, fb, rx, tx; };

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: gen_dmon OUT LINES [GPUS]\n"); return 2; }
    long lines = atol(argv[2]);
    int ngpu = argc > 3 ? atoi(argv[3]) : 8;
    if (lines <= 0 || ngpu <= 0 || ngpu > 64) { fprintf(stderr, "gen_dmon: bad arguments\n"); return 2; }
    FILE *f = fopen(argv[1], "w");
    if (!f) { perror(argv[1]); return 1; }
    static char obuf[1 << 20];
    setvbuf(f, obuf, _IOFBF, sizeof obuf);
    fputs("#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa"
          "   mclk   pclk  pviol  tviol     fb   bar1   ccpm  sbecc  dbecc    pci  rxpci  txpci \n"
          "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %      %      %"
          "    MHz    MHz      %   bool     MB     MB     MB   errs   errs   errs   MB/s   MB/s \n", f);
    struct gpu g[64];
    for (int i = 0; i < ngpu; i++)
        g[i] = (struct gpu){ 300 + 20 * i, 55, 60, 80, 30, 2619, 1755, 40000, 200, 40 };
    int64_t t = 1762485301LL;   /* 2025-11-07T03:15:01 */
    long done = 0;
    char date[16] = "", tod[16];
    int64_t day_cached = -1;
    while (done < lines) {
        int64_t day = t / 86400;
        if (day != day_cached) {
            char iso[25];
            gl_fmt_ts(t * 1000, iso);
            snprintf(date, sizeof date, "%.4s%.2s%.2s", iso, iso + 5, iso + 8);
            day_cached = day;
        }
        int sod = (int)(t % 86400);
        snprintf(tod, sizeof tod, "%02d:%02d:%02d", sod / 3600, sod / 60 % 60, sod % 60);
        for (int i = 0; i < ngpu && done < lines; i++, done++) {
            struct gpu *q = &g[i];
            q->pwr = walk(q->pwr, 15, 60, 700);
            q->gtemp = walk(q->gtemp, 1, 30, 88);
            q->mtemp = walk(q->mtemp, 1, 30, 95);
            q->sm = walk(q->sm, 10, 0, 100);
            q->mem = walk(q->mem, 5, 0, 100);
            q->pclk = walk(q->pclk, 30, 345, 1980);
            q->fb = walk(q->fb, 500, 0, 81559);
            q->rx = walk(q->rx, 50, 0, 25000);
            q->tx = walk(q->tx, 20, 0, 25000);
            char mt[8], sb[8], db[8];
            /* GPUs 6 and 7 are GDDR boards (no HBM temperature), 5 reports no ECC */
            if (i >= 6) strcpy(mt, "-"); else snprintf(mt, sizeof mt, "%d", q->mtemp);
            if (i == 5) { strcpy(sb, "-"); strcpy(db, "-"); } else { strcpy(sb, "0"); strcpy(db, "0"); }
            int pviol = q->pwr > 650 ? (int)(next_rand() % 40) : 0;
            int tviol = q->gtemp > 85;
            fprintf(f, " %s   %s %6d %6d %6d %6s %6d %6d %6d %6d %6d %6d %6d %6d %6d %6d %6d %6d %6d %6s %6s %6d %6d %6d \n",
                    date, tod, i, q->pwr, q->gtemp, mt, q->sm, q->mem, 0, 0, 0, 0, q->mclk, q->pclk,
                    pviol, tviol, q->fb, 5 + i, 0, sb, db, 0, q->rx, q->tx);
        }
        t++;
    }
    if (fclose(f) != 0) { perror(argv[1]); return 1; }
    return 0;
}
