/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watchdog.c - a second process that stops the command when the lease runs
 * out and zklock does not stop it: because zklock is stopped (SIGSTOP, a
 * debugger), hung, or starved. A stopped process runs no timer, the lease's
 * included, and the command is what touches the resource, so the deadline
 * must be enforced on the command by something that is not zklock.
 *
 * Which process: the zklock binary itself, run again through
 * /proc/self/exe with WATCHDOG_ARG (zklock.c's main hands over to
 * wd_main() before anything else). So it is always there and of the same
 * version as the zklock that talks to it, with no install path to find, in
 * the build tree too; it starts no thread and runs no ZooKeeper code. Not a
 * bare fork without exec: zklock has threads, and such a child may make only
 * async-signal-safe calls for the hours it runs, a contract too easy to
 * break. It renames itself "zklock-watchdog" for ps.
 *
 * What the two share: one page (a memfd both map) with what is held, the
 * grace, the command's pid, and one 64-bit word: a state in the two low
 * bits, a time (monotonic ms) above them:
 *   ARMED  time = the deadline: the watchdog sends SIGTERM then, unless
 *          zklock has moved it forward (wd_renew) by then
 *   FIRED  the watchdog sent SIGTERM; time = when it sends SIGKILL
 *   LOST   zklock sent SIGTERM itself; time = when SIGKILL is due (the
 *          watchdog sends it too, should zklock be stopped by then)
 *   DONE   the command has exited: nothing more to signal
 * Every change is a compare-and-swap of the word, so exactly one of the
 * two sends SIGTERM, and a renewal that comes as the deadline passes either
 * lands first (no SIGTERM) or fails (zklock then finds FIRED). A pipe from
 * zklock carries only wake-ups; its end of file says zklock is gone.
 *
 * Never signalling a stranger: the watchdog signals the command (or its
 * process group) only while the command is unreaped, when its pid and group
 * id cannot have been reused. zklock, the command's parent, reaps it only
 * after it has ended and reaped the watchdog (wd_stop). If zklock dies, the
 * kernel kills the watchdog (PR_SET_PDEATHSIG) in zklock's own exit, before
 * init can reap the orphaned command (the one window left: a kill() already
 * inside the kernel at that instant, against a pid that would have to be
 * reused within it). The command writes its own pid into the page between
 * fork and exec, and wakes the watchdog (which also looks every 10 ms until
 * it knows the command), so it is covered from its first instruction as the
 * user's program, even if zklock froze right after the fork.
 *
 * Never outliving the command: it exits on DONE (zklock then kills and
 * reaps it anyway), at the pipe's end of file, and when the command exits
 * (a pidfd, Linux 5.3 and later) even while zklock is stopped.
 *
 * Never firing while zklock is healthy: the library renews the lease with a
 * heartbeat every T/6, zklock passes its deadline on every T/12 (see
 * lease.c, run.c), and at the lease deadline stops the command itself, m/2
 * before the watchdog's deadline.
 *
 * Never missing for long: a watchdog that dies while the command runs
 * (SIGKILL from someone) is replaced by another on the same page
 * (wd_replace), which takes the deadline, or the SIGKILL time, where the
 * dead one left them; zklock hears of the death at once (SIGCHLD). One that
 * dies within WD_MIN_LIFE_MS of being a replacement is not replaced again:
 * zklock stops the command instead (run.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"

enum { WD_ARMED = 0, WD_FIRED = 1, WD_LOST = 2, WD_DONE = 3 };
#define WORD(time, state) (((long long)(time) << 2) | (state))
#define STATE(word) ((int)((word)&3))
#define TIME(word) ((int64_t)((word) >> 2))

/* Shared between two processes: the atomics must be lock-free (and so
 * address-free). */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics are not lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "int atomics are not lock-free");

#define WD_MAGIC 0x7a6b7764u /* "zkwd" */
#define WD_VERSION 1
#define WD_MIN_LIFE_MS 2000 /* a replacement that dies sooner: give up */

struct wd_page {
  unsigned magic, version;
  int zklock_pid;
  int grace_ms;
  int own_group;
  char what[ZKL_PATH_MAX]; /* "lock /locks/NAME", for its message */
  _Atomic long long word;
  _Atomic int command; /* its pid, from the command itself; 0 until then */
};

/* ----------------------------------------------------------- zklock's end */

static struct wd_page *page;
static int page_fd = -1; /* kept for a replacement */
static child_proc wd;
static int wake_fd = -1;
static int64_t started_ms; /* of the watchdog now running */
static int replacements;

pid_t wd_pid(void) { return wd.pid; }

#if defined(__linux__) && defined(MFD_CLOEXEC)
/* Starts a watchdog process on the page, with a wake-up pipe of its own.
 * Returns 0, or -1 with *err. */
