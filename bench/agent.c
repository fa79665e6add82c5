/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.c - workload 8: zklockd (one session per host) against one session
 * per process, through the zklock command, as a user runs it:
 *   - `zklock NAME -- true` runs per second, and each run's latency (fork
 *     to exit), n at a time, each on a name of its own;
 *   - ZooKeeper writes per run, from the server's last zxid before and
 *     after a batch of runs (every transaction has one: createSession and
 *     closeSession as well as the lock's create and delete);
 *   - a dead holder: `zklock NAME -- sleep` SIGKILLed (its process group)
 *     while `zklock NAME -- true` waits, timed from the kill to the
 *     waiter's exit (its grant, the `true`, its release and exit: the
 *     grant is what differs).
 * The agent is this build's agent/zklockd, started once on a socket of its
 * own and killed at exit (and with this process: PDEATHSIG).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "zklock.h"

#ifndef ZKL_BENCH_BUILDDIR
#error "ZKL_BENCH_BUILDDIR must name the build tree (cli/zklock, agent/zklockd)"
#endif
/* The programs themselves, not libtool's wrapper scripts: a wrapper is a
 * shell that costs each run more than the lock does. They find the
 * uninstalled library through LD_LIBRARY_PATH (set in the child). */
#define ZKLOCK ZKL_BENCH_BUILDDIR "/cli/.libs/zklock"
#define ZKLOCKD ZKL_BENCH_BUILDDIR "/agent/.libs/zklockd"
#define LIBDIR ZKL_BENCH_BUILDDIR "/lib/.libs"

static pid_t agent_pid;
static char agent_sock[100];

static void agent_kill(void) {
  if (agent_pid > 0) {
    kill(agent_pid, SIGKILL);
    waitpid(agent_pid, NULL, 0);
    agent_pid = 0;
    unlink(agent_sock);
  }
}

static bool answers(const char *path) {
  struct sockaddr_un a;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  strcpy(a.sun_path, path);
  ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (fd >= 0)
    close(fd);
  return ok;
}

const char *bench_agent_start(const char *hosts) {
  double until;
  if (agent_pid > 0)
    return agent_sock;
  snprintf(agent_sock, sizeof agent_sock, "/tmp/zklock-bench-%ld.sock",
           (long)getpid());
  fflush(NULL);
  if ((agent_pid = fork()) == 0) {
    int null = open("/dev/null", O_WRONLY);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (null >= 0)
      dup2(null, 2);
    setenv("LD_LIBRARY_PATH", LIBDIR, 1);
    execl(ZKLOCKD, ZKLOCKD, "-s", hosts, "--socket", agent_sock,
          (char *)NULL);
    _exit(127);
  }
  if (agent_pid < 0)
    return NULL;
  atexit(agent_kill);
  until = bench_now() + 30;
  while (bench_now() < until) {
    if (answers(agent_sock))
      return agent_sock;
    if (waitpid(agent_pid, NULL, WNOHANG) == agent_pid) {
      agent_pid = 0;
      return NULL;
    }
    usleep(20000); /* a socket path appearing: nothing to wait on */
  }
  agent_kill();
  return NULL;
}

/* Starts `zklock [-t T] [--agent SOCK] -s HOSTS NAME -- cmd...`; own_group:
 * in a process group of its own (to kill it with its command). */
