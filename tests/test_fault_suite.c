/*
 * test_fault_suite.c - the lock on a real 3-server ensemble, with contenders
 * as separate processes (tests/contender.c) and faults injected at random,
 * seeded moments; then a checker (tests/fault_check.c) reads the logs.
 *
 * Faults, each several times, in shuffled rounds:
 *   leader killed      the leader (the server whose `srvr` says "Mode:
 *                      leader") gets SIGKILL and is restarted 0.5-2 s later
 *   holder killed      a contender is armed (SIGUSR1), tells us on its pipe
 *                      that it holds the lock, between reading and writing
 *                      the resource, and gets SIGKILL; the lowest lock node
 *                      is checked to be its own
 *   waiter killed      while an armed contender holds, one whose node is in
 *                      the queue but not the lowest gets SIGKILL
 *   holder paused      an armed holder gets SIGSTOP, stays stopped longer
 *                      than its session timeout and until a newer holder's
 *                      write was accepted, then SIGCONT: it must report
 *                      LOST, and its late write must be refused by the
 *                      resource's fencing check
 *   holder cut off     an armed holder's proxies black-hole it for longer
 *                      than its session timeout: its lease must report LOST
 *                      before anyone else is granted the lock; healed at
 *                      once after that (the session survives) or after a
 *                      newer holder wrote (the session has expired)
 *   create reply lost  every contender talks to the servers through three
 *                      tests/faultproxy processes of its own; the chosen
 *                      one's are armed with `reset-after-op 15`, so its next
 *                      create2 reaches the server and the connection is
 *                      reset before the reply comes back
 * Killed contenders are replaced by fresh processes. Between faults the
 * driver waits for a random number of handoffs (bounded). SLOTS (5)
 * contenders run at any time, with 3 s sessions; every time in the logs is
 * CLOCK_MONOTONIC in microseconds, one clock for all processes of the
 * machine.
 *
 * Then every contender is quiesced (it cancels its acquire and idles with
 * its session open): the lock's parent must become empty (killed contenders'
 * sessions expire); then SIGTERM: each releases, closes and exits 0, and the
 * parent must stay empty. The checker's figures are printed as one block.
 *
 * A first test plants each kind of violation in made-up logs and checks
 * that the checker counts it (and counts nothing in a clean history): the
 * suite is only as good as its checker.
 *
 * Environment:
 *   ZKL_FAULT_SECONDS  length of the fault phase (default 100)
 *   ZKL_FAULT_SEED     the seed (default: from the clock; printed); it
 *                      repeats the driver's choices, not the timing
 *   ZKL_FAULT_KEEP=1   keep the run directory (kept anyway on failure)
 *   ZKL_FAULT_MIN_HANDOFFS  the handoffs the test asserts (default 1000)
 * `test_fault_suite --check DIR SESSION_MS` runs the checker on a kept
 * run directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault_check.h"
#include "proxyctl.h"
#include "zktest.h"

#define SLOTS 5          /* contenders at any time */
#define SERVERS 3
#define SESSION_MS 3000  /* contenders' session timeout */
#define HOLD_MS 1500     /* an armed holder's critical section */
#define OP_CREATE2 15
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"
#define CONTENDER ZKL_TEST_BUILDDIR "/tests/contender"
/* What the checker calls stuck; also the bound of most waits here. */
#define STUCK_MS (3 * SESSION_MS + 10000)
#define ACQ_TIMEOUT_MS (4 * SESSION_MS + 20000)

typedef struct {
  int slot;
  int gen;
  pid_t pid; /* 0: not running */
  int notify_fd;
  proxyctl *px[SERVERS];
  char hosts[128];
} slot_t;

static slot_t slots[SLOTS];
static char run_dir[512];
static char lock_name[64];
static char parent_path[512];
static int server_port[SERVERS];
static int driver_log = -1;
static int inotify_fd = -1;
static uint64_t rng_state;
static long leader_restart_failures;

/* ----------------------------------------------------------------- util */

static long long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static int rnd_below(int n) { return (int)(rnd() % (uint64_t)n); }

/* A driver event: "<t> KIND args" into faults.log, echoed on stdout. */
static void dlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void dlog(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  int n = snprintf(buf, sizeof buf, "%lld ", now_us());
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  buf[n] = '\0';
  if (write(driver_log, buf, (size_t)n) != n)
    perror("fault suite: driver log");
  printf("    %s", buf);
  fflush(stdout);
}

/* A measured pause: the fault's own duration, not a wait for a condition. */
static void pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static void path_in_run(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/%s", run_dir, name);
}

/* ------------------------------------------------------------ resource */

static int resource_read(long long *highest, long long *counter) {
  char path[600], buf[64];
  ssize_t n;
  int fd;
  path_in_run(path, sizeof path, "resource");
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  flock(fd, LOCK_SH);
  n = pread(fd, buf, sizeof buf - 1, 0);
  flock(fd, LOCK_UN);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  return sscanf(buf, "%lld %lld", highest, counter) == 2 ? 0 : -1;
}

/* Waits (inotify on the history file, bounded) until the resource shows a
 * counter >= want_counter and a token > above_token. Returns 0 when both
 * hold, -1 at the deadline. */
