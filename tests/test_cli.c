/* test_cli.c - the zklock command (cli/zklock), run as a program against a
 * real ZooKeeper.
 *
 * The commands zklock runs are this program itself in helper mode
 * (`test_cli --helper MODE ...`): it reports on descriptor 3 (a pipe to the
 * test) what it saw (its pid, ZKLOCK_* variables, its descriptors, the
 * signals it got) and waits on descriptor 4 (a pipe from the test) for
 * the word to exit. Every wait is bounded and waits on a condition: a line
 * on a pipe, a child watch (zkt_wait_children), or a process's exit (a
 * SIGCHLD self-pipe). zklock is started in a session of its own (setsid),
 * so it has no controlling terminal unless a test gives it a pty. */
#define _GNU_SOURCE 1 /* posix_openpt and friends, syscall */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proxyctl.h"
#include "zktest.h"

#define ZKLOCK ZKL_TEST_BUILDDIR "/cli/zklock"
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"
#define T_WAIT 15000
#define HELPER(mode) self_exe, "--helper", mode

extern char **environ;
static char self_exe[PATH_MAX];

/* ---------------------------------------------------------------- helper */

static const char *helper_mode;

static void helper_say(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0 && write(3, buf, (size_t)n) < 0)
    _exit(90);
}

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Reports "sig N"; "hold" and "log" then die by it, "count" goes on, and
 * "ignore-term" goes on after SIGTERM only. */
static void helper_on_signal(int sig) {
  char buf[16] = "sig ";
  int n = 4;
  if (sig >= 10)
    buf[n++] = (char)('0' + sig / 10);
  buf[n++] = (char)('0' + sig % 10);
  buf[n++] = '\n';
  if (write(3, buf, (size_t)n) < 0)
    _exit(90);
  if (strcmp(helper_mode, "count") == 0 ||
      (strcmp(helper_mode, "ignore-term") == 0 && sig == SIGTERM))
    return;
  signal(sig, SIG_DFL);
  raise(sig);
}

static void helper_log(const char *file, const char *what) {
  char buf[128];
  int fd = open(file, O_WRONLY | O_APPEND | O_CREAT, 0644);
  int n = snprintf(buf, sizeof buf, "%s %ld %lld\n", what, (long)getpid(),
                   (long long)mono_ns());
  if (fd < 0 || write(fd, buf, (size_t)n) != n)
    _exit(91);
  close(fd);
}

/* MODE [ARG]: hold [EXIT_CODE] | count | ignore-term | log FILE */
static int helper(int argc, char **argv) {
  const char *token = getenv("ZKLOCK_TOKEN"), *name = getenv("ZKLOCK_NAME"),
             *node = getenv("ZKLOCK_NODE");
  char fds[256] = "", c;
  int fd, code = 0;
  struct sigaction sa;
  helper_mode = argv[0];
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = helper_on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  if (strcmp(helper_mode, "hold") == 0 && argc > 1)
    code = atoi(argv[1]);
  if (strcmp(helper_mode, "log") == 0)
    helper_log(argv[1], "start");
  for (fd = 0; fd < 1024; fd++) /* all of them, not just the first few */
    if (fcntl(fd, F_GETFD) != -1)
      snprintf(fds + strlen(fds), sizeof fds - strlen(fds), "%s%d",
               fds[0] ? "," : "", fd);
  helper_say("start %ld %s %s %s fds=%s\n", (long)getpid(), token ? token : "-",
             name ? name : "-", node ? node : "-", fds);
  while (read(4, &c, 1) < 0 && errno == EINTR) {
  }
  if (strcmp(helper_mode, "log") == 0)
    helper_log(argv[1], "end");
  helper_say("end\n");
  return code;
}

/* ------------------------------------------------------------- processes */

static int chld_pipe[2];

static void on_chld(int sig) {
  int saved = errno;
  char b = 0;
  (void)sig;
  if (write(chld_pipe[1], &b, 1) < 0) {
  } /* full: already readable */
  errno = saved;
}

/* A pipe whose ends sit at 10 or above (so the child's dup2 onto 0..4
 * cannot clobber one with another), close-on-exec. */
static void high_pipe(int fds[2]) {
  int raw[2], i;
  CU_ASSERT_FATAL(pipe(raw) == 0);
  for (i = 0; i < 2; i++) {
    fds[i] = fcntl(raw[i], F_DUPFD_CLOEXEC, 10);
    CU_ASSERT_FATAL(fds[i] >= 10);
    close(raw[i]);
  }
}

typedef struct {
  pid_t pid;
  bool reaped;
  int status;   /* as a shell reports it: code, or 128+signal */
  int out, err; /* zklock's stdout and stderr (read ends; -1: a pty) */
  int report;   /* the helper's descriptor 3 (read end) */
  int go;       /* the helper's descriptor 4 (write end) */
  long helper;  /* the command's pid, once it reported */
  int64_t started_ms;
} proc;

