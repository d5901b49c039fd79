/*
 * dynlib.c - libcurl, libmicrohttpd and librdkafka are loaded with dlopen()
 * on first use.
 *
 * Why: all three pull in TLS (libcurl also LDAP, Kerberos and friends);
 * linking them makes the dynamic loader map and relocate ~3 MB of pages in
 * every gpulog process, also in `parse`, which never uses them (the parser
 * must stay small: librdkafka's libcrypto alone was 1.4 MB of parse's 5.1 MB).
 * This file defines the entry points gpulog calls, with the libraries' own
 * prototypes, and forwards each to the real function found with dlsym().
 * Callers include <curl/curl.h>, <microhttpd.h> and <librdkafka/rdkafka.h>
 * as usual and never see the difference.
 *
 * If a library cannot be loaded, the first call prints which package is
 * missing and exits with status 1: the feature was asked for and cannot work.
 *
 * This file: the loader, libcurl and libmicrohttpd; librdkafka's entry
 * points are in dynlib_kafka.c.
 */
#define CURL_DISABLE_TYPECHECK 1   /* curl.h would turn our definitions into macros */
#include <curl/curl.h>
#include <microhttpd.h>

#include "dynlib_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static struct dlib curl_lib = { { "libcurl.so.4", "libcurl-gnutls.so.4", NULL }, "libcurl4", NULL, PTHREAD_MUTEX_INITIALIZER };
static struct dlib mhd_lib = { { "libmicrohttpd.so.12", NULL, NULL }, "libmicrohttpd12", NULL, PTHREAD_MUTEX_INITIALIZER };

void *dynlib_open(struct dlib *l, char *err, size_t errlen)
{
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; !l->h && l->names[i]; i++) l->h = dlopen(l->names[i], RTLD_NOW | RTLD_LOCAL);
    void *h = l->h;
    if (!h && err && errlen) {
        const char *why = dlerror();
        snprintf(err, errlen, "%s", why ? why : "not found");
    }
    pthread_mutex_unlock(&l->mu);
    return h;
}

void *dynlib_sym(struct dlib *l, const char *name)
{
    char why[512];
    if (!dynlib_open(l, why, sizeof why)) {
        fprintf(stderr, "gpulog: cannot load %s (%s): install the Debian package %s\n", l->names[0], why, l->package);
        exit(1);
    }
    void *f = dlsym(l->h, name);
    if (!f) {
        fprintf(stderr, "gpulog: %s lacks %s: %s\n", l->names[0], name, dlerror());
        exit(1);
    }
    return f;
}

/* ---------------------------------------------------------------- libcurl */

CURLcode curl_global_init(long flags)
{
    typedef CURLcode (*fn_t)(long);
    RESOLVE_AS(curl, fn_t, "curl_global_init");
    return real_(flags);
}

CURL *curl_easy_init(void)
{
    typedef CURL *(*fn_t)(void);
    RESOLVE_AS(curl, fn_t, "curl_easy_init");
    return real_();
}

void curl_easy_cleanup(CURL *h)
{
    typedef void (*fn_t)(CURL *);
    RESOLVE_AS(curl, fn_t, "curl_easy_cleanup");
    real_(h);
}

CURLcode curl_easy_perform(CURL *h)
{
    typedef CURLcode (*fn_t)(CURL *);
    RESOLVE_AS(curl, fn_t, "curl_easy_perform");
    return real_(h);
}

const char *curl_easy_strerror(CURLcode c)
{
    typedef const char *(*fn_t)(CURLcode);
    RESOLVE_AS(curl, fn_t, "curl_easy_strerror");
    return real_(c);
}

/* The option number tells the argument's type (curl.h: CURLOPTTYPE_*). */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
    typedef CURLcode (*fn_t)(CURL *, CURLoption, ...);
    RESOLVE_AS(curl, fn_t, "curl_easy_setopt");
    va_list ap;
    va_start(ap, opt);
    CURLcode rc;
    if (opt < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        rc = real_(h, opt, v);
    } else if (opt < CURLOPTTYPE_FUNCTIONPOINT) {
        void *v = va_arg(ap, void *);
        rc = real_(h, opt, v);
    } else if (opt < CURLOPTTYPE_OFF_T) {
        void (*v)(void) = va_arg(ap, void (*)(void));
        rc = real_(h, opt, v);
    } else if (opt < CURLOPTTYPE_BLOB) {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = real_(h, opt, v);
    } else {
        void *v = va_arg(ap, void *);
        rc = real_(h, opt, v);
    }
    va_end(ap);
    return rc;
}

CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    typedef CURLcode (*fn_t)(CURL *, CURLINFO, ...);
    RESOLVE_AS(curl, fn_t, "curl_easy_getinfo");
    va_list ap;
    va_start(ap, info);
    void *p = va_arg(ap, void *);      /* always a pointer to the result */
    va_end(ap);
    return real_(h, info, p);
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
    typedef struct curl_slist *(*fn_t)(struct curl_slist *, const char *);
    RESOLVE_AS(curl, fn_t, "curl_slist_append");
    return real_(l, s);
}

void curl_slist_free_all(struct curl_slist *l)
{
    typedef void (*fn_t)(struct curl_slist *);
    RESOLVE_AS(curl, fn_t, "curl_slist_free_all");
    real_(l);
}

curl_mime *curl_mime_init(CURL *h)
{
    typedef curl_mime *(*fn_t)(CURL *);
    RESOLVE_AS(curl, fn_t, "curl_mime_init");
    return real_(h);
}

void curl_mime_free(curl_mime *m)
{
    typedef void (*fn_t)(curl_mime *);
    RESOLVE_AS(curl, fn_t, "curl_mime_free");
    real_(m);
}

