/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keeper.c - zklock's end of the keeper: the process that runs the command
 * and keeps every process of it under the lock (keeper_main.c is the
 * keeper's end, keeper.h the page the two share).
 *
 *   zklock ──> zklock-keeper ──> the command ──> whatever it starts
 *
 * The lock must pass on only once everything that runs under it has
 * stopped: the command, and every process it started, even one that
 * double-forked or left for a session of its own, and even when zklock
 * itself is killed outright. So the command's parent is not zklock but the
 * keeper, a process that outlives zklock, and a child subreaper
 * (PR_SET_CHILD_SUBREAPER): every orphan under the command is handed to it,
 * and it knows the last is gone when waitpid() says ECHILD (tree.c). It
 * exits only then, so its exit is the proof: zklock releases (or frees)
 * the lock only once it has reaped the keeper, on every path: the
 * command's end (processes it left running keep the lock held until they
 * end, as an inherited descriptor keeps flock(1)'s), a loss, a signal.
 * Should zklock die, the keeper stops the processes and ends; a direct
 * session lives on meanwhile, and zklockd, told of the keeper by
 * zkl_session_add_worker(), keeps a dead client's node until the keeper
 * has ended (both no longer than the lease's last deadline plus its
 * margin, by when the keeper has sent SIGKILL).
 *
 * Not a cgroup, which would catch a process even when the command hands
 * it to another service: killing one (cgroup.kill) needs a cgroup2 tree
 * delegated to the user, which most hosts do not give (this one has
 * cgroup v1 and no delegation). The subreaper needs no privilege.
 *
 * Which process: the zklock binary itself, run again through
 * /proc/self/exe with KEEPER_ARG (main() hands over to keeper_main()
 * before anything else), so it is always there and of the same version,
 * with no install path to find, in the build tree too. It starts no thread
 * and runs no ZooKeeper code. Not a bare fork: zklock has threads, and such
 * a child could make only async-signal-safe calls for the hours it runs.
 * It renames itself "zklock-keeper" for ps, lives in a process group of
 * its own (a stop or a Ctrl-C meant for zklock's job does not reach it),
 * and ignores every signal but SIGKILL (and SIGSTOP, which no process can).
 *
 * Only the keeper signals the command's processes: it is their parent or
 * their subreaper, so it never signals a pid it has reaped (tree.c). zklock
 * asks through the page: a stop (the word), signals to pass on (sigs). It
 * also sends the keeper SIGCONT with every request, so that a keeper
 * someone stopped acts on it. Should the keeper die (SIGKILL), the command
 * and its processes come to zklock, a subreaper too, which stops them all
 * as on a loss and exits 4 (run.c).
 *
 * The times: D the lease deadline (lease_deadline()), m the margin, g the
 * grace (-k), H = D + m/2 the hard stop. No SIGKILL comes later than H,
 * whatever -k says.
 *   - zklock healthy, on any loss: SIGTERM (and SIGCONT) at once, SIGKILL
 *     at min(now + g, H);
 *   - zklock stopped, hung or starved (it did not renew): SIGTERM at
 *     D + m/4, SIGKILL at min(that + g, H);
 *   - zklock dead (the end of file of its pipe): SIGTERM at once, SIGKILL
 *     at min(now + g, H), H as zklock last gave it.
 * zklock renews D every T/12 (run.c), from the library's beats every T/6,
 * and at D stops the command itself, m/4 before the keeper would.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keeper.h"

static struct keeper_page *page;
static child_proc keeper;
static int wake_fd = -1; /* write end: wakes the keeper */
static int tell_fd = -1; /* read end: the keeper's news */

pid_t keeper_pid(void) { return keeper.pid; }
int keeper_fd(void) { return tell_fd; }

static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

int keeper_start(const keeper_spec *ks) {
  static char arg0[] = "zklock-keeper", arg1[] = KEEPER_ARG;
  char fdarg[16], **argv = NULL;
  child_spec spec;
  int fd, wake[2] = {-1, -1}, tell[2] = {-1, -1}, err = 0, n = 0, i;
  /* Should the keeper die, what it kept comes to us, not to init, and we
   * stop it (run.c). */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    return -1;
  fd = memfd_create("zklock-keeper", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  if (ftruncate(fd, sizeof *page) != 0 ||
      (page = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   0)) == MAP_FAILED ||
      pipe2(wake, O_CLOEXEC) != 0 || pipe2(tell, O_CLOEXEC) != 0) {
    err = errno;
    goto fail;
  }
  while (ks->command[n])
    n++;
  if (!(argv = calloc((size_t)n + 4, sizeof *argv))) {
    err = ENOMEM;
    goto fail;
  }
  page->magic = KEEPER_MAGIC;
  page->version = KEEPER_VERSION;
  page->zklock_pid = (int)getpid();
  page->zklock_pgid = (int)getpgrp();
  page->grace_ms = ks->grace_ms;
  page->margin_ms = ks->margin_ms;
  page->own_group = ks->own_group;
  page->verbose = cli_verbose;
  page->wake_fd = wake[0];
  page->tell_fd = tell[1];
  snprintf(page->what, sizeof page->what, "%s", ks->what);
  atomic_store(&page->word, KEEPER_WORD(ks->fire_at_ms, KEEPER_ARMED));
  atomic_store(&page->hard, ks->hard_at_ms);
  atomic_store(&page->go, KEEPER_WAIT);
  atomic_store(&page->sigs, 0);
  atomic_store(&page->started, 0);
  atomic_store(&page->exited, 0);
  snprintf(fdarg, sizeof fdarg, "%d", fd);
  argv[0] = arg0;
  argv[1] = arg1;
  argv[2] = fdarg;
  for (i = 0; i < n; i++)
    argv[3 + i] = ks->command[i];
  memset(&spec, 0, sizeof spec);
  spec.path = "/proc/self/exe";
  spec.argv = argv;
  spec.envp = ks->envp;
  spec.own_group = true;
  /* What the command gets, the keeper gets first and passes on: the
   * descriptors and signal dispositions zklock was started with. */
  spec.restore_signals = true;
  spec.keep_inherited = true;
  spec.pass_fds[0] = fd;
  spec.pass_fds[1] = wake[0];
  spec.pass_fds[2] = tell[1];
  if (fcntl(wake[1], F_SETFL, O_NONBLOCK) != 0 ||
      fcntl(tell[0], F_SETFL, O_NONBLOCK) != 0 ||
      child_spawn(&keeper, &spec, &err) != 0) {
    if (keeper.pid)
      child_reap(&keeper);
    keeper.pid = 0;
    goto fail;
  }
  free(argv);
  close(fd);
  close(wake[0]);
  close(tell[1]);
  wake_fd = wake[1];
  tell_fd = tell[0];
  cli_verbose_msg("keeper started (pid %ld)", (long)keeper.pid);
  return 0;
fail:
  free(argv);
  for (i = 0; i < 2; i++) {
    close_fd(&wake[i]);
    close_fd(&tell[i]);
  }
  if (page && page != MAP_FAILED)
    munmap(page, sizeof *page);
  page = NULL;
  close(fd);
  errno = err;
  return -1;
}

/* Wakes the keeper, and continues it should someone have stopped it: it
 * is our child, unreaped, so its pid is still its own. */
static void wake(void) {
  char b = 0;
  if (wake_fd >= 0 && write(wake_fd, &b, 1) < 0) {
  } /* full: wake-ups enough to read */
  if (keeper.pid)
    kill(keeper.pid, SIGCONT);
}

void keeper_go(bool run) {
  atomic_store(&page->go, run ? KEEPER_RUN : KEEPER_QUIT);
  wake();
}

void keeper_drain(void) {
  char buf[64];
  ssize_t n;
  while ((n = read(tell_fd, buf, sizeof buf)) > 0) {
  }
  if (n == 0) /* the keeper is gone: its exit says the rest */
    close_fd(&tell_fd);
}

int keeper_wait_started(pid_t *command) {
  *command = 0;
  while (!atomic_load(&page->started)) {
    struct pollfd p = {tell_fd, POLLIN, 0};
    if (tell_fd < 0)
      return -1; /* it died before it said */
    if (poll(&p, 1, -1) < 0 && errno != EINTR)
      return -1;
    keeper_drain();
  }
  *command = (pid_t)atomic_load(&page->command);
  return atomic_load(&page->start_err) == KEEPER_LATE
             ? KEEPER_NOT_IN_TIME
             : atomic_load(&page->start_err);
}

void keeper_renew(int64_t fire_at_ms, int64_t hard_at_ms) {
  long long w;
  if (!page)
    return;
  if (atomic_load(&page->hard) < hard_at_ms)
    atomic_store(&page->hard, hard_at_ms); /* only zklock writes it */
  w = atomic_load(&page->word);
  do
    if (KEEPER_STATE(w) != KEEPER_ARMED || KEEPER_TIME(w) >= fire_at_ms)
      return;
  while (!atomic_compare_exchange_weak(&page->word, &w,
                                       KEEPER_WORD(fire_at_ms, KEEPER_ARMED)));
}

bool keeper_stop(int64_t kill_at_ms, int64_t *at) {
  long long w = atomic_load(&page->word);
  int64_t hard = atomic_load(&page->hard);
  if (kill_at_ms > hard)
    kill_at_ms = hard;
  for (;;) {
    if (KEEPER_STATE(w) != KEEPER_ARMED) {
      *at = KEEPER_TIME(w);
      return false;
    }
    if (atomic_compare_exchange_weak(&page->word, &w,
                                     KEEPER_WORD(kill_at_ms, KEEPER_LOST))) {
      *at = kill_at_ms;
      wake();
      return true;
    }
  }
}

bool keeper_fired(int64_t *kill_at_ms) {
  long long w = page ? atomic_load(&page->word) : 0;
  if (!page || KEEPER_STATE(w) != KEEPER_FIRED)
    return false;
  *kill_at_ms = KEEPER_TIME(w);
  return true;
}

bool keeper_stopping(int64_t *kill_at_ms) {
  long long w = page ? atomic_load(&page->word) : 0;
  if (!page || KEEPER_STATE(w) == KEEPER_ARMED)
    return false;
  *kill_at_ms = KEEPER_TIME(w);
  return true;
}

int64_t keeper_hard_stop(void) { return page ? atomic_load(&page->hard) : 0; }

void keeper_signal(int sig) {
  if (!page || sig < 1 || sig > 64)
    return;
  atomic_fetch_or(&page->sigs, 1ULL << (sig - 1));
  wake();
}

pid_t keeper_command(void) {
  return page ? (pid_t)atomic_load(&page->command) : 0;
}

bool keeper_command_exited(int *status) {
  if (!page || !atomic_load(&page->exited))
    return false;
  *status = atomic_load(&page->status);
  return true;
}

bool keeper_reap(int *status, bool block) {
  pid_t got;
  if (!keeper.pid)
    return false;
  do
    got = waitpid(keeper.pid, status, block ? 0 : WNOHANG);
  while (got < 0 && errno == EINTR);
  if (got != keeper.pid)
    return false;
  keeper.pid = 0;
  return true;
}

void keeper_end(void) {
  if (!page)
    return;
  close_fd(&wake_fd);
  close_fd(&tell_fd);
  munmap(page, sizeof *page);
  page = NULL;
}