typedef struct {
  const char *env[4]; /* extra "K=V" for zklock */
  int tty;            /* >= 0: a pty slave for stdin and stderr */
  bool ctty;          /* ... and make it the controlling terminal */
} spawn_opts;

/* Starts zklock with args (NULL-terminated). */
static void spawn_argv(proc *p, const spawn_opts *so, const char *const *args) {
  const char *argv[40];
  char **envp;
  int out[2], err[2], rep[2], go[2], n = 0, i;
  size_t ne = 0, k = 0;
  argv[n++] = ZKLOCK;
  while (args[n - 1] && n < 39) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  while (environ[ne])
    ne++;
  envp = calloc(ne + 5, sizeof *envp);
  CU_ASSERT_FATAL(envp != NULL);
  for (k = 0; k < ne; k++)
    envp[k] = environ[k];
  for (i = 0; so && i < 4 && so->env[i]; i++)
    envp[k++] = (char *)so->env[i];
  envp[k] = NULL;
  high_pipe(out);
  high_pipe(err);
  high_pipe(rep);
  high_pipe(go);
  memset(p, 0, sizeof *p);
  p->started_ms = zkt_now_ms();
  p->pid = fork();
  CU_ASSERT_FATAL(p->pid >= 0);
  if (p->pid == 0) {
    /* async-signal-safe only: the test has ZooKeeper threads */
    setsid();
    if (so && so->tty >= 0) {
      if (so->ctty)
        ioctl(so->tty, TIOCSCTTY, 0);
      dup2(so->tty, 0);
      dup2(so->tty, 2);
    } else {
      int null = open("/dev/null", O_RDONLY);
      dup2(null, 0);
      dup2(err[1], 2);
    }
    dup2(out[1], 1);
    dup2(rep[1], 3);
    dup2(go[0], 4);
#ifdef SYS_close_range
    syscall(SYS_close_range, 5U, ~0U, 0);
#endif
    for (i = 5; i < 1024; i++) /* if close_range is missing */
      close(i);
    execve(ZKLOCK, (char *const *)argv, envp);
    _exit(99);
  }
  free(envp);
  close(out[1]);
  close(err[1]);
  close(rep[1]);
  close(go[0]);
  p->out = out[0];
  if (so && so->tty >= 0) {
    close(err[0]);
    p->err = -1;
  } else {
    p->err = err[0];
  }
  p->report = rep[0];
  p->go = go[1];
}

static void spawn_with(proc *p, const spawn_opts *so, ...) {
  const char *args[40];
  int n = 0;
  va_list ap;
  va_start(ap, so);
  while ((args[n] = va_arg(ap, const char *)) != NULL && n < 38)
    n++;
  va_end(ap);
  args[n] = NULL;
  spawn_argv(p, so, args);
}

#define spawn(p, ...) spawn_with(p, NULL, __VA_ARGS__)

static int shell_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Waits at most timeout_ms for zklock to exit; returns its status as a
 * shell reports it, or -1 on timeout. */
static int wait_exit(proc *p, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    struct pollfd pfd = {chld_pipe[0], POLLIN, 0};
    char buf[64];
    int status, left;
    if (p->reaped)
      return p->status;
    if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
      p->reaped = true;
      p->status = shell_status(status);
      return p->status;
    }
    left = (int)(deadline - zkt_now_ms());
    if (left <= 0)
      return -1;
    if (poll(&pfd, 1, left) > 0)
      while (read(chld_pipe[0], buf, sizeof buf) > 0) {
      }
  }
}

/* Reads one line (without the newline) within timeout_ms: its length, 0 at
 * EOF, -1 on timeout. */
static int read_line(int fd, char *buf, size_t len, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  size_t n = 0;
  for (;;) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int left = (int)(deadline - zkt_now_ms());
    char c;
    ssize_t r;
    if (left <= 0 || poll(&pfd, 1, left) <= 0) {
      buf[n] = '\0';
      return -1;
    }
    r = read(fd, &c, 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0 || c == '\n') {
      buf[n] = '\0';
      return r <= 0 && n == 0 ? 0 : (int)(n ? n : 1);
    }
    if (n + 1 < len)
      buf[n++] = c;
  }
}

/* Reads until EOF (at most timeout_ms); returns the length, -1 on
 * timeout. */
static int read_all(int fd, char *buf, size_t len, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  size_t n = 0;
  for (;;) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int left = (int)(deadline - zkt_now_ms());
    ssize_t r;
    if (left <= 0 || poll(&pfd, 1, left) <= 0) {
      buf[n] = '\0';
      return -1;
    }
    r = read(fd, buf + n, len - 1 - n);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (r <= 0 || n + (size_t)r >= len - 1) {
      if (r > 0)
        n += (size_t)r;
      buf[n] = '\0';
      return (int)n;
    }
    n += (size_t)r;
  }
}

