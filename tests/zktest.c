/* SPDX-License-Identifier: Apache-2.0 */
/* zktest.c - shared test support; see zktest.h. */
#include "config.h"

#include "internal.h"
#include "zktest.h"

#include <CUnit/Basic.h>
#include <CUnit/TestRun.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t server_mu = PTHREAD_MUTEX_INITIALIZER;
static char server_hosts[1024];
static char server_dir[512];
static bool server_started;
static int ensemble_size = 1;
static bool ensemble_reconfig;
static bool ensemble_netns;
static const char *java_opts;

static zhandle_t *observer;
static pthread_mutex_t obs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t obs_cond = PTHREAD_COND_INITIALIZER;
static unsigned obs_events;
static bool obs_connected;

int64_t zkt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void abs_deadline(struct timespec *ts, int timeout_ms) {
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += timeout_ms / 1000;
  ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static void discard_log(const char *line) { (void)line; }

static void stop_server(void) {
  char cmd[1024];
  if (observer) {
    zookeeper_close(observer);
    observer = NULL;
  }
  if (!server_started)
    return;
  server_started = false;
  snprintf(cmd, sizeof cmd, "'%s/tests/zkserver' stop '%s'", ZKL_TEST_SRCDIR,
           server_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "zktest: stopping the server failed\n");
}

static void (*signal_hook)(void);

void zkt_on_exit_signal(void (*hook)(void)) { signal_hook = hook; }

static void on_signal(int sig) {
  /* zkserver's watchdog sees this process go and stops the server; what
   * the test started itself is the hook's to stop (_exit skips atexit). */
  if (signal_hook)
    signal_hook();
  _exit(128 + sig);
}

void zkt_use_ensemble(int n) { ensemble_size = n; }
void zkt_use_reconfig_ensemble(int n) {
  ensemble_size = n;
  ensemble_reconfig = true;
}
void zkt_server_java_opts(const char *opts) { java_opts = opts; }

bool zkt_netns_available(void) { return geteuid() == 0; }

void zkt_use_netns_ensemble(int n) {
  if (!zkt_netns_available()) {
    printf("zktest: an ensemble in network namespaces needs root (ip netns, "
           "veths, iptables); skipped\n");
    exit(77);
  }
  ensemble_size = n;
  ensemble_netns = true;
  /* zkserver runs it inside the servers' namespaces; a path given in the
   * environment wins. */
  setenv("ZKSERVER_LINKDELAY", ZKL_TEST_BUILDDIR "/tests/linkdelay", 0);
}

/* Is DIR an ensemble started with --netns? */
static bool dir_is_netns(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/netns", dir);
  return access(path, F_OK) == 0;
}

const char *zkt_hosts(void) {
  const char *env = getenv("ZKL_TEST_HOSTS");
  char cmd[2048];
  FILE *p;
  pthread_mutex_lock(&server_mu);
  if (server_hosts[0]) {
    pthread_mutex_unlock(&server_mu);
    return server_hosts;
  }
  /* A netns ensemble was asked for and the servers given are none: no use
   * for links between servers, so start our own. */
  if (env && *env && ensemble_netns &&
      !(getenv("ZKL_TEST_ZKDIR") && dir_is_netns(getenv("ZKL_TEST_ZKDIR"))))
    env = NULL;
  if (env && *env) {
    snprintf(server_hosts, sizeof server_hosts, "%s", env);
    env = getenv("ZKL_TEST_ZKDIR");
    if (env)
      snprintf(server_dir, sizeof server_dir, "%s", env);
    pthread_mutex_unlock(&server_mu);
    return server_hosts;
  }
  snprintf(server_dir, sizeof server_dir, "%s/zklock-test-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(server_dir)) {
    perror("zktest: mkdtemp");
    exit(99);
  }
  if (java_opts)
    setenv("ZKSERVER_JAVA_OPTS", java_opts, 1);
  /* Without fsync, as the tests always ran: what they test is not the
   * disk, and a slow one would only stretch their time bounds. */
  snprintf(cmd, sizeof cmd,
           "'%s/tests/zkserver' start --no-fsync --servers %d%s%s --owner %ld "
           "'%s'",
           ZKL_TEST_SRCDIR, ensemble_size,
           ensemble_reconfig ? " --reconfig" : "",
           ensemble_netns ? " --netns" : "", (long)getpid(), server_dir);
  p = popen(cmd, "r");
  if (!p || !fgets(server_hosts, sizeof server_hosts, p)) {
    fprintf(stderr, "zktest: could not start ZooKeeper with: %s\n", cmd);
    if (p)
      pclose(p);
    exit(99);
  }
  if (pclose(p) != 0) {
    fprintf(stderr, "zktest: zkserver start failed\n");
    exit(99);
  }
  server_hosts[strcspn(server_hosts, "\r\n")] = '\0';
  server_started = true;
  atexit(stop_server);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);
  pthread_mutex_unlock(&server_mu);
  return server_hosts;
}

