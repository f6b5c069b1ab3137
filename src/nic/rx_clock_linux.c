/*
 * The receive clock on Linux (nic/rx_clock.h): SIOCGSTAMPNS, the socket
 * ioctl that returns the receive time of the last frame read from it (socket(7),
 * "SIOCGSTAMP"; packet(7) sockets support it). The first request switches the
 * socket's stamping on. The stamp is taken when the frame enters the
 * receive path (on veth: inside the master's send), in CLOCK_REALTIME; it is
 * mapped to CLOCK_MONOTONIC through its age, which is what the model needs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <time.h>

#include "platform/platform.h"
#include "nic/rx_clock.h"

/* An age beyond this is not a queueing delay but a step of the wall clock
 * (NTP, settimeofday) between stamp and read: use the read time. */
#define MAX_AGE_NS 1000000000ull

void autd3__rx_clock_init(autd3_rx_clock_t *c, int fd) {
  struct timespec ts;
  c->fd = fd;
  c->kernel = c->read = 0;
  /* ENOENT = no frame stamped yet, and stamping is now on */
  c->on = ioctl(fd, SIOCGSTAMPNS, &ts) == 0 || errno == ENOENT;
}

uint64_t autd3__rx_clock_arrival(autd3_rx_clock_t *c, uint64_t nic_rx_ns) {
  uint64_t now = autd3__now_ns();
  if (nic_rx_ns != 0 && nic_rx_ns <= now) {
    c->kernel++;
    return nic_rx_ns;
  }
  struct timespec ts;
  if (c->on && ioctl(c->fd, SIOCGSTAMPNS, &ts) == 0) {
    uint64_t real = autd3__realtime_ns();
    uint64_t st = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (st <= real && real - st < MAX_AGE_NS && real - st < now) {
      c->kernel++;
      return now - (real - st);
    }
  }
  c->read++;
  return now;
}