static int spawn_watchdog(int *err) {
  static char arg0[] = "zklock-watchdog", arg1[] = WATCHDOG_ARG;
  char *argv[] = {arg0, arg1, NULL};
  child_spec spec;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    *err = errno;
    return -1;
  }
  memset(&spec, 0, sizeof spec);
  spec.path = "/proc/self/exe";
  spec.argv = argv;
  /* Its own process group: a stop or a Ctrl-C meant for zklock's group
   * (kill -STOP -PGID, the terminal) does not reach it. */
  spec.own_group = true;
  spec.pdeathsig = SIGKILL;
  spec.moved_fds[0] = page_fd;
  spec.moved_fds[1] = p[0];
  if (fcntl(p[1], F_SETFL, O_NONBLOCK) != 0 ||
      child_spawn(&wd, &spec, err) != 0) {
    if (wd.pid)
      child_reap(&wd);
    wd.pid = 0;
    close(p[0]);
    close(p[1]);
    return -1;
  }
  close(p[0]);
  if (wake_fd >= 0)
    close(wake_fd);
  wake_fd = p[1];
  started_ms = cli_now_ms();
  return 0;
}
#endif

int wd_start(const char *what, int grace_ms, bool own_group,
             int64_t deadline_ms) {
#if defined(__linux__) && defined(MFD_CLOEXEC)
  int fd, err = 0;
  fd = memfd_create("zklock-watchdog", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  if (ftruncate(fd, sizeof *page) != 0 ||
      (page = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   0)) == MAP_FAILED) {
    err = errno;
    goto fail;
  }
  page->magic = WD_MAGIC;
  page->version = WD_VERSION;
  page->zklock_pid = (int)getpid();
  page->grace_ms = grace_ms;
  page->own_group = own_group;
  snprintf(page->what, sizeof page->what, "%s", what);
  atomic_store(&page->word, WORD(deadline_ms, WD_ARMED));
  atomic_store(&page->command, 0);
  page_fd = fd;
  replacements = 0;
  if (spawn_watchdog(&err) != 0)
    goto fail;
  cli_verbose_msg("watchdog started (pid %ld)", (long)wd.pid);
  return 0;
fail:
  if (page && page != MAP_FAILED)
    munmap(page, sizeof *page);
  page = NULL;
  close(fd);
  page_fd = -1;
  errno = err;
  return -1;
#else
  (void)what;
  (void)grace_ms;
  (void)own_group;
  (void)deadline_ms;
  errno = ENOSYS;
  return -1;
#endif
}

int wd_replace(pid_t command) {
#if defined(__linux__) && defined(MFD_CLOEXEC)
  int expected = 0, err = 0;
  if (!page || wd.pid) {
    errno = EINVAL;
    return -1;
  }
  if (replacements > 0 && cli_now_ms() - started_ms < WD_MIN_LIFE_MS) {
    errno = EAGAIN; /* it keeps dying: another would too */
    return -1;
  }
  /* The dead one may have died before the command told it its pid. zklock
   * has not reaped the command: the pid is still the command's. */
  atomic_compare_exchange_strong(&page->command, &expected, (int)command);
  if (spawn_watchdog(&err) != 0) {
    errno = err;
    return -1;
  }
  replacements++;
  return 0;
#else
  (void)command;
  errno = ENOSYS;
  return -1;
#endif
}

void wd_in_child(void) {
  char b = 0;
  if (!page)
    return;
  atomic_store(&page->command, (int)getpid());
  /* The command wakes the watchdog itself: zklock may be stopped from the
   * moment the command runs, and a watchdog that does not know the command
   * can neither see it exit nor signal it before its deadline. (A full
   * pipe means wake-ups enough to read.) */
  if (write(wake_fd, &b, 1) < 0) {
  }
}

void wd_renew(int64_t deadline_ms) {
  long long w;
  if (!page)
    return;
  w = atomic_load(&page->word);
  do
    if (STATE(w) != WD_ARMED || TIME(w) >= deadline_ms)
      return;
  while (!atomic_compare_exchange_weak(&page->word, &w,
                                       WORD(deadline_ms, WD_ARMED)));
}

bool wd_take_over(int64_t kill_at_ms, int64_t *their_kill_at_ms) {
  long long w;
  if (!page)
    return true;
  w = atomic_load(&page->word);
  for (;;) {
    if (STATE(w) == WD_FIRED) {
      *their_kill_at_ms = TIME(w);
      return false;
    }
    if (STATE(w) != WD_ARMED)
      return true;
    if (atomic_compare_exchange_weak(&page->word, &w,
                                     WORD(kill_at_ms, WD_LOST)))
      return true;
  }
}

bool wd_fired(int64_t *kill_at_ms) {
  long long w = page ? atomic_load(&page->word) : 0;
  if (!page || STATE(w) != WD_FIRED)
    return false;
  *kill_at_ms = TIME(w);
  return true;
}