/* Waits for the command's "start" line and remembers its pid. */
static bool command_started(proc *p, char *line, size_t len) {
  if (read_line(p->report, line, len, T_WAIT) <= 0 ||
      strncmp(line, "start ", 6) != 0)
    return false;
  p->helper = strtol(line + 6, NULL, 10);
  return true;
}

static void go(proc *p) {
  char b = 'g';
  CU_ASSERT(write(p->go, &b, 1) == 1);
}

/* Whatever happened, nothing started here outlives the test. */
static void cleanup(proc *p) {
  if (!p->pid)
    return;
  if (!p->reaped) {
    kill(p->pid, SIGKILL);
    wait_exit(p, T_WAIT);
  }
  if (p->helper > 0 && kill((pid_t)p->helper, 0) == 0)
    kill((pid_t)p->helper, SIGKILL);
  if (p->out >= 0)
    close(p->out);
  if (p->err >= 0)
    close(p->err);
  close(p->report);
  close(p->go);
  p->pid = 0;
}

static void assert_no_node(const char *name) {
  char parent[512];
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT(zkt_wait_children(parent, 0, T_WAIT) <= 0);
}

/* A lock held by the test itself, through the library. */
typedef struct {
  zkl_session *s;
  zkl_lock *l;
} holder;

static void hold(holder *h, const char *name) {
  h->s = zkt_session(10000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&h->l, h->s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h->l, T_WAIT, NULL), ZKL_OK);
}

static void unhold(holder *h) {
  zkl_lock_free(h->l);
  zkl_session_close(h->s);
}

static char hostname[256];

/* "waiting for /locks/NAME: N ahead, held by HOST:PID since" */
static void expect_status(char *out, size_t len, const char *name, int ahead,
                          long pid) {
  snprintf(out, len,
           "zklock: waiting for /locks/%s: %d ahead, held by %s:%ld since ",
           name, ahead, hostname, pid);
}

/* ------------------------------------------------------------------ tests */

/* Two zklock processes on one name: the second command starts only after
 * the first one ended (start and end times, from one monotonic clock). */
static void test_serial(void) {
  char name[64], parent[128], log[PATH_MAX], line[256];
  char what[4][8];
  long pid[4];
  long long t[4];
  proc a, b;
  FILE *f;
  int i;
  zkt_name(name, sizeof name, "serial");
  zkt_parent(parent, sizeof parent, name);
  snprintf(log, sizeof log, "%s/zklock-test-%s.log",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
  unlink(log);
  spawn(&a, "-s", zkt_hosts(), name, "--", HELPER("log"), log, NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  spawn(&b, "-s", zkt_hosts(), name, "--", HELPER("log"), log, NULL);
  /* b is queued behind a, a's command still runs */
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  go(&a);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  CU_ASSERT(command_started(&b, line, sizeof line));
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  f = fopen(log, "r");
  CU_ASSERT_FATAL(f != NULL);
  for (i = 0; i < 4; i++)
    CU_ASSERT(fscanf(f, "%7s %ld %lld", what[i], &pid[i], &t[i]) == 3);
  fclose(f);
  unlink(log);
  CU_ASSERT_STRING_EQUAL(what[0], "start");
  CU_ASSERT_STRING_EQUAL(what[1], "end");
  CU_ASSERT_STRING_EQUAL(what[2], "start");
  CU_ASSERT_STRING_EQUAL(what[3], "end");
  CU_ASSERT(pid[0] == pid[1] && pid[2] == pid[3] && pid[0] != pid[2]);
  CU_ASSERT(pid[0] == a.helper && pid[2] == b.helper);
  CU_ASSERT(t[0] <= t[1] && t[1] <= t[2] && t[2] <= t[3]);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);
}

/* -n on a held lock: the -E code at once, the command never runs. */
static void test_nonblock_held(void) {
  char name[64], err[1024], line[256];
  holder h;
  proc p;
  int64_t took;
  zkt_name(name, sizeof name, "nonblock");
  hold(&h, name);
  spawn(&p, "-s", zkt_hosts(), "-n", "-E", "42", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 42);
  took = zkt_now_ms() - p.started_ms;
  CU_ASSERT(took < 3000);
  CU_ASSERT_EQUAL(read_line(p.report, line, sizeof line, T_WAIT), 0); /* EOF */
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  CU_ASSERT(strstr(err, "is held by another owner") != NULL);
  cleanup(&p);
  unhold(&h);
  assert_no_node(name);
}

/* -w 1 on a held lock: gives up after about a second, with the -E code
 * (1 by default); on a pipe, one status line says where it stood. */
static void test_wait_timeout(void) {
  char name[64], err[2048], want[512];
  holder h;
  proc p;
  int64_t took;
  zkt_name(name, sizeof name, "wait");
  hold(&h, name);
  spawn(&p, "-s", zkt_hosts(), "-w", "1", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 1);
  took = zkt_now_ms() - p.started_ms;
  CU_ASSERT(took >= 1000);
  CU_ASSERT(took < 3000);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  expect_status(want, sizeof want, name, 1, (long)getpid());
  CU_ASSERT(strncmp(err, want, strlen(want)) == 0);
  CU_ASSERT(strstr(err, "zklock: gave up waiting for /locks/") != NULL);
  if (strncmp(err, want, strlen(want)) != 0)
    fprintf(stderr, "\nwanted: %s\ngot: %s\n", want, err);
  cleanup(&p);
  unhold(&h);
  assert_no_node(name);
}

/* -w takes fractions; -q: not a word on stderr. */
static void test_quiet_fraction(void) {
  char name[64], err[1024];
  holder h;
  proc p;
  int64_t took;
  zkt_name(name, sizeof name, "quiet");
  hold(&h, name);
  spawn(&p, "-s", zkt_hosts(), "-q", "-w", "0.3", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 1);
  took = zkt_now_ms() - p.started_ms;
  CU_ASSERT(took >= 300 && took < 2500);
  CU_ASSERT_EQUAL(read_all(p.err, err, sizeof err, T_WAIT), 0);
  cleanup(&p);
  unhold(&h);
  assert_no_node(name);
}

/* SIGTERM to zklock reaches the command; zklock ends as it did (143), and
 * the lock is released. */
static void test_sigterm_forwarded(void) {
  char name[64], line[256];
  proc p;
  zkt_name(name, sizeof name, "sigterm");
  spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT(kill(p.pid, SIGTERM) == 0);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 128 + SIGTERM);
  cleanup(&p);
  assert_no_node(name);
}

