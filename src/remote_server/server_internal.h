/*
 * What the remote server's files share (server.c options, lifetime and stats,
 * bus.c, sessions.c, discovery.c, loop.c, log.c). The design:
 *
 * The remote server core (include/autd3/remote_server.h): one event loop
 * (the thread in autd3_remote_server_run) owns the sockets and the session
 * state; a bus thread owns the wrapped link and cycles it; a state-checker
 * thread calls the link's check_state every 100 ms, as the reference server
 * does, which is what recovers a wrapped EtherCAT link's rebooted or re-plugged
 * devices (nothing else on the server would) and what v7 replies report.
 *
 * Hand-off between the two is lock-free, with up to two requests in flight
 * (the reference client is strictly request/response - link.rs writes a
 * frame, then reads its reply - but a pipelining client may send the next
 * request before the previous reply; replies always go out in order):
 *   - two tx slots; request v is parsed straight into slot v&1 and published
 *     by storing `published` = v. The bus thread reads only slot taken&1. The
 *     session starts parsing v only when taken == published (= v-1), so the
 *     two never touch the same slot.
 *   - after the first cycle that carried v the bus thread copies that cycle's
 *     rx into reply slot v&1, stores `done` = v and writes one byte to a pipe
 *     that wakes the event loop. v is parsed only once the reply of v-2 has
 *     been queued, so a reply slot is never overwritten before it is sent.
 * This is the reference's exchange() (server.rs: tx_version/applied_version
 * under a mutex + condvar) without a lock the bus thread could block on.
 *
 * Pickup: a request must reach the link as late as it can still ride the
 * exchange the bus thread is about to run, or one that arrives just after the
 * previous reply waits a whole extra cycle. The bus thread calls the link's
 * wait_next_cycle; if no request is there when it returns and the link
 * reported a stage deadline (autd3_link_report_stage_deadline: echocat), it
 * waits on req_sem for the next one until that deadline less its own
 * wake-up latency (wake_lat_ns), since staging here is a pointer swap; the
 * event loop posts req_sem after publishing a request, only while the bus
 * thread says it waits (req_waiting), so the semaphore never counts up
 * unread. A link without wait_next_cycle (SOEM) sleeps to its deadline inside
 * cycle(): there the bus thread waits for a request up to `pickup_percent` of
 * the measured cycle after the last return, and calls at once when one
 * comes. Other links (emulator, EtherCrab, TwinCAT) decide the staging point
 * themselves: the request is taken when wait_next_cycle returns.
 *
 * Holding up against hostile clients (docs/remote.md, "Limits"): a new
 * connection first sits in a table of handshakes (bounded by
 * max_connections together with the session, refused at once beyond it), each
 * with its own handshake deadline, so a slow hello delays nobody else. The
 * first one to complete hello + geometry becomes the session. A session that
 * has sent nothing for idle_timeout_ms yields to the next client that
 * completes a handshake; a busy one refuses it (BUSY) as before. Log lines go
 * through a token bucket (net/log_limit.h).
 */
#ifndef AUTD3_REMOTE_SERVER_INTERNAL_H
#define AUTD3_REMOTE_SERVER_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autd3/link_driver.h"
#include "autd3/remote_server.h"
#include "core/error_context.h"
#include "core/struct_size.h"
#include "link/link_internal.h"
#include "link/remote/armt.h"
#include "net/log_limit.h"
#include "net/mdns.h"
#include "net/net.h"
#include "net/progress.h"
#include "net/stage_hist.h"
#include "platform/platform.h"
#include "platform/rt.h"

#define IN_CAP (64 * 1024)
#define OUT_CAP 1024
#define MAX_DRAIN 4
#define DRAIN_NS 1000000000ull
#define HS_BUF 4096      /* per handshake: read chunk; what follows the geometry moves to the session */
#define STATE_CHECK_NS 100000000ull /* as the reference server samples its link's status (autd3-rs-link-remote 0.9.0 bus.rs) */
#define MAX_ACCEPTS 64   /* per loop turn, so a connect storm cannot starve the session */
/* Kernel send buffer of every connection. A reply is at most ~400 bytes and a client has at most two owed, so
 * this holds dozens; autotuned, it grew to megabytes, and a client that never reads was dropped only once they
 * were full (minutes). Fixed, a send blocks soon after the client stops taking replies, and the send-progress
 * timeout (stall_timeout_ms: "has not taken its replies") drops it. */
