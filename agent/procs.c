/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procs.c - the processes behind a client's connection: the one that
 * connected (its peer), and the workers it names (ZKL_MSG_WORK,
 * zkl_session_add_worker()), each watched through a pidfd.
 *
 * Why processes and not the socket: a closed socket does not prove that a
 * holder's work stopped, and an open one does not prove that the holder
 * lives. A process that forked keeps its socket open in the child after
 * it dies itself, and a command zklock runs outlives zklock's own death.
 * So the agent watches the peer's pid, and the workers a client names,
 * and lets a held node go on a connection's end only once they are gone
 * (or the lease it last told the client has run out; serve.c).
 *
 * A pidfd names one process for good: it stays that process's after the
 * pid is reused, and it becomes readable when the process exits. The
 * peer's comes from the kernel with the connection (SO_PEERPIDFD, Linux
 * 6.5), or is opened from the pid SO_PEERCRED gave, which the connecting
 * process held at connect(): a peer that died before the agent opened its
 * pid has closed its socket too, and is seen gone by that. Without pidfds
 * (older kernels, another pid namespace) the connection's end is all the
 * agent sees, as before.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; the headers of Debian 12 lack it */
#endif

static int pidfd_of(pid_t pid) {
#ifdef SYS_pidfd_open
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0)
    fcntl(fd, F_SETFD, FD_CLOEXEC); /* pidfds are close-on-exec already */
  return fd;
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

int procs_peer_pidfd(int sock, pid_t pid) {
  int fd = -1;
  socklen_t len = sizeof fd;
  if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0)
    return fd;
  return pid > 0 ? pidfd_of(pid) : -1;
}

bool procs_exited(int pidfd) {
  struct pollfd p = {pidfd, POLLIN, 0};
  return pidfd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP));
}

/* From /proc/PID/status, which every user may read (the agent runs as a
 * user of its own): the real uid (-1 when unreadable), and how many pid
 * namespaces the process has a pid in, counted from the agent's own (its
 * /proc's): 1 when it lives in the agent's, more in a container's. A
 * kernel without NSpid (before 4.1) says 1. */
static void read_status(pid_t pid, long *uid, int *levels) {
  char path[64], line[512];
  FILE *f;
  *uid = -1;
  *levels = 1;
  snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
  if (!(f = fopen(path, "re")))
    return;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "Uid:", 4) == 0) {
      *uid = strtol(line + 4, NULL, 10);
    } else if (strncmp(line, "NSpid:", 6) == 0) {
      char *p = line + 6, *end;
      int n = 0;
      for (;;) {
        (void)strtol(p, &end, 10);
        if (end == p)
          break;
        n++;
        p = end;
      }
      *levels = n > 0 ? n : 1;
    }
  }
  fclose(f);
}

int procs_open_worker(pid_t pid, pid_t peer, uid_t uid, int *pidfd) {
  long owner, peer_uid;
  int levels, peer_levels;
  *pidfd = -1;
  if (pid <= 0 || peer <= 0)
    return ZKL_EINVAL;
  /* The pid means a process of the client's own pid namespace: only when
   * that is the agent's is it the process the agent would watch. */
  read_status(peer, &peer_uid, &peer_levels);
  if (peer_levels != 1)
    return ZKL_EINVAL;
  if ((*pidfd = pidfd_of(pid)) < 0)
    return ZKL_EINVAL; /* ESRCH: no such process; or no pidfds here */
  /* Read after the pidfd is open, which pins the process: until it is
   * reaped its /proc entry is its own. If it is still running after the
   * read, what was read was its own; if it has exited meanwhile, it is a
   * worker that has stopped, which keeps nothing waiting either way. */
  read_status(pid, &owner, &levels);
  if (!procs_exited(*pidfd) &&
      (owner < 0 || (uid != 0 && owner != (long)uid))) {
    close(*pidfd);
    *pidfd = -1;
    return owner < 0 ? ZKL_EINVAL : ZKL_EDENIED;
  }
  return ZKL_OK;
}