curl_mimepart *curl_mime_addpart(curl_mime *m)
{
    typedef curl_mimepart *(*fn_t)(curl_mime *);
    RESOLVE_AS(curl, fn_t, "curl_mime_addpart");
    return real_(m);
}

CURLcode curl_mime_name(curl_mimepart *p, const char *name)
{
    typedef CURLcode (*fn_t)(curl_mimepart *, const char *);
    RESOLVE_AS(curl, fn_t, "curl_mime_name");
    return real_(p, name);
}

CURLcode curl_mime_type(curl_mimepart *p, const char *type)
{
    typedef CURLcode (*fn_t)(curl_mimepart *, const char *);
    RESOLVE_AS(curl, fn_t, "curl_mime_type");
    return real_(p, type);
}

CURLcode curl_mime_filedata(curl_mimepart *p, const char *file)
{
    typedef CURLcode (*fn_t)(curl_mimepart *, const char *);
    RESOLVE_AS(curl, fn_t, "curl_mime_filedata");
    return real_(p, file);
}

CURLM *curl_multi_init(void)
{
    typedef CURLM *(*fn_t)(void);
    RESOLVE_AS(curl, fn_t, "curl_multi_init");
    return real_();
}

CURLMcode curl_multi_cleanup(CURLM *m)
{
    typedef CURLMcode (*fn_t)(CURLM *);
    RESOLVE_AS(curl, fn_t, "curl_multi_cleanup");
    return real_(m);
}

CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
    typedef CURLMcode (*fn_t)(CURLM *, CURL *);
    RESOLVE_AS(curl, fn_t, "curl_multi_add_handle");
    return real_(m, h);
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
    typedef CURLMcode (*fn_t)(CURLM *, CURL *);
    RESOLVE_AS(curl, fn_t, "curl_multi_remove_handle");
    return real_(m, h);
}

CURLMcode curl_multi_perform(CURLM *m, int *running)
{
    typedef CURLMcode (*fn_t)(CURLM *, int *);
    RESOLVE_AS(curl, fn_t, "curl_multi_perform");
    return real_(m, running);
}

CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd extra[], unsigned int n, int timeout_ms, int *ret)
{
    typedef CURLMcode (*fn_t)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    RESOLVE_AS(curl, fn_t, "curl_multi_poll");
    return real_(m, extra, n, timeout_ms, ret);
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left)
{
    typedef CURLMsg *(*fn_t)(CURLM *, int *);
    RESOLVE_AS(curl, fn_t, "curl_multi_info_read");
    return real_(m, left);
}

CURLMcode curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
    typedef CURLMcode (*fn_t)(CURLM *, CURLMoption, ...);
    RESOLVE_AS(curl, fn_t, "curl_multi_setopt");
    va_list ap;
    va_start(ap, opt);
    CURLMcode rc;
    if (opt < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        rc = real_(m, opt, v);
    } else if (opt < CURLOPTTYPE_FUNCTIONPOINT) {
        void *v = va_arg(ap, void *);
        rc = real_(m, opt, v);
    } else if (opt < CURLOPTTYPE_OFF_T) {
        void (*v)(void) = va_arg(ap, void (*)(void));
        rc = real_(m, opt, v);
    } else {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = real_(m, opt, v);
    }
    va_end(ap);
    return rc;
}

/* ---------------------------------------------------------------- libmicrohttpd */

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
                                    MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    typedef struct MHD_Daemon *(*fn_t)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                        MHD_AccessHandlerCallback, void *, va_list);
    RESOLVE_AS(mhd, fn_t, "MHD_start_daemon_va");
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = real_(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

void MHD_stop_daemon(struct MHD_Daemon *d)
{
    typedef void (*fn_t)(struct MHD_Daemon *);
    RESOLVE_AS(mhd, fn_t, "MHD_stop_daemon");
    real_(d);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode)
{
    typedef struct MHD_Response *(*fn_t)(size_t, void *, enum MHD_ResponseMemoryMode);
    RESOLVE_AS(mhd, fn_t, "MHD_create_response_from_buffer");
    return real_(size, buffer, mode);
}

void MHD_destroy_response(struct MHD_Response *r)
{
    typedef void (*fn_t)(struct MHD_Response *);
    RESOLVE_AS(mhd, fn_t, "MHD_destroy_response");
    real_(r);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int status,
                                   struct MHD_Response *r)
{
    typedef enum MHD_Result (*fn_t)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    RESOLVE_AS(mhd, fn_t, "MHD_queue_response");
    return real_(c, status, r);
}

struct MHD_Response *MHD_create_response_from_callback(uint64_t size, size_t block_size,
                                                       MHD_ContentReaderCallback crc, void *crc_cls,
                                                       MHD_ContentReaderFreeCallback crfc)
{
    typedef struct MHD_Response *(*fn_t)(uint64_t, size_t, MHD_ContentReaderCallback, void *,
                                         MHD_ContentReaderFreeCallback);
    RESOLVE_AS(mhd, fn_t, "MHD_create_response_from_callback");
    return real_(size, block_size, crc, crc_cls, crfc);
}

/* Only the info types without an extra argument are used (the fd, the socket context). */
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c, enum MHD_ConnectionInfoType t, ...)
{
    typedef const union MHD_ConnectionInfo *(*fn_t)(struct MHD_Connection *, enum MHD_ConnectionInfoType, ...);
    RESOLVE_AS(mhd, fn_t, "MHD_get_connection_info");
    return real_(c, t);
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *h, const char *v)
{
    typedef enum MHD_Result (*fn_t)(struct MHD_Response *, const char *, const char *);
    RESOLVE_AS(mhd, fn_t, "MHD_add_response_header");
    return real_(r, h, v);
}

