/*
 * httpd.c - the metrics HTTP server: GET /metrics, /healthz, /readyz on one
 * libmicrohttpd daemon with its own polling thread. gpulog creates and binds
 * the listening socket itself (clear errors, port 0 works, close-on-exec so
 * --exec children do not inherit it) and hands it to libmicrohttpd.
 *
 * Under any client load the probes answer and memory stays bounded:
 * - at HTTPD_MAX_CONN connections a new one is still taken, and the worst
 *   one goes (shut down, counted in gpulog_http_connections_evicted_total):
 *   the oldest that never sent a whole request (a slowloris), else the one
 *   whose last request is the oldest (a slow reader, an idle keep-alive);
 *   so a probe gets in whatever holds the slots (at most HTTPD_PER_IP per
 *   address, closed after HTTPD_IDLE_S without a byte);
 * - /metrics is rendered once and shared by reference (a page younger than
 *   a second that is still being sent serves a new scrape too), never
 *   copied per connection; at most
 *   HTTPD_PAGES pages live: when a new one is due and that many are held
 *   (slow readers), the readers of the oldest are shut down.
 * Every callback runs on libmicrohttpd's one internal thread (no thread per
 * connection): the connection list and the pages need no lock.
 */
#include "metrics.h"
#include "config.h"
#include "common.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#define HTTPD_MAX_CONN 256   /* connections kept; one more evicts the worst */
#define HTTPD_HARD_CONN (HTTPD_MAX_CONN + 64)   /* libmicrohttpd's limit: room for evicted ones to close */
#define HTTPD_PER_IP   32    /* from one client address */
#define HTTPD_IDLE_S   5     /* seconds without a byte before a connection is closed */
#define HTTPD_PAGES    3     /* /metrics pages alive at once (shared by their readers) */
#define HTTPD_PAGE_MS  1000  /* a page younger than this serves a new scrape */

static struct MHD_Daemon *daemon_h;
static int bound_port;

/* One rendered /metrics page, shared by the responses that send it. */
struct page {
    struct page *next;        /* the pages alive */
    uint64_t seq;             /* 1, 2, ... in the order they were made */
    int refs;                 /* responses sending it, + 1 while it is the current page */
    int64_t made_ms;
    size_t len;
    char *p;
};

/* One open connection, oldest first in the list. */
struct conn {
    struct conn *prev, *next;
    int fd;
    int64_t start_ms, request_ms;   /* request_ms: its last request arrived (0: none yet) */
    int evicted;              /* shut down to make room, not closed yet */
    uint64_t page_seq;        /* the /metrics page it was last sent (it may be gone since) */
};

static struct conn *conn_first, *conn_last;
static size_t nconn, nevicted;
static struct page *cur_page, *pages;
static int npages;
static uint64_t page_seq;

static void page_put(struct page *g)
{
    if (!g || --g->refs > 0) return;
    for (struct page **pp = &pages; *pp; pp = &(*pp)->next)
        if (*pp == g) { *pp = g->next; break; }
    free(g->p);
    free(g);
    npages--;
}

/* Shuts c down (libmicrohttpd closes it at its next turn). */
static void evict(struct conn *c, const char *why)
{
    if (c->evicted) return;
    shutdown(c->fd, SHUT_RDWR);
    c->evicted = 1;
    nevicted++;
    metrics_inc(M_HTTP_EVICTED);
    log_warn("msg=\"metrics endpoint: a connection closed to make room\" reason=\"%s\" connections=%zu", why, nconn);
}

/* The accept policy: at the limit, the worst connection goes first. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    if (nconn - nevicted < HTTPD_MAX_CONN) return MHD_YES;
    struct conn *v = NULL;
    for (struct conn *c = conn_first; c && !v; c = c->next)
        if (!c->evicted && !c->request_ms) v = c;
    if (v) { evict(v, "no whole request yet (oldest)"); return MHD_YES; }
    for (struct conn *c = conn_first; c; c = c->next)
        if (!c->evicted && (!v || c->request_ms < v->request_ms)) v = c;
    if (v) evict(v, "oldest request (a slow reader or an idle connection)");
    return MHD_YES;
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct conn *c = xcalloc(1, sizeof *c);
        c->fd = ci ? ci->connect_fd : -1;
        c->start_ms = gl_now_ms();
        c->prev = conn_last;
        if (conn_last) conn_last->next = c; else conn_first = c;
        conn_last = c;
        nconn++;
        *socket_context = c;
        return;
    }
    struct conn *c = *socket_context;
    if (!c) return;
    if (c->prev) c->prev->next = c->next; else conn_first = c->next;
    if (c->next) c->next->prev = c->prev; else conn_last = c->prev;
    nconn--;
    if (c->evicted) nevicted--;
    free(c);
    *socket_context = NULL;
}

static struct conn *conn_of(struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The page for a scrape (a reference the caller puts): the current one
 * while another scrape is still sending it and it is younger than
 * HTTPD_PAGE_MS, else a new render (a scrape after the last one finished
 * sees current values); with HTTPD_PAGES pages held, the readers of the
 * oldest make room. */