/* The command's exit status is zklock's. */
static void test_exit_status(void) {
  char name[64], line[256];
  proc p;
  zkt_name(name, sizeof name, "status");
  spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), "7", NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 7);
  cleanup(&p);
  assert_no_node(name);
}

/* A command killed by signal N: zklock reports 128+N. */
static void test_command_signaled(void) {
  char name[64];
  proc p;
  zkt_name(name, sizeof name, "signaled");
  spawn(&p, "-s", zkt_hosts(), name, "--", "sh", "-c", "kill -USR1 $$", NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 128 + SIGUSR1);
  cleanup(&p);
  assert_no_node(name);
}

/* Splits a --list line on tabs; returns the number of fields. */
static int fields(char *line, char **f, int max) {
  int n = 0;
  char *save = NULL, *tok;
  for (tok = strtok_r(line, "\t", &save); tok && n < max;
       tok = strtok_r(NULL, "\t", &save))
    f[n++] = tok;
  return n;
}

/* The command's environment: ZKLOCK_TOKEN, _NAME, _NODE, and only the
 * descriptors zklock was given; --list (servers from ZKLOCK_SERVERS) shows
 * the same node and token, zklock's host and pid, and the owner info. */
static void test_env_and_list(void) {
  char name[64], line[512], out[2048], env_servers[256], info[PATH_MAX + 64];
  char node[256], got_name[64], fds[128], *f[8];
  long long token = 0;
  long pid = 0;
  spawn_opts so;
  proc p, l;
  zkt_name(name, sizeof name, "env");
  spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT_EQUAL_FATAL(sscanf(line, "start %ld %lld %63s %255s fds=%127s",
                               &pid, &token, got_name, node, fds),
                        5);
  CU_ASSERT(token > 0);
  CU_ASSERT_STRING_EQUAL(got_name, name);
  CU_ASSERT(strncmp(node, "/locks/", 7) == 0 && strstr(node, name) == node + 7);
  /* 0-2, and 3-4 from the test: not ZooKeeper's socket, not zklock's pipes */
  CU_ASSERT_STRING_EQUAL(fds, "0,1,2,3,4");

  memset(&so, 0, sizeof so);
  so.tty = -1;
  snprintf(env_servers, sizeof env_servers, "ZKLOCK_SERVERS=%s", zkt_hosts());
  so.env[0] = env_servers;
  spawn_with(&l, &so, "--list", name, NULL);
  CU_ASSERT_EQUAL(wait_exit(&l, T_WAIT), 0);
  CU_ASSERT(read_all(l.out, out, sizeof out, T_WAIT) > 0);
  CU_ASSERT(strchr(out, '\n') == out + strlen(out) - 1); /* one line */
  out[strcspn(out, "\n")] = '\0';
  CU_ASSERT_EQUAL_FATAL(fields(out, f, 8), 7);
  CU_ASSERT_STRING_EQUAL(f[0], "0");
  CU_ASSERT_STRING_EQUAL(f[1], node);
  CU_ASSERT_EQUAL(strtoll(f[2], NULL, 10), token);
  CU_ASSERT_STRING_EQUAL(f[3], hostname);
  CU_ASSERT_EQUAL(strtol(f[4], NULL, 10), (long)p.pid);
  CU_ASSERT(strlen(f[5]) >= 25 &&
            f[5][10] == 'T'); /* 2024-05-01T12:01:07+02:00 */
  snprintf(info, sizeof info, "zklock: %s --helper hold", self_exe);
  CU_ASSERT_STRING_EQUAL(f[6], info);
  cleanup(&l);
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  cleanup(&p);
  assert_no_node(name);
}

