/* SPDX-License-Identifier: Apache-2.0 */
/*
 * peer.c - a peer library's benchmark (Curator, kazoo, ...) run as a child
 * process, measured the same way as the in-process contestants.
 *
 * The protocol, one line each way:
 *   we run    sh -c 'exec COMMAND HOSTS MODE N WARM SECONDS'
 *             (MODE uncontended, contended with N sessions, multi with a
 *             multi-lock of N names; --as-peer knows more, see as_peer.c)
 *   it says   "ready" once its clients are connected and have run WARM
 *             seconds of cycles (JIT and caches warm);
 *   we say    "go": it counts the cycles of the next SECONDS and says
 *   it says   "result ops=O seconds=S p50_ms=X p99_ms=Y overlaps=V errors=E"
 *             (optionally followed by " cpu=C", its own CPU seconds over
 *             the window, which then replace our reading)
 *   we close its stdin: it stops and exits (it also exits on EOF at any
 *   moment, so it never outlives us).
 * Its CPU time over the window (all its threads: JIT and GC included) is
 * read from /proc/PID/stat when we say "go" and when its result arrives, so
 * the JVM's start-up is not charged to the window.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define READY_S 180.0 /* 128 JVM clients connecting on two cores */
#define EXIT_S 60.0

/* The child running now, for the signal handler (main.c) to kill. */
volatile pid_t peer_child = 0;

typedef struct child {
  pid_t pid;
  int in, out; /* its stdin (we write), its stdout (we read) */
  char buf[4096];
  size_t len;
  char errfile[64];
} child;

