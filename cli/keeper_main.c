/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keeper_main.c - the keeper process: it starts the command once zklock
 * says so, passes on what zklock asks (signals, a stop), stops every
 * process of the command on its own when zklock no longer renews the lease
 * or is gone, and exits once the last of them is gone. keeper.c says why
 * it exists and when it acts; keeper.h is the page.
 *
 * One thread, one loop: reap what has exited, pass on zklock's signals,
 * look at the word, then poll the pipe from zklock and a self-pipe for
 * SIGCHLD until the next time something is due.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keeper.h"

/* What the keeper changes, kept to give the command back what zklock was
 * started with (zklock started the keeper with that). */
static const int quieted[] = {SIGINT,  SIGQUIT, SIGHUP,  SIGTERM,
                              SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1,
                              SIGUSR2, SIGPIPE, SIGALRM, SIGCHLD};
#define N_QUIETED (sizeof quieted / sizeof quieted[0])
static struct sigaction original[N_QUIETED];
static sigset_t original_mask;

static int chld_pipe[2] = {-1, -1};

static void on_chld(int sig) {
  int saved = errno;
  char b = 0;
  (void)sig;
  if (write(chld_pipe[1], &b, 1) < 0) {
  } /* full: already readable */
  errno = saved;
}

/* It ends when the command's last process has, or by SIGKILL: a signal
 * meant for zklock's job must not take the command's keeper away. */
static int quiet_signals(void) {
  struct sigaction ign, chld;
  sigset_t none;
  size_t i;
  sigprocmask(SIG_SETMASK, NULL, &original_mask);
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  memset(&chld, 0, sizeof chld);
  chld.sa_handler = on_chld;
  chld.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigfillset(&chld.sa_mask);
  if (pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    return -1;
  for (i = 0; i < N_QUIETED; i++) {
    sigaction(quieted[i], NULL, &original[i]);
    sigaction(quieted[i], quieted[i] == SIGCHLD ? &chld : &ign, NULL);
  }
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  return 0;
}

/* In the command, before its exec. */
static void restore_signals(void) {
  size_t i;
  for (i = 0; i < N_QUIETED; i++)
    sigaction(quieted[i], &original[i], NULL);
  sigprocmask(SIG_SETMASK, &original_mask, NULL);
}

static void tell(const struct keeper_page *pg) {
  char b = 0;
  if (write(pg->tell_fd, &b, 1) < 0) {
  } /* zklock gone, or wake-ups enough to read */
}

/* Waits for zklock's word to start the command. false: not to run it
 * (zklock said so, or is gone). */
static bool wait_go(struct keeper_page *pg) {
  for (;;) {
    struct pollfd p = {pg->wake_fd, POLLIN, 0};
    char buf[64];
    int go = atomic_load(&pg->go);
    if (go != KEEPER_WAIT)
      return go == KEEPER_RUN;
    if (poll(&p, 1, -1) < 0 && errno != EINTR)
      return false;
    if (read(pg->wake_fd, buf, sizeof buf) == 0)
      return false;
  }
}

static void start_command(struct keeper_page *pg, child_proc *c,
                          char **argv) {
  child_spec spec;
  int err = 0;
  /* zklock's word may come late (zklock stopped between the grant and
   * the word, or slow): past the deadline the lock may be lost already,
   * and the command must not start. */
  if (cli_now_ms() >= atomic_load(&pg->hard) - pg->margin_ms / 2) {
    atomic_store(&pg->command, 0);
    atomic_store(&pg->start_err, KEEPER_LATE);
    atomic_store(&pg->started, 1);
    tell(pg);
    return;
  }
  memset(&spec, 0, sizeof spec);
  spec.argv = argv;
  spec.own_group = pg->own_group != 0;
  /* With a terminal, the command shares zklock's process group (job
   * control, Ctrl-C), not the keeper's own. */
  spec.join_group = pg->own_group ? 0 : pg->zklock_pgid;
  /* Should the keeper be killed too, the command at least hears of it;
   * zklock, should it live on, stops it anyway. */
  spec.pdeathsig = SIGTERM;
  spec.keep_inherited = true;
  spec.pass_fds[0] = spec.pass_fds[1] = spec.pass_fds[2] = -1;
  spec.in_child = restore_signals;
  child_spawn(c, &spec, &err);
  atomic_store(&pg->command, (int)c->pid);
  atomic_store(&pg->start_err, err);
  atomic_store(&pg->started, 1);
  tell(pg);
}

/* The command's descriptors are not the keeper's business: holding a pipe
 * open would keep its reader waiting. stderr stays, for its messages. */
static void drop_descriptors(void) {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    close(null);
  }
  child_close_inherited();
}

/* Passes on the signals zklock asked for: to the command (its group when
 * it has one) while it runs, then to every process it left. */
static void pass_on(struct keeper_page *pg, const child_proc *c,
                    bool reaped) {
  unsigned long long sigs = atomic_exchange(&pg->sigs, 0);
  int sig;
  for (sig = 1; sig <= 64; sig++)
    if (sigs & (1ULL << (sig - 1))) {
      if (!reaped)
        child_signal(c, sig);
      else
        tree_signal(0, sig);
    }
}

/* The word is ARMED and its time has passed, or zklock is gone: begins the
 * stop, unless zklock renewed or began it meanwhile. */