static int wait_resource(long long want_counter, long long above_token,
                         long long deadline_us) {
  for (;;) {
    long long highest = 0, counter = 0;
    char evbuf[4096];
    struct pollfd pfd = {inotify_fd, POLLIN, 0};
    long long left;
    if (resource_read(&highest, &counter) == 0 && counter >= want_counter &&
        highest > above_token)
      return 0;
    left = (deadline_us - now_us()) / 1000;
    if (left <= 0)
      return -1;
    if (poll(&pfd, 1, left > 1000 ? 1000 : (int)left) > 0) {
      if (read(inotify_fd, evbuf, sizeof evbuf) < 0) {
        /* drained */
      }
    }
  }
}

static long long resource_counter(void) {
  long long h = 0, c = 0;
  resource_read(&h, &c);
  return c;
}

/* ----------------------------------------------------------- ZooKeeper */

/* One four-letter word to 127.0.0.1:port; the answer into buf. */
static int four_letter(int port, const char *word, char *buf, size_t len) {
  struct sockaddr_in sa;
  size_t got = 0;
  long long deadline = now_us() + 2000000;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      write(fd, word, 4) != 4) {
    close(fd);
    return -1;
  }
  while (got + 1 < len) {
    struct pollfd pfd = {fd, POLLIN, 0};
    long long left = (deadline - now_us()) / 1000;
    ssize_t n;
    if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
      break;
    n = read(fd, buf + got, len - 1 - got);
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  buf[got] = '\0';
  close(fd);
  return got > 0 ? 0 : -1;
}

/* The id (1..3) of the server whose srvr says it leads, or 0. */
static int find_leader(void) {
  int id;
  for (id = 1; id <= SERVERS; id++) {
    char answer[2048];
    if (four_letter(server_port[id - 1], "srvr", answer, sizeof answer) == 0 &&
        strstr(answer, "Mode: leader"))
      return id;
  }
  return 0;
}

typedef struct {
  char name[128];
  long seq;
  long pid;
} qent;

static int cmp_qent(const void *a, const void *b) {
  const qent *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The lock's queue, holder first, with the pid from each node's owner
 * description. Returns the count, or -1 when the observer cannot list. */
static int list_queue(qent *out, int max) {
  struct String_vector sv = {0};
  zhandle_t *zh = zkt_observer();
  int rc = zoo_get_children(zh, parent_path, 0, &sv), i, n = 0;
  if (rc == ZNONODE)
    return 0;
  if (rc != ZOK)
    return -1;
  for (i = 0; i < sv.count && n < max; i++) {
    char path[700], data[512];
    const char *dash = strstr(sv.data[i], "lock-"), *pid;
    int len = sizeof data - 1;
    struct Stat st;
    if (!dash)
      continue;
    snprintf(out[n].name, sizeof out[n].name, "%s", sv.data[i]);
    out[n].seq = strtol(dash + 5, NULL, 10);
    out[n].pid = 0;
    snprintf(path, sizeof path, "%s/%s", parent_path, sv.data[i]);
    if (zoo_get(zh, path, 0, data, &len, &st) == ZOK && len >= 0) {
      data[len] = '\0';
      pid = strstr(data, "pid=");
      if (pid)
        out[n].pid = strtol(pid + 4, NULL, 10);
    }
    n++;
  }
  deallocate_String_vector(&sv);
  qsort(out, (size_t)n, sizeof *out, cmp_qent);
  return n;
}

/* Prints what is left under the lock's parent; returns the node count. */
static int report_nodes(const char *when) {
  qent q[64];
  int n = list_queue(q, 64), i;
  for (i = 0; i < n; i++) {
    int j, live = -1;
    for (j = 0; j < SLOTS; j++)
      if (slots[j].pid && slots[j].pid == q[i].pid)
        live = j;
    printf("    LEAKED (%s): %s pid %ld%s\n", when, q[i].name, q[i].pid,
           live >= 0 ? " (a live contender's session)" : "");
  }
  return n < 0 ? 0 : n;
}

/* ----------------------------------------------------------- contenders */

static void spawn(slot_t *s) {
  char slot_s[16], session_s[16], acq_s[16], hold_s[16];
  char res[600], hist[600], logp[600], errp[600], name[64];
  char *argv[11];
  int pfd[2], errfd, devnull;
  pid_t parent = getpid(), pid;
  sigset_t mask, saved;
  s->gen++;
  snprintf(slot_s, sizeof slot_s, "%d", s->slot);
  snprintf(session_s, sizeof session_s, "%d", SESSION_MS);
  snprintf(acq_s, sizeof acq_s, "%d", ACQ_TIMEOUT_MS);
  snprintf(hold_s, sizeof hold_s, "%d", HOLD_MS);
  path_in_run(res, sizeof res, "resource");
  path_in_run(hist, sizeof hist, "history");
  snprintf(name, sizeof name, "c%d-%d.log", s->slot, s->gen);
  path_in_run(logp, sizeof logp, name);
  snprintf(name, sizeof name, "c%d-%d.err", s->slot, s->gen);
  path_in_run(errp, sizeof errp, name);
  argv[0] = (char *)CONTENDER;
  argv[1] = s->hosts;
  argv[2] = lock_name;
  argv[3] = slot_s;
  argv[4] = res;
  argv[5] = hist;
  argv[6] = logp;
  argv[7] = session_s;
  argv[8] = acq_s;
  argv[9] = hold_s;
  argv[10] = NULL;
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    perror("fault suite: pipe");
    exit(99);
  }
  errfd = open(errp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (errfd < 0 || devnull < 0) {
    perror("fault suite: open");
    exit(99);
  }
  /* The contender takes these with sigwait(). Blocked across the fork, so
   * that one sent before it got that far waits for it instead of killing
   * it (the child inherits the mask, and exec keeps it). */
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGUSR1);
  sigaddset(&mask, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &mask, &saved);
  fflush(stdout);
  pid = fork();
  if (pid != 0)
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
  if (pid < 0) {
    perror("fault suite: fork");
    exit(99);
  }
  if (pid == 0) {
    /* Async-signal-safe calls only: the test is multithreaded. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(127);
    /* dup2 onto itself would keep FD_CLOEXEC: clear it then. */
    if (dup2(devnull, 0) < 0 || dup2(errfd, 1) < 0 || dup2(errfd, 2) < 0 ||
        (pfd[1] == 3 ? fcntl(3, F_SETFD, 0) : dup2(pfd[1], 3)) < 0)
      _exit(127);
#ifdef SYS_close_range
    syscall(SYS_close_range, 4u, ~0u, 0u);
#endif
    execv(argv[0], argv);
    _exit(127);
  }
  close(pfd[1]);
  close(errfd);
  close(devnull);
  if (s->notify_fd >= 0)
    close(s->notify_fd);
  s->notify_fd = pfd[0];
  fcntl(s->notify_fd, F_SETFL, O_NONBLOCK);
  s->pid = pid;
  dlog("SPAWN %d %d %ld", s->slot, s->gen, (long)pid);
}