static pid_t spawn(const bench_ctx *c, const char *agent, const char *name,
                   const char *const *cmd, bool own_group) {
  const char *argv[24];
  char t[32];
  int n = 0, i;
  pid_t pid;
  snprintf(t, sizeof t, "%dms", c->session_ms);
  argv[n++] = ZKLOCK;
  argv[n++] = "-q";
  argv[n++] = "-s";
  argv[n++] = c->hosts;
  argv[n++] = "-t";
  argv[n++] = t;
  if (agent) {
    argv[n++] = "--agent";
    argv[n++] = agent;
  }
  argv[n++] = name;
  argv[n++] = "--";
  for (i = 0; cmd[i] && n < 23; i++)
    argv[n++] = cmd[i];
  argv[n] = NULL;
  if ((pid = fork()) == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (own_group)
      setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    unsetenv("ZKLOCK_AGENT");
    setenv("LD_LIBRARY_PATH", LIBDIR, 1);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    execv(ZKLOCK, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static bool exited_ok(pid_t pid) {
  int status;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

/* ------------------------------------------------------------ runs/s */

typedef struct cli_arg {
  const bench_ctx *c;
  bench_window *w;
  const char *agent;
  int i;
  bench_lat lat;
} cli_arg;

static void *cli_thread(void *p) {
  cli_arg *a = p;
  static const char *const cmd[] = {"true", NULL};
  char name[64];
  snprintf(name, sizeof name, "bench-cli-%ld-%d", (long)getpid(), a->i);
  bench_window_ready(a->w);
  while (atomic_load(&a->w->phase) != BENCH_STOP) {
    double t0 = bench_now();
    pid_t pid = spawn(a->c, a->agent, name, cmd, false);
    if (pid < 0 || !exited_ok(pid)) {
      atomic_fetch_add(&a->w->errors, 1);
      continue;
    }
    if (atomic_load(&a->w->phase) == BENCH_MEASURE)
      bench_lat_add(&a->lat, (bench_now() - t0) * 1000);
    atomic_fetch_add(&a->w->ops, 1);
  }
  bench_window_done(a->w);
  return NULL;
}

void bench_cli_runs(const bench_ctx *c, bool through_agent, int n,
                    bench_result *r) {
  bench_window w;
  bench_ctx long_window;
  cli_arg *args = calloc((size_t)n, sizeof *args);
  bench_lat all = {0};
  const char *agent = NULL;
  int i;
  if (!args) {
    snprintf(r->error, sizeof r->error, "out of memory");
    return;
  }
  if (through_agent && !(agent = bench_agent_start(c->hosts))) {
    snprintf(r->error, sizeof r->error, "zklockd did not start");
    free(args);
    return;
  }
  /* A run is a process's life: a window shorter than a few runs (--smoke's
   * quarter second, a sanitizer's slow start) would count none. */
  if (c->secs < 2 || c->warm_s < 0.5) {
    long_window = *c;
    if (long_window.secs < 2)
      long_window.secs = 2;
    if (long_window.warm_s < 0.5)
      long_window.warm_s = 0.5;
    c = &long_window;
  }
  bench_window_init(&w);
  for (i = 0; i < n; i++) {
    args[i].c = c;
    args[i].w = &w;
    args[i].agent = agent;
    args[i].i = i;
  }
  if (bench_run_threads(c, &w, n, cli_thread, args, sizeof *args, r)) {
    for (i = 0; i < n; i++)
      bench_lat_merge(&all, &args[i].lat);
    r->p50_ms = bench_lat_quantile(&all, 0.5);
    r->p99_ms = bench_lat_quantile(&all, 0.99);
    /* the CPU that counts is the children's: bench_run_threads measured
     * this process, which only forks and waits */
  }
  for (i = 0; i < n; i++)
    bench_lat_free(&args[i].lat);
  bench_lat_free(&all);
  bench_window_destroy(&w);
  free(args);
}

/* ---------------------------------------------------------- writes/run */

/* The server's last zxid (4lw srvr), or -1. */
static long long last_zxid(const char *hosts) {
  char host[256], buf[4096];
  const char *colon;
  struct addrinfo hints, *ai = NULL;
  int fd = -1;
  size_t used = 0;
  ssize_t n;
  char *z;
  long long zxid = -1;
  snprintf(host, sizeof host, "%s", hosts);
  host[strcspn(host, ",/")] = 0;
  if (!(colon = strrchr(host, ':')))
    return -1;
  host[colon - host] = 0;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
    return -1;
  fd = socket(ai->ai_family, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
      write(fd, "srvr", 4) == 4) {
    while (used < sizeof buf - 1 &&
           (n = read(fd, buf + used, sizeof buf - 1 - used)) > 0)
      used += (size_t)n;
    buf[used] = 0;
    if ((z = strstr(buf, "Zxid: ")))
      zxid = strtoll(z + 6, NULL, 16);
  }
  if (fd >= 0)
    close(fd);
  freeaddrinfo(ai);
  return zxid;
}

void bench_cli_writes(const bench_ctx *c, bool through_agent, int runs,
                      bench_result *r) {
  static const char *const cmd[] = {"true", NULL};
  const char *agent = NULL;
  char name[64];
  long long z0, z1;
  double t0;
  int i;
  if (through_agent && !(agent = bench_agent_start(c->hosts))) {
    snprintf(r->error, sizeof r->error, "zklockd did not start");
    return;
  }
  snprintf(name, sizeof name, "bench-writes-%ld", (long)getpid());
  /* one run first: the parent container exists from then on */
  if (!exited_ok(spawn(c, agent, name, cmd, false))) {
    snprintf(r->error, sizeof r->error, "zklock failed");
    return;
  }
  z0 = last_zxid(c->hosts);
  t0 = bench_now();
  for (i = 0; i < runs; i++)
    if (!exited_ok(spawn(c, agent, name, cmd, false))) {
      snprintf(r->error, sizeof r->error, "zklock failed");
      return;
    }
  /* A closed session's closeSession is written before close returns;
   * the agent's lease beats (a write while it holds) are none: it holds
   * nothing between runs. */
  z1 = last_zxid(c->hosts);
  if (z0 < 0 || z1 < 0) {
    snprintf(r->error, sizeof r->error, "the server's zxid (srvr) unread");
    return;
  }
  r->ok = true;
  r->seconds = bench_now() - t0;
  r->ops = (uint64_t)runs;
  r->rate = (double)(z1 - z0) / runs; /* writes per run */
}

/* --------------------------------------------------------- dead holder */

/* Waits until the lock's queue has want children (bounded). */
static bool wait_children(zhandle_t *zh, const char *path, int want,
                          double timeout_s) {
  double until = bench_now() + timeout_s;
  while (bench_now() < until) {
    struct String_vector v = {0, NULL};
    if (zoo_get_children(zh, path, 0, &v) == ZOK) {
      int n = v.count;
      deallocate_String_vector(&v);
      if (n == want)
        return true;
    }
    usleep(2000);
  }
  return false;
}

void bench_dead_holder(const bench_ctx *c, bool through_agent,
                       bench_result *r) {
  static const char *const hold[] = {"sleep", "3600", NULL};
  static const char *const next[] = {"true", NULL};
  const char *agent = NULL;
  char name[64], path[128], err[160];
  bench_lat lat = {0};
  zhandle_t *zh;
  double start, t0;
  int cycles = 0;
  if (through_agent && !(agent = bench_agent_start(c->hosts))) {
    snprintf(r->error, sizeof r->error, "zklockd did not start");
    return;
  }
  if (!(zh = bench_zk_connect(c, err, sizeof err))) {
    snprintf(r->error, sizeof r->error, "%s", err);
    return;
  }
  snprintf(name, sizeof name, "bench-dead-%ld", (long)getpid());
  snprintf(path, sizeof path, "%s/%s", ZKL_ROOT, name);
  start = bench_now();
  /* At least one cycle; then as many as the window holds. */
  do {
    pid_t holder = spawn(c, agent, name, hold, true), waiter;
    if (holder < 0 || !wait_children(zh, path, 1, 30)) {
      snprintf(r->error, sizeof r->error, "the holder did not hold");
      kill(-holder, SIGKILL);
      waitpid(holder, NULL, 0);
      break;
    }
    waiter = spawn(c, agent, name, next, false);
    if (waiter < 0 || !wait_children(zh, path, 2, 30)) {
      snprintf(r->error, sizeof r->error, "the waiter did not queue");
      kill(-holder, SIGKILL);
      waitpid(holder, NULL, 0);
      if (waiter > 0) {
        kill(waiter, SIGKILL);
        waitpid(waiter, NULL, 0);
      }
      break;
    }
    t0 = bench_now();
    kill(-holder, SIGKILL); /* zklock and its command */
    waitpid(holder, NULL, 0);
    if (!exited_ok(waiter)) {
      snprintf(r->error, sizeof r->error, "the waiter failed");
      break;
    }
    bench_lat_add(&lat, (bench_now() - t0) * 1000);
    cycles++;
    wait_children(zh, path, 0, 30);
  } while (bench_now() - start < c->secs);
  if (cycles > 0 && !r->error[0]) {
    r->ok = true;
    r->seconds = bench_now() - start;
    r->ops = (uint64_t)cycles;
    r->p50_ms = bench_lat_quantile(&lat, 0.5);
    r->p99_ms = bench_lat_quantile(&lat, 0.99);
    r->rate = r->p50_ms; /* the row's figure: ms from the kill to the grant */
  }
  bench_lat_free(&lat);
  bench_zk_close(zh);
}