static void fire(struct keeper_page *pg, const child_proc *c, bool reaped,
                 long long seen, bool zklock_gone, int64_t now,
                 tree_stop *stop) {
  int64_t hard = atomic_load(&pg->hard), kill_at = now + pg->grace_ms;
  pid_t group = c->own_group && !reaped ? c->pid : 0;
  if (kill_at > hard)
    kill_at = hard;
  if (!atomic_compare_exchange_strong(&pg->word, &seen,
                                      KEEPER_WORD(kill_at, KEEPER_FIRED)))
    return;
  /* Said first: whatever the command prints as it ends, and whatever
   * zklock says once it runs again, comes after the reason. */
  if (zklock_gone)
    cli_error("keeper: zklock (pid %d) is gone, and with it the %s: "
              "SIGTERM sent to the command (pid %ld)%s, SIGKILL in %s",
              pg->zklock_pid, pg->what, (long)c->pid,
              reaped ? ", which has exited, and to the processes it left"
                     : " and its processes",
              cli_duration(kill_at > now ? kill_at - now : 0));
  else
    cli_error("keeper: lost the %s: the lease ran out with no renewal from "
              "zklock (pid %d), which may be stopped or hung; SIGTERM sent "
              "to the command (pid %ld)%s, SIGKILL in %s",
              pg->what, pg->zklock_pid, (long)c->pid,
              reaped ? ", which has exited, and to the processes it left"
                     : " and its processes",
              cli_duration(kill_at > now ? kill_at - now : 0));
  tree_stop_begin(stop, group, kill_at);
}

static int keep(struct keeper_page *pg, child_proc *c) {
  tree_stop stop;
  bool zklock_alive = true, reaped = false, said_kill = false;
  int status = 0;
  memset(&stop, 0, sizeof stop);
  for (;;) {
    struct pollfd p[2] = {{chld_pipe[0], POLLIN, 0}, {-1, POLLIN, 0}};
    int64_t now = cli_now_ms(), at;
    long long w;
    pid_t group;
    int timeout;
    char buf[64];
    bool left = tree_reap(c->pid, &status, &reaped);
    if (reaped && !atomic_load(&pg->exited)) {
      atomic_store(&pg->status, status);
      atomic_store(&pg->exited, 1);
      tell(pg);
    }
    if (!left)
      return 0; /* the last one is gone: our exit says so to zklock */
    group = c->own_group && !reaped ? c->pid : 0;
    pass_on(pg, c, reaped);
    w = atomic_load(&pg->word);
    if (KEEPER_STATE(w) == KEEPER_ARMED &&
        (!zklock_alive || now >= KEEPER_TIME(w))) {
      fire(pg, c, reaped, w, !zklock_alive, now, &stop);
      continue; /* whatever happened, look again */
    }
    if (KEEPER_STATE(w) == KEEPER_LOST && !stop.stopping) {
      at = KEEPER_TIME(w);
      cli_verbose_msg("keeper: SIGTERM sent to the command (pid %ld) and "
                      "its processes; SIGKILL in %s",
                      (long)c->pid, cli_duration(at > now ? at - now : 0));
      tree_stop_begin(&stop, group, at);
    }
    if (stop.stopping) {
      at = tree_stop_step(&stop, group, now);
      if (stop.round_ms && !said_kill) {
        said_kill = true;
        if (KEEPER_STATE(w) == KEEPER_FIRED)
          cli_error("keeper: SIGKILL to the command (pid %ld) and its "
                    "processes",
                    (long)c->pid);
        else
          cli_verbose_msg("keeper: grace over: SIGKILL to the command's "
                          "processes");
      }
    } else {
      at = KEEPER_TIME(w);
    }
    timeout = at - now > 60000 ? 60000 : at > now ? (int)(at - now) : 0;
    p[1].fd = zklock_alive ? pg->wake_fd : -1;
    /* an error (EINTR: a SIGCHLD) only means: look again */
    (void)poll(p, 2, timeout);
    while (read(chld_pipe[0], buf, sizeof buf) > 0) {
    }
    if (p[1].revents) {
      ssize_t n = read(pg->wake_fd, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        zklock_alive = false; /* zklock is gone */
    }
  }
}

int keeper_main(int argc, char **argv) {
  struct keeper_page *pg;
  struct stat st;
  child_proc c;
  char *end;
  long fd = argc > 3 ? strtol(argv[2], &end, 10) : -1;
  if (fd < 3 || *end || fstat((int)fd, &st) != 0 ||
      st.st_size != (off_t)sizeof *pg ||
      (pg = mmap(NULL, sizeof *pg, PROT_READ | PROT_WRITE, MAP_SHARED,
                 (int)fd, 0)) == MAP_FAILED)
    cli_usage_error("%s is for zklock's own use", KEEPER_ARG);
  close((int)fd);
  if (pg->magic != KEEPER_MAGIC || pg->version != KEEPER_VERSION)
    cli_usage_error("%s is for zklock's own use", KEEPER_ARG);
  if (getppid() != pg->zklock_pid)
    return 0; /* zklock died before we got here: nothing was started */
  prctl(PR_SET_NAME, "zklock-keeper");
  /* Every orphan under the command comes to us, not to init: see keeper.c */
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    cli_error("keeper: cannot become a subreaper: %s", strerror(errno));
    return EXIT_CANNOT_RUN;
  }
  cli_verbose = pg->verbose != 0;
  /* What is open now, but ours, is the command's. */
  child_note_inherited_fds();
  child_forget_fd(pg->wake_fd);
  child_forget_fd(pg->tell_fd);
  if (fcntl(pg->wake_fd, F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(pg->tell_fd, F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(pg->wake_fd, F_SETFL, O_NONBLOCK) != 0 ||
      fcntl(pg->tell_fd, F_SETFL, O_NONBLOCK) != 0 || quiet_signals() != 0) {
    cli_error("keeper: %s", strerror(errno));
    return EXIT_CANNOT_RUN;
  }
  if (!wait_go(pg))
    return 0;
  memset(&c, 0, sizeof c);
  start_command(pg, &c, argv + 3);
  drop_descriptors();
  if (!c.pid) /* not forked: nothing to keep */
    return 0;
  return keep(pg, &c);
}
