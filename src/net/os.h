/*
 * The OS calls under the network layer: what a back end (src/net/posix.c,
 * src/net/win.c) implements so that the OS-independent loops of
 * src/net/common.c (partial sends and receives, deadlines, connect and
 * listen over every resolved address, error mapping) exist once. Private to
 * src/net. Socket errors travel as the OS's own code (errno / WSAGetLastError)
 * and are read only through autd3__net_os_class / _text.
 */
#ifndef AUTD3_NET_OS_H
#define AUTD3_NET_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net.h"

/* What an OS socket error means to the shared code. */
typedef enum {
  AUTD3_NET_OS_OTHER = 0,
  AUTD3_NET_OS_PEER_GONE, /* reset, aborted, broken pipe, not connected: AUTD3_E_PEER_CLOSED */
  AUTD3_NET_OS_REFUSED,   /* connection refused: nobody listens there */
} autd3_net_os_class_t;
autd3_net_os_class_t autd3__net_os_class(int e);
/* The OS's text for e, into buf. */
const char *autd3__net_os_text(int e, char *buf, size_t cap);

/* A failed socket call with OS error e: AUTD3_E_PEER_CLOSED when the peer went away, AUTD3_E_IO otherwise;
 * message "op: text". */
autd3_err_t autd3__net_err(int e, const char *op);

/* One non-blocking send of a then b (blen may be 0), retried on EINTR: > 0 bytes moved, 0 would block, < 0 failed
 * with *err = the OS error. */
long autd3__net_os_send(int fd, const void *a, size_t alen, const void *b, size_t blen, int *err);
/* One non-blocking receive, retried on EINTR: > 0 bytes, 0 would block, AUTD3_NET_EOF, or AUTD3_NET_FAILED with
 * *err = the OS error. */
long autd3__net_os_recv(int fd, void *buf, size_t len, int *err);

/* getaddrinfo(host, port) for TCP (passive: for bind) into out->a / out->n (at most AUTD3_NET_ADDRS_MAX).
 * false: *why = the resolver's (or the socket library's) text. */
bool autd3__net_os_resolve(const char *host, const char *port, bool passive, autd3_net_addrs_t *out, char *why, size_t why_cap);

/* For os_resolve: keep one resolved socket address (family, the OS's sockaddr of len bytes) if there is room. */
void autd3__net_addrs_add(autd3_net_addrs_t *out, int family, const void *addr, size_t len);

/* A non-blocking TCP_NODELAY socket for address i of addrs, connect started. 1: connected; 0: in progress
 * (wait writable, then autd3__net_os_connect_result); -1: failed with *err. *fd is set unless -1. */
int autd3__net_os_connect(const autd3_net_addrs_t *addrs, size_t i, int *fd, int *err);
/* After the in-progress connect's socket turned writable: 0 connected, else the OS error. */
int autd3__net_os_connect_result(int fd);
/* A non-blocking listening socket bound to address i (the OS's backlog maximum); *port = the bound port.
 * false: *err = the OS error. */
bool autd3__net_os_listen(const autd3_net_addrs_t *addrs, size_t i, int *fd, uint16_t *port, int *err);
/* A non-blocking local (UNIX-domain) stream socket bound to `path` and listening: 0 done (*fd), 1 the path does
 * not fit the OS's address, -1 failed with *err = the OS error. */
int autd3__net_os_listen_local(const char *path, int *fd, int *err);
/* The peer's numeric host and port; false if unknown. */
bool autd3__net_os_peer_numeric(int fd, char *host, size_t host_cap, char *serv, size_t serv_cap);

/* Milliseconds left until deadline_ns (rounded up, at most 1 000 000) for a poll/select timeout: -1 = no deadline,
 * 0 = expired. Shared by the back ends' waits. */
int autd3__net_ms_left(uint64_t deadline_ns);

/* mDNS: one UDP datagram to ip:port (-1: failed with *err), and the interface that multicast leaves by
 * (ip; NULL = let the routing table pick). */
long autd3__net_os_udp_sendto(int fd, const void *buf, size_t len, const uint8_t ip[4], uint16_t port, int *err);
bool autd3__net_os_mcast_if(int fd, const uint8_t ip[4]);

#endif
