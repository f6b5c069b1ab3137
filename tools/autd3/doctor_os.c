/* What `autd3 doctor` asks the OS (see doctor_os.h): Linux here, stubs elsewhere. */
#ifdef __linux__
#define _GNU_SOURCE
#include "doctor_os.h"

#include <errno.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static int read_line(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  bool ok = fgets(buf, (int)cap, f) != NULL;
  fclose(f);
  if (!ok)
    return 0;
  buf[strcspn(buf, "\n")] = 0;
  return 1;
}

int dos_caps(bool *net_raw, bool *net_admin, bool *sys_nice, bool *root) {
  *root = geteuid() == 0;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return 0;
  char line[256];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long eff;
    if (sscanf(line, "CapEff: %llx", &eff) == 1) {
      *net_admin = (eff >> 12) & 1; /* CAP_NET_ADMIN = 12, CAP_NET_RAW = 13, CAP_SYS_NICE = 23 (linux/capability.h) */
      *net_raw = (eff >> 13) & 1;
      *sys_nice = (eff >> 23) & 1;
      found = 1;
    }
  }
  fclose(f);
  return found;
}

int dos_rtprio(uint64_t *soft) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_RTPRIO, &rl) != 0)
    return -1;
  *soft = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
  return 1;
}

int dos_self_path(char *buf, size_t cap) {
  ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  return 1;
}

/* getifaddrs, not /sys/class/net: the latter shows the network namespace
 * /sys was mounted in, not necessarily ours. */
int dos_if_up(const char *ifname, bool *up, bool *carrier) {
  struct ifaddrs *ifa;
  if (getifaddrs(&ifa) != 0)
    return -1;
  int found = 0;
  for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
    if (!strcmp(i->ifa_name, ifname)) {
      *up = (i->ifa_flags & IFF_UP) != 0;
      *carrier = (i->ifa_flags & IFF_RUNNING) != 0;
      found = 1;
      break;
    }
  freeifaddrs(ifa);
  return found;
}

int dos_if_ipv4(const char *ifname, int *addresses) {
  struct ifaddrs *ifa;
  if (getifaddrs(&ifa) != 0)
    return -1;
  *addresses = 0;
  for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, ifname))
      (*addresses)++;
  freeifaddrs(ifa);
  return 1;
}

int dos_if_ipv6(const char *ifname, bool *enabled, bool *autoconf, bool *accept_ra) {
  char p[256], v[32];
  snprintf(p, sizeof p, "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
  if (!read_line(p, v, sizeof v))
    return 0;
  *enabled = v[0] == '0';
  snprintf(p, sizeof p, "/proc/sys/net/ipv6/conf/%s/autoconf", ifname);
  *autoconf = read_line(p, v, sizeof v) && v[0] != '0';
  snprintf(p, sizeof p, "/proc/sys/net/ipv6/conf/%s/accept_ra", ifname);
  *accept_ra = read_line(p, v, sizeof v) && v[0] != '0';
  return 1;
}

static int ethtool(const char *ifname, void *data, char *why, size_t cap) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    snprintf(why, cap, "%s", strerror(errno));
    return -1;
  }
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
  ifr.ifr_data = data;
  int r = ioctl(fd, SIOCETHTOOL, &ifr);
  int e = errno;
  close(fd);
  if (r == 0)
    return 1;
  snprintf(why, cap, "%s", strerror(e));
  return (e == EOPNOTSUPP || e == EINVAL || e == ENODEV) ? 0 : -1;
}

int dos_coalesce(const char *ifname, uint32_t *rx_usecs, uint32_t *rx_frames, char *why, size_t cap) {
  struct ethtool_coalesce c;
  memset(&c, 0, sizeof c);
  c.cmd = ETHTOOL_GCOALESCE;
  int r = ethtool(ifname, &c, why, cap);
  if (r == 1)
    *rx_usecs = c.rx_coalesce_usecs, *rx_frames = c.rx_max_coalesced_frames;
  return r;
}

int dos_eee(const char *ifname, bool *enabled, char *why, size_t cap) {
  struct ethtool_eee e;
  memset(&e, 0, sizeof e);
  e.cmd = ETHTOOL_GEEE;
  int r = ethtool(ifname, &e, why, cap);
  if (r == 1)
    *enabled = e.eee_enabled && e.eee_active;
  return r;
}

int dos_pause(const char *ifname, bool *rx, bool *tx, char *why, size_t cap) {
  struct ethtool_pauseparam p;
  memset(&p, 0, sizeof p);
  p.cmd = ETHTOOL_GPAUSEPARAM;
  int r = ethtool(ifname, &p, why, cap);
  if (r == 1)
    *rx = p.rx_pause, *tx = p.tx_pause;
  return r;
}

static void add_kind(char *kinds, size_t cap, uint16_t type) {
  char name[16];
  switch (type) {
  case 0x0800: snprintf(name, sizeof name, "IPv4"); break;
  case 0x0806: snprintf(name, sizeof name, "ARP"); break;
  case 0x86DD: snprintf(name, sizeof name, "IPv6"); break;
  case 0x88CC: snprintf(name, sizeof name, "LLDP"); break;
  default: snprintf(name, sizeof name, "0x%04x", type); break;
  }
  if (strstr(kinds, name))
    return;
  size_t l = strlen(kinds);
  snprintf(kinds + l, cap - l, "%s%s", l ? ", " : "", name);
}