const char *zkt_zkdir(void) {
  zkt_hosts();
  return server_dir[0] ? server_dir : NULL;
}

int zkt_zkserver(const char *args) {
  char cmd[2048];
  int rc;
  snprintf(cmd, sizeof cmd, "'%s/tests/zkserver' %s", ZKL_TEST_SRCDIR, args);
  rc = system(cmd);
  return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

void zkt_stop_servers(void) {
  pthread_mutex_lock(&server_mu);
  stop_server();
  pthread_mutex_unlock(&server_mu);
}

/* ------------------------------------------------- servers one by one */

/* The first line `tests/zkserver ARGS` prints, into buf; 0, or -1 when it
 * failed or printed nothing. */
static int zkserver_line(const char *args, char *buf, size_t len) {
  char cmd[2048];
  FILE *p;
  int ok;
  snprintf(cmd, sizeof cmd, "'%s/tests/zkserver' %s", ZKL_TEST_SRCDIR, args);
  p = popen(cmd, "r");
  if (!p)
    return -1;
  ok = fgets(buf, (int)len, p) != NULL;
  if (pclose(p) != 0 || !ok)
    return -1;
  buf[strcspn(buf, "\r\n")] = '\0';
  return 0;
}

/* Servers in the connect string: the ensemble's size, whoever started it. */
static int server_count(void) {
  const char *h = zkt_hosts();
  int n = 1;
  for (; *h; h++)
    n += *h == ',';
  return n;
}

#define MAX_SERVERS 9
static char server_one[MAX_SERVERS + 1][96];

const char *zkt_server_hosts(int id) {
  char args[700], addr[64], port[16]; /* "ADDR:PORT" fits server_one */
  const char *dir = zkt_zkdir();
  if (id < 1 || id > MAX_SERVERS || !dir) {
    fprintf(stderr, "zkt_server_hosts: no server %d\n", id);
    exit(99);
  }
  pthread_mutex_lock(&server_mu);
  if (!server_one[id][0]) {
    snprintf(args, sizeof args, "addr '%s' %d", dir, id);
    if (zkserver_line(args, addr, sizeof addr) == 0) {
      snprintf(args, sizeof args, "port '%s' %d", dir, id);
      if (zkserver_line(args, port, sizeof port) == 0)
        snprintf(server_one[id], sizeof server_one[id], "%s:%s", addr, port);
    }
  }
  pthread_mutex_unlock(&server_mu);
  if (!server_one[id][0]) {
    fprintf(stderr, "zkt_server_hosts: zkserver knows no server %d\n", id);
    exit(99);
  }
  return server_one[id];
}

int zkt_4lw(int id, const char *word, char *buf, size_t len) {
  char host[64];
  struct sockaddr_in sa;
  int64_t deadline = zkt_now_ms() + 2000;
  size_t got = 0;
  int fd, rc;
  snprintf(host, sizeof host, "%s", zkt_server_hosts(id));
  char *colon = strrchr(host, ':');
  if (!colon || len == 0)
    return -1;
  *colon = '\0';
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
    return -1;
  /* Nonblocking throughout: a server cut off, or stopped, must cost the
   * bound and no more. */
  fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  if (rc < 0 && errno != EINPROGRESS)
    goto fail;
  for (;;) {
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    int left = (int)(deadline - zkt_now_ms());
    int err = 0;
    socklen_t elen = sizeof err;
    if (left <= 0 || poll(&pfd, 1, left) <= 0)
      goto fail;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err)
      goto fail;
    break;
  }
  if (send(fd, word, strlen(word), MSG_NOSIGNAL) != (ssize_t)strlen(word))
    goto fail;
  for (;;) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int left = (int)(deadline - zkt_now_ms());
    ssize_t n;
    if (left <= 0 || poll(&pfd, 1, left) <= 0)
      goto fail;
    n = recv(fd, buf + got, len - 1 - got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (n <= 0 || got + (size_t)n == len - 1) {
      if (n > 0)
        got += (size_t)n;
      break;
    }
    got += (size_t)n;
  }
  close(fd);
  buf[got] = '\0';
  return got > 0 ? (int)got : -1;
fail:
  close(fd);
  buf[0] = '\0';
  return -1;
}