/* Reads one line of the slot's notify pipe within the deadline. */
static int notify_line(slot_t *s, char *buf, size_t len, long long deadline) {
  size_t got = 0;
  while (got + 1 < len) {
    struct pollfd pfd = {s->notify_fd, POLLIN, 0};
    long long left = (deadline - now_us()) / 1000;
    char c;
    ssize_t n = read(s->notify_fd, &c, 1);
    if (n == 1) {
      if (c == '\n')
        break;
      buf[got++] = c;
      continue;
    }
    if (n == 0)
      return -1; /* the contender is gone */
    if (errno != EAGAIN && errno != EINTR)
      return -1;
    if (left <= 0 || poll(&pfd, 1, (int)left) < 0)
      return -1;
  }
  buf[got] = '\0';
  return 0;
}

/* Waits (bounded) for EOF on the slot's notify pipe: 0, or -1. */
static int wait_eof(slot_t *s, long long deadline) {
  for (;;) {
    char junk[256];
    struct pollfd pfd = {s->notify_fd, POLLIN, 0};
    long long left = (deadline - now_us()) / 1000;
    ssize_t n = read(s->notify_fd, junk, sizeof junk);
    if (n == 0)
      return 0;
    if (n > 0 || errno == EINTR)
      continue;
    if (errno != EAGAIN || left <= 0 || poll(&pfd, 1, (int)left) < 0)
      return -1;
  }
}

static void notify_drain(slot_t *s) {
  char junk[256];
  while (read(s->notify_fd, junk, sizeof junk) > 0)
    ;
}

/* Arms the slot's contender and waits until it reports that it holds the
 * lock (between its read and its write), where it then stays hold_ms.
 * Returns 0 and the token. */
static int arm_and_wait(slot_t *s, int hold_ms, long long *token) {
  char line[64];
  long long deadline = now_us() + (long long)STUCK_MS * 1000;
  union sigval v;
  v.sival_int = hold_ms;
  notify_drain(s);
  if (sigqueue(s->pid, SIGUSR1, v) != 0)
    return -1;
  while (notify_line(s, line, sizeof line, deadline) == 0)
    if (sscanf(line, "H %lld", token) == 1)
      return 0;
  return -1;
}

/* Reaps a contender we killed (SIGKILL: it goes at once). */
static void reap(slot_t *s) {
  int status;
  while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
    ;
  s->pid = 0;
}

/* Prints how a contender that should not have ended did end, and the last
 * lines of its stderr (a sanitizer's report, say): the run directory is
 * gone by the time anyone reads a CI log. */
static void show_death(const slot_t *s, int status, int reaped) {
  char name[64], path[600], line[512];
  FILE *f;
  long n = 0, skip;
  if (!reaped)
    printf("    contender slot %d (pid %ld) did not exit in time\n", s->slot,
           (long)s->pid);
  else if (WIFSIGNALED(status))
    printf("    contender slot %d (pid %ld) died of signal %d\n", s->slot,
           (long)s->pid, WTERMSIG(status));
  else
    printf("    contender slot %d (pid %ld) exited with status %d\n", s->slot,
           (long)s->pid, WEXITSTATUS(status));
  snprintf(name, sizeof name, "c%d-%d.err", s->slot, s->gen);
  path_in_run(path, sizeof path, name);
  if (!(f = fopen(path, "r")))
    return;
  while (fgets(line, sizeof line, f))
    n++;
  skip = n > 40 ? n - 40 : 0;
  rewind(f);
  for (n = 0; fgets(line, sizeof line, f); n++)
    if (n >= skip)
      printf("    | %s%s", line, strchr(line, '\n') ? "" : "\n");
  fclose(f);
}

