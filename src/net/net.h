/*
 * The one network layer (an OS seam, like src/platform and src/nic): TCP
 * client and server sockets for the Remote link, the Remote server, the
 * TwinCAT link and the emulated TwinCAT runtime. Addresses are "host:port"
 * or "[IPv6]:port"; hosts are IPv4 / IPv6 literals or names (resolved, every
 * address tried in turn). Sockets are non-blocking with TCP_NODELAY (each
 * request is one send; Nagle plus delayed ACK would stall it). Every wait is
 * bounded by an absolute monotonic deadline (0 = none), so no call can hang.
 * The OS-independent half (partial send/receive loops, deadlines, connect and
 * listen over every resolved address, error mapping) is src/net/common.c, on
 * the OS calls of src/net/os.h that src/net/posix.c (POSIX) and src/net/win.c
 * (Winsock) implement.
 */
#ifndef AUTD3_NET_NET_H
#define AUTD3_NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/error.h"

#define AUTD3_NET_HOST_MAX 256
#define AUTD3_NET_PEER_MAX 80 /* "[v6]:port" */

/* Split "host:port" / "[v6]:port" into host and port strings. `what` names the option in errors. Errors: INVALID_OPTION. */
autd3_err_t autd3__net_split(const char *addr, char *host, size_t host_cap, char *port, size_t port_cap, const char *what);

/* Addresses a host name resolved to, kept so that a reconnect from a bus thread never waits on a name lookup. */
#define AUTD3_NET_ADDRS_MAX 4
typedef struct autd3_net_addrs {
  size_t n;
  struct {
    int family;
    uint32_t len;
    uint64_t storage[16]; /* a socket address (128 bytes, aligned) */
  } a[AUTD3_NET_ADDRS_MAX];
  char host[AUTD3_NET_HOST_MAX];
  uint16_t port;
} autd3_net_addrs_t;
/* Resolve host (literal or name) and port. A name lookup is not bounded by any timeout here (the OS resolver's own
 * applies): call it where waiting is acceptable (open), not on a cycle path. Errors: CONNECT (cannot resolve). */
autd3_err_t autd3__net_resolve(const char *host, uint16_t port, const char *who, autd3_net_addrs_t *out);
/* Connect to the first of `addrs` that answers within timeout_ms in total (0 = no bound). Errors as autd3__net_connect. */
autd3_err_t autd3__net_connect_resolved(const autd3_net_addrs_t *addrs, uint32_t timeout_ms, const char *who, const char *refused_hint,
                                        int *out);

/*
 * Connect to host (literal or name) and port within timeout_ms (0 = no bound; the name lookup comes first). `who` starts the error messages
 * ("remote", "TwinCAT"); `refused_hint` (may be NULL) is appended when the peer refuses. *out = socket.
 * Errors: INVALID_OPTION (bad port), CONNECT (cannot resolve / refused / unreachable), TIMEOUT.
 */
autd3_err_t autd3__net_connect(const char *host, uint16_t port, uint32_t timeout_ms, const char *who, const char *refused_hint,
                               int *out);
/* The same from "host:port" / "[v6]:port". */
autd3_err_t autd3__net_connect_addr(const char *addr, uint32_t timeout_ms, const char *who, const char *refused_hint, int *out);

/* Listen on "host:port" (port 0 = any free one); *port_out = the bound port. The backlog is the OS maximum: the
 * servers bound their connections themselves, refusing at once (a full backlog would only delay clients).
 * Errors: INVALID_OPTION (address), CONNECT (cannot bind). */
autd3_err_t autd3__net_listen(const char *addr, int *out, uint16_t *port_out);
/* Accept one pending connection (non-blocking, TCP_NODELAY); -1 when none is pending. peer (may be NULL) = "ip:port". */
int autd3__net_accept(int listen_fd, char *peer, size_t peer_cap);
/* Fix the kernel's send buffer of `fd` at about `bytes` (no autotuning): a server bounds what a peer that
 * does not read can leave queued, so its own send blocks soon and its send-progress timeout can act. */
void autd3__net_cap_send_buffer(int fd, int bytes);

/* "ip:port" / "[v6]:port" of the peer (or "?"). */
void autd3__net_peer_name(int fd, char *buf, size_t cap);
/* The local / the peer's IPv4 address of a connected socket (false for IPv6). */
bool autd3__net_local_ipv4(int fd, uint8_t out[4]);
bool autd3__net_peer_ipv4(int fd, uint8_t out[4]);
void autd3__net_close(int fd);
/* Half-close: our FIN after the last bytes, while still reading (so close() does not turn into a RST). */
void autd3__net_shutdown_write(int fd);