zkt_mode zkt_server_mode(int id) {
  char answer[4096];
  const char *mode;
  if (zkt_4lw(id, "srvr", answer, sizeof answer) < 0)
    return ZKT_MODE_NONE;
  mode = strstr(answer, "Mode: ");
  if (!mode)
    return strstr(answer, "not currently serving") ? ZKT_MODE_NOT_SERVING
                                                   : ZKT_MODE_NONE;
  mode += 6;
  if (strncmp(mode, "leader", 6) == 0)
    return ZKT_MODE_LEADER;
  if (strncmp(mode, "follower", 8) == 0)
    return ZKT_MODE_FOLLOWER;
  if (strncmp(mode, "observer", 8) == 0)
    return ZKT_MODE_OBSERVER;
  if (strncmp(mode, "standalone", 10) == 0)
    return ZKT_MODE_STANDALONE;
  return ZKT_MODE_NONE;
}

const char *zkt_mode_name(zkt_mode m) {
  switch (m) {
  case ZKT_MODE_NONE:
    return "no answer";
  case ZKT_MODE_NOT_SERVING:
    return "not serving";
  case ZKT_MODE_STANDALONE:
    return "standalone";
  case ZKT_MODE_LEADER:
    return "leader";
  case ZKT_MODE_FOLLOWER:
    return "follower";
  case ZKT_MODE_OBSERVER:
    return "observer";
  }
  return "?";
}

int zkt_leader(void) {
  int64_t deadline = zkt_now_ms() + ZKT_WAIT;
  int n = server_count();
  for (;;) {
    int id, leaders = 0, leader = -1;
    for (id = 1; id <= n; id++) {
      zkt_mode m = zkt_server_mode(id);
      if (m == ZKT_MODE_LEADER || (m == ZKT_MODE_STANDALONE && n == 1)) {
        leaders++;
        leader = id;
      }
    }
    if (leaders == 1)
      return leader;
    if (zkt_now_ms() >= deadline)
      return -1;
    /* An election takes ticks (200 ms each); asking again sooner only
     * loads the servers. */
    usleep(50 * 1000);
  }
}

int zkt_link(int a, int b, const char *how) {
  char args[800];
  snprintf(args, sizeof args, "link '%s' %d %d %s", zkt_zkdir(), a, b, how);
  return zkt_zkserver(args);
}

int zkt_isolate(int id) {
  char args[700];
  snprintf(args, sizeof args, "isolate '%s' %d", zkt_zkdir(), id);
  return zkt_zkserver(args);
}

int zkt_heal(void) {
  char args[700];
  snprintf(args, sizeof args, "heal '%s'", zkt_zkdir());
  return zkt_zkserver(args);
}

void zkt_print_links(void) {
  char args[700];
  fflush(stdout);
  snprintf(args, sizeof args, "links '%s'", zkt_zkdir());
  zkt_zkserver(args);
}

static void obs_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx) {
  (void)zh;
  (void)path;
  (void)ctx;
  pthread_mutex_lock(&obs_mu);
  if (type == ZOO_SESSION_EVENT)
    obs_connected = state == ZOO_CONNECTED_STATE;
  obs_events++;
  pthread_cond_broadcast(&obs_cond);
  pthread_mutex_unlock(&obs_mu);
}

zhandle_t *zkt_observer(void) {
  struct timespec ts;
  if (observer)
    return observer;
  observer = zookeeper_init2(zkt_hosts(), obs_watcher, 20000, NULL, NULL, 0,
                             discard_log);
  if (!observer) {
    fprintf(stderr, "zktest: observer init failed\n");
    exit(99);
  }
  abs_deadline(&ts, 20000);
  pthread_mutex_lock(&obs_mu);
  while (!obs_connected)
    if (pthread_cond_timedwait(&obs_cond, &obs_mu, &ts) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&obs_mu);
  if (!obs_connected) {
    fprintf(stderr, "zktest: observer could not connect\n");
    exit(99);
  }
  return observer;
}

/* ------------------------------------------------------------- checks */

/* The test thread and whether a run is under way (set by zkt_main), and
 * failures seen on other threads, kept for the end of the test. */