/* A contender that died without being told to: a crash. Replaced. */
static void reap_crashed(void) {
  int i, status;
  for (i = 0; i < SLOTS; i++) {
    slot_t *s = &slots[i];
    if (s->pid && waitpid(s->pid, &status, WNOHANG) == s->pid) {
      dlog("CRASH %d %ld %d", s->slot, (long)s->pid, status);
      show_death(s, status, 1);
      s->pid = 0;
      spawn(s);
    }
  }
}

static slot_t *random_slot(const slot_t *except) {
  for (;;) {
    slot_t *s = &slots[rnd_below(SLOTS)];
    if (s != except && s->pid)
      return s;
  }
}

/* --------------------------------------------------------------- faults */

static void fault_leader(void) {
  char args[700];
  long long t0, t1;
  int id = find_leader(), rc;
  if (!id) {
    dlog("SKIP leader no server answers as leader");
    return;
  }
  snprintf(args, sizeof args, "kill '%s' %d KILL", zkt_zkdir(), id);
  t0 = now_us();
  rc = zkt_zkserver(args);
  if (rc != 0) {
    dlog("SKIP leader kill of server %d failed (%d)", id, rc);
    return;
  }
  pause_ms(500 + rnd_below(1500)); /* "a moment later" */
  snprintf(args, sizeof args, "restart '%s' %d", zkt_zkdir(), id);
  rc = zkt_zkserver(args);
  if (rc != 0) {
    rc = zkt_zkserver(args); /* once more: a port race, a slow JVM */
    if (rc != 0)
      leader_restart_failures++;
  }
  t1 = now_us();
  dlog("LEADER-KILL %d %lld %lld %d", id, t0, t1, rc);
}

static void fault_kill_holder(void) {
  slot_t *s = random_slot(NULL);
  long long token;
  qent q[16];
  int n, verified;
  pid_t pid = s->pid;
  if (arm_and_wait(s, HOLD_MS, &token) != 0) {
    dlog("SKIP kill-holder slot %d never reported holding", s->slot);
    return;
  }
  n = list_queue(q, 16);
  verified = n < 0 ? -1 : (n > 0 && q[0].pid == (long)pid);
  kill(pid, SIGKILL);
  reap(s);
  dlog("KILL-HOLDER %d %ld %lld %d", s->slot, (long)pid, token, verified);
  spawn(s);
}

static void fault_kill_waiter(void) {
  slot_t *holder = random_slot(NULL), *victim = NULL;
  long long token;
  qent q[16];
  int n, i, j, cand[16], ncand = 0;
  if (arm_and_wait(holder, HOLD_MS, &token) != 0) {
    dlog("SKIP kill-waiter slot %d never reported holding", holder->slot);
    return;
  }
  /* It holds for HOLD_MS from now: the queue behind it stands still. */
  n = list_queue(q, 16);
  for (i = 1; i < n; i++)
    for (j = 0; j < SLOTS; j++)
      if (&slots[j] != holder && slots[j].pid && q[i].pid == slots[j].pid)
        cand[ncand++] = i;
  if (ncand == 0) {
    dlog("SKIP kill-waiter no waiter in the queue (%d nodes)", n);
    return;
  }
  i = cand[rnd_below(ncand)];
  for (j = 0; j < SLOTS; j++)
    if (slots[j].pid == q[i].pid)
      victim = &slots[j];
  {
    pid_t pid = victim->pid;
    kill(pid, SIGKILL);
    reap(victim);
    dlog("KILL-WAITER %d %ld %s %d", victim->slot, (long)pid, q[i].name,
         holder->slot);
  }
  spawn(victim);
}

static void fault_pause_holder(void) {
  slot_t *s = random_slot(NULL);
  long long token, t0, t1, min_end, highest = 0, counter = 0;
  int status;
  if (arm_and_wait(s, HOLD_MS, &token) != 0) {
    dlog("SKIP pause slot %d never reported holding", s->slot);
    return;
  }
  t0 = now_us();
  kill(s->pid, SIGSTOP);
  /* Returns once it is stopped; or it died just before (a crash). */
  while (waitpid(s->pid, &status, WUNTRACED) < 0 && errno == EINTR)
    ;
  if (!WIFSTOPPED(status)) {
    dlog("CRASH %d %ld %d", s->slot, (long)s->pid, status);
    s->pid = 0;
    spawn(s);
    return;
  }
  /* Longer than its session timeout (measured: that is the scenario), and
   * until a newer holder's write was accepted, so that the late write
   * surely meets a higher token. */
  min_end = t0 + (SESSION_MS + 1000) * 1000LL;
  pause_ms(SESSION_MS + 1000);
  if (wait_resource(0, token, min_end + (long long)STUCK_MS * 1000) != 0)
    printf("    (no newer token accepted while slot %d was stopped)\n",
           s->slot);
  resource_read(&highest, &counter);
  kill(s->pid, SIGCONT);
  t1 = now_us();
  dlog("PAUSE %d %ld %lld %lld %lld %lld", s->slot, (long)s->pid, token, t0,
       t1, highest);
}