#define SEND_BUFFER_BYTES 16384
#define CPU_SAMPLE_NS 10000000ull /* each thread samples its own CPU time this often (a system call each) */
#define N_STAGES 7               /* the per-stage histograms, in the order of stage_names (sessions.c) */

/* A connection that has not completed hello + geometry yet. */
typedef struct handshake {
  int fd; /* -1 = free */
  char peer[AUTD3_NET_PEER_MAX];
  armt_parser_t parser;
  uint64_t deadline;
  bool said; /* it sent something: leaving now is a dropped handshake, not a port probe */
  size_t off, len;
  uint8_t buf[HS_BUF];
} handshake_t;

/* What a session owes its client while its send-progress deadline runs (stall_timeout_ms). */
enum {
  RSRV_OWE_REPLY = 1, /* a reply not taken, a request half received, or the answer to the handshake */
  RSRV_OWE_AHEAD = 2  /* requests came ahead of their replies (running_ahead in sessions.c) */
};

struct autd3_remote_server {
  autd3_remote_server_option_t o;
  int lfd;
  uint16_t port;
  autd3_net_wake_t stop, wake; /* stop(): from any thread or a signal handler; wake: from the bus thread */

  /* wrapped link + bus thread */
  autd3_link_t *link;
  uint16_t n;
  autd3__thread_t bus;
  bool bus_running;
  atomic_bool bus_stop;
  _Atomic uint64_t published, taken, done;
  atomic_int bus_err;
  char bus_msg[320];
  uint8_t *slot[2], *bus_rx, *reply_rx[2];
  bool reply_valid[2];
  atomic_bool take_wake; /* the session waits for the bus to take the published request */
  autd3__sem_t req_sem;     /* posted by the event loop after publishing, while req_waiting (see Pickup) */
  atomic_bool req_waiting;  /* the bus thread waits on req_sem for a request */
  autd3__sem_t bus_started; /* the bus thread applied its RT policy (bus_err/bus_msg say if it failed) */
  bool sems;                /* req_sem and bus_started exist */
  /* The state checker: the wrapped link's check_state every STATE_CHECK_NS, on its own thread (check_state may run
   * beside cycle, and may take a while: echocat and SOEM recover a device inside it). It is what brings a wrapped
   * EtherCAT link's rebooted or re-plugged devices back, and what v7 replies report per device. */
  autd3__thread_t checker;
  bool checker_running;
  _Atomic uint8_t dev_state[AUTD3_MAX_DEVICES]; /* the v7 state byte of each device, from the last check */
  _Atomic uint64_t link_recoveries;
  atomic_bool recovering; /* some device the link can observe is not in OP */
  /* Bus cycles that repeated the last tx because no new request had arrived, this session: before its first
   * request (lead), between requests (mid), and the current run since the last one (trailing at session end). */
  atomic_bool idle_reset;
  _Atomic uint64_t idle_lead, idle_mid, idle_run;
  /* Per-stage timestamps of request v, in slot v&1 (docs/remote.md "Where the hop's time goes"): the event loop sets
   * t_recv (the recv() that brought the request's last byte) and t_pub (hand-off) when the request is complete; the
   * bus thread sets t_take, t_call, t_ret before it stores done = v, and the event loop reads them after loading done
   * (the slot is not reused before v's reply is queued, see autd3__rsrv_next_slot). */
  uint64_t t_recv[2], t_pub[2], t_take[2], t_call[2], t_ret[2];
  /* CPU: bus cycles run and the bus threads' CPU time (those joined, and the running one's last sample, taken every
   * CPU_SAMPLE_NS by itself), the event loop's since run() started (its own samples); any thread reads them. */
  _Atomic uint64_t bus_cycles, bus_cpu_done, bus_cpu_live, net_cpu;