/* CPU time of a process (user + system, all threads) from /proc. */
static double proc_cpu(pid_t pid) {
  char path[64], line[1024], *p;
  unsigned long utime = 0, stime = 0;
  FILE *f;
  int field;
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  f = fopen(path, "r");
  if (!f)
    return NAN;
  p = fgets(line, sizeof line, f);
  fclose(f);
  if (!p || !(p = strrchr(line, ')')))
    return NAN;
  /* after "pid (comm)": state is field 3, utime 14, stime 15 */
  for (field = 2; field < 14 && p; field++)
    p = strchr(p + 1, ' ');
  if (!p || sscanf(p + 1, "%lu %lu", &utime, &stime) != 2)
    return NAN;
  return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static bool spawn(child *ch, const char *cmdline) {
  int in[2], out[2], errfd;
  snprintf(ch->errfile, sizeof ch->errfile, "/tmp/zklock-bench-peer-XXXXXX");
  errfd = mkstemp(ch->errfile);
  if (errfd < 0)
    return false;
  if (pipe(in) != 0) {
    close(errfd);
    return false;
  }
  if (pipe(out) != 0) {
    close(in[0]);
    close(in[1]);
    close(errfd);
    return false;
  }
  ch->pid = fork();
  if (ch->pid == 0) {
    /* Dies with us, whatever kills us. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(errfd, 2);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    close(errfd);
    execl("/bin/sh", "sh", "-c", cmdline, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(errfd);
  if (ch->pid < 0) {
    close(in[1]);
    close(out[0]);
    return false;
  }
  peer_child = ch->pid;
  ch->in = in[1];
  ch->out = out[0];
  fcntl(ch->in, F_SETFD, FD_CLOEXEC);
  fcntl(ch->out, F_SETFD, FD_CLOEXEC);
  ch->len = 0;
  return true;
}

/* Reads one line (without its newline) within timeout_s; false on EOF,
 * error or timeout. */
static bool read_line(child *ch, char *line, size_t len, double timeout_s) {
  double deadline = bench_now() + timeout_s;
  for (;;) {
    char *nl = memchr(ch->buf, '\n', ch->len);
    struct pollfd pfd = {ch->out, POLLIN, 0};
    double left;
    ssize_t n;
    if (nl) {
      size_t l = (size_t)(nl - ch->buf);
      snprintf(line, len, "%.*s", (int)l, ch->buf);
      memmove(ch->buf, nl + 1, ch->len - l - 1);
      ch->len -= l + 1;
      return true;
    }
    if (ch->len == sizeof ch->buf)
      ch->len = 0; /* a line that long is not ours: drop it */
    left = deadline - bench_now();
    if (left <= 0)
      return false;
    if (poll(&pfd, 1, (int)(left * 1000) + 1) < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    if (!(pfd.revents & (POLLIN | POLLHUP)))
      continue;
    n = read(ch->out, ch->buf + ch->len, sizeof ch->buf - ch->len);
    if (n <= 0)
      return false;
    ch->len += (size_t)n;
  }
}

/* Closes its stdin, waits (bounded) for its stdout to close, kills it if
 * it does not, and reaps it. */
static void finish(child *ch) {
  char line[256];
  int status;
  close(ch->in);
  while (read_line(ch, line, sizeof line, EXIT_S))
    ; /* drain until EOF */
  if (waitpid(ch->pid, &status, WNOHANG) == 0) {
    kill(ch->pid, SIGKILL);
    waitpid(ch->pid, &status, 0);
  }
  peer_child = 0;
  close(ch->out);
}

/* The last lines of its stderr, for a failure message. */
static void tail_stderr(const child *ch, char *out, size_t len) {
  char buf[1024];
  FILE *f = fopen(ch->errfile, "r");
  size_t n = 0;
  out[0] = '\0';
  if (!f)
    return;
  if (fseek(f, -(long)(sizeof buf - 1), SEEK_END) != 0)
    rewind(f);
  n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
    buf[--n] = '\0';
  {
    const char *last = strrchr(buf, '\n');
    last = last ? last + 1 : buf;
    snprintf(out, len, "%.*s", (int)(len - 1), last);
  }
}

void peer_run(const bench_ctx *c, const char *command, const char *mode,
              int n, bench_result *r) {
  child ch;
  char cmdline[2048], line[512], why[300];
  double c0, c1;
  unsigned long long ops = 0, overlaps = 0, errors = 0;
  double secs = 0, p50 = NAN, p99 = NAN;

  snprintf(cmdline, sizeof cmdline, "exec %s '%s' %s %d %g %g", command,
           c->hosts, mode, n, c->warm_s, c->secs);
  if (!spawn(&ch, cmdline)) {
    bench_fail(r, "cannot start %s: %s", command, strerror(errno));
    return;
  }
  if (!read_line(&ch, line, sizeof line, READY_S) ||
      strcmp(line, "ready") != 0) {
    finish(&ch);
    tail_stderr(&ch, why, sizeof why);
    bench_fail(r, "peer not ready: %s", why[0] ? why : line);
    unlink(ch.errfile);
    return;
  }
  c0 = proc_cpu(ch.pid);
  if (write(ch.in, "go\n", 3) != 3 ||
      !read_line(&ch, line, sizeof line, c->secs + 60)) {
    finish(&ch);
    tail_stderr(&ch, why, sizeof why);
    bench_fail(r, "peer gave no result: %s", why);
    unlink(ch.errfile);
    return;
  }
  c1 = proc_cpu(ch.pid);
  finish(&ch);
  if (sscanf(line,
             "result ops=%llu seconds=%lf p50_ms=%lf p99_ms=%lf "
             "overlaps=%llu errors=%llu",
             &ops, &secs, &p50, &p99, &overlaps, &errors) != 6 ||
      secs <= 0) {
    tail_stderr(&ch, why, sizeof why);
    bench_fail(r, "peer said \"%.100s\" %s", line, why);
    unlink(ch.errfile);
    return;
  }
  unlink(ch.errfile);
  {
    /* A peer that measures its own CPU over the window says so (--as-peer
     * does, since it reports only after its threads stopped). */
    const char *own = strstr(line, " cpu=");
    double cpu;
    if (own && sscanf(own, " cpu=%lf", &cpu) == 1)
      c1 = c0 + cpu;
  }
  r->ok = true;
  r->ops = ops;
  r->seconds = secs;
  r->rate = (double)ops / secs;
  r->p50_ms = p50;
  r->p99_ms = p99;
  r->overlaps = overlaps;
  r->errors = errors;
  r->cpu_s = c1 - c0;
}
