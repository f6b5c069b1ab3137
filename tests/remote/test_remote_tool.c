/*
 * autd3-remote-server as a process: clean shutdown on SIGTERM/SIGINT,
 * autd3-perftest through Remote -> server -> in-process emulator, the
 * published Python clients (ARMT v3 and v7, and the v7 one's DNS-SD discovery)
 * through our server, our link against the published Rust servers (v3 by hand,
 * v7 built from tests/peers), and Remote -> server -> echocat -> emulator on a
 * veth pair (v7 and v3, streaming and stop-and-wait). The server's session-end
 * stage and CPU lines are parsed wherever a session ran.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness/netns.h"
#include "remote_helpers.h"

#define SERVER AUTD3_BINARY_DIR "/tools/remote-server/autd3-remote-server"
#define PERFTEST AUTD3_BINARY_DIR "/tools/perftest/autd3-perftest"

static bool executable(const char *p) { return access(p, X_OK) == 0; }

/* Start argv with stdout/stderr (merged) on a pipe; returns pid, *out = read end. */
static pid_t spawn(char *const argv[], int *out) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid_t pid = fork();
  ASSERT_TRUE(pid >= 0);
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    close(p[0]);
    close(p[1]);
    execv(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(126);
  }
  close(p[1]);
  *out = p[0];
  return pid;
}

/* Read everything (until EOF) into buf; bounded by the test timeout. */
static size_t slurp(int fd, char *buf, size_t cap) {
  size_t n = 0;
  ssize_t r;
  while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0;
  return n;
}

/* Read the server's output until its "listening on ...:PORT" line; returns the port. */
static uint16_t wait_listening(int fd, char *log, size_t cap) {
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = read(fd, log + n, 1);
    if (r <= 0) break;
    n++;
    log[n] = 0;
    if (log[n - 1] == '\n') {
      const char *l = strstr(log, "listening on ");
      if (l) {
        const char *paren = strstr(l, " (ARMT");
        const char *colon = paren;
        while (colon > l && *colon != ':') colon--;
        return (uint16_t)atoi(colon + 1);
      }
    }
  }
  TEST_FAIL_("server did not start: %s", log);
  return 0;
}