static pthread_t test_thread;
static bool test_running;
static pthread_mutex_t late_mu = PTHREAD_MUTEX_INITIALIZER;
#define LATE_MAX 8
static struct {
  char what[400];
  char file[200];
  int line;
} late[LATE_MAX];
static int late_count, late_dropped;

bool zkt_check_at(bool ok, const char *file, int line, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  bool running = __atomic_load_n(&test_running, __ATOMIC_ACQUIRE);
  if (running && pthread_equal(pthread_self(), test_thread)) {
    CU_assertImplementation(ok ? CU_TRUE : CU_FALSE, (unsigned)line, what,
                            (char *)file, "", CU_FALSE);
    return ok;
  }
  if (ok)
    return ok;
  fprintf(stderr, "%s:%d: failed%s: %s\n", file, line,
          running ? " (off the test thread)" : "", what);
  if (running) {
    pthread_mutex_lock(&late_mu);
    if (late_count < LATE_MAX) {
      snprintf(late[late_count].what, sizeof late[late_count].what, "%s", what);
      snprintf(late[late_count].file, sizeof late[late_count].file, "%s", file);
      late[late_count].line = line;
      late_count++;
    } else {
      late_dropped++;
    }
    pthread_mutex_unlock(&late_mu);
  }
  return ok;
}

static void test_setup(void) {
  pthread_mutex_lock(&late_mu);
  late_count = late_dropped = 0;
  pthread_mutex_unlock(&late_mu);
}

/* After each test (unless a fatal assertion ended it, which failed it
 * anyway): the failures kept from other threads fail it here. */
static void test_teardown(void) {
  int i;
  pthread_mutex_lock(&late_mu);
  for (i = 0; i < late_count; i++)
    CU_assertImplementation(CU_FALSE, (unsigned)late[i].line, late[i].what,
                            late[i].file, "", CU_FALSE);
  if (late_dropped)
    CU_assertImplementation(CU_FALSE, __LINE__,
                            "more failures off the test thread (stderr)",
                            __FILE__, "", CU_FALSE);
  late_count = late_dropped = 0;
  pthread_mutex_unlock(&late_mu);
}

/* ----------------------------------------------------------- observer */

/* Errors of the observer's connection that pass once it reconnects: the
 * waits ride them out until their bound. */
static bool obs_transient(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

static unsigned obs_seen(void) {
  unsigned seen;
  pthread_mutex_lock(&obs_mu);
  seen = obs_events;
  pthread_mutex_unlock(&obs_mu);
  return seen;
}

/* Waits until the observer hears an event after `seen` (a watch fired, a
 * connection state changed) or the deadline passes. */
static void obs_wait_event(unsigned seen, int64_t deadline) {
  pthread_mutex_lock(&obs_mu);
  while (obs_events == seen && zkt_now_ms() < deadline) {
    struct timespec ts;
    abs_deadline(&ts, (int)(deadline - zkt_now_ms()));
    pthread_cond_timedwait(&obs_cond, &obs_mu, &ts);
  }
  pthread_mutex_unlock(&obs_mu);
}

int zkt_children_at(const char *path, const char *file, int line) {
  struct String_vector sv = {0};
  int rc = zoo_get_children(zkt_observer(), path, 0, &sv);
  int n = sv.count;
  deallocate_String_vector(&sv);
  if (rc == ZNONODE)
    return -1;
  if (!zkt_check_at(rc == ZOK, file, line, "the observer could not list %s: %s",
                    path, zerror(rc)))
    return ZKT_OBSERVER_ERROR;
  return n;
}

/* One look of zkt_wait_children: the count of path's children (-1: gone)
 * with a watch set either way, or an error of the observer. */
static int look_children(zhandle_t *zh, const char *path, int *n) {
  for (;;) {
    struct String_vector sv = {0};
    struct Stat st;
    int rc = zoo_wget_children(zh, path, obs_watcher, NULL, &sv);
    *n = sv.count;
    deallocate_String_vector(&sv);
    if (rc != ZNONODE)
      return rc;
    *n = -1;
    /* Watch for it to appear; should it have appeared since, list it. */
    rc = zoo_wexists(zh, path, obs_watcher, NULL, &st);
    if (rc != ZOK)
      return rc == ZNONODE ? ZOK : rc;
  }
}

int zkt_wait_children_at(const char *path, int want, int timeout_ms,
                         const char *file, int line) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  zhandle_t *zh = zkt_observer();
  for (;;) {
    unsigned seen = obs_seen();
    int n, rc = look_children(zh, path, &n);
    if (rc == ZOK && n == want)
      return n;
    if ((rc != ZOK && !obs_transient(rc)) || zkt_now_ms() >= deadline) {
      if (!zkt_check_at(rc == ZOK, file, line,
                        "the observer could not list %s: %s", path, zerror(rc)))
        return ZKT_OBSERVER_ERROR;
      return n;
    }
    obs_wait_event(seen, deadline);
  }
}

