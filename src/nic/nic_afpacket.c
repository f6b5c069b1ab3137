/*
 * Linux AF_PACKET back end of nic.h.
 *
 * One SOCK_RAW packet socket bound to the adapter and to EtherType 0x88A4, so
 * the kernel hands us EtherCAT frames only. Choices (each one optional: a
 * kernel that refuses it still works, just a little slower):
 *  - PACKET_QDISC_BYPASS: frames go straight to the driver, skipping the
 *    qdisc; the bus is point-to-point, there is nothing to schedule, and the
 *    qdisc costs latency and jitter on every send.
 *  - SO_PRIORITY 6 (highest without CAP_NET_ADMIN): if the qdisc is not
 *    bypassed, EtherCAT goes first.
 *  - PACKET_IGNORE_OUTGOING (Linux >= 4.20) plus a PACKET_OUTGOING check on
 *    every frame: our own transmissions are never read back as answers.
 *  - PACKET_MR_PROMISC: slaves may rewrite the source MAC, and the frame
 *    returns addressed to whatever the master put in the destination; the
 *    membership is dropped by the kernel when the socket closes.
 *  - SO_BUSY_POLL is NOT set: it spins inside recv, which would break the
 *    bus thread's CPU budget (<= 3 % of a core at 1 kHz) and veth has no
 *    NAPI to poll anyway. Callers that want spinning use echocat's spin_ns.
 *  - Receive through a PACKET_MMAP RX ring (TPACKET_V2, 256 frames of 2 KiB,
 *    kernel Documentation/networking/packet_mmap.rst): the kernel writes each
 *    frame into memory shared with us, so taking a frame that is already
 *    there costs no system call (recvfrom costs one per frame), and a waiting
 *    receive is one poll. V2, not V3: V3 hands frames over per block, and a
 *    block is retired only when full or when its timer (milliseconds) fires,
 *    which would add up to a cycle of latency to a one-frame-per-cycle bus;
 *    V2 hands over every frame as it lands. No TX ring: with one or two
 *    frames per kick it saves only a copy of at most 1.5 KB (a kick is a
 *    system call like send()), and a TX ring slot stays tied to the
 *    kernel's skb built on it (on veth: to the peer's receive path).
 *    Where the ring cannot be set up (old kernel, locked-memory limits,
 *    AUTD3_NIC_RING=0 in the environment) the socket falls back to
 *    recvfrom, silently apart from autd3__nic_io_path().
 * Tap mode (autd3__nic_open_tap, for capture files): none of the send-side
 * options, bound to all EtherTypes, outgoing frames kept. Frames sent with
 * PACKET_QDISC_BYPASS (this back end's own sends) skip the kernel's taps, so
 * a link that captures turns the bypass off (autd3__nic_sends_to_taps).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "autd3/link_driver.h"
#include "nic/nic_impl.h"
#include "platform/platform.h"

#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

/* RX ring geometry: 2 frames per 4 KiB block; 256 frames hold more than the
 * default socket buffer did (~90 frames of 1.3 KB), so a stalled reader
 * loses no more than before. */
#define RING_FRAME 2048u
#define RING_BLOCK 4096u
#define RING_FRAMES 256u

typedef struct afp {
  autd3_nic_t base;
  int fd;
  int ifindex;
  bool tap; /* passive tap: frames of both directions are returned */
  uint8_t *ring; /* PACKET_MMAP RX ring (TPACKET_V2), NULL: recvfrom */
  size_t ring_len;
  unsigned head; /* next ring frame to look at */
  int64_t clk_off; /* CLOCK_REALTIME - CLOCK_MONOTONIC at the last stamped frame (0: none yet) */
} afp_t;