int dos_foreign_frames(const char *ifname, uint32_t ms, uint64_t *sent, uint64_t *received, char *kinds, size_t kcap,
                       char *why, size_t cap) {
  *sent = *received = 0;
  kinds[0] = 0;
  int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
  if (fd < 0) {
    snprintf(why, cap, "no raw socket: %s", strerror(errno));
    return 0;
  }
  struct sockaddr_ll sa;
  memset(&sa, 0, sizeof sa);
  sa.sll_family = AF_PACKET;
  sa.sll_protocol = htons(ETH_P_ALL);
  sa.sll_ifindex = (int)if_nametoindex(ifname);
  if (sa.sll_ifindex == 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    snprintf(why, cap, "%s", strerror(errno));
    close(fd);
    return -1;
  }
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    long left = (long)ms - ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L);
    if (left <= 0)
      break;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, (int)left) <= 0)
      continue;
    uint8_t frame[64];
    struct sockaddr_ll from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(fd, frame, sizeof frame, MSG_TRUNC, (struct sockaddr *)&from, &fl);
    if (n < 14)
      continue;
    uint16_t type = ntohs(from.sll_protocol);
    if (type == 0x88A4)
      continue; /* EtherCAT: the bus itself */
    add_kind(kinds, kcap, type);
    if (from.sll_pkttype == PACKET_OUTGOING)
      (*sent)++;
    else
      (*received)++;
  }
  close(fd);
  return 1;
}

int dos_npcap_files(bool *npcap_dir, bool *system32, char *sysdir, size_t cap) {
  (void)npcap_dir, (void)system32, (void)sysdir, (void)cap;
  return 0;
}

int dos_governors(char *buf, size_t cap) {
  buf[0] = 0;
  int found = 0;
  for (int cpu = 0; cpu < 1024; cpu++) {
    char p[128], v[64];
    snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
    if (!read_line(p, v, sizeof v)) {
      snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu%d", cpu);
      if (access(p, F_OK) != 0)
        break;
      continue;
    }
    found = 1;
    if (!strstr(buf, v)) {
      size_t l = strlen(buf);
      snprintf(buf + l, cap - l, "%s%s", l ? "," : "", v);
    }
  }
  return found;
}

int dos_timer_slack(uint64_t *ns) {
  int r = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  if (r < 0)
    return -1;
  *ns = (uint64_t)r;
  return 1;
}

#else /* not Linux: nothing readable here yet but Npcap's files on Windows (docs/tools.md says which checks run where) */
#include "doctor_os.h"

#ifdef _WIN32
#include <stdio.h>
#include <windows.h>

static bool file_exists(const char *path) {
  DWORD a = GetFileAttributesA(path);
  return a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY);
}

/* Npcap installs System32\Npcap\wpcap.dll, and System32\wpcap.dll too in its WinPcap API-compatible mode. */
int dos_npcap_files(bool *npcap_dir, bool *system32, char *sysdir, size_t cap) {
  char sys[MAX_PATH], p[MAX_PATH + 32];
  UINT n = GetSystemDirectoryA(sys, sizeof sys);
  if (n == 0 || n >= sizeof sys)
    return -1;
  snprintf(sysdir, cap, "%s", sys);
  snprintf(p, sizeof p, "%s\\Npcap\\wpcap.dll", sys);
  *npcap_dir = file_exists(p);
  snprintf(p, sizeof p, "%s\\wpcap.dll", sys);
  *system32 = file_exists(p);
  return 1;
}
#else
int dos_npcap_files(bool *npcap_dir, bool *system32, char *sysdir, size_t cap) {
  (void)npcap_dir, (void)system32, (void)sysdir, (void)cap;
  return 0;
}
#endif

int dos_foreign_frames(const char *ifname, uint32_t ms, uint64_t *sent, uint64_t *received, char *kinds, size_t kcap,
                       char *why, size_t cap) {
  (void)ifname, (void)ms, (void)sent, (void)received, (void)kinds, (void)kcap, (void)why, (void)cap;
  return 0;
}

int dos_caps(bool *net_raw, bool *net_admin, bool *sys_nice, bool *root) {
  (void)net_raw, (void)net_admin, (void)sys_nice, (void)root;
  return 0;
}
int dos_rtprio(uint64_t *soft) {
  (void)soft;
  return 0;
}
int dos_self_path(char *buf, size_t cap) {
  (void)buf, (void)cap;
  return 0;
}
int dos_if_up(const char *ifname, bool *up, bool *carrier) {
  (void)ifname, (void)up, (void)carrier;
  return 0;
}
int dos_if_ipv4(const char *ifname, int *addresses) {
  (void)ifname, (void)addresses;
  return 0;
}
int dos_if_ipv6(const char *ifname, bool *enabled, bool *autoconf, bool *accept_ra) {
  (void)ifname, (void)enabled, (void)autoconf, (void)accept_ra;
  return 0;
}
int dos_coalesce(const char *ifname, uint32_t *rx_usecs, uint32_t *rx_frames, char *why, size_t cap) {
  (void)ifname, (void)rx_usecs, (void)rx_frames, (void)why, (void)cap;
  return 0;
}
int dos_eee(const char *ifname, bool *enabled, char *why, size_t cap) {
  (void)ifname, (void)enabled, (void)why, (void)cap;
  return 0;
}
int dos_pause(const char *ifname, bool *rx, bool *tx, char *why, size_t cap) {
  (void)ifname, (void)rx, (void)tx, (void)why, (void)cap;
  return 0;
}
int dos_governors(char *buf, size_t cap) {
  (void)buf, (void)cap;
  return 0;
}
int dos_timer_slack(uint64_t *ns) {
  (void)ns;
  return 0;
}
#endif