static int wait_status(pid_t pid) {
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

typedef struct server_proc {
  pid_t pid;
  int out;
  uint16_t port;
  char addr[32];
  char log[32768];
} server_proc_t;

static void server_start(server_proc_t *s, const char *extra1, const char *extra2) {
  if (!executable(SERVER)) SKIP("%s is not built", SERVER);
  char *argv[8] = {SERVER, "--listen", "127.0.0.1:0", NULL};
  int i = 3;
  if (extra1) argv[i++] = (char *)extra1;
  if (extra2) argv[i++] = (char *)extra2;
  argv[i] = NULL;
  s->pid = spawn(argv, &s->out);
  s->port = wait_listening(s->out, s->log, sizeof s->log);
  snprintf(s->addr, sizeof s->addr, "127.0.0.1:%u", s->port);
}

/* Stop with `sig`, expect exit 0 and the "stopped" line. */
static void server_stop(server_proc_t *s, int sig) {
  kill(s->pid, sig);
  size_t n = strlen(s->log);
  slurp(s->out, s->log + n, sizeof s->log - n);
  close(s->out);
  int st = wait_status(s->pid);
  if (st != 0) TEST_FAIL_("server exit status %d; output:\n%s", st, s->log);
  ASSERT_CONTAINS(s->log, "stopped (");
}

TEST(sigterm_with_a_client_connected) {
  if (!autd3_link_kind_available(AUTD3_LINK_EMULATOR)) SKIP("the emulator link is not built");
  server_proc_t s;
  server_start(&s, NULL, NULL);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.address = s.addr;
  o.u.remote.timeout_ms = 5000;
  autd3_geometry_t *g = NULL;
  ASSERT_OK(autd3_geometry_create(1, NULL, &g));
  autd3_link_t *l = NULL;
  ASSERT_OK(autd3_link_open(&o, g, &l));
  uint8_t tx[626] = {0}, rx[2];
  bool valid;
  for (int i = 0; i < 5; i++) ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  server_stop(&s, SIGTERM);
  ASSERT_CONTAINS(s.log, "the server is stopping");
  ASSERT_ERR(autd3_link_cycle(l, tx, rx, &valid), AUTD3_E_PEER_CLOSED);
  autd3_link_close(l);
  autd3_geometry_free(g);
}

TEST(sigint_idle) {
  server_proc_t s;
  server_start(&s, "--devices", "2"); /* shared-bus mode: the link is open and cycling */
  ASSERT_CONTAINS(s.log, "opened the emulator link with 2 device(s)");
  server_stop(&s, SIGINT);
  ASSERT_CONTAINS(s.log, "closed the emulator link");
}

TEST(limit_flags_range_checked) {
  /* Every limit flag: out of range -> exit 2 and a message naming the flag and its range. */
  if (!executable(SERVER)) SKIP("%s is not built", SERVER);
  static const char *bad[][3] = {{"--max-connections", "1", "2..256"},
                                 {"--max-connections", "257", "2..256"},
                                 {"--idle-timeout-ms", "0", "1..3600000"},
                                 {"--handshake-timeout-ms", "3600001", "1..3600000"},
                                 {"--log-lines-per-s", "-1", "0..100000"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {SERVER, "--listen", "127.0.0.1:0", (char *)bad[i][0], (char *)bad[i][1], NULL};
    int out;
    pid_t pid = spawn(argv, &out);
    char buf[1024];
    slurp(out, buf, sizeof buf);
    close(out);
    ASSERT_EQ(wait_status(pid), 2);
    ASSERT_CONTAINS(buf, bad[i][0]);
    ASSERT_CONTAINS(buf, bad[i][2]);
  }
}

static void perftest(const char *addr, const char *mode, const char *count) {
  if (!executable(PERFTEST)) SKIP("%s is not built", PERFTEST);
  char *argv[] = {PERFTEST, "--link", "remote", "--address", (char *)addr, "--devices", "2", "--count", (char *)count,
                  "--mode", (char *)mode, NULL};
  int out;
  pid_t pid = spawn(argv, &out);
  static char buf[65536];
  slurp(out, buf, sizeof buf);
  close(out);
  int st = wait_status(pid);
  if (st != 0) TEST_FAIL_("autd3-perftest exit %d:\n%s", st, buf);
  char want[64];
  snprintf(want, sizeof want, "success       : %s\n", count);
  ASSERT_CONTAINS(buf, want);
  ASSERT_CONTAINS(buf, "link errors   : 0");
}

/* --address auto: the server is found by DNS-SD (in a private namespace); --remote-protocol 3 still works. */
TEST(perftest_address_auto_and_v3) {
  autd3_test_reexec_unshare("-rn", "perftest_address_auto_and_v3");
  if (system("ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo") != 0)
    SKIP("cannot enable multicast on loopback in the private namespace");
  server_proc_t s;
  server_start(&s, "--advertise", NULL);
  perftest("auto", "stop-and-wait", "50");
  if (!executable(PERFTEST)) SKIP("%s is not built", PERFTEST);
  char *argv[] = {PERFTEST, "--link", "remote", "--address", s.addr, "--remote-protocol", "3", "--devices", "2", "--count", "50", NULL};
  int out;
  pid_t pid = spawn(argv, &out);
  static char buf[65536];
  slurp(out, buf, sizeof buf);
  close(out);
  int st = wait_status(pid);
  server_stop(&s, SIGTERM);
  if (st != 0) TEST_FAIL_("autd3-perftest --remote-protocol 3 exit %d:\n%s", st, buf);
  ASSERT_CONTAINS(buf, "success       : 50\n");
  ASSERT_CONTAINS(s.log, "ARMT v7 session with 2 device(s)"); /* the auto run */
  ASSERT_CONTAINS(s.log, "ARMT v3 session with 2 device(s)");
}

/* The session-end figures of the server's log (docs/remote.md "Where the hop's time goes"), parsed: every stage's
 * p50/p99 (p50 <= p99, bucket multiples), the request count, and the CPU per bus cycle of both threads. Returns the
 * number of sessions whose lines were found; *requests = their requests. */
static int parse_session_figures(const char *log, unsigned *requests) {
  static const char *const stages[] = {"TCP receive -> hand-off", "hand-off -> bus pickup", "pickup -> link call",
                                       "link call -> return (acks)", "return -> reply queued", "queued -> TCP sent",
                                       "TCP receive -> TCP sent"};
  int sessions = 0;
  *requests = 0;
  for (const char *l = strstr(log, "  stages p50/p99 us (10 us buckets): "); l; l = strstr(l + 1, "  stages p50/p99 us (10 us buckets): ")) {
    const char *eol = strchr(l, '\n');
    ASSERT_TRUE(eol != NULL);
    const char *p = l;
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++) {
      p = strstr(p, stages[i]);
      if (p == NULL || p > eol) TEST_FAIL_("stage \"%s\" missing in: %.*s", stages[i], (int)(eol - l), l);
      p += strlen(stages[i]);
      unsigned p50 = 0, p99 = 0;
      if (sscanf(p, " %u/%u", &p50, &p99) != 2) TEST_FAIL_("stage \"%s\": no p50/p99 in: %.*s", stages[i], (int)(eol - l), l);
      ASSERT_TRUE(p50 >= 10 && p50 % 10 == 0 && p99 % 10 == 0);
      ASSERT_LE(p50, p99);
    }
    unsigned n = 0;
    const char *paren = strstr(p, " (");
    if (paren == NULL || paren > eol || sscanf(paren, " (%u requests)", &n) != 1) TEST_FAIL_("no request count: %.*s", (int)(eol - l), l);
    *requests += n;
    const char *cpu = strstr(eol, "  CPU per bus cycle: ");
    ASSERT_TRUE(cpu != NULL);
    double bus = -1, net = -1;
    unsigned long long cycles = 0;
    if (sscanf(cpu, "  CPU per bus cycle: bus thread %lf us, network thread %lf us (%llu cycles;", &bus, &net, &cycles) != 3)
      TEST_FAIL_("CPU line does not parse: %.120s", cpu);
    ASSERT_TRUE(bus > 0 && net > 0);
    ASSERT_GE(cycles, n);
    sessions++;
  }
  return sessions;
}

TEST(perftest_through_remote_to_emulator) {
  server_proc_t s;
  server_start(&s, NULL, NULL);
  perftest(s.addr, "stop-and-wait", "200");
  perftest(s.addr, "streaming", "500");
  server_stop(&s, SIGTERM);
  ASSERT_CONTAINS(s.log, "(opened per client)");
  unsigned requests = 0;
  ASSERT_EQ(parse_session_figures(s.log, &requests), 2);
  ASSERT_GE(requests, 700); /* the sends and the client's own open and close frames */
  ASSERT_CONTAINS(s.log, "CPU per bus cycle over the run: bus thread ");
}

/* Locate a Python that has the published ARMT v3 client (PyPI autd3-link-remote 0.2.0). */
static const char *armt3_python(void) {
  static char path[1024];
  const char *env = getenv("AUTD3_PYTHON_ARMT3");
  if (env && executable(env)) return env;
  if (executable(AUTD3_PYTHON_ARMT3)) return AUTD3_PYTHON_ARMT3;
  /* the sibling venv of AUTD3_PYTHON's (<build>/.venv/bin/python -> <build>/.venv-armt3/bin/python) */
  snprintf(path, sizeof path, "%s", AUTD3_PYTHON);
  char *bin = strstr(path, "/.venv/bin/");
  if (bin) {
    snprintf(bin, sizeof path - (size_t)(bin - path), "/.venv-armt3/bin/python");
    if (executable(path)) return path;
  }
  return AUTD3_PYTHON;
}

/* Run tests/remote/armt_peer.py (the published Python client speaking ARMT `armt`) with python `py`; its output
 * into buf. Returns its exit status. */
static int run_armt_peer(const char *py, char *armt, char *mode, char *arg1, char *arg2, char *buf, size_t cap) {
  char *argv[] = {(char *)py, AUTD3_SOURCE_DIR "/tests/remote/armt_peer.py", armt, mode, arg1, arg2, NULL};
  int out;
  pid_t pid = spawn(argv, &out);
  slurp(out, buf, cap);
  close(out);
  return wait_status(pid);
}

TEST(interop_published_python_client) {
  server_proc_t s;
  server_start(&s, NULL, NULL);
  const char *py = armt3_python();
  static char buf[16384];
  int st = run_armt_peer(py, "v3", "session", s.addr, "2", buf, sizeof buf);
  server_stop(&s, SIGTERM);
  if (st == 77 || st == 126) SKIP("%s: %s", py, buf);
  if (st != 0) TEST_FAIL_("peer exit %d:\n%s\nserver:\n%s", st, buf, s.log);
  ASSERT_CONTAINS(buf, "ok: autd3-link-remote");
  ASSERT_CONTAINS(s.log, "closed the session");
}

/* A two-device Remote link to a reference server just started: retried
 * (bounded, 10 s) while it does not listen yet. *g = its geometry. */
static autd3_link_t *open_when_listening(const autd3_link_option_t *o, autd3_geometry_t **g) {
  ASSERT_OK(autd3_geometry_create(2, NULL, g));
  autd3_link_t *l = NULL;
  autd3_err_t err = AUTD3_E_CONNECT;
  for (int i = 0; i < 200 && err == AUTD3_E_CONNECT; i++) {
    err = autd3_link_open(o, *g, &l);
    if (err == AUTD3_E_CONNECT) usleep(50000);
  }
  ASSERT_OK(err);
  return l;
}

TEST(interop_published_rust_server) {
  /* A test-only binary built outside the tree from crates.io autd3-rs-link-remote 0.1-0.4 (RemoteServer::with_link
   * over the published firmware emulator); usage: BIN ADDR N. See docs/remote.md. */
  const char *bin = getenv("AUTD3_ARMT3_REFERENCE_SERVER");
  if (bin == NULL || !executable(bin)) SKIP("set AUTD3_ARMT3_REFERENCE_SERVER to a reference RemoteServer binary (see docs/remote.md)");
  char addr[32];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", free_port());
  char *argv[] = {(char *)bin, addr, "2", NULL};
  int out;
  pid_t pid = spawn(argv, &out);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE);
  o.u.remote.address = addr;
  o.u.remote.timeout_ms = 5000;
  autd3_geometry_t *g = NULL;
  autd3_link_t *l = open_when_listening(&o, &g);
  /* Reset, then a NOP with seq 0: the published firmware emulator acks seq 0 */
  static uint8_t tx[2 * 626];
  uint8_t rx[4] = {0};
  bool valid = false;
  for (int d = 0; d < 2; d++) autd3_tx_encode(tx + d * 626, 0, AUTD3_CMD_RESET, NULL, 0);
  ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  for (int d = 0; d < 2; d++) autd3_tx_encode(tx + d * 626, 0, AUTD3_CMD_NOP, NULL, 0);
  for (int i = 0; i < 5; i++) ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
  ASSERT_TRUE(valid);
  ASSERT_EQ(rx[0], 0); /* ack = seq 0 */
  ASSERT_EQ(rx[1], 0); /* data = no error */
  ASSERT_EQ(rx[2], 0);
  autd3_link_close(l);
  autd3_geometry_free(g);
  kill(pid, SIGTERM);
  wait_status(pid);
  close(out);
}