/* --list shows the holder and the waiters in queue order. */
static void test_list_queue(void) {
  char name[64], parent[128], line[512], out[4096], *f[8], *second;
  proc a, b, l;
  zkt_name(name, sizeof name, "queue");
  zkt_parent(parent, sizeof parent, name);
  spawn(&a, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  spawn(&b, "-s", zkt_hosts(), "-q", "--info", "second in line", name, "--",
        HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  spawn(&l, "-s", zkt_hosts(), "--list", name, NULL);
  CU_ASSERT_EQUAL(wait_exit(&l, T_WAIT), 0);
  CU_ASSERT(read_all(l.out, out, sizeof out, T_WAIT) > 0);
  second = strchr(out, '\n');
  CU_ASSERT_FATAL(second != NULL);
  *second++ = '\0';
  CU_ASSERT_EQUAL_FATAL(fields(out, f, 8), 7);
  CU_ASSERT_STRING_EQUAL(f[0], "0");
  CU_ASSERT_EQUAL(strtol(f[4], NULL, 10), (long)a.pid);
  second[strcspn(second, "\n")] = '\0';
  CU_ASSERT_EQUAL_FATAL(fields(second, f, 8), 7);
  CU_ASSERT_STRING_EQUAL(f[0], "1");
  CU_ASSERT_EQUAL(strtol(f[4], NULL, 10), (long)b.pid);
  CU_ASSERT_STRING_EQUAL(f[6], "second in line");
  go(&a);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  CU_ASSERT(command_started(&b, line, sizeof line));
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  cleanup(&l);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);
}

/* --list of a lock nobody holds: nothing, exit 0 (never used, and used). */
static void test_list_unheld(void) {
  char name[64], out[256];
  holder h;
  proc l;
  int round;
  zkt_name(name, sizeof name, "unheld");
  for (round = 0; round < 2; round++) {
    if (round == 1) { /* now the parent exists, empty */
      hold(&h, name);
      unhold(&h);
      assert_no_node(name);
    }
    spawn(&l, "-s", zkt_hosts(), "--list", name, NULL);
    CU_ASSERT_EQUAL(wait_exit(&l, T_WAIT), 0);
    CU_ASSERT_EQUAL(read_all(l.out, out, sizeof out, T_WAIT), 0);
    CU_ASSERT_EQUAL(read_all(l.err, out, sizeof out, T_WAIT), 0);
    cleanup(&l);
  }
}

/* Bad usage: exit 2 and one line that says what was wrong. */
static void test_usage_errors(void) {
  static const struct {
    const char *args[11];
    const char *says; /* NULL: not an error */
  } cases[] = {
      {{NULL}, "missing lock name"},
      {{"name", NULL}, "missing '--'"},
      {{"name", "true", NULL}, "expected '--' after the lock name 'name'"},
      {{"name", "--", NULL}, "missing command"},
      {{"-E", "256", "x", "--", "true", NULL},
       "-E: '256' is not an exit status"},
      {{"-E", "-1", "x", "--", "true", NULL}, "-E: '-1'"},
      {{"-w", "-1", "x", "--", "true", NULL},
       "-w: '-1' is not a number of seconds"},
      {{"-w", "soon", "x", "--", "true", NULL}, "-w: 'soon'"},
      {{"-w", "nan", "x", "--", "true", NULL}, "-w: 'nan'"},
      {{"-k", "1x", "x", "--", "true", NULL}, "-k: '1x'"},
      {{"-t", "0", "x", "--", "true", NULL},
       "-t: '0' is not a session timeout"},
      {{"-t", "1.5", "x", "--", "true", NULL}, "-t: '1.5'"},
      {{"-n", "-w", "1", "x", "--", "true", NULL},
       "-n and -w cannot be used together"},
      {{"-s", "", "x", "--", "true", NULL}, "-s: the connect string is empty"},
      {{"-x", "x", "--", "true", NULL}, "unknown option -x"},
      {{"-qx", "x", "--", "true", NULL}, "unknown option -x"},
      {{"--frobnicate=1", "x", "--", "true", NULL},
       "unknown option --frobnicate"},
      {{"-w", NULL}, "option -w needs a value"},
      {{"--list", NULL}, "option --list needs a value"},
      {{"--list", "x", "extra", NULL}, "--list takes one lock name"},
      {{"-n", "--list", "x", NULL}, "--list takes no"},
      {{"--info", "a\tb", "x", "--", "true", NULL},
       "--info: the text must be one line"},
      /* not errors: what follows '--' is the command's, options included */
      {{"x", "--", "true", "-w", NULL}, NULL},
      {{"-w", "0.5", "-E", "0", "-k", "0", "x", "--", "true", NULL}, NULL},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *args[14] = {"-s", zkt_hosts()};
    char err[2048];
    size_t n;
    proc p;
    int status;
    for (n = 0; cases[i].args[n]; n++)
      args[2 + n] = cases[i].args[n];
    args[2 + n] = NULL;
    spawn_argv(&p, NULL, args);
    status = wait_exit(&p, T_WAIT);
    CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) >= 0);
    if (cases[i].says) {
      CU_ASSERT_EQUAL(status, 2);
      CU_ASSERT(strncmp(err, "zklock: ", 8) == 0);
      CU_ASSERT(strstr(err, cases[i].says) != NULL);
      CU_ASSERT(strchr(err, '\n') == err + strlen(err) - 1); /* one line */
    } else {
      CU_ASSERT_EQUAL(status, 0);
      CU_ASSERT_STRING_EQUAL(err, "");
    }
    if (status != (cases[i].says ? 2 : 0) ||
        (cases[i].says && !strstr(err, cases[i].says)))
      fprintf(stderr, "\ncase %zu: status %d, stderr: %s\n", i, status, err);
    cleanup(&p);
  }
}

