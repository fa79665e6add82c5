/* SPDX-License-Identifier: Apache-2.0 */
/* peerctl.c - a peer program as a child of a test; see peerctl.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include "peerctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* poll() one fd until deadline_ms: 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, int64_t deadline_ms) {
  for (;;) {
    int64_t left = deadline_ms - mono_ms();
    struct pollfd pfd = {fd, POLLIN, 0};
    int r;
    if (left < 0)
      left = 0;
    r = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0 && left > 0)
      continue; /* the 1000 s cap */
    return r < 0 ? -1 : r;
  }
}

int peer_start(peer *p, char *const argv[], const char *log_path) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, logfd = -1;
  struct rlimit rl;
  long maxfd = 4096;
  sigset_t none;
  pid_t parent = getpid(), pid;
  memset(p, 0, sizeof *p);
  p->pid = -1;
  p->pidfd = p->to = p->from = -1;
  snprintf(p->log, sizeof p->log, "%s", log_path);
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    perror("peer_start: pipe2");
    goto fail;
  }
  logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logfd < 0) {
    fprintf(stderr, "peer_start: %s: %s\n", log_path, strerror(errno));
    goto fail;
  }
  /* After fork only async-signal-safe calls: the test has threads. */
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < 65536)
    maxfd = (long)rl.rlim_cur;
  sigemptyset(&none);
  pid = fork();
  if (pid < 0) {
    perror("peer_start: fork");
    goto fail;
  }
  if (pid == 0) {
    int closed = -1;
    /* Dies with the test's thread that started it, whatever ends it. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
      _exit(127);
    if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(logfd, 2) < 0)
      _exit(127);
#ifdef SYS_close_range
    closed = (int)syscall(SYS_close_range, 3u, ~0u, 0u);
#endif
    if (closed != 0)
      for (long i = 3; i < maxfd; i++)
        close((int)i);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(argv[0], argv);
    {
      static const char msg[] = "peer_start: exec failed\n";
      ssize_t ignored = write(2, msg, sizeof msg - 1);
      (void)ignored;
    }
    _exit(127);
  }
  p->pid = pid;
#ifdef SYS_pidfd_open
  p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
  close(in[0]);
  close(out[1]);
  close(logfd);
  p->to = in[1];
  p->from = out[0];
  return 0;
fail:
  for (int i = 0; i < 2; i++) {
    if (in[i] >= 0)
      close(in[i]);
    if (out[i] >= 0)
      close(out[i]);
  }
  if (logfd >= 0)
    close(logfd);
  return -1;
}

int peer_line(peer *p, char *line, size_t cap, int64_t deadline_ms) {
  for (;;) {
    char *nl = memchr(p->buf, '\n', p->len);
    if (nl || p->len == sizeof p->buf) {
      size_t take = nl ? (size_t)(nl - p->buf) : p->len;
      size_t n = take < cap - 1 ? take : cap - 1;
      size_t used = nl ? take + 1 : take;
      memcpy(line, p->buf, n);
      line[n] = '\0';
      memmove(p->buf, p->buf + used, p->len - used);
      p->len -= used;
      return 0;
    }
    if (p->from < 0)
      return -2;
    int r = wait_fd(p->from, deadline_ms);
    if (r == 0)
      return -1;
    if (r < 0)
      return -2;
    ssize_t got = read(p->from, p->buf + p->len, sizeof p->buf - p->len);
    if (got > 0)
      p->len += (size_t)got;
    else if (got == 0 || (errno != EINTR && errno != EAGAIN))
      return -2;
  }
}

int peer_send(peer *p, const char *line) {
  size_t n = strlen(line);
  char *msg = malloc(n + 2);
  size_t done = 0;
  int rc = 0;
  if (!msg || p->to < 0) {
    free(msg);
    return -1;
  }
  memcpy(msg, line, n);
  msg[n++] = '\n';
  /* SIGPIPE is ignored by the test (a dead peer gives EPIPE). */
  while (done < n) {
    ssize_t w = write(p->to, msg + done, n - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      rc = -1;
      break;
    }
    done += (size_t)w;
  }
  free(msg);
  return rc;
}

static int status_of(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}

/* Waits until the child exited or deadline_ms: through its pidfd; where the
 * kernel has none (before Linux 5.3), by asking waitpid() every 10 ms.
 * Returns 1 when it exited (reaped already in the second case, with its
 * status in *status and *reaped set), 0 when it still runs. */
static int wait_exit(peer *p, int64_t deadline_ms, int *status, int *reaped) {
  *reaped = 0;
  if (p->pidfd >= 0)
    return wait_fd(p->pidfd, deadline_ms) == 1;
  for (;;) {
    struct timespec ts = {0, 10 * 1000000L};
    pid_t r = waitpid(p->pid, status, WNOHANG);
    if (r == p->pid) {
      *reaped = 1;
      return 1;
    }
    if ((r < 0 && errno != EINTR) || mono_ms() >= deadline_ms)
      return 0;
    nanosleep(&ts, NULL);
  }
}

int peer_end(peer *p, int timeout_ms) {
  int status = 0, reaped = 0, rc;
  pid_t r = -1;
  if (p->pid <= 0)
    return -1;
  if (p->to >= 0) {
    close(p->to); /* EOF: peers exit */
    p->to = -1;
  }
  if (!wait_exit(p, mono_ms() + timeout_ms, &status, &reaped)) {
    fprintf(stderr, "peerctl: the peer logging to %s (pid %d) did not exit "
            "in %d ms: killed\n", p->log, (int)p->pid, timeout_ms);
    kill(p->pid, SIGKILL);
  }
  if (!reaped)
    while ((r = waitpid(p->pid, &status, 0)) < 0 && errno == EINTR)
      ;
  rc = reaped || r == p->pid ? status_of(status) : -1;
  p->pid = -1;
  if (p->pidfd >= 0)
    close(p->pidfd);
  if (p->from >= 0)
    close(p->from);
  p->pidfd = p->from = -1;
  return rc;
}

void peer_show_log(const peer *p) {
  char line[1024];
  long total = 0, skip;
  FILE *f = fopen(p->log, "r");
  if (!f)
    return;
  while (fgets(line, sizeof line, f))
    total++;
  rewind(f);
  skip = total > 40 ? total - 40 : 0;
  fprintf(stderr, "---- %s (last %ld of %ld lines)\n", p->log, total - skip,
          total);
  for (long i = 0; fgets(line, sizeof line, f); i++)
    if (i >= skip)
      fputs(line, stderr);
  fprintf(stderr, "----\n");
  fclose(f);
}