static autd3_err_t afp_send(autd3_nic_t *nic, const uint8_t *frame, size_t len) {
  afp_t *a = (afp_t *)nic;
  for (int tries = 0; tries < 3; tries++) {
    ssize_t n = send(a->fd, frame, len, 0);
    if (n == (ssize_t)len)
      return AUTD3_OK;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == ENOBUFS || errno == EAGAIN)) /* driver queue full: try again once or twice */
      continue;
    if (n < 0 && errno == ENETDOWN)
      return autd3_set_error(AUTD3_E_IO, "nic %s: interface is down", nic->ifname);
    return autd3_set_error(AUTD3_E_IO, "nic %s: send of %zu bytes failed: %s", nic->ifname, len,
                           n < 0 ? strerror(errno) : "short write");
  }
  return autd3_set_error(AUTD3_E_IO, "nic %s: send queue full", nic->ifname);
}

static autd3_err_t afp_wait(afp_t *a, uint64_t deadline_ns);

/* A frame we never return: our own, not EtherCAT, truncated or larger than the caller's buffer. */
static bool afp_unwanted(const afp_t *a, unsigned char pkttype, const uint8_t *f, size_t n, size_t full, size_t cap) {
  return (pkttype == PACKET_OUTGOING && !a->tap) || full > cap || n != full || n < 14 ||
         ((f[12] << 8) | f[13]) != AUTD3_ETHERTYPE_ECAT;
}

/* The kernel stamps ring frames with CLOCK_REALTIME as it stores them; the
 * callers' clock is CLOCK_MONOTONIC. Converted through the clocks' offset read
 * now (realtime first, so the offset read is at most the true one and the
 * result never earlier than the arrival), plus 2 µs and 0.1 % of the frame's
 * age for a slew since it arrived (NTP slews at most 0.05 %); unknown (0) when
 * the offset jumped by more than 20 µs since the last stamped frame (a step,
 * or this thread was preempted between the two clock reads). */
static uint64_t ring_stamp(afp_t *a, const struct tpacket2_hdr *h) {
  uint64_t r = autd3__realtime_ns(), m = autd3__now_ns();
  int64_t off = (int64_t)r - (int64_t)m, prev = a->clk_off;
  a->clk_off = off;
  if (prev == 0 || off - prev > 20000 || prev - off > 20000)
    return 0;
  int64_t mono = (int64_t)((uint64_t)h->tp_sec * 1000000000u + h->tp_nsec) - off;
  if (mono >= (int64_t)m)
    return m;
  mono += 2000 + ((int64_t)m - mono) / 1000;
  return mono < (int64_t)m ? (uint64_t)mono : m;
}

/* The next frame the kernel has put into the ring, if any (no system call).
 * TP_STATUS_USER is the hand-over: read it with acquire, give the frame back
 * with a release store of TP_STATUS_KERNEL once copied. */
static bool ring_take(afp_t *a, uint8_t *buf, size_t cap, size_t *len) {
  for (;;) {
    struct tpacket2_hdr *h = (struct tpacket2_hdr *)(a->ring + (size_t)a->head * RING_FRAME);
    if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
      return false;
    const struct sockaddr_ll *from = (const struct sockaddr_ll *)((uint8_t *)h + TPACKET_ALIGN(sizeof *h));
    const uint8_t *f = (const uint8_t *)h + h->tp_mac;
    size_t n = h->tp_snaplen;
    bool drop = afp_unwanted(a, from->sll_pkttype, f, n, h->tp_len, cap);
    if (!drop) {
      memcpy(buf, f, n);
      *len = n;
      a->base.rx_ns = ring_stamp(a, h);
    }
    __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    a->head = (a->head + 1) % RING_FRAMES;
    if (!drop)
      return true;
    a->base.ignored++;
  }
}

static autd3_err_t afp_recv_ring(afp_t *a, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns) {
  for (;;) {
    if (ring_take(a, buf, cap, len))
      return AUTD3_OK;
    if (deadline_ns == 0 || autd3__now_ns() >= deadline_ns)
      return AUTD3_E_TIMEOUT;
    autd3_err_t e = afp_wait(a, deadline_ns);
    if (e != AUTD3_OK && e != AUTD3_E_TIMEOUT)
      return e;
  }
}