TEST(perftest_through_remote_to_echocat_on_veth) {
  const char *netns = AUTD3_BINARY_DIR "/tools/netns/autd3-netns";
  if (!executable(netns)) SKIP("tools/netns/autd3-netns is not built");
  if (!autd3_link_kind_available(AUTD3_LINK_ECHOCAT)) SKIP("the echocat link is not built (AUTD3_LINK_ECHOCAT=OFF)");
  if (!executable(PERFTEST) || !executable(SERVER)) SKIP("autd3-perftest or autd3-remote-server is not built");
  char *argv[] = {"/bin/bash", (char *)netns, "--devices", "2", "--build", AUTD3_BINARY_DIR, "--", "/bin/bash",
                  AUTD3_SOURCE_DIR "/tests/remote/over_echocat.sh", AUTD3_BINARY_DIR, "@MASTER@", NULL};
  int out;
  pid_t pid = spawn(argv, &out);
  static char buf[65536];
  slurp(out, buf, sizeof buf);
  close(out);
  int st = wait_status(pid);
  if (st == 125) SKIP("autd3-netns could not set up the namespace:\n%s", buf);
  if (st != 0) TEST_FAIL_("exit %d:\n%s", st, buf);
  /* v7 and v3, streaming and stop-and-wait: four sessions, every send answered, each session's figures logged */
  const char *p = buf;
  for (int i = 0; i < 4; i++) {
    p = strstr(p, "success       : 300\n");
    if (p == NULL) TEST_FAIL_("run %d of 4 did not complete all sends:\n%s", i + 1, buf);
    p++;
  }
  ASSERT_CONTAINS(buf, "ARMT v7 session with 2 device(s)");
  ASSERT_CONTAINS(buf, "ARMT v3 session with 2 device(s)");
  ASSERT_CONTAINS(buf, "opened the echocat link with 2 device(s)");
  unsigned requests = 0;
  ASSERT_EQ(parse_session_figures(buf, &requests), 4);
  ASSERT_GE(requests, 4 * 300);
}