int zkt_wait_absent_at(const char *path, int timeout_ms, const char *file,
                       int line) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  zhandle_t *zh = zkt_observer();
  for (;;) {
    unsigned seen = obs_seen();
    struct Stat st;
    int rc = zoo_wexists(zh, path, obs_watcher, NULL, &st);
    if (rc == ZNONODE)
      return 0;
    if ((rc != ZOK && !obs_transient(rc)) || zkt_now_ms() >= deadline) {
      if (!zkt_check_at(rc == ZOK, file, line,
                        "the observer could not look at %s: %s", path,
                        zerror(rc)))
        return ZKT_OBSERVER_ERROR;
      return -1;
    }
    obs_wait_event(seen, deadline);
  }
}

void zkt_assert_parent_empty_at(const char *name, const char *file, int line) {
  char parent[512];
  int64_t deadline = zkt_now_ms() + ZKT_WAIT;
  zhandle_t *zh = zkt_observer();
  int rc, n;
  zkt_parent(parent, sizeof parent, name);
  for (;;) {
    struct String_vector sv = {0};
    unsigned seen = obs_seen();
    rc = zoo_wget_children(zh, parent, obs_watcher, NULL, &sv);
    n = sv.count;
    deallocate_String_vector(&sv);
    if (rc == ZNONODE || (rc == ZOK && n == 0) ||
        (rc != ZOK && !obs_transient(rc)) || zkt_now_ms() >= deadline)
      break;
    obs_wait_event(seen, deadline);
  }
  if (rc != ZOK && rc != ZNONODE)
    zkt_check_at(false, file, line, "the observer could not list %s: %s",
                 parent, zerror(rc));
  else
    zkt_check_at(rc == ZNONODE || n == 0, file, line,
                 "%s is empty (it has %d children)", parent,
                 rc == ZNONODE ? 0 : n);
}

/* Contender nodes under the name and a semaphore's places there (the
 * places themselves are containers the server reaps in its own time), with
 * a watch on each; -1 after an error of the observer (*rc says which). */
static int contender_nodes(const char *name, int *rc) {
  static const char *const places[] = {"", "/locks", "/leases"};
  char path[600];
  int p, i, left = 0;
  for (p = 0; p < 3; p++) {
    struct String_vector sv = {0};
    snprintf(path, sizeof path, "/locks/%s%s", name, places[p]);
    *rc = zoo_wget_children(zkt_observer(), path, obs_watcher, NULL, &sv);
    if (*rc == ZNONODE)
      continue;
    if (*rc != ZOK)
      return -1;
    for (i = 0; i < sv.count; i++)
      if (p > 0 || (strcmp(sv.data[i], "locks") != 0 &&
                    strcmp(sv.data[i], "leases") != 0))
        left++;
    deallocate_String_vector(&sv);
  }
  *rc = ZOK;
  return left;
}

void zkt_assert_no_contender_at(const char *name, const char *file, int line) {
  int64_t deadline = zkt_now_ms() + ZKT_WAIT;
  int rc, n;
  for (;;) {
    unsigned seen = obs_seen();
    n = contender_nodes(name, &rc);
    if (n == 0 || (rc != ZOK && !obs_transient(rc)) || zkt_now_ms() >= deadline)
      break;
    obs_wait_event(seen, deadline);
  }
  if (rc != ZOK)
    zkt_check_at(false, file, line, "the observer could not list %s: %s", name,
                 zerror(rc));
  else
    zkt_check_at(n == 0, file, line, "%s has %d contender nodes left", name, n);
}

void zkt_assert_quiet_at(zkl_session *s, const char *file, int line) {
  zkl_debug_counts c;
  int rc = zkl__debug_wait_quiet(s, ZKT_WAIT);
  zkl__debug_counts(s, &c);
  zkt_check_at(rc == 0, file, line,
               "the session is quiet (watches=%u cleanups=%u inflight=%u "
               "suspended=%u calls=%u)",
               c.watches, c.cleanups, c.inflight, c.parked, c.calls);
}

