/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree.c - every process the command started, wherever it went: stopping
 * them all (SIGTERM, then SIGKILL), and knowing when the last is gone.
 *
 * The caller is the keeper (keeper_main.c), or zklock once its keeper has
 * died; either is a child subreaper (PR_SET_CHILD_SUBREAPER). Every process
 * the command starts then stays under the caller, whatever becomes of its
 * parent, its process group or its session (a double fork, setsid): an
 * orphan is handed to the nearest subreaper above it, not to init. So the
 * processes under the caller are exactly the command's, and the last one
 * is gone when waitpid() says ECHILD; no process group, session or cgroup
 * can say as much (a process leaves the first two at will, and a cgroup of
 * our own needs a delegated cgroup2, which most hosts do not give a user).
 *
 * Signalling them never reaches a stranger, though pids are reused:
 *   - the caller's own children go by pid: a child's pid is not reused
 *     before its parent reaps it, and the caller alone reaps them (it does
 *     not reap while it signals);
 *   - the command's process group goes by id, only while the command, its
 *     leader, is unreaped, which keeps the id from reuse;
 *   - deeper processes go through a pidfd, opened first, then checked: its
 *     parent as read after the open is a process already known to be ours
 *     and still alive then (or the caller itself: the parent died since
 *     the listing), and the process is still alive too, so the pid read
 *     was the pidfd's process, and that one was ours. A pidfd's signal
 *     reaches its own process or none, whatever becomes of the pid.
 * Where the pidfd calls are missing (Linux before 5.3), the deeper ones
 * are reached as their parents die and they become the caller's children;
 * SIGKILL still ends them all, one level per round.
 *
 * A process that is neither the caller's child nor under its signals
 * (found after a SIGKILL round, whose orphans the kernel hands over
 * without a SIGCHLD) is looked for again at the next round:
 * tree_stop_step() asks to be called again and again once SIGKILL is due,
 * until the caller reaps the last child.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* After SIGKILL: how soon to look for processes that came since, and how
 * far apart the rounds grow. */
#define TREE_FIRST_ROUND_MS 10
#define TREE_LAST_ROUND_MS 1000

typedef struct {
  pid_t pid, ppid;
} proc_entry;

/* The parent in /proc/PID/stat ("PID (COMM) STATE PPID PGRP ..."; COMM
 * may hold anything, ')' included: the last ')' ends it), and the process
 * group; -1 when the process is gone. */
static pid_t parent_of(pid_t pid, pid_t *pgrp) {
  char path[64], buf[512], *close_paren;
  long ppid = -1, group = -1;
  char st;
  ssize_t n;
  int fd;
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  close_paren = strrchr(buf, ')');
  if (!close_paren ||
      sscanf(close_paren + 1, " %c %ld %ld", &st, &ppid, &group) != 3)
    return -1;
  if (pgrp)
    *pgrp = (pid_t)group;
  return (pid_t)ppid;
}

/* Every process on the host with its parent. Returns the count (0 when
 * /proc cannot be read); *out to free. */
static int scan(proc_entry **out) {
  DIR *d = opendir("/proc");
  proc_entry *e = NULL, *grown;
  struct dirent *de;
  int n = 0, cap = 0;
  *out = NULL;
  if (!d)
    return 0;
  while ((de = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(de->d_name, &end, 10);
    pid_t ppid;
    if (pid <= 0 || *end)
      continue;
    if ((ppid = parent_of((pid_t)pid, NULL)) < 0)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 256;
      grown = realloc(e, sizeof *e * (size_t)cap);
      if (!grown)
        break; /* what was read is still worth signalling */
      e = grown;
    }
    e[n].pid = (pid_t)pid;
    e[n].ppid = ppid;
    n++;
  }
  closedir(d);
  *out = e;
  return n;
}