  /* session (event-loop thread only) */
  int cfd;
  char peer[AUTD3_NET_PEER_MAX];
  armt_parser_t parser;
  bool in_session, closing;
  uint64_t replied, session_requests; /* replied: last version whose reply is queued */
  autd3_net_progress_t progress; /* send progress (net/progress.h): owed RSRV_OWE_REPLY or RSRV_OWE_AHEAD */
  uint8_t *in;
  size_t in_off, in_len;
  uint8_t out[OUT_CAP];
  size_t out_off, out_len;
  uint64_t last_rx; /* when the session last received bytes (idle measure; the TCP receive stage) */
  /* Replies in `out` not yet sent (at most two are owed): their requests' receive time and when they were queued. */
  uint64_t q_recv[2], q_queued[2];
  int q_n;
  /* This session's stage histograms (event-loop thread only), logged at its end (stage_names, sessions.c), and where
   * its CPU figures started. */
  autd3_stage_hist_t h[N_STAGES];
  uint64_t sess_cycles0, sess_bus_cpu0, sess_net_cpu0;
  autd3_link_stats_t sess_link0; /* the wrapped link's counters when the session started */
  uint64_t net_cpu0, net_cpu_base, net_cpu_t; /* event loop: its CPU time and net_cpu when run() started; when it last sampled */
  struct {
    int fd;
    uint64_t deadline;
  } drain[MAX_DRAIN];
  handshake_t *hs; /* max_connections entries */
  autd3_net_poll_t *pfd;
  int *pfd_hs;      /* pfd index -> handshake index */
  autd3_log_limit_t log_limit;

  _Atomic uint64_t st_clients, st_refused, st_requests, st_dropped;

  /* DNS-SD advertisement (option advertise): the socket, and the answer built once at create */
  int mdns_fd;
  char mdns_instance[64], mdns_host[80], mdns_txt_sdk[48];
  uint8_t mdns_addr[8][4];
  size_t mdns_naddr;
};

/* Each client is answered in its own protocol version (the one of its hello). */
static inline bool autd3__rsrv_is_v7(const armt_parser_t *p) { return p->peer_version == ARMT_VERSION_7; }

/* log.c: the rate-limited log (any file of the server, event-loop thread). */
void autd3__rsrv_log(autd3_remote_server_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* bus.c: the wrapped link, its bus thread (the hand-off above) and its state checker. */
autd3_err_t autd3__rsrv_link_open(autd3_remote_server_t *s, uint16_t n);
void autd3__rsrv_link_close(autd3_remote_server_t *s);
/* Request `published` just became v: wake the bus thread if it waits for it (event-loop thread). */
void autd3__rsrv_bus_notify(autd3_remote_server_t *s);
/* The bus threads' CPU time so far, ns (any thread; up to CPU_SAMPLE_NS old). */
uint64_t autd3__rsrv_bus_cpu_ns(const autd3_remote_server_t *s);

/* The event loop samples its own CPU time (loop.c); `force`: now, else at most every CPU_SAMPLE_NS. */
void autd3__rsrv_net_cpu_sample(autd3_remote_server_t *s, uint64_t now, bool force);

/* sessions.c: the session and the handshake table (event-loop thread only). */
void autd3__rsrv_session_reset(autd3_remote_server_t *s);
void autd3__rsrv_session_end(autd3_remote_server_t *s, bool dropped, const char *why);
bool autd3__rsrv_next_slot(autd3_remote_server_t *s);
void autd3__rsrv_pump(autd3_remote_server_t *s);
void autd3__rsrv_on_bus(autd3_remote_server_t *s);
void autd3__rsrv_hs_read(autd3_remote_server_t *s, handshake_t *h, uint64_t now);
void autd3__rsrv_hs_close(handshake_t *h);
void autd3__rsrv_on_accept(autd3_remote_server_t *s);

/* discovery.c: the DNS-SD advertisement (option advertise). */
extern const char autd3__rsrv_mdns_service[];
autd3_err_t autd3__rsrv_mdns_setup(autd3_remote_server_t *s, const char *listen);
void autd3__rsrv_mdns_announce(autd3_remote_server_t *s, uint32_t ttl);
void autd3__rsrv_on_mdns(autd3_remote_server_t *s);

#endif