uint64_t zkt_disconnects(zkl_session *s) {
  zkl_session_stats st;
  return zkl_session_get_stats(s, &st) == ZKL_OK ? st.disconnects : 0;
}

int zkt_wait_disconnects(zkl_session *s, uint64_t before, int timeout_ms) {
  int64_t end = zkt_now_ms() + timeout_ms;
  while (zkt_disconnects(s) <= before) {
    if (zkt_now_ms() >= end)
      return -1;
    usleep(10 * 1000);
  }
  return 0;
}

void zkt_assert_sent_at(const unsigned long *before, const unsigned long *now,
                        const unsigned *want, const char *file, int line) {
  int k;
  for (k = 0; k < ZKL_RQ_KINDS; k++) {
    unsigned long sent = now[k] - before[k];
    if (k == ZKL_RQ_LEASE_SYNC || k == ZKL_RQ_LEASE_WRITE)
      continue;
    zkt_check_at(sent == want[k], file, line,
                 "requests of kind %d sent: %lu, not %u", k, sent, want[k]);
  }
}

void zkt_events_init(zkt_events *e) {
  memset(e, 0, sizeof *e);
  pthread_mutex_init(&e->mu, NULL);
  zkt_counter_init(&e->count);
}

void zkt_on_event(zkl_session *s, const zkl_event *ev, void *arg) {
  zkt_events *e = arg;
  (void)s;
  pthread_mutex_lock(&e->mu);
  if (e->n < ZKT_EVENTS_MAX) {
    e->ev[e->n] = *ev;
    snprintf(e->name[e->n], sizeof e->name[0], "%s", ev->name ? ev->name : "");
    snprintf(e->node[e->n], sizeof e->node[0], "%s", ev->node ? ev->node : "");
    snprintf(e->waiting_for[e->n], sizeof e->waiting_for[0], "%s",
             ev->waiting_for ? ev->waiting_for : "");
    e->n++;
  }
  pthread_mutex_unlock(&e->mu);
  zkt_counter_add(&e->count, 1);
}

int zkt_events_count(zkt_events *e, int type, const char *name) {
  int i, n = 0;
  pthread_mutex_lock(&e->mu);
  for (i = 0; i < e->n; i++)
    if ((int)e->ev[i].type == type && (!name || !strcmp(e->name[i], name)))
      n++;
  pthread_mutex_unlock(&e->mu);
  return n;
}

int zkt_events_last(zkt_events *e, int type) {
  int i, at = -1;
  pthread_mutex_lock(&e->mu);
  for (i = 0; i < e->n; i++)
    if ((int)e->ev[i].type == type)
      at = i;
  pthread_mutex_unlock(&e->mu);
  return at;
}

void zkt_rec_init(zkt_rec *r) {
  memset(r, 0, sizeof *r);
  zkt_counter_init(&r->calls);
  r->rc = ZKT_NO_CALL;
}

static void rec_call(zkt_rec *r, zkl_lock *l, int rc, int64_t token) {
  pthread_mutex_lock(&r->calls.mu);
  r->rc = rc;
  r->token = token;
  r->at_ms = zkt_now_ms();
  r->thread = pthread_self();
  r->lock = l;
  pthread_mutex_unlock(&r->calls.mu);
  zkt_counter_add(&r->calls, 1);
}

void zkt_on_acquired(zkl_lock *l, int rc, int64_t token, void *arg) {
  rec_call(arg, l, rc, token);
}

void zkt_on_released(zkl_lock *l, int rc, void *arg) {
  rec_call(arg, l, rc, 0);
}

void zkt_on_lost(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  rec_call(arg, l, reason, 0);
}

int zkt_rec_wait(zkt_rec *r, int n, int timeout_ms) {
  int rc;
  if (zkt_counter_wait(&r->calls, n, timeout_ms) < n)
    return ZKT_NO_CALL;
  pthread_mutex_lock(&r->calls.mu);
  rc = r->rc;
  pthread_mutex_unlock(&r->calls.mu);
  return rc;
}

void zkt_parent(char *buf, size_t len, const char *name) {
  if (name[0] == '/') /* a full path: its own znode */
    snprintf(buf, len, "%s", name);
  else
    snprintf(buf, len, "/locks/%s", name);
}

void zkt_name(char *buf, size_t len, const char *base) {
  static int n;
  snprintf(buf, len, "%s-%ld-%d", base, (long)getpid(), ++n);
}