static autd3_err_t afp_recv(autd3_nic_t *nic, uint8_t *buf, size_t cap, size_t *len, uint64_t deadline_ns) {
  afp_t *a = (afp_t *)nic;
  if (a->ring)
    return afp_recv_ring(a, buf, cap, len, deadline_ns);
  /* A caller that waits usually waits for a frame it has just sent: poll
   * first (2 system calls per frame instead of a failing recv + poll + recv). */
  if (deadline_ns != 0) {
    autd3_err_t e = afp_wait(a, deadline_ns);
    if (e != AUTD3_OK && e != AUTD3_E_TIMEOUT)
      return e;
  }
  for (;;) {
    struct sockaddr_ll from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(a->fd, buf, cap, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &fl);
    if (n >= 0) {
      /* Our own frames, anything not EtherCAT, or truncated frames are dropped. */
      if ((size_t)n > cap || afp_unwanted(a, from.sll_pkttype, buf, (size_t)n, (size_t)n, cap)) {
        nic->ignored++;
        continue;
      }
      *len = (size_t)n;
      return AUTD3_OK;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      if (errno == ENETDOWN)
        return autd3_set_error(AUTD3_E_IO, "nic %s: interface is down", nic->ifname);
      return autd3_set_error(AUTD3_E_IO, "nic %s: receive failed: %s", nic->ifname, strerror(errno));
    }
    if (deadline_ns == 0 || autd3__now_ns() >= deadline_ns)
      return AUTD3_E_TIMEOUT;
    autd3_err_t e = afp_wait(a, deadline_ns);
    if (e != AUTD3_OK && e != AUTD3_E_TIMEOUT)
      return e;
  }
}

/* Block until the socket is readable or the monotonic deadline passes. */
static autd3_err_t afp_wait(afp_t *a, uint64_t deadline_ns) {
  uint64_t now = autd3__now_ns();
  if (now >= deadline_ns)
    return AUTD3_E_TIMEOUT;
  uint64_t rem = deadline_ns - now;
  struct timespec ts = {(time_t)(rem / 1000000000u), (long)(rem % 1000000000u)};
  struct pollfd p = {.fd = a->fd, .events = POLLIN};
  int r = ppoll(&p, 1, &ts, NULL);
  if (r < 0 && errno != EINTR)
    return autd3_set_error(AUTD3_E_IO, "nic %s: poll failed: %s", a->base.ifname, strerror(errno));
  if (r > 0 && (p.revents & (POLLERR | POLLNVAL)) && !(p.revents & POLLIN)) {
    /* e.g. the adapter went down: report, the caller decides */
    int err = 0;
    socklen_t el = sizeof err;
    getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &err, &el);
    return autd3_set_error(AUTD3_E_IO, "nic %s: socket error: %s", a->base.ifname, strerror(err ? err : EIO));
  }
  return r > 0 ? AUTD3_OK : AUTD3_E_TIMEOUT;
}

static int afp_fd(const autd3_nic_t *nic) { return ((const afp_t *)nic)->fd; }

static void afp_close(autd3_nic_t *nic) {
  afp_t *a = (afp_t *)nic;
  if (a->ring)
    munmap(a->ring, a->ring_len);
  close(a->fd);
  free(a);
}

/* Back through the qdisc: only that path copies a send to the adapter's
 * ETH_P_ALL sockets (dev_queue_xmit_nit), i.e. to a capture tap. */
static void afp_sends_to_taps(autd3_nic_t *nic) {
  afp_t *a = (afp_t *)nic;
  int zero = 0;
  (void)setsockopt(a->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &zero, sizeof zero);
}

static const autd3_nic_ops_t afp_ops = {afp_send, afp_recv, afp_fd, afp_close, afp_sends_to_taps};

/* The RX ring, set up before bind (nothing can be queued outside it yet).
 * Any refusal leaves the socket as it was: the recvfrom path. */