static void fault_lost_create(void) {
  slot_t *s = random_slot(NULL);
  long long deadline = now_us() + (long long)STUCK_MS * 1000;
  int i, fired = -1, nfired, before[SERVERS];
  for (i = 0; i < SERVERS; i++) {
    before[i] = proxyctl_fired_count(s->px[i]);
    if (proxyctl_cmd(s->px[i], "reset-after-op 15", NULL, 0, 5000) != 0) {
      dlog("SKIP lost-create proxy %d of slot %d does not answer", i + 1,
           s->slot);
      return;
    }
  }
  /* Its next create goes through one of them (the one it is connected to
   * right then). */
  while (fired < 0 && now_us() < deadline)
    for (i = 0; i < SERVERS && fired < 0; i++)
      if (proxyctl_wait_fired(s->px[i], 20) == 0)
        fired = i;
  for (i = 0; i < SERVERS; i++)
    proxyctl_cmd(s->px[i], "disarm", NULL, 0, 5000);
  if (fired >= 0 && proxyctl_last_fired_op(s->px[fired]) != OP_CREATE2)
    printf("    (proxy fired on op %d)\n",
           proxyctl_last_fired_op(s->px[fired]));
  /* Until the disarm, a second create (after the recovery) may have been
   * caught by another of its proxies: each is one more lost reply. */
  nfired = 0;
  for (i = 0; i < SERVERS; i++)
    nfired += proxyctl_fired_count(s->px[i]) - before[i];
  dlog("LOST-CREATE %d %ld %d %d", s->slot, (long)s->pid, fired + 1, nfired);
}

/* Cuts a holder off from every server (its three proxies black-hole its
 * bytes and hold its new connections) while it is in its critical section
 * for longer than its session timeout. Its lease must run out and report
 * LOST before the server can expire the session and grant the lock to
 * anyone else. Healed either at once when it reports LOST (the session
 * survives: the library must delete the node itself) or only after a newer
 * holder's write was accepted (the session is expired by then). */
static void fault_partition(void) {
  slot_t *s = random_slot(NULL);
  long long token, t0, t1, told = 0, deadline;
  int i, early = rnd_below(2);
  char line[64];
  if (arm_and_wait(s, SESSION_MS + 3000, &token) != 0) {
    dlog("SKIP partition slot %d never reported holding", s->slot);
    return;
  }
  t0 = now_us();
  for (i = 0; i < SERVERS; i++)
    proxyctl_cmd(s->px[i], "drop", NULL, 0, 5000);
  deadline = t0 + (2LL * SESSION_MS + 5000) * 1000;
  while (notify_line(s, line, sizeof line, deadline) == 0)
    if (!strcmp(line, "L")) {
      told = now_us();
      break;
    }
  if (!early)
    wait_resource(0, token, now_us() + (long long)STUCK_MS * 1000);
  for (i = 0; i < SERVERS; i++)
    proxyctl_cmd(s->px[i], "pass", NULL, 0, 5000);
  t1 = now_us();
  dlog("PARTITION %d %ld %lld %lld %lld %d %lld", s->slot, (long)s->pid, token,
       t0, t1, early, told);
}

/* -------------------------------------------------------------- the test */

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static void setup_run_dir(void) {
  char path[600];
  int fd;
  snprintf(run_dir, sizeof run_dir, "%s/zkl-faults-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(run_dir)) {
    perror("fault suite: mkdtemp");
    exit(99);
  }
  path_in_run(path, sizeof path, "resource");
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || dprintf(fd, "%020lld %020lld\n", 0LL, 0LL) != 42) {
    perror("fault suite: resource");
    exit(99);
  }
  close(fd);
  path_in_run(path, sizeof path, "history");
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror("fault suite: history");
    exit(99);
  }
  close(fd);
  inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd < 0 || inotify_add_watch(inotify_fd, path, IN_MODIFY) < 0) {
    perror("fault suite: inotify");
    exit(99);
  }
  path_in_run(path, sizeof path, "faults.log");
  driver_log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (driver_log < 0) {
    perror("fault suite: faults.log");
    exit(99);
  }
}

static void parse_ports(const char *hosts) {
  const char *p = hosts;
  int i;
  for (i = 0; i < SERVERS; i++) {
    const char *colon = strchr(p, ':');
    if (!colon) {
      fprintf(stderr, "fault suite: cannot parse hosts '%s'\n", hosts);
      exit(99);
    }
    server_port[i] = atoi(colon + 1);
    p = strchr(colon, ',');
    if (!p && i + 1 < SERVERS) {
      fprintf(stderr, "fault suite: expected %d servers in '%s'\n", SERVERS,
              hosts);
      exit(99);
    }
    if (p)
      p++;
  }
}