int zkt_open(zkl_session **out, const char *hosts, int session_ms,
             int connect_ms, unsigned flags) {
  zkl_session_options o;
  zkl_session_options_init(&o);
  o.hosts = hosts;
  o.session_timeout_ms = session_ms;
  o.connect_timeout_ms = connect_ms;
  o.flags = flags;
  return zkl_session_open(out, &o);
}

int zkt_wrap(zkl_session **out, zhandle_t *zh) {
  zkl_session_options o;
  zkl_session_options_init(&o);
  o.handle = zh;
  return zkl_session_open(out, &o);
}

zkl_close_outcome zkt_close_how(zkl_session *s) {
  zkl_close_outcome how = (zkl_close_outcome)-1;
  CU_ASSERT_EQUAL(zkl_session_close(s, &how), ZKL_OK);
  return how;
}

zkl_session *zkt_session(int timeout_ms) {
  zkl_session *s = NULL;
  int rc = zkt_open(&s, zkt_hosts(), timeout_ms, 0, 0);
  if (rc != ZKL_OK)
    fprintf(stderr, "zkt_session: %s\n", zkl_strerror(rc));
  CU_ASSERT_FATAL(rc == ZKL_OK);
  return s;
}

/* The second handle of zkt_expire(): its counter goes to 1 when it
 * connected in the victim's session, or to EXPIRE_GONE when the server says
 * that session is over already. */
#define EXPIRE_GONE 1000
static void expire_watcher(zhandle_t *zh, int type, int state, const char *path,
                           void *ctx) {
  zkt_counter *c = ctx;
  (void)zh;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    return;
  if (state == ZOO_CONNECTED_STATE)
    zkt_counter_add(c, 1);
  else if (state == ZOO_EXPIRED_SESSION_STATE)
    zkt_counter_add(c, EXPIRE_GONE);
}

int zkt_expire(zkl_session *s) {
  zhandle_t *victim = zkl_session_handle(s);
  clientid_t id = *zoo_client_id(victim);
  int attempt;
  /* The victim reconnects at once when the second handle takes its session
   * over, and may take it back before the close goes out. So: mark the
   * session with an ephemeral node through the second handle, close, and
   * check the mark is gone (the session ended); else try again. A check
   * that gives up too early (a loaded machine: the server took longer than
   * the bound to delete the mark) is settled by the next attempt, whose
   * handle then hears from the server that the session is over: that is
   * success too. (It failed the test instead: every later attempt waited
   * in vain for a connection to a dead session.) */
  for (attempt = 0; attempt < 10; attempt++) {
    zkt_counter connected;
    char mark[128];
    zhandle_t *zh;
    int rc;
    zkt_counter_init(&connected);
    snprintf(mark, sizeof mark, "/zkt-expire-%llx-%d",
             (unsigned long long)id.client_id, attempt);
    zh = zookeeper_init2(zkt_hosts(), expire_watcher, zoo_recv_timeout(victim),
                         &id, &connected, 0, discard_log);
    if (!zh)
      return -1;
    switch (zkt_counter_wait(&connected, 1, 10000)) {
    case 0:
      rc = ZCONNECTIONLOSS;
      break;
    case 1:
      rc = zoo_create(zh, mark, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL,
                      NULL, 0);
      break;
    default: /* expired, whatever the connected count */
      zookeeper_close(zh);
      return 0;
    }
    zookeeper_close(zh);
    if (zkt_counter_get(&connected) >= EXPIRE_GONE)
      return 0;
    if (rc == ZOK && zkt_wait_absent(mark, 3000) == 0)
      return 0;
    if (rc == ZOK)
      zoo_delete(zkt_observer(), mark, -1); /* session survived: tidy up */
  }
  return -1;
}

void zkt_counter_init(zkt_counter *c) {
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cond, NULL);
  c->value = 0;
}

void zkt_counter_add(zkt_counter *c, int n) {
  pthread_mutex_lock(&c->mu);
  c->value += n;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mu);
}

int zkt_counter_get(zkt_counter *c) {
  int v;
  pthread_mutex_lock(&c->mu);
  v = c->value;
  pthread_mutex_unlock(&c->mu);
  return v;
}

int zkt_counter_wait(zkt_counter *c, int want, int timeout_ms) {
  struct timespec ts;
  int v;
  abs_deadline(&ts, timeout_ms);
  pthread_mutex_lock(&c->mu);
  while (c->value < want)
    if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) == ETIMEDOUT)
      break;
  v = c->value;
  pthread_mutex_unlock(&c->mu);
  return v;
}