TEST(interop_published_python_client_v7) {
  server_proc_t s;
  server_start(&s, NULL, NULL);
  static char buf[16384];
  int st = run_armt_peer(AUTD3_PYTHON, "v7", "session", s.addr, "2", buf, sizeof buf);
  server_stop(&s, SIGTERM);
  if (st == 77 || st == 126) SKIP("%s: %s", AUTD3_PYTHON, buf);
  if (st != 0) TEST_FAIL_("peer exit %d:\n%s\nserver:\n%s", st, buf, s.log);
  ASSERT_CONTAINS(buf, "ok: autd3-link-remote 0.9");
  ASSERT_CONTAINS(s.log, "ARMT v7 session with 2 device(s)");
  ASSERT_CONTAINS(s.log, "closed the session"); /* a clean close (0x02), not a dropped connection */
}

TEST(interop_published_python_discovery) {
  /* Multicast stays in a private namespace: loopback with multicast on and a 224.0.0.0/4 route. */
  autd3_test_reexec_unshare("-rn", "interop_published_python_discovery");
  if (system("ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo") != 0)
    SKIP("cannot enable multicast on loopback in the private namespace");
  server_proc_t s;
  server_start(&s, "--advertise", "--advertise-instance=autd3-peer-test");
  static char buf[16384];
  int st = run_armt_peer(AUTD3_PYTHON, "v7", "discover", "autd3-peer-test", NULL, buf, sizeof buf);
  server_stop(&s, SIGTERM);
  if (st == 77 || st == 126) SKIP("%s: %s", AUTD3_PYTHON, buf);
  if (st != 0) TEST_FAIL_("peer exit %d:\n%s\nserver:\n%s", st, buf, s.log);
  char want[96];
  snprintf(want, sizeof want, "discovered autd3-peer-test at %s", s.addr);
  ASSERT_CONTAINS(buf, want);
}