pid_t wd_reap_if_exited(int *status) {
  pid_t pid = wd.pid;
  if (pid && waitpid(pid, status, WNOHANG) == pid) {
    wd.pid = 0;
    return pid;
  }
  return 0;
}

bool wd_stop(void) {
  bool fired;
  if (!page)
    return false;
  fired = STATE(atomic_exchange(&page->word, WORD(0, WD_DONE))) == WD_FIRED;
  if (wd.pid) {
    /* It holds nothing to clean up, and a stopped watchdog must not hold
     * zklock up. */
    kill(wd.pid, SIGKILL);
    child_reap(&wd);
    wd.pid = 0;
  }
  close(wake_fd);
  wake_fd = -1;
  close(page_fd);
  page_fd = -1;
  munmap(page, sizeof *page);
  page = NULL;
  return fired;
}

/* -------------------------------------------------------- the watchdog */

#ifdef __linux__
static int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  return -1;
#endif
}

static void quiet_signals(void) {
  static const int ignored[] = {SIGINT,  SIGQUIT, SIGHUP,  SIGTERM,
                                SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1,
                                SIGUSR2, SIGPIPE, SIGALRM};
  struct sigaction ign;
  sigset_t none;
  size_t i;
  /* It ends with zklock (end of file, parent death) or by SIGKILL; a signal
   * meant for zklock's job must not take the command's protection away. */
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  for (i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
    sigaction(ignored[i], &ign, NULL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The deadline passed: SIGTERM (and SIGCONT) unless zklock renewed or took
 * over meanwhile. */
static void fire(struct wd_page *pg, const child_proc *c, long long seen,
                 int64_t now) {
  if (!atomic_compare_exchange_strong(&pg->word, &seen,
                                      WORD(now + pg->grace_ms, WD_FIRED)))
    return;
  /* Said first: whatever the command prints as it ends, and whatever
   * zklock says once it runs again, comes after the reason (a test saw
   * zklock, continued right after the command's end, speak first). */
  cli_error("watchdog: lost the %s: the lease ran out with no renewal "
            "from zklock (pid %d), which may be stopped or hung; SIGTERM "
            "sent to the command (pid %ld), SIGKILL in %s",
            pg->what, pg->zklock_pid, (long)c->pid,
            cli_duration(pg->grace_ms));
  child_terminate(c);
}

static int watch(struct wd_page *pg) {
  child_proc c = {0, pg->own_group != 0};
  int pidfd = -1;
  bool killed = false;
  for (;;) {
    long long w = atomic_load(&pg->word);
    int64_t now = cli_now_ms(), t = TIME(w);
    struct pollfd pfd[2] = {{4, POLLIN, 0}, {-1, POLLIN, 0}};
    int timeout = -1, state = STATE(w);
    if (state == WD_DONE)
      return 0;
    if (!c.pid && (c.pid = atomic_load(&pg->command)) != 0)
      pidfd = open_pidfd(c.pid); /* unreaped: this is the command */
    if (c.pid && state == WD_ARMED && now >= t) {
      fire(pg, &c, w, now);
      continue; /* whatever happened, look again */
    }
    if (c.pid && state != WD_ARMED && !killed && now >= t) {
      if (state == WD_FIRED)
        cli_error("watchdog: SIGKILL to the command (pid %ld)", (long)c.pid);
      child_signal(&c, SIGKILL);
      killed = true;
    }
    if (!killed)
      timeout = !c.pid ? 10 /* its pid is on its way (see wd_in_child) */
                : t - now > 60000 ? 60000
                                  : (int)(t - now);
    pfd[1].fd = pidfd;
    if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
      return 1;
    if (pfd[0].revents) {
      char buf[64];
      ssize_t n = read(4, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        return 0; /* zklock is gone: its command's pid may be freed soon */
    }
    if (pfd[1].revents)
      return 0; /* the command has exited */
  }
}
#endif

int wd_main(void) {
#ifdef __linux__
  struct wd_page *pg;
  struct stat st;
  int null;
  if (fstat(3, &st) == 0 && st.st_size == (off_t)sizeof *pg &&
      (pg = mmap(NULL, sizeof *pg, PROT_READ | PROT_WRITE, MAP_SHARED, 3, 0)) !=
          MAP_FAILED) {
    if (pg->magic == WD_MAGIC && pg->version == WD_VERSION) {
      close(3);
      if (getppid() != pg->zklock_pid)
        return 0; /* zklock died before we got here */
      prctl(PR_SET_NAME, "zklock-watchdog");
      null = open("/dev/null", O_RDWR);
      if (null >= 0) { /* only stderr is of use; hold no one's pipe open */
        dup2(null, 0);
        dup2(null, 1);
        if (null > 2)
          close(null);
      }
      quiet_signals();
      return watch(pg);
    }
  }
#endif
  cli_usage_error("%s is for zklock's own use", WATCHDOG_ARG);
}
