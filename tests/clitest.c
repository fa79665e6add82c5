/* SPDX-License-Identifier: Apache-2.0 */
/* clitest.c - running zklock and its command in the tests; see clitest.h. */
#define _GNU_SOURCE 1 /* syscall, pidfd */
#include "config.h"

#include "clitest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
char clit_self_exe[PATH_MAX];
char clit_hostname[256];

/* ---------------------------------------------------------------- helper */

static const char *helper_mode;
static const char *helper_log_file;

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

/* Appends "WHAT SIG PID NS" to the log. Async-signal-safe (a signal
 * handler calls it): the line is formatted by hand. */
static void helper_log(const char *what, int sig) {
  char buf[128], num[24];
  long long v[3];
  size_t n = 0;
  int fd, i, k;
  if (!helper_log_file)
    return;
  v[0] = sig;
  v[1] = getpid();
  v[2] = mono_ns();
  while (*what)
    buf[n++] = *what++;
  for (i = 0; i < 3; i++) {
    long long x = v[i];
    buf[n++] = ' ';
    k = 0;
    do
      num[k++] = (char)('0' + x % 10);
    while ((x /= 10) > 0);
    while (k > 0)
      buf[n++] = num[--k];
  }
  buf[n++] = '\n';
  fd = open(helper_log_file, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0 || write(fd, buf, n) != (ssize_t)n)
    _exit(91);
  close(fd);
}

/* "slow-term MS": how long its SIGTERM handler takes. */
static long slow_term_ms;

/* Reports "sig N" (and logs it); "hold" and "log" then die by it, "count"
 * goes on, "ignore-term" goes on after SIGTERM only, and "slow-term"
 * takes its time over SIGTERM, then logs its end and exits 0. */