/* Quiesces every contender; returns how many answered IDLE. */
static int quiesce_all(void) {
  int i, idle = 0;
  long long deadline;
  for (i = 0; i < SLOTS; i++)
    if (slots[i].pid)
      kill(slots[i].pid, SIGUSR2);
  deadline = now_us() + (2LL * SESSION_MS + 15000) * 1000;
  for (i = 0; i < SLOTS; i++) {
    char line[64];
    if (!slots[i].pid)
      continue;
    int answered = 0;
    while (!answered && notify_line(&slots[i], line, sizeof line, deadline) == 0)
      answered = !strcmp(line, "I");
    if (answered)
      idle++;
    else
      printf("    contender slot %d (pid %ld) did not go idle\n", slots[i].slot,
             (long)slots[i].pid);
  }
  return idle;
}

/* SIGTERM to all, wait (bounded) for each; returns how many exited 0. */
static int stop_all(void) {
  int i, clean = 0;
  long long deadline;
  for (i = 0; i < SLOTS; i++)
    if (slots[i].pid)
      kill(slots[i].pid, SIGTERM);
  deadline = now_us() + (2LL * SESSION_MS + 10000) * 1000;
  for (i = 0; i < SLOTS; i++) {
    slot_t *s = &slots[i];
    int status = 0;
    pid_t r = 0;
    if (!s->pid)
      continue;
    /* The notify pipe's EOF says the process is gone (nothing else holds
     * its write end); waitpid then returns at once. */
    if (wait_eof(s, deadline) == 0)
      while ((r = waitpid(s->pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (r == s->pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      clean++;
    } else {
      if (r == s->pid)
        dlog("CRASH %d %ld %d", s->slot, (long)s->pid, status);
      show_death(s, status, r == s->pid);
      if (r != s->pid) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
      }
    }
    s->pid = 0;
  }
  return clean;
}

static void remove_run_dir(void) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", run_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "fault suite: could not remove %s\n", run_dir);
}

static void test_fault_suite(void) {
  const int fault_s = env_int("ZKL_FAULT_SECONDS", 100);
  const long min_handoffs = env_int("ZKL_FAULT_MIN_HANDOFFS", 1000);
  const char *seed_env = getenv("ZKL_FAULT_SEED");
  unsigned long long seed =
      seed_env && *seed_env ? strtoull(seed_env, NULL, 0)
                            : (unsigned long long)time(NULL) ^
                                  ((unsigned long long)getpid() << 20);
  long long t_begin = now_us(), deadline;
  int i, j, kinds[FC_KINDS], rounds = 0, idle, clean, expected_live;
  long leaked_live = 0, leaked_end = 0;
  fc_result res;
  const char *hosts;

  rng_state = seed ? seed : 1;
  printf("\n    seed %llu (ZKL_FAULT_SEED to repeat), fault phase %d s\n",
         seed, fault_s);
  setup_run_dir();
  printf("    run directory %s\n", run_dir);

  hosts = zkt_hosts();
  parse_ports(hosts);
  zkt_name(lock_name, sizeof lock_name, "fault-suite");
  zkt_parent(parent_path, sizeof parent_path, lock_name);

  for (i = 0; i < SLOTS; i++) {
    slot_t *s = &slots[i];
    size_t off = 0;
    s->slot = i + 1;
    s->notify_fd = -1;
    for (j = 0; j < SERVERS; j++) {
      char target[64];
      int port;
      snprintf(target, sizeof target, "127.0.0.1:%d", server_port[j]);
      CU_ASSERT_FATAL(proxyctl_start(&s->px[j], PROXY, target, &port) == 0);
      off += (size_t)snprintf(s->hosts + off, sizeof s->hosts - off, "%s127.0.0.1:%d",
                              j ? "," : "", port);
    }
  }
  for (i = 0; i < SLOTS; i++)
    spawn(&slots[i]);

  /* Warm up: the contenders are connected and take turns. */
  CU_ASSERT(wait_resource(20, 0, now_us() + 30000000LL) == 0);

  deadline = now_us() + (long long)fault_s * 1000000;
  for (i = 0; i < FC_KINDS; i++)
    kinds[i] = i;
  while (rounds < 2 || now_us() < deadline) {
    for (i = FC_KINDS - 1; i > 0; i--) { /* shuffle */
      int k = rnd_below(i + 1), t = kinds[i];
      kinds[i] = kinds[k];
      kinds[k] = t;
    }
    for (i = 0; i < FC_KINDS; i++) {
      if (rounds >= 2 && now_us() >= deadline)
        break;
      /* a random number of handoffs between faults: a random moment */
      if (wait_resource(resource_counter() + 20 + rnd_below(120), 0,
                        now_us() + (long long)STUCK_MS * 1000) != 0)
        printf("    (slow progress before the next fault)\n");
      reap_crashed();
      switch (kinds[i]) {
      case FC_LEADER_KILL:
        fault_leader();
        break;
      case FC_KILL_HOLDER:
        fault_kill_holder();
        break;
      case FC_KILL_WAITER:
        fault_kill_waiter();
        break;
      case FC_PAUSE_HOLDER:
        fault_pause_holder();
        break;
      case FC_LOST_CREATE:
        fault_lost_create();
        break;
      default:
        fault_partition();
        break;
      }
    }
    rounds++;
  }
  if (wait_resource(resource_counter() + 20, 0,
                    now_us() + (long long)STUCK_MS * 1000) != 0)
    printf("    (slow progress after the last fault)\n");
  reap_crashed();

  /* Everyone idle, sessions open: only the killed contenders' sessions
   * may still have nodes, until the server expires them. */
  dlog("QUIESCE");
  expected_live = 0;
  for (i = 0; i < SLOTS; i++)
    expected_live += slots[i].pid != 0;
  idle = quiesce_all();
  CU_ASSERT_EQUAL(idle, expected_live);
  if (zkt_wait_children(parent_path, 0, 2 * SESSION_MS + 10000) > 0)
    leaked_live = report_nodes("contenders idle");

  clean = stop_all();
  CU_ASSERT_EQUAL(clean, expected_live);
  if (zkt_wait_children(parent_path, 0, 2 * SESSION_MS + 10000) > 0)
    leaked_end = report_nodes("contenders exited");
  for (i = 0; i < SLOTS; i++) {
    for (j = 0; j < SERVERS; j++)
      proxyctl_stop(slots[i].px[j]);
    if (slots[i].notify_fd >= 0)
      close(slots[i].notify_fd);
  }

  /* The checker. */
  if (fc_check(run_dir, SESSION_MS, &res, stdout) != 0) {
    CU_FAIL("the logs could not be read");
    return;
  }
  fc_print(&res, leaked_live + leaked_end, (double)(now_us() - t_begin) / 1e6,
           stdout);
  CU_ASSERT_EQUAL(res.violations, 0);
  CU_ASSERT_EQUAL(leaked_live + leaked_end, 0);
  CU_ASSERT_EQUAL(res.stuck, 0);
  CU_ASSERT_EQUAL(res.crashes, 0);
  CU_ASSERT_EQUAL(leader_restart_failures, 0);
  CU_ASSERT(res.handoffs >= min_handoffs);
  for (i = 0; i < FC_KINDS; i++) {
    if (res.faults[i] < 2)
      printf("    too few faults of kind '%s': %ld\n", fc_kind_names[i],
             res.faults[i]);
    CU_ASSERT(res.faults[i] >= 2);
  }
  /* Every paused holder lost the lock to a newer one, said so, and had
   * its late write refused. */
  CU_ASSERT(res.pauses_proven >= 1);
  CU_ASSERT_EQUAL(res.pauses_proven, res.faults[FC_PAUSE_HOLDER]);
  /* Every cut-off holder was told by its lease, before anyone else got the
   * lock (a late notice is a violation: "lease late"). */
  CU_ASSERT_EQUAL(res.partitions_told, res.faults[FC_PARTITION]);

  if (CU_get_number_of_failures() == 0 && env_int("ZKL_FAULT_KEEP", 0) == 0)
    remove_run_dir();
  else
    printf("    logs kept in %s\n", run_dir);
}

/* ------------------------------------------- the checker, on planted logs */

/* Writes a file of the scratch run directory. */
static void put(const char *dir, const char *name, const char *text) {
  char path[700];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "w");
  CU_ASSERT_FATAL(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* Runs the checker on two contenders' planted logs (times in us, session
 * 1000 ms: stuck above 13 s). */
static fc_result planted3(const char *faults, const char *c1, const char *c2,
                          const char *c3, const char *history) {
  char dir[] = "/tmp/zkl-check-XXXXXX", cmd[128];
  fc_result r;
  FILE *devnull = fopen("/dev/null", "w");
  CU_ASSERT_FATAL(mkdtemp(dir) != NULL && devnull != NULL);
  put(dir, "faults.log", faults);
  put(dir, "c1-1.log", c1);
  put(dir, "c2-1.log", c2);
  if (c3)
    put(dir, "c3-1.log", c3);
  put(dir, "history", history);
  CU_ASSERT_EQUAL(fc_check(dir, 1000, &r, getenv("ZKL_CHECK_VERBOSE") ? stdout : devnull), 0);
  fclose(devnull);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CU_ASSERT_EQUAL(system(cmd), 0);
  return r;
}

static fc_result planted(const char *faults, const char *c1, const char *c2,
                         const char *history) {
  return planted3(faults, c1, c2, NULL, history);
}

#define SPAWNS "1 SPAWN 1 1 101\n2 SPAWN 2 1 102\n"

/* The checker is what makes the suite fail: it must see each kind of
 * violation, and must not see one in a clean history with a pause. */
static void test_checker(void) {
  fc_result r;
  /* clean: handoff 1 -> 2, then 1 paused in its section, refused, told */
  r = planted(SPAWNS "5000 PAUSE 1 101 30 2000 4000 40\n",
              "10 ACQ\n100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n"
              "210 REL 0\n220 ACQ\n1000 START 30\n4001 LOST 3 30\n"
              "4002 REJECT 30 40\n4003 END 30\n4004 REL -1006\n",
              "20 ACQ\n300 START 20\n350 ACCEPT 20 1 2\n400 END 20\n"
              "410 REL 0\n420 ACQ\n3000 START 40\n3100 ACCEPT 40 2 3\n"
              "3200 END 40\n3300 REL 0\n",
              "10 0 1 1 101 150\n20 1 2 2 102 350\n40 2 3 2 102 3100\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.stuck, 0);
  CU_ASSERT_EQUAL(r.handoffs, 3);
  CU_ASSERT_EQUAL(r.pauses_proven, 1);
  /* overlap: 2 starts before 1 ends, nobody paused or told */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n210 REL 0\n",
              "190 START 20\n195 ACCEPT 20 1 2\n300 END 20\n310 REL 0\n",
              "10 0 1 1 101 150\n20 1 2 2 102 195\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.violations, 1);
  /* ...but not when 1 had been told LOST before 2 began */
  r = planted(SPAWNS,
              "100 START 10\n150 LOST 3 10\n160 REJECT 10 20\n200 END 10\n"
              "210 REL -1006\n",
              "190 START 20\n195 ACCEPT 20 0 1\n300 END 20\n310 REL 0\n",
              "20 0 1 2 102 195\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  /* ...while two others overlapping after that notice still count */
  r = planted3(SPAWNS "3 SPAWN 3 1 103\n",
               "100 START 10\n150 LOST 3 10\n900 REJECT 10 30\n1000 END 10\n",
               "200 START 20\n210 ACCEPT 20 0 1\n300 END 20\n310 REL 0\n",
               "250 START 30\n260 ACCEPT 30 1 2\n350 END 30\n360 REL 0\n",
               "20 0 1 2 102 210\n30 1 2 3 103 260\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  /* lost update and token order in the history */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n",
              "300 START 9\n350 ACCEPT 9 0 1\n400 END 9\n",
              "10 0 1 1 101 150\n9 0 1 2 102 350\n");
  CU_ASSERT_EQUAL(r.lost_updates, 1);
  CU_ASSERT_EQUAL(r.token_order, 1);
  /* stale grant: refused, not paused, never told */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n",
              "300 START 9\n350 REJECT 9 10\n400 END 9\n",
              "10 0 1 1 101 150\n");
  CU_ASSERT_EQUAL(r.stale_grants, 1);
  /* paused holder accepted after a newer token, and never told */
  r = planted(SPAWNS "5000 PAUSE 1 101 10 2000 4000 20\n",
              "100 START 10\n4001 ACCEPT 10 1 2\n4002 END 10\n",
              "3000 START 20\n3100 ACCEPT 20 0 1\n3200 END 20\n",
              "20 0 1 2 102 3100\n10 1 2 1 101 4001\n");
  CU_ASSERT_EQUAL(r.late_accepts, 1);
  CU_ASSERT_EQUAL(r.unannounced, 1);
  CU_ASSERT_EQUAL(r.token_order, 1);
  /* cut off: told only after the other was granted */
  r = planted(SPAWNS "9000 PARTITION 1 101 10 1000 8000 0 5000\n",
              "100 START 10\n5000 LOST 3 10\n6000 REJECT 10 20\n6001 END 10\n",
              "4000 START 20\n4100 ACCEPT 20 0 1\n4200 END 20\n4300 REL 0\n",
              "20 0 1 2 102 4100\n");
  CU_ASSERT_EQUAL(r.lease_late, 1);
  /* stuck: 2 waits 20 s while the lock is free */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n210 REL 0\n",
              "150 ACQ\n20000300 START 20\n20000350 ACCEPT 20 1 2\n"
              "20000400 END 20\n",
              "10 0 1 1 101 150\n20 1 2 2 102 20000350\n");
  CU_ASSERT_EQUAL(r.stuck, 1);
  CU_ASSERT_EQUAL(r.violations, 0);
  /* ...but a wait behind a holder is no stuck wait */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n20000000 END 10\n"
              "20000010 REL 0\n",
              "150 ACQ\n20000300 START 20\n20000350 ACCEPT 20 1 2\n"
              "20000400 END 20\n",
              "10 0 1 1 101 150\n20 1 2 2 102 20000350\n");
  CU_ASSERT_EQUAL(r.stuck, 1); /* 1 was silent inside its section */
  CU_ASSERT(r.longest_free_wait_us < 1000);
}

int main(int argc, char **argv) {
  static const zkt_test tests[] = {
      {"the checker sees planted violations", test_checker},
      {"fault suite on a 3-server ensemble", test_fault_suite},
      {NULL, NULL}};
  if (argc == 4 && strcmp(argv[1], "--check") == 0) {
    fc_result res;
    if (fc_check(argv[2], atoi(argv[3]), &res, stdout) != 0)
      return 99;
    fc_print(&res, 0, (double)(res.last_us - res.first_us) / 1e6, stdout);
    return res.violations || res.stuck ? 1 : 0;
  }
  if (getenv("ZKL_TEST_HOSTS") && !getenv("ZKL_TEST_ZKDIR")) {
    /* Servers it cannot kill and restart: run it under `zkserver run
     * --servers 3`, or alone. */
    printf("fault suite: needs its own ensemble (ZKL_TEST_ZKDIR); skipped\n");
    return 77;
  }
  signal(SIGPIPE, SIG_IGN);
  zkt_use_ensemble(SERVERS);
  return zkt_main("fault suite", tests);
}
