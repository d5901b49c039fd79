/*
 * httpd.c - the metrics HTTP server: GET /metrics, /healthz, /readyz on one
 * libmicrohttpd daemon with its own polling thread. gpulog creates and binds
 * the listening socket itself (clear errors, port 0 works, close-on-exec so
 * --exec children do not inherit it) and hands it to libmicrohttpd.
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

#define HTTPD_MAX_CONN 256   /* connections in all */
#define HTTPD_PER_IP   32    /* from one client address */
#define HTTPD_IDLE_S   5     /* seconds without a byte before a connection is closed */

static struct MHD_Daemon *daemon_h;
static int bound_port;

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                             char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    static const char *text = "text/plain; charset=utf-8";
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, text, (char *)"method not allowed\n", 19, MHD_RESPMEM_PERSISTENT);
    if (!strcmp(url, "/metrics")) {
        struct buf b;
        buf_init(&b);
        metrics_render(&b);
        return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len, MHD_RESPMEM_MUST_FREE);
    }
    if (!strcmp(url, "/healthz"))
        return reply(c, MHD_HTTP_OK, text, (char *)"ok\n", 3, MHD_RESPMEM_PERSISTENT);
    if (!strcmp(url, "/readyz")) {
        if (metrics_ready()) return reply(c, MHD_HTTP_OK, text, (char *)"ready\n", 6, MHD_RESPMEM_PERSISTENT);
        return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, text, (char *)"not ready\n", 10, MHD_RESPMEM_PERSISTENT);
    }
    if (!strcmp(url, "/")) {
        static const char idx[] = "gpulog " GPULOG_VERSION "\n/metrics  Prometheus metrics\n"
                                  "/healthz  200 while the process runs\n/readyz   200 once ready\n";
        return reply(c, MHD_HTTP_OK, text, (char *)idx, sizeof idx - 1, MHD_RESPMEM_PERSISTENT);
    }
    return reply(c, MHD_HTTP_NOT_FOUND, text, (char *)"not found\n", 10, MHD_RESPMEM_PERSISTENT);
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
     * HTTPD_PER_IP of them from one address, and each closed after
     * HTTPD_IDLE_S without a byte */
    daemon_h = MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL,
                                MHD_OPTION_LISTEN_SOCKET, fd,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPD_MAX_CONN,
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
    MHD_stop_daemon(daemon_h);   /* closes the listening socket too */
    daemon_h = NULL;
    bound_port = 0;
}
