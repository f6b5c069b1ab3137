/*
 * The receive clock where the OS gives no receive stamp to read (nic/rx_clock.h):
 * the NIC layer's own stamp when it has one, else the read time, counted.
 */
#include "nic/rx_clock.h"

#include "platform/platform.h"

void autd3__rx_clock_init(autd3_rx_clock_t *c, int fd) {
  c->fd = fd;
  c->on = false;
  c->kernel = c->read = 0;
}

uint64_t autd3__rx_clock_arrival(autd3_rx_clock_t *c, uint64_t nic_rx_ns) {
  uint64_t now = autd3__now_ns();
  if (nic_rx_ns != 0 && nic_rx_ns <= now) {
    c->kernel++;
    return nic_rx_ns;
  }
  c->read++;
  return now;
}