/* A bad lock name: exit 2, and the message says why; nothing created. */
static void test_bad_name(void) {
  static const char *const names[] = {"a//b",   "/a", "a/",
                                      "a/../b", ".",  "tab\there"};
  size_t i;
  for (i = 0; i < sizeof names / sizeof names[0]; i++) {
    char err[1024];
    proc p;
    spawn(&p, "-s", zkt_hosts(), names[i], "--", "true", NULL);
    CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 2);
    CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
    CU_ASSERT(strstr(err, "zklock: bad lock name") == err);
    cleanup(&p);
    spawn(&p, "-s", zkt_hosts(), "--list", names[i], NULL);
    CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 2);
    CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
    CU_ASSERT(strstr(err, "zklock: bad lock name") == err);
    cleanup(&p);
  }
}

/* The holder's node deleted under it: the command gets SIGTERM, zklock
 * says why and exits 4. */
static void test_lost_node_deleted(void) {
  char name[64], line[512], node[256], err[2048];
  long long token;
  long pid;
  proc p;
  zkt_name(name, sizeof name, "lost");
  spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT_EQUAL_FATAL(
      sscanf(line, "start %ld %lld %*s %255s", &pid, &token, node), 3);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), node, -1), ZOK);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  CU_ASSERT(strstr(err, "zklock: lost the lock /locks/") == err);
  CU_ASSERT(strstr(err, "deleted") != NULL);
  cleanup(&p);
  assert_no_node(name);
}

/* A command that ignores SIGTERM after a loss gets SIGKILL after -k. */
static void test_lost_kill_after(void) {
  char name[64], line[512], node[256];
  long pid;
  int64_t deleted, took;
  proc p;
  zkt_name(name, sizeof name, "killafter");
  spawn(&p, "-s", zkt_hosts(), "-k", "0.5", name, "--", HELPER("ignore-term"),
        NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT_EQUAL_FATAL(sscanf(line, "start %ld %*s %*s %255s", &pid, node), 2);
  deleted = zkt_now_ms();
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), node, -1), ZOK);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15"); /* ... and it went on */
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  took = zkt_now_ms() - deleted;
  CU_ASSERT(took >= 450 && took < 5000);
  /* zklock reaped it: killed, not left running */
  CU_ASSERT(kill((pid_t)pid, 0) == -1 && errno == ESRCH);
  CU_ASSERT_EQUAL(read_line(p.report, line, sizeof line, T_WAIT), 0);
  cleanup(&p);
  assert_no_node(name);
}

/* A command that cannot be found: 127, one could not be executed: 126;
 * the lock is released either way. */
static void test_exec_failure(void) {
  char name[64], err[1024];
  proc p;
  zkt_name(name, sizeof name, "exec");
  spawn(&p, "-s", zkt_hosts(), name, "--", "/nonexistent/command", NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 127);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  CU_ASSERT(strstr(err, "zklock: /nonexistent/command: ") == err);
  cleanup(&p);
  assert_no_node(name);
  spawn(&p, "-s", zkt_hosts(), name, "--", "no-such-command-zklock-test", NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 127);
  cleanup(&p);
  assert_no_node(name);
  spawn(&p, "-s", zkt_hosts(), name, "--", "/dev/null", NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 126);
  cleanup(&p);
  assert_no_node(name);
}