TEST(interop_published_rust_server_v7) {
  /* tests/peers/armt7-rust-server: crates.io autd3-rs-link-remote 0.9.0's RemoteServer over an echo link. */
  if (!executable(AUTD3_ARMT7_RUST_SERVER))
    SKIP("%s is not built (needs cargo: ctest builds it as peers.build.armt7-rust-server)", AUTD3_ARMT7_RUST_SERVER);
  char addr[32];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", free_port());
  char *argv[] = {(char *)AUTD3_ARMT7_RUST_SERVER, addr, NULL};
  int out;
  pid_t pid = spawn(argv, &out);
  autd3_link_option_t o = autd3_link_option_default(AUTD3_LINK_REMOTE); /* protocol: the default, v7 */
  o.u.remote.address = addr;
  o.u.remote.timeout_ms = 5000;
  o.u.remote.pipeline = AUTD3_REMOTE_PIPELINE_OFF; /* the reference server answers each request in turn */
  autd3_geometry_t *g = NULL;
  autd3_link_t *l = open_when_listening(&o, &g);
  static uint8_t tx[2 * 626];
  uint8_t rx[4] = {0};
  for (int k = 0; k < 20; k++) {
    for (int d = 0; d < 2; d++) autd3_tx_encode(tx + d * 626, (uint8_t)(k + d), AUTD3_CMD_NOP, NULL, 0);
    bool valid = false;
    ASSERT_OK(autd3_link_cycle(l, tx, rx, &valid));
    ASSERT_TRUE(valid);
    for (int d = 0; d < 2; d++) { /* echo: rx = the frame's first two bytes */
      ASSERT_EQ(rx[2 * d], tx[d * 626]);
      ASSERT_EQ(rx[2 * d + 1], tx[d * 626 + 1]);
    }
  }
  autd3_link_status_t st;
  ASSERT_OK(autd3_link_check_state(l, &st)); /* the v7 reply's device states */
  ASSERT_EQ(st.state[0], AUTD3_DEVICE_OP);
  ASSERT_EQ(st.state[1], AUTD3_DEVICE_OP);
  autd3_link_close(l);
  /* a v3 link is told what the server speaks */
  o.u.remote.protocol = AUTD3_REMOTE_PROTOCOL_V3;
  ASSERT_ERR(autd3_link_open(&o, g, &l), AUTD3_E_VERSION);
  ASSERT_CONTAINS(autd3_last_error(), "ARMT v7 (autd3-sdk 0.9.0)");
  autd3_geometry_free(g);
  kill(pid, SIGTERM);
  wait_status(pid);
  close(out);
}