static struct page *page_get(void)
{
    int64_t now = gl_now_ms();
    if (cur_page && cur_page->refs > 1 && now - cur_page->made_ms < HTTPD_PAGE_MS) {
        cur_page->refs++;
        return cur_page;
    }
    if (npages >= HTTPD_PAGES) {
        struct page *old = NULL;   /* the oldest page alive but the current one */
        for (struct page *q = pages; q; q = q->next)
            if (q != cur_page && (!old || q->seq < old->seq)) old = q;
        for (struct conn *c = conn_first; c && old; c = c->next)
            if (c->page_seq == old->seq) evict(c, "slow reader of an old /metrics page");
    }
    struct buf b;
    buf_init(&b);
    metrics_render(&b);
    struct page *g = xcalloc(1, sizeof *g);
    g->refs = 2;   /* the current page, and this scrape */
    g->seq = ++page_seq;
    g->next = pages;
    pages = g;
    g->made_ms = now;
    g->len = b.len;
    g->p = xrealloc(b.p, b.len + 1);   /* without the slack of the growing buffer */
    npages++;
    page_put(cur_page);
    cur_page = g;
    return g;
}

static ssize_t page_read(void *cls, uint64_t pos, char *out, size_t max)
{
    const struct page *g = cls;
    if (pos >= g->len) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = g->len - (size_t)pos < max ? g->len - (size_t)pos : max;
    memcpy(out, g->p + pos, n);
    return (ssize_t)n;
}

static void page_done(void *cls) { page_put(cls); }

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, const char *ctype, struct MHD_Response *r)
{
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype, const char *body, size_t len)
{
    return queue(c, status, ctype, MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    static const char *text = "text/plain; charset=utf-8";
    struct conn *cn = conn_of(c);
    if (cn) cn->request_ms = gl_now_ms();
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, text, "method not allowed\n", 19);
    if (!strcmp(url, "/metrics")) {
        struct page *g = page_get();
        if (cn) cn->page_seq = g->seq;
        struct MHD_Response *r = MHD_create_response_from_callback(g->len, 16 * 1024, page_read, g, page_done);
        if (!r) { page_put(g); return MHD_NO; }
        return queue(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", r);
    }
    if (!strcmp(url, "/healthz"))
        return reply(c, MHD_HTTP_OK, text, "ok\n", 3);
    if (!strcmp(url, "/readyz")) {
        if (metrics_ready()) return reply(c, MHD_HTTP_OK, text, "ready\n", 6);
        return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, text, "not ready\n", 10);
    }
    if (!strcmp(url, "/")) {
        static const char idx[] = "gpulog " GPULOG_VERSION "\n/metrics  Prometheus metrics\n"
                                  "/healthz  200 while the process runs\n/readyz   200 once ready\n";
        return reply(c, MHD_HTTP_OK, text, idx, sizeof idx - 1);
    }
    return reply(c, MHD_HTTP_NOT_FOUND, text, "not found\n", 10);
}

/* Creates, binds and listens; returns the fd or -1 with err set. */
static int listen_on(const char *addr, int *family, char *err, size_t errlen)
{
    char host[256], portstr[8];
    int port;
    if (config_split_addr(addr, host, sizeof host, &port) != GL_OK) {
        snprintf(err, errlen, "metrics address '%s' is not HOST:PORT (e.g. 0.0.0.0:9477, [::]:9477, :9477)", addr);
        return -1;
    }
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int g = getaddrinfo(*host && strcmp(host, "*") ? host : NULL, portstr, &hints, &res);
    if (g != 0) {
        snprintf(err, errlen, "metrics address '%s': %s", addr, gai_strerror(g));
        return -1;
    }
    int fd = -1, last = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) { last = errno; continue; }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 32) != 0) {
            last = errno;
            close(fd);
            fd = -1;
            continue;
        }
        *family = ai->ai_family;
    }
    freeaddrinfo(res);
    if (fd < 0) snprintf(err, errlen, "metrics address '%s': %s", addr, strerror(last ? last : EADDRNOTAVAIL));
    return fd;
}

int metrics_serve(const char *addr, char *err, size_t errlen)
{
    if (!addr || !*addr) return GL_OK;   /* metrics_addr "" = no server */
    if (daemon_h) {
        snprintf(err, errlen, "metrics server already running on port %d", bound_port);
        return GL_ERROR;
    }
    int family = AF_INET;
    int fd = listen_on(addr, &family, err, errlen);
    if (fd < 0) return GL_ERROR;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                        : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;   /* epoll on Linux: no FD_SETSIZE limit */
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    /* slow or idle clients (a slowloris) must not starve /healthz, the
     * liveness probe: room for many connections (each one small), at most
     * HTTPD_PER_IP of them from one address, each closed after HTTPD_IDLE_S
     * without a byte, and the worst evicted for a new one at the limit */
    daemon_h = MHD_start_daemon(flags, 0, on_accept, NULL, handle, NULL,
                                MHD_OPTION_LISTEN_SOCKET, fd,
                                MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPD_HARD_CONN,
                                MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTPD_PER_IP,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTPD_IDLE_S,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
                                MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024),
                                MHD_OPTION_END);
    if (!daemon_h) {
        close(fd);
        snprintf(err, errlen, "metrics server on '%s' failed to start", addr);
        return GL_ERROR;
    }
    bound_port = port;
    return GL_OK;
}

int metrics_port(void)
{
    return daemon_h ? bound_port : 0;
}

void metrics_stop(void)
{
    if (!daemon_h) return;
    MHD_stop_daemon(daemon_h);   /* closes the listening socket and every connection (their pages put) */
    daemon_h = NULL;
    bound_port = 0;
    page_put(cur_page);
    cur_page = NULL;
}