static void ring_setup(afp_t *a) {
  const char *env = getenv("AUTD3_NIC_RING");
  if (env && strcmp(env, "0") == 0)
    return;
  int v = TPACKET_V2;
  if (setsockopt(a->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) != 0)
    return;
  struct tpacket_req req = {RING_BLOCK, RING_FRAMES * RING_FRAME / RING_BLOCK, RING_FRAME, RING_FRAMES};
  if (setsockopt(a->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0)
    return;
  size_t len = (size_t)RING_FRAMES * RING_FRAME;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, a->fd, 0);
  if (m == MAP_FAILED) /* MAP_LOCKED counts against RLIMIT_MEMLOCK: try without */
    m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
  if (m == MAP_FAILED) {
    struct tpacket_req none;
    memset(&none, 0, sizeof none);
    (void)setsockopt(a->fd, SOL_PACKET, PACKET_RX_RING, &none, sizeof none);
    return;
  }
  a->ring = m;
  a->ring_len = len;
  a->base.io_path = "AF_PACKET, PACKET_MMAP RX ring (TPACKET_V2, 256 frames)";
}

static autd3_err_t afp_open(const char *ifname, bool tap, autd3_nic_t **out) {
  /* Protocol 0 at creation: nothing is queued until bind() picks the adapter
   * and EtherType, so no foreign frame slips in before the bind. */
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (errno == EPERM || errno == EACCES)
      return autd3_set_error(AUTD3_E_PERMISSION,
                             "nic %s: raw sockets need CAP_NET_RAW and CAP_NET_ADMIN: run as root, or grant them "
                             "once with `sudo setcap cap_net_raw,cap_net_admin+ep <your program>`",
                             ifname);
    return autd3_set_error(AUTD3_E_IO, "nic %s: cannot create AF_PACKET socket: %s", ifname, strerror(errno));
  }
  int ifindex = (int)if_nametoindex(ifname);
  if (ifindex == 0) {
    close(fd);
    return autd3_set_error(AUTD3_E_NO_INTERFACE, "nic: no network interface \"%s\"", ifname);
  }
  afp_t *a = calloc(1, sizeof *a);
  if (!a) {
    close(fd);
    return autd3_set_error(AUTD3_E_NOMEM, "nic %s: out of memory", ifname);
  }
  a->base.ops = &afp_ops;
  a->base.io_path = "AF_PACKET, recvfrom";
  a->fd = fd;
  a->ifindex = ifindex;
  a->tap = tap;
  if (!tap)
    ring_setup(a);
  struct sockaddr_ll sll;
  memset(&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  /* A tap binds to every EtherType: the kernel copies outgoing frames only
   * to ETH_P_ALL sockets (dev_queue_xmit_nit walks ptype_all), so a socket
   * bound to 0x88A4 would miss every frame the master sends. recv drops the
   * non-EtherCAT ones. */
  sll.sll_protocol = htons(tap ? ETH_P_ALL : AUTD3_ETHERTYPE_ECAT);
  sll.sll_ifindex = ifindex;
  if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
    int e = errno;
    afp_close(&a->base);
    if (e == ENODEV)
      return autd3_set_error(AUTD3_E_NO_INTERFACE, "nic: no network interface \"%s\"", ifname);
    return autd3_set_error(AUTD3_E_IO, "nic %s: bind failed: %s", ifname, strerror(e));
  }
  int one = 1, prio = 6, rcvbuf = 4 << 20;
  if (tap) {
    /* A tap sees every frame of the adapter, our sends included (outgoing
     * ones arrive as PACKET_OUTGOING); a slow disk must not make it drop
     * frames, hence the large receive buffer (capped by net.core.rmem_max). */
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  } else {
    (void)setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    (void)setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    (void)setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio);
  }
  struct packet_mreq mr;
  memset(&mr, 0, sizeof mr);
  mr.mr_ifindex = ifindex;
  mr.mr_type = PACKET_MR_PROMISC;
  (void)setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr);

  autd3__nic_os_mac(ifname, a->base.mac);
  *out = &a->base;
  return AUTD3_OK;
}

autd3_err_t autd3__nic_open_afpacket(const char *ifname, autd3_nic_t **out) { return afp_open(ifname, false, out); }
autd3_err_t autd3__nic_open_afpacket_tap(const char *ifname, autd3_nic_t **out) { return afp_open(ifname, true, out); }