static void helper_on_signal(int sig) {
  char buf[16] = "sig ";
  int n = 4;
  helper_log("sig", sig);
  if (sig >= 10)
    buf[n++] = (char)('0' + sig / 10);
  buf[n++] = (char)('0' + sig % 10);
  buf[n++] = '\n';
  if (write(3, buf, (size_t)n) < 0)
    _exit(90);
  if (strcmp(helper_mode, "count") == 0 ||
      (strcmp(helper_mode, "ignore-term") == 0 && sig == SIGTERM))
    return;
  if (strcmp(helper_mode, "slow-term") == 0 && sig == SIGTERM) {
    /* the work a command does as it stops: nothing to wait for */
    struct timespec ts = {slow_term_ms / 1000, slow_term_ms % 1000 * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    helper_log("end", 0);
    _exit(0);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

/* CLITEST_GONE="PID:START,...": which of those processes (by their start
 * time, so that a reused pid is not taken for them) still run, as
 * "PID,PID", or "-". */
static void still_running(const char *gone, char *out, size_t len) {
  const char *p = gone;
  out[0] = '\0';
  while (p && *p) {
    char *end;
    long pid = strtol(p, &end, 10);
    long long start = *end == ':' ? strtoll(end + 1, &end, 10) : 0;
    char state[4];
    if (pid > 0 && proc_start_time((pid_t)pid) == start &&
        proc_state((pid_t)pid, state, sizeof state)[0] &&
        state[0] != 'Z' && state[0] != 'X')
      snprintf(out + strlen(out), len - strlen(out), "%s%ld",
               out[0] ? "," : "", pid);
    p = strchr(end, ',');
    if (p)
      p++;
  }
  if (!out[0])
    snprintf(out, len, "-");
}

/* MODE [ARG]: hold [EXIT_CODE] | count | ignore-term | log FILE |
 * slow-term MS */
static int helper(int argc, char **argv) {
  static const int watched[] = {SIGINT, SIGQUIT, SIGHUP, SIGTERM};
  const char *token = getenv("ZKLOCK_TOKEN"), *name = getenv("ZKLOCK_NAME"),
             *node = getenv("ZKLOCK_NODE"), *gone = getenv("CLITEST_GONE");
  char fds[256] = "", ign[64] = "", alive[256] = "", c;
  int fd, code = 0;
  size_t i;
  struct sigaction sa;
  helper_mode = argv[0];
  helper_log_file = getenv("CLITEST_LOG");
  if (strcmp(helper_mode, "log") == 0)
    helper_log_file = argv[1];
  /* what it was started with, before its own handlers */
  for (i = 0; i < sizeof watched / sizeof watched[0]; i++) {
    struct sigaction old;
    if (sigaction(watched[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
      snprintf(ign + strlen(ign), sizeof ign - strlen(ign), "%s%d",
               ign[0] ? "," : "", watched[i]);
  }
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = helper_on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL); /* what --on-revoke sends, among others */
  sigaction(SIGUSR2, &sa, NULL);
  if (strcmp(helper_mode, "hold") == 0 && argc > 1)
    code = atoi(argv[1]);
  if (strcmp(helper_mode, "slow-term") == 0 && argc > 1)
    slow_term_ms = atol(argv[1]);
  if (gone) /* looked at before anything else: the start is the moment */
    still_running(gone, alive, sizeof alive);
  helper_log("start", 0);
  for (fd = 0; fd < 1024; fd++) /* all of them, not just the first few */
    if (fcntl(fd, F_GETFD) != -1)
      snprintf(fds + strlen(fds), sizeof fds - strlen(fds), "%s%d",
               fds[0] ? "," : "", fd);
  helper_say("start %ld %s %s %s fds=%s ign=%s%s%s\n", (long)getpid(),
             token ? token : "-", name ? name : "-", node ? node : "-", fds,
             ign[0] ? ign : "-", gone ? " alive=" : "", alive);
  while (read(4, &c, 1) < 0 && errno == EINTR) {
  }
  helper_log("end", 0);
  helper_say("end\n");
  return code;
}

/* ------------------------------------------------------------- processes */

static int chld_pipe[2];

/* Every zklock started and not yet cleaned up: a test that stopped at a
 * fatal assertion skipped its cleanup(), and they must not outlive the
 * test program. Only unreaped children are killed: their pids cannot have
 * been reused. */
#define LIVE_MAX 64
static pid_t live[LIVE_MAX];

static void remember(pid_t pid, bool add) {
  int i;
  for (i = 0; i < LIVE_MAX; i++)
    if (add ? live[i] == 0 : live[i] == pid) {
      live[i] = add ? pid : 0;
      return;
    }
}

static void kill_leftovers(void) {
  int i, status;
  for (i = 0; i < LIVE_MAX; i++)
    if (live[i] && waitpid(live[i], &status, WNOHANG) == 0) {
      kill(live[i], SIGCONT);
      kill(live[i], SIGKILL);
      waitpid(live[i], &status, 0);
    }
}

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

void spawn_argv(proc *p, const spawn_opts *so, const char *const *args) {
  const char *argv[40];
  char **envp;
  int out[2], err[2], rep[2], go_[2], n = 0, i;
  size_t ne = 0, k = 0;
  argv[n++] = ZKLOCK;
  while (args[n - 1] && n < 39) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  while (environ[ne])
    ne++;
  envp = calloc(ne + 6, sizeof *envp);
  CU_ASSERT_FATAL(envp != NULL);
  /* -c runs $SHELL: /bin/sh, whatever the test was started with, unless
   * the test says another */
  for (i = 0; so && i < 4 && so->env[i]; i++)
    if (strcspn(so->env[i], "=") == 5 && strncmp(so->env[i], "SHELL", 5) == 0)
      break;
  if (!(so && i < 4 && so->env[i]))
    envp[k++] = (char *)"SHELL=/bin/sh";
  for (ne = 0; environ[ne]; ne++) {
    /* an extra "K=V" or "K" replaces the test's own K */
    size_t klen = strcspn(environ[ne], "=");
    bool replaced = strncmp(environ[ne], "SHELL=", 6) == 0;
    for (i = 0; so && i < 4 && so->env[i]; i++)
      if (strcspn(so->env[i], "=") == klen &&
          strncmp(so->env[i], environ[ne], klen) == 0)
        replaced = true;
    if (!replaced)
      envp[k++] = environ[ne];
  }
  for (i = 0; so && i < 4 && so->env[i]; i++)
    if (strchr(so->env[i], '='))
      envp[k++] = (char *)so->env[i];
  envp[k] = NULL;
  high_pipe(out);
  high_pipe(err);
  high_pipe(rep);
  high_pipe(go_);
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
    dup2(go_[0], 4);
#ifdef SYS_close_range
    syscall(SYS_close_range, 5U, ~0U, 0);
#endif
    for (i = 5; i < 1024; i++) /* if close_range is missing */
      close(i);
    /* what the test program was started with (nohup ignores SIGHUP) is
     * not what a test expects zklock to be started with */
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (so && so->ignore_int)
      signal(SIGINT, SIG_IGN);
    if (so && so->uid > 0 &&
        (setgroups(0, NULL) != 0 || setgid((gid_t)so->uid) != 0 ||
         setuid(so->uid) != 0))
      _exit(98);
    execve(ZKLOCK, (char *const *)argv, envp);
    _exit(99);
  }
  free(envp);
  remember(p->pid, true);
  close(out[1]);
  close(err[1]);
  close(rep[1]);
  close(go_[0]);
  p->out = out[0];
  if (so && so->tty >= 0) {
    close(err[0]);
    p->err = -1;
  } else {
    p->err = err[0];
  }
  p->report = rep[0];
  p->go = go_[1];
}

void spawn_with(proc *p, const spawn_opts *so, ...) {
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

static int shell_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int wait_exit(proc *p, int timeout_ms) {
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

int read_line(int fd, char *buf, size_t len, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  size_t n = 0;
  for (;;) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int left = (int)(deadline - zkt_now_ms()), ready;
    char c;
    ssize_t r;
    /* EINTR: a SIGCHLD (a zklock of the test ended), not the bound */
    if ((ready = left > 0 ? poll(&pfd, 1, left) : 0) < 0 && errno == EINTR)
      continue;
    if (ready <= 0) {
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

int read_all(int fd, char *buf, size_t len, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  size_t n = 0;
  for (;;) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int left = (int)(deadline - zkt_now_ms()), ready;
    ssize_t r;
    if ((ready = left > 0 ? poll(&pfd, 1, left) : 0) < 0 && errno == EINTR)
      continue; /* a SIGCHLD, as in read_line() */
    if (ready <= 0) {
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

/* Says why a command did not start: what its helper reported, whether it
 * exited, and what it wrote on stderr so far. A CI log holds nothing else
 * of a failure that came once in a thousand runs. */
static void tell_not_started(proc *p, const char *line, int got) {
  char err[2048] = "";
  int status = wait_exit(p, 0);
  if (p->err >= 0) {
    int flags = fcntl(p->err, F_GETFL);
    ssize_t r;
    fcntl(p->err, F_SETFL, flags | O_NONBLOCK);
    r = read(p->err, err, sizeof err - 1);
    err[r > 0 ? r : 0] = '\0';
    fcntl(p->err, F_SETFL, flags);
  }
  printf("\n    (zklock did not start within %d ms: report %s%s%s; %s %d; "
         "stderr: %s)",
         T_WAIT, got < 0 ? "timed out" : got == 0 ? "closed" : "\"",
         got > 0 ? line : "", got > 0 ? "\"" : "",
         status < 0 ? "still running, pid" : "exit status",
         status < 0 ? (int)p->pid : status, err[0] ? err : "(nothing)");
}

bool command_started(proc *p, char *line, size_t len) {
  int got = read_line(p->report, line, len, T_WAIT);
  if (got <= 0 || strncmp(line, "start ", 6) != 0) {
    tell_not_started(p, line, got);
    return false;
  }
  p->helper = strtol(line + 6, NULL, 10);
  return true;
}

bool stop_zklock(proc *p) {
  int64_t deadline = zkt_now_ms() + T_WAIT;
  int status;
  if (kill(p->pid, SIGSTOP) != 0)
    return false;
  for (;;) {
    pid_t got = waitpid(p->pid, &status, WUNTRACED | WNOHANG);
    if (got == p->pid && WIFSTOPPED(status))
      return true;
    if (got == p->pid || got < 0 || zkt_now_ms() >= deadline)
      return false; /* it exited (its status is lost), or never stopped */
    poll(NULL, 0, 10); /* no SIGCHLD for stops (SA_NOCLDSTOP): look again */
  }
}

void go(proc *p) {
  char b = 'g';
  CU_ASSERT(write(p->go, &b, 1) == 1);
}

void cleanup(proc *p) {
  if (!p->pid)
    return;
  if (!p->reaped) {
    kill(p->pid, SIGCONT); /* a test that stopped it may have failed */
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
  remember(p->pid, false);
  p->pid = 0;
}

void assert_empty(const char *path) {
  int n = zkt_wait_children(path, 0, T_WAIT);
  /* -1 is "gone" or an error of the observer: only the first will do */
  CU_ASSERT(n == 0 || (n == -1 && zkt_children(path) == -1));
}

void assert_no_node(const char *name) {
  char parent[512];
  zkt_parent(parent, sizeof parent, name);
  assert_empty(parent);
}


void expect_status(char *out, size_t len, const char *name, int ahead,
                   long pid) {
  snprintf(out, len,
           "zklock: waiting for /locks/%s: %d ahead, held by %s:%ld since ",
           name, ahead, clit_hostname, pid);
}

/* ------------------------------------------------------- other processes */

/* Field 4 of /proc/PID/stat (the parent), after the ")" of the name. */
static long parent_of(const char *pid) {
  char path[64], buf[512], *close_paren;
  FILE *f;
  long ppid = -1;
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  f = fopen(path, "r");
  if (!f)
    return -1;
  if (fgets(buf, sizeof buf, f) && (close_paren = strrchr(buf, ')')) != NULL)
    sscanf(close_paren + 1, " %*c %ld", &ppid);
  fclose(f);
  return ppid;
}

pid_t find_keeper(const proc *p) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  pid_t found = 0;
  if (!d)
    return 0;
  while ((e = readdir(d)) != NULL) {
    long pid = strtol(e->d_name, NULL, 10);
    if (pid > 0 && parent_of(e->d_name) == (long)p->pid)
      found = (pid_t)pid;
  }
  closedir(d);
  return found;
}

pid_t proc_parent(pid_t pid) {
  char name[24];
  snprintf(name, sizeof name, "%ld", (long)pid);
  return (pid_t)parent_of(name);
}

long long proc_start_time(pid_t pid) {
  char path[64], line[1024], *close_paren, *f;
  long long start = -1;
  int i;
  FILE *fp;
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  fp = fopen(path, "r");
  if (!fp)
    return -1;
  /* field 22, the 20th after the ")" that ends the name */
  if (fgets(line, sizeof line, fp) &&
      (close_paren = strrchr(line, ')')) != NULL) {
    f = close_paren + 1;
    for (i = 0; i < 19 && f; i++)
      f = strchr(f + 1, ' ');
    if (f)
      start = strtoll(f + 1, NULL, 10);
  }
  fclose(fp);
  return start;
}

void gone_entry(char *buf, size_t len, pid_t pid) {
  snprintf(buf + strlen(buf), len - strlen(buf), "%s%ld:%lld",
           buf[0] ? "," : "", (long)pid, proc_start_time(pid));
}

void watch_pid(pid_watch *w, pid_t pid) {
  w->pid = pid;
#ifdef SYS_pidfd_open
  w->fd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
  w->fd = -1;
#endif
}

static bool has_exited(pid_t pid) {
  char state[4];
  proc_state(pid, state, sizeof state);
  return !state[0] || state[0] == 'Z' || state[0] == 'X';
}

bool wait_pid_exit(pid_watch *w, int timeout_ms) {
  struct pollfd pfd = {w->fd, POLLIN, 0};
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    int left = (int)(deadline - zkt_now_ms()), rc;
    if (w->fd < 0) {
      if (has_exited(w->pid))
        return true;
      if (left <= 0)
        return false;
      poll(NULL, 0, left < 10 ? left : 10); /* the condition, every 10 ms */
      continue;
    }
    rc = poll(&pfd, 1, left < 0 ? 0 : left); /* at least one look */
    if (rc > 0)
      return true;
    if ((rc < 0 && errno != EINTR) || left <= 0)
      return false;
  }
}

void unwatch_pid(pid_watch *w) {
  if (w->fd >= 0)
    close(w->fd);
  w->fd = -1;
}

const char *proc_state(pid_t pid, char *buf, size_t len) {
  char path[64], line[512], *close_paren;
  FILE *f;
  buf[0] = '\0';
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  f = fopen(path, "r");
  if (!f)
    return buf;
  if (fgets(line, sizeof line, f) && (close_paren = strrchr(line, ')')) != NULL)
    snprintf(buf, len, "%c", close_paren[2]);
  fclose(f);
  return buf;
}

/* "2026-11-23T12:01:07.123+01:00 " at s. */
static bool verbose_time(const char *s) {
  static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddd+dd:dd ";
  size_t i;
  for (i = 0; shape[i]; i++) {
    char c = s[i];
    if (shape[i] == 'd' ? !(c >= '0' && c <= '9')
        : shape[i] == '+' ? !(c == '+' || c == '-')
                          : c != shape[i])
      return false;
  }
  return true;
}

bool expect_verbose(int fd, const char *want, char *msg, size_t len) {
  int64_t deadline = zkt_now_ms() + T_WAIT;
  char line[2048];
  for (;;) {
    int left = (int)(deadline - zkt_now_ms());
    const char *m;
    if (left <= 0 || read_line(fd, line, sizeof line, left) <= 0)
      return false;
    if (strncmp(line, "zklock: ", 8) != 0 || line[8] < '0' || line[8] > '9')
      continue; /* not a -v line */
    if (!verbose_time(line + 8)) {
      CU_FAIL("a -v line without a well-formed time");
      fprintf(stderr, "\nbad -v line: %s\n", line);
      continue;
    }
    m = line + 8 + 30;
    if (strncmp(m, want, strlen(want)) == 0) {
      snprintf(msg, len, "%s", m);
      return true;
    }
  }
}

/* A -v line: "zklock: " and a digit (the time). */
static bool is_verbose_line(const char *line) {
  return strncmp(line, "zklock: ", 8) == 0 && line[8] >= '0' && line[8] <= '9';
}

int read_status(int fd, char *buf, size_t len, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    int left = (int)(deadline - zkt_now_ms()), n;
    if (left <= 0)
      return -1;
    n = read_line(fd, buf, len, left);
    if (n <= 0 || !is_verbose_line(buf))
      return n;
  }
}

const char *find_line(const char *text, const char *prefix) {
  const char *p = text;
  while (p && *p) {
    if (strncmp(p, prefix, strlen(prefix)) == 0)
      return p;
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  return NULL;
}

const char *without_verbose(const char *text, char *out, size_t len) {
  const char *p = text;
  size_t n = 0;
  while (*p) {
    const char *end = strchr(p, '\n');
    size_t l = end ? (size_t)(end - p) + 1 : strlen(p);
    if (!is_verbose_line(p) && n + l < len) {
      memcpy(out + n, p, l);
      n += l;
    }
    p += l;
  }
  out[n < len ? n : len - 1] = '\0';
  return out;
}

int read_log(const char *file, log_rec *recs, int max) {
  FILE *f = fopen(file, "r");
  int n = 0;
  if (!f)
    return 0;
  while (n < max && fscanf(f, "%7s %d %ld %lld", recs[n].what, &recs[n].sig,
                           &recs[n].pid, &recs[n].ns) == 4)
    n++;
  fclose(f);
  return n;
}

void log_name(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/zklock-test-%s.log",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
  unlink(buf);
}

/* ------------------------------------------------------------------ main */

int clit_main(int argc, char **argv, const char *suite, const zkt_test *tests) {
  struct sigaction sa;
  ssize_t n;
  if (argc >= 3 && strcmp(argv[1], "--helper") == 0)
    return helper(argc - 2, argv + 2);
  n = readlink("/proc/self/exe", clit_self_exe, PATH_MAX - 1);
  if (n <= 0) {
    perror("readlink /proc/self/exe");
    return 99;
  }
  clit_self_exe[n] = '\0';
  gethostname(clit_hostname, 256);
  clit_hostname[255] = '\0';
  unsetenv("ZKLOCK_SERVERS");
  unsetenv("ZKLOCK_AUTH");
  if (pipe(chld_pipe) != 0 || fcntl(chld_pipe[0], F_SETFL, O_NONBLOCK) != 0 ||
      fcntl(chld_pipe[1], F_SETFL, O_NONBLOCK) != 0 ||
      fcntl(chld_pipe[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(chld_pipe[1], F_SETFD, FD_CLOEXEC) != 0)
    return 99;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_chld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  atexit(kill_leftovers);
  zkt_on_exit_signal(kill_leftovers); /* kill(), waitpid(): signal-safe */
  return zkt_main(suite, tests);
}

bool command_started_at(proc *p, long long *token, char *node, size_t len) {
  char line[1024], fmt[64];
  if (!command_started(p, line, sizeof line))
    return false;
  snprintf(fmt, sizeof fmt, "start %%*d %%lld %%*s %%%zus", len - 1);
  return sscanf(line, fmt, token, node) == 2;
}

int run_question(const char *const *args, char *out, size_t outlen,
                 char *err, size_t errlen) {
  proc p;
  int status;
  spawn_argv(&p, NULL, args);
  status = wait_exit(&p, T_WAIT);
  CU_ASSERT(read_all(p.out, out, outlen, T_WAIT) >= 0);
  CU_ASSERT(read_all(p.err, err, errlen, T_WAIT) >= 0);
  cleanup(&p);
  return status;
}

int clitest_fields(char *line, char **f, int max) {
  int n = 0;
  char *save = NULL, *tok;
  for (tok = strtok_r(line, "\t", &save); tok && n < max;
       tok = strtok_r(NULL, "\t", &save))
    f[n++] = tok;
  return n;
}