int zkt_thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int n = 0;
  if (!d)
    return -1;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n;
}

/* A test that hangs (a deadlock, a wait with no bound) must fail, not keep
 * CI waiting: SIGALRM after ZKT_TIMEOUT_S seconds (default 1500) names the
 * test and aborts. Servers started here stop with their owner (zkserver's
 * watchdog); helper processes die with it (PR_SET_PDEATHSIG). */
static void on_alarm(int sig) {
  static const char msg[] = "\nzktest: timed out in test: ";
  CU_pTest t = CU_get_current_test();
  (void)sig;
  if (write(2, msg, sizeof msg - 1) < 0) {
  }
  if (t && t->pName && write(2, t->pName, strlen(t->pName)) < 0) {
  }
  if (write(2, "\n", 1) < 0) {
  }
  abort();
}

static void arm_timeout(void) {
  const char *env = getenv("ZKT_TIMEOUT_S");
  long seconds = env && *env ? strtol(env, NULL, 10) : 1500;
  if (seconds > 0) {
    signal(SIGALRM, on_alarm);
    alarm((unsigned)seconds);
  }
}

int zkt_main(const char *suite_name, const zkt_test *tests) {
  CU_pSuite suite;
  unsigned failed, run;
  arm_timeout();
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 99;
  suite = CU_add_suite_with_setup_and_teardown(suite_name, NULL, NULL,
                                               test_setup, test_teardown);
  if (!suite)
    return 99;
  /* ZKT_ONLY=substring runs the matching tests only (for debugging); one
   * that matches nothing is a mistake, not a pass. */
  const char *only = getenv("ZKT_ONLY");
  unsigned matched = 0;
  for (; tests->name; tests++) {
    if (only && !strstr(tests->name, only))
      continue;
    matched++;
    if (!CU_add_test(suite, tests->name, tests->fn))
      return 99;
  }
  if (matched == 0) {
    printf("\nZKTEST %s: 0 passed, 1 failed (ZKT_ONLY=%s matches no test)\n",
           suite_name, only);
    CU_cleanup_registry();
    return 1;
  }
  CU_basic_set_mode(CU_BRM_VERBOSE);
  test_thread = pthread_self();
  __atomic_store_n(&test_running, true, __ATOMIC_RELEASE);
  CU_basic_run_tests();
  __atomic_store_n(&test_running, false, __ATOMIC_RELEASE);
  run = CU_get_number_of_tests_run();
  failed = CU_get_number_of_tests_failed();
  /* The line scripts/check adds up. */
  printf("\nZKTEST %s: %u passed, %u failed\n", suite_name, run - failed,
         failed);
  CU_cleanup_registry();
  return failed ? 1 : 0;
}

/* ---------------------------------------------- holders, proxied sessions */

void zkt_hold(zkt_holder *h, const char *name) {
  h->s = zkt_session(10000);
  h->token = 0;
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&h->l, h->s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h->l, ZKT_WAIT, &h->token), ZKL_OK);
}

void zkt_unhold(zkt_holder *h) {
  /* ENOTHELD: the test released it itself; a hold that was lost says
   * ZKL_ELOST here, and fails the test */
  int rc = zkl_lock_release(h->l);
  CU_ASSERT(rc == ZKL_OK || rc == ZKL_ENOTHELD);
  zkl_lock_free(h->l);
  zkt_assert_quiet(h->s);
  zkl_session_close(h->s, NULL);
}

void zkt_proxied_open(zkt_proxied *p, int session_ms) {
  char hosts[64];
  int port, rc;
  CU_ASSERT_FATAL(proxyctl_start(&p->px, ZKL_TEST_BUILDDIR "/tests/faultproxy",
                                 zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  rc = zkt_open(&p->s, hosts, session_ms, 0, 0);
  if (rc != ZKL_OK)
    proxyctl_stop(p->px);
  CU_ASSERT_EQUAL_FATAL(rc, ZKL_OK);
}

void zkt_proxied_close(zkt_proxied *p) {
  zkl_session_close(p->s, NULL);
  proxyctl_stop(p->px);
}

int zkt_proxy_cmd(proxyctl *px, const char *c) {
  char answer[256];
  int rc = proxyctl_cmd(px, c, answer, sizeof answer, 5000);
  if (rc != 0)
    fprintf(stderr, "proxy %s: %s\n", c, answer);
  return rc;
}
