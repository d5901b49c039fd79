/* src_ckpt.c - the common part of every source (source.h): its name, its
 * checkpoint file and the saving of it, its spool directory. */
#include "source.h"
#include "../parsers/parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Fills the common part; the source owns the copies (source_fini frees them). */
void source_init(struct source *s, const struct source_ops *ops, const char *name, const struct source_env *env)
{
    s->ops = ops;
    s->name = xstrdup(name);
    s->env = env;
    s->saved_offset = -1;
    buf_init(&s->hdr);
    if (env && env->state_dir) s->ckpt_file = ckpt_path(env->state_dir, ops->name, name);
}

/* Frees the common part, the loop's share of it included (parser, lanes). */
void source_fini(struct source *s)
{
    parser_free(s->parser);
    for (uint32_t i = 0; i < s->nlanes; i++) track_free(&s->lanes[i].tr);
    free(s->lanes);
    buf_free(&s->hdr);
    free(s->ckpt_file);
    free(s->name);
}

/* Loads s's checkpoint into *ck; the header block goes to s->hdr. */
int source_ckpt_load(struct source *s, struct ckpt *ck)
{
    memset(ck, 0, sizeof *ck);
    if (!s->ckpt_file) return 0;
    char err[GL_ERRLEN];
    int r = ckpt_load(s->ckpt_file, ck, err, sizeof err);
    /* out of descriptors is no reason to start over: idle files give theirs back */
    while (r == GL_ERROR && (errno == EMFILE || errno == ENFILE) && tail_release_one())
        r = ckpt_load(s->ckpt_file, ck, err, sizeof err);
    if (r == GL_ERROR) {
        log_warn("msg=\"ignoring an unreadable checkpoint\" error=\"%s\"", err);
        memset(ck, 0, sizeof *ck);
    }
    if (r != GL_OK) return 0;
    s->saved_offset = ck->offset;
    s->start = ck->offset;
    if (ck->hdr_len) {
        buf_reset(&s->hdr);
        buf_append(&s->hdr, ck->hdr, ck->hdr_len);
        s->hdr_saved_hash = hash64(s->hdr.p, s->hdr.len, 1);
    }
    return 1;
}

/* Writes *ck with committed and s->hdr; a failure is said once per streak
 * (saves are retried every second) and counted. */
int source_ckpt_save(struct source *s, struct ckpt *ck, int64_t committed)
{
    ck->offset = committed;
    memcpy(ck->hdr, s->hdr.p ? s->hdr.p : "", s->hdr.len);
    ck->hdr_len = (uint32_t)s->hdr.len;
    char err[GL_ERRLEN];
    if (ckpt_save(s->ckpt_file, ck, err, sizeof err) != GL_OK) {
        s->ckpt_failures++;
        if (!s->ckpt_bad)
            log_error("msg=\"cannot write a checkpoint: a restart would resend this source from its last checkpoint; "
                      "/readyz fails until it is written\" source=\"%s\" file=\"%s\" error=\"%s\"",
                      s->name, s->ckpt_file, err);
        s->ckpt_bad = 1;
        return GL_ERROR;
    }
    if (s->ckpt_bad) log_info("msg=\"checkpoint written again\" source=\"%s\"", s->name);
    s->ckpt_bad = 0;
    s->saved_offset = ck->offset;
    s->hdr_saved_hash = hash64(ck->hdr, ck->hdr_len, 1);
    s->force_save = 0;
    return GL_OK;
}

/* STATE/spool-KIND-HASH of the source's name (caller frees). */
char *source_spool_dir(const struct source *s)
{
    struct buf dir;
    buf_init(&dir);
    buf_printf(&dir, "%s/spool-%s-%016" PRIx64, s->env->state_dir, s->ops->name,
               hash64(s->name, strlen(s->name), 0x67706c6f67ULL));
    return dir.p;
}
