/*
 * TCP helpers shared by the Remote link and the remote server: "host:port"
 * parsing (IPv4, "[IPv6]:port", names resolved), connect with a timeout,
 * listen, and exact reads/writes bounded by an absolute deadline.
 */
#ifndef AUTD3_LINK_REMOTE_SOCK_H
#define AUTD3_LINK_REMOTE_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"

/* Split "host:port" / "[v6]:port" into host and port strings. `what` names the option in errors. */
autd3_err_t autd3__sock_split(const char *addr, char *host, size_t host_cap, char *port, size_t port_cap, const char *what);
/* Connect (TCP_NODELAY, non-blocking afterwards); timeout_ms 0 = none. *out = fd. Errors: INVALID_OPTION, CONNECT, TIMEOUT. */
autd3_err_t autd3__sock_connect(const char *addr, uint32_t timeout_ms, int *out);
/* Listen on addr (port 0 = any); *port_out = bound port. Errors: INVALID_OPTION, CONNECT (bind failed). */
autd3_err_t autd3__sock_listen(const char *addr, int *out, uint16_t *port_out);
/* "ip:port" of the peer (or "?"). */
void autd3__sock_peer_name(int fd, char *buf, size_t cap);
/* Make fd non-blocking with TCP_NODELAY. */
void autd3__sock_tune(int fd);
/*
 * Write / read exactly `len` bytes on a non-blocking fd before the monotonic
 * `deadline_ns` (0 = none). *done = bytes transferred. Errors: TIMEOUT,
 * PEER_CLOSED (EOF / reset), IO. The message is left to the caller (these set
 * a generic one that the caller overwrites with context).
 */
autd3_err_t autd3__sock_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ns, size_t *done);
autd3_err_t autd3__sock_write2(int fd, const void *a, size_t alen, const void *b, size_t blen, uint64_t deadline_ns);
autd3_err_t autd3__sock_read_all(int fd, void *buf, size_t len, uint64_t deadline_ns, size_t *done);

#endif