/* Nobody listens on the port: exit 3 after about -t. */
static void test_unreachable(void) {
  struct sockaddr_in sin;
  socklen_t slen = sizeof sin;
  char hosts[64], err[1024];
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  int64_t took;
  proc p;
  /* bound, never listening: connections are refused, and nobody else can
   * take the port meanwhile */
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CU_ASSERT_FATAL(bind(sock, (struct sockaddr *)&sin, sizeof sin) == 0);
  CU_ASSERT_FATAL(getsockname(sock, (struct sockaddr *)&sin, &slen) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", ntohs(sin.sin_port));
  spawn(&p, "-s", hosts, "-t", "1000", "dead", "--", HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 3);
  took = zkt_now_ms() - p.started_ms;
  CU_ASSERT(took < 5000);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  CU_ASSERT(strstr(err, "zklock: cannot reach ZooKeeper at 127.0.0.1:") == err);
  cleanup(&p);
  spawn(&p, "-s", hosts, "-t", "1000", "--list", "dead", NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 3);
  cleanup(&p);
  close(sock);
}

/* A signal while waiting cancels the acquire: no node left behind, the
 * command never runs, zklock ends by that signal (128+N). */
static void test_signal_while_waiting(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  char name[64], parent[128], line[512], want[512];
  holder h;
  size_t i;
  zkt_name(name, sizeof name, "cancel");
  zkt_parent(parent, sizeof parent, name);
  hold(&h, name);
  expect_status(want, sizeof want, name, 1, (long)getpid());
  for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    proc p;
    spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
    /* the status line: it is queued, and waiting */
    CU_ASSERT(read_line(p.err, line, sizeof line, T_WAIT) > 0);
    CU_ASSERT(strncmp(line, want, strlen(want)) == 0);
    CU_ASSERT_EQUAL(zkt_children(parent), 2);
    CU_ASSERT(kill(p.pid, sigs[i]) == 0);
    CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 128 + sigs[i]);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 1, T_WAIT), 1); /* the holder's */
    CU_ASSERT_EQUAL(read_line(p.report, line, sizeof line, T_WAIT), 0);
    cleanup(&p);
  }
  unhold(&h);
  assert_no_node(name);
}

static int open_pty(int *slave) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    if (master >= 0)
      close(master);
    return -1;
  }
  *slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  if (*slave < 0) {
    close(master);
    return -1;
  }
  return master;
}

/* Reads from the pty master until `want` has been seen (bounded). */
static bool pty_expect(int master, char *seen, size_t len, size_t *used,
                       const char *want) {
  int64_t deadline = zkt_now_ms() + T_WAIT;
  while (!strstr(seen, want)) {
    struct pollfd pfd = {master, POLLIN, 0};
    int left = (int)(deadline - zkt_now_ms());
    ssize_t r;
    if (left <= 0 || poll(&pfd, 1, left) <= 0 || *used + 1 >= len)
      return false;
    r = read(master, seen + *used, len - 1 - *used);
    if (r <= 0)
      return false;
    *used += (size_t)r;
    seen[*used] = '\0';
  }
  return true;
}

static void ignore_acquired(zkl_lock *l, int rc, int64_t token, void *arg) {
  (void)l;
  (void)rc;
  (void)token;
  (void)arg;
}

/* On a terminal the status is one line rewritten in place ("\r", erase to
 * the end) when the queue changes, and erased when the wait ends. */