static int pidfd_open_(pid_t pid) {
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

static int pidfd_signal(int fd, int sig) {
#ifdef SYS_pidfd_send_signal
  return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
#else
  (void)fd;
  (void)sig;
  errno = ENOSYS;
  return -1;
#endif
}

/* A pidfd is readable once its process has exited. */
static bool has_exited(int pidfd) {
  struct pollfd p = {pidfd, POLLIN, 0};
  return poll(&p, 1, 0) != 0;
}

/* A process known to be ours: the caller's child (fd -1: its pid is
 * pinned until the caller reaps it) or a deeper one held by a pidfd. */
typedef struct {
  pid_t pid;
  int fd;
} known;

/* Whether pid is to be signalled on its own: not when the group's signal
 * reached it (its group, read now, is the one signalled). */
static bool outside(pid_t pid, pid_t group) {
  pid_t pgrp = -1;
  return group <= 0 || parent_of(pid, &pgrp) < 0 || pgrp != group;
}

int tree_signal(pid_t group, int sig) {
  pid_t self = getpid();
  proc_entry *e;
  known *k;
  int n = scan(&e), nk = 0, i, j, sent = 0;
  /* The group first, then each process outside it, so that none gets the
   * signal twice: a second SIGTERM may run a handler twice. */
  if (group > 0 && kill(-group, sig) == 0)
    sent++;
  k = n > 0 ? malloc(sizeof *k * (size_t)n) : NULL;
  for (i = 0; k && i < n; i++)
    if (e[i].ppid == self) {
      if (outside(e[i].pid, group) && kill(e[i].pid, sig) == 0)
        sent++;
      k[nk].pid = e[i].pid;
      k[nk++].fd = -1;
    }
  /* Breadth first: each process found is a parent to look under. */
  for (j = 0; k && j < nk; j++)
    for (i = 0; i < n; i++) {
      pid_t pgrp = -1, now;
      int fd;
      if (e[i].ppid != k[j].pid || (fd = pidfd_open_(e[i].pid)) < 0)
        continue;
      /* Its parent now: the one of the listing, or us, should that one
       * have died since (the group's signal, or by itself) and left it to
       * us. */
      now = parent_of(e[i].pid, &pgrp);
      if ((now != self && (now != k[j].pid ||
                           (k[j].fd >= 0 && has_exited(k[j].fd)))) ||
          has_exited(fd)) {
        close(fd);
        continue;
      }
      if ((group <= 0 || pgrp != group) && pidfd_signal(fd, sig) == 0)
        sent++;
      k[nk].pid = e[i].pid;
      k[nk++].fd = fd;
    }
  for (j = 0; k && j < nk; j++)
    if (k[j].fd >= 0)
      close(k[j].fd);
  free(k);
  free(e);
  return sent;
}

bool tree_reap(pid_t command, int *status, bool *reaped) {
  for (;;) {
    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      if (pid == command) {
        *status = st;
        *reaped = true;
      }
      continue;
    }
    if (pid < 0 && errno == EINTR)
      continue;
    return !(pid < 0 && errno == ECHILD);
  }
}

void tree_stop_begin(tree_stop *t, pid_t group, int64_t kill_at_ms) {
  t->kill_at_ms = kill_at_ms;
  t->round_ms = 0;
  t->stopping = true;
  tree_signal(group, SIGTERM);
  /* as systemd does: a stopped process acts on SIGTERM now, not when
   * someone continues it */
  tree_signal(group, SIGCONT);
}

int64_t tree_stop_step(tree_stop *t, pid_t group, int64_t now_ms) {
  if (!t->stopping)
    return 0;
  if (now_ms < t->kill_at_ms)
    return t->kill_at_ms;
  /* Again at every round: orphans of the last round's processes come to
   * us without a SIGCHLD, and one that forked meanwhile has a child that
   * was not there to be signalled. Rounds grow apart, up to a second, for
   * a process that SIGKILL does not end at once (stuck in the kernel). */
  tree_signal(group, SIGKILL);
  t->round_ms = t->round_ms == 0 ? TREE_FIRST_ROUND_MS
                : t->round_ms * 2 > TREE_LAST_ROUND_MS ? TREE_LAST_ROUND_MS
                                                       : t->round_ms * 2;
  return now_ms + t->round_ms;
}