/* One non-blocking attempt. > 0: bytes moved; 0: would block; AUTD3_NET_EOF (recv only): the peer closed;
 * AUTD3_NET_FAILED: reset / error. */
#define AUTD3_NET_EOF (-1)
#define AUTD3_NET_FAILED (-2)
long autd3__net_recv(int fd, void *buf, size_t len);
long autd3__net_send(int fd, const void *buf, size_t len);

/*
 * Write / read exactly `len` bytes before the monotonic `deadline_ns` (0 = none). *done = bytes transferred.
 * Errors: TIMEOUT, PEER_CLOSED (EOF / reset), IO. The message is generic: the caller overwrites it with context.
 */
autd3_err_t autd3__net_write_all(int fd, const void *buf, size_t len, uint64_t deadline_ns, size_t *done);
autd3_err_t autd3__net_write2(int fd, const void *a, size_t alen, const void *b, size_t blen, uint64_t deadline_ns);
autd3_err_t autd3__net_read_all(int fd, void *buf, size_t len, uint64_t deadline_ns, size_t *done);
/* Wait until fd is readable (or writable) before the deadline. Errors: TIMEOUT, IO. */
autd3_err_t autd3__net_wait(int fd, bool writable, uint64_t deadline_ns);
/* Readable right now (data or EOF)? */
bool autd3__net_readable(int fd);

/* Readiness of several sockets (a server's event loop). */
#define AUTD3_NET_IN 1
#define AUTD3_NET_OUT 2
typedef struct autd3_net_poll {
  int fd;
  int events;  /* AUTD3_NET_IN | AUTD3_NET_OUT */
  int revents; /* what happened; errors and hang-ups report as AUTD3_NET_IN (the next recv tells) */
} autd3_net_poll_t;
/* Wait up to timeout_ms (-1 = no bound) for any of them. Returns how many are ready (0 = timed out), or < 0 on error
 * (message set). A signal counts as a time-out (the caller's loop looks again). */
int autd3__net_poll(autd3_net_poll_t *p, size_t n, int timeout_ms);
/* The same with a timeout in nanoseconds (< 0 = no bound), for loops paced finer than a millisecond (the emulated
 * TwinCAT task cycle): Linux waits to the nanosecond (ppoll); elsewhere the wait is rounded up to milliseconds. */
int autd3__net_poll_ns(autd3_net_poll_t *p, size_t n, int64_t timeout_ns);

/* A local (UNIX-domain) stream socket listening at `path` (a stale file there is removed first), non-blocking;
 * connections are taken with autd3__net_accept (peer NULL). For control sockets of test tools.
 * Errors: INVALID_OPTION (path too long), IO. */
autd3_err_t autd3__net_listen_local(const char *path, int *out);
/* Close it and remove `path`. */
void autd3__net_close_local(int fd, const char *path);

/* ---- UDP for mDNS (net/mdns.h is the codec) ---- */

/* A UDP socket bound to *:5353, shared with other mDNS responders on the host (SO_REUSEADDR / SO_REUSEPORT), member
 * of 224.0.0.251 on every up multicast IPv4 interface and the default one, multicast loopback on (a server and a
 * client on one host see each other), TTL 255 (RFC 6762 11). Non-blocking. Errors: IO. */
autd3_err_t autd3__net_mdns_open(int *out);
/* Send one datagram to ip:port, or with ip NULL to 224.0.0.251:5353 out of every up multicast IPv4 interface
 * (the default one if there is none but loopback). Errors: IO. */
autd3_err_t autd3__net_udp_send4(int fd, const void *buf, size_t len, const uint8_t ip[4], uint16_t port);
/* One datagram if one is waiting: its length (> 0), 0 if none, < 0 on error; the sender's address. */
long autd3__net_udp_recv4(int fd, void *buf, size_t cap, uint8_t ip[4], uint16_t *port);
/* IPv4 addresses of up, non-loopback interfaces (at most cap). */
size_t autd3__net_ipv4_addrs(uint8_t (*out)[4], size_t cap);
/* This host's name (first label), "autd3" if unknown. */
void autd3__net_hostname(char *buf, size_t cap);

/* A self-pipe that wakes a poll loop from another thread or a signal handler. */
typedef struct autd3_net_wake {
  int r, w;
} autd3_net_wake_t;
autd3_err_t autd3__net_wake_open(autd3_net_wake_t *wk);
/* Async-signal-safe: one write(). */
void autd3__net_wake_poke(const autd3_net_wake_t *wk);
/* Consume every pending poke. */
void autd3__net_wake_drain(const autd3_net_wake_t *wk);
void autd3__net_wake_close(autd3_net_wake_t *wk);

#endif