static void test_tty_status(void) {
  char name[64], parent[128], want[512], seen[8192] = "", line[512];
  size_t used = 0;
  holder h;
  zkl_lock *w;
  spawn_opts so;
  proc p;
  int master, slave;
  zkt_name(name, sizeof name, "tty");
  zkt_parent(parent, sizeof parent, name);
  master = open_pty(&slave);
  if (master < 0) {
    fprintf(stderr, "no pty here: test_tty_status skipped\n");
    return;
  }
  hold(&h, name);
  /* a waiter ahead of zklock, in the test */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, h.s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(w, -1, ignore_acquired, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  memset(&so, 0, sizeof so);
  so.tty = slave;
  so.env[0] = "TERM=xterm";
  spawn_with(&p, &so, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  close(slave);
  expect_status(want, sizeof want, name, 2, (long)getpid());
  CU_ASSERT(pty_expect(master, seen, sizeof seen, &used, want));
  CU_ASSERT(strncmp(seen, "\rzklock: waiting", 16) == 0);
  /* the waiter ahead gives up: the same line says 1 ahead */
  CU_ASSERT_EQUAL(zkl_lock_cancel(w), ZKL_OK);
  expect_status(want + 1, sizeof want - 1, name, 1, (long)getpid());
  want[0] = '\r';
  CU_ASSERT(pty_expect(master, seen, sizeof seen, &used, want));
  CU_ASSERT(strchr(seen, '\n') == NULL); /* in place: never a new line */
  CU_ASSERT(strstr(seen, "\033[K") != NULL);
  /* the holder lets go: the line is erased, the command runs */
  zkl_lock_free(w);
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  CU_ASSERT(command_started(&p, line, sizeof line));
  CU_ASSERT(pty_expect(master, seen, sizeof seen, &used, "\r\033[K"));
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  cleanup(&p);
  close(master);
  unhold(&h);
  assert_no_node(name);
}

/* With a controlling terminal the command shares zklock's process group:
 * Ctrl-C reaches it from the terminal, once (zklock does not forward what
 * the terminal already sent), and a command that dies of it makes zklock
 * end the same way. */
static void test_tty_ctrl_c(void) {
  char name[64], line[512];
  spawn_opts so;
  proc p;
  int master, slave, i;
  zkt_name(name, sizeof name, "ctrlc");
  for (i = 0; i < 2; i++) {
    master = open_pty(&slave);
    if (master < 0) {
      fprintf(stderr, "no pty here: test_tty_ctrl_c skipped\n");
      return;
    }
    memset(&so, 0, sizeof so);
    so.tty = slave;
    so.ctty = true;
    spawn_with(&p, &so, "-s", zkt_hosts(), name, "--",
               HELPER(i == 0 ? "count" : "hold"), NULL);
    close(slave);
    CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
    CU_ASSERT(write(master, "\003", 1) == 1);
    CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
    CU_ASSERT_STRING_EQUAL(line, "sig 2");
    if (i == 0) {
      /* it goes on; a second SIGINT from zklock would come right behind
       * the first, long before the command has read the word to exit */
      go(&p);
      CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
      CU_ASSERT_STRING_EQUAL(line, "end");
      CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
    } else {
      CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 128 + SIGINT);
    }
    cleanup(&p);
    close(master);
    assert_no_node(name);
  }
}

/* Cut off from ZooKeeper while the command runs: the lease runs out before
 * the server can expire the session; the command gets SIGTERM, zklock
 * exits 4 and says so. */
static void test_lease_partition(void) {
  char name[64], hosts[64], line[512], err[2048];
  proxyctl *px;
  int port;
  proc p;
  zkt_name(name, sizeof name, "lease");
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  spawn(&p, "-s", hosts, "-t", "2000", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop", NULL, 0, 5000), 0);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  CU_ASSERT(strstr(err, "zklock: lost the lock /locks/") == err);
  CU_ASSERT(strstr(err, "no answer from ZooKeeper") != NULL);
  cleanup(&p);
  proxyctl_stop(px);
  assert_no_node(name); /* the server expires the session */
}

static void test_help_version(void) {
  char out[4096];
  proc p;
  spawn(&p, "--help", NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  CU_ASSERT(read_all(p.out, out, sizeof out, T_WAIT) > 0);
  CU_ASSERT(strncmp(out, "usage: zklock ", 14) == 0);
  cleanup(&p);
  spawn(&p, "--version", NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  CU_ASSERT(read_all(p.out, out, sizeof out, T_WAIT) > 0);
  CU_ASSERT(strstr(out, zkl_version_string()) != NULL);
  cleanup(&p);
}

static const zkt_test tests[] = {
    {"two zklocks run their commands one after the other", test_serial},
    {"-n on a held lock exits with the -E code at once", test_nonblock_held},
    {"-w 1 gives up after about a second, with a status line",
     test_wait_timeout},
    {"-q is quiet; -w takes fractions", test_quiet_fraction},
    {"SIGTERM reaches the command and the lock is released",
     test_sigterm_forwarded},
    {"the command's exit status is zklock's", test_exit_status},
    {"a command killed by signal N gives 128+N", test_command_signaled},
    {"ZKLOCK_* set, only given descriptors; --list agrees", test_env_and_list},
    {"--list shows holder and waiters in queue order", test_list_queue},
    {"--list of an unheld lock prints nothing", test_list_unheld},
    {"bad usage exits 2 and says what was wrong", test_usage_errors},
    {"a bad lock name exits 2", test_bad_name},
    {"lost lock: SIGTERM to the command, exit 4", test_lost_node_deleted},
    {"lost lock: SIGKILL after -k", test_lost_kill_after},
    {"exec failure: 127 or 126, lock released", test_exec_failure},
    {"ZooKeeper unreachable exits 3", test_unreachable},
    {"a signal while waiting cancels, no node left", test_signal_while_waiting},
    {"on a terminal the status is updated in place", test_tty_status},
    {"Ctrl-C on a terminal reaches the command once", test_tty_ctrl_c},
    {"partition: the lease runs out, exit 4", test_lease_partition},
    {"--help and --version", test_help_version},
    {NULL, NULL}};

int main(int argc, char **argv) {
  struct sigaction sa;
  ssize_t n;
  if (argc >= 3 && strcmp(argv[1], "--helper") == 0)
    return helper(argc - 2, argv + 2);
  n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  if (n <= 0) {
    perror("readlink /proc/self/exe");
    return 99;
  }
  self_exe[n] = '\0';
  gethostname(hostname, sizeof hostname);
  hostname[sizeof hostname - 1] = '\0';
  unsetenv("ZKLOCK_SERVERS");
  if (pipe(chld_pipe) != 0 || fcntl(chld_pipe[0], F_SETFL, O_NONBLOCK) != 0 ||
      fcntl(chld_pipe[1], F_SETFL, O_NONBLOCK) != 0 ||
      fcntl(chld_pipe[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(chld_pipe[1], F_SETFD, FD_CLOEXEC) != 0)
    return 99;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_chld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  return zkt_main("cli", tests);
}
