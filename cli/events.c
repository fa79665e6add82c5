/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events.c - the self-pipe. Signal handlers and the library's callbacks
 * (which run on its threads and must not block) record what happened and
 * write one byte; the main loop polls the read end and takes the record.
 * The record, not the bytes, is the truth: a byte that does not fit in a
 * full pipe is not needed, since the pipe is then readable anyway.
 *
 * Recorded: signals, SIGCHLD, the acquire's completion, the lost notice,
 * revoke requests, changes of the queue (the waiting status's watches),
 * and with -v every event of the library's hook, in order.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const int cli_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
const int cli_signal_count = (int)(sizeof cli_signals / sizeof cli_signals[0]);

static int pipe_fds[2] = {-1, -1};

/* Written by the signal handler (on any thread): lock-free atomics only. */
static atomic_int sig_seen[NSIG];
static atomic_int sig_fwd[NSIG];
static atomic_int chld_seen;
static bool shares_group;

/* Written by library callbacks. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool acquired, lost, queue_changed;
static int acquire_rc, lost_reason, revokes;
static int64_t token_got, lost_at;

/* What zklock was started with, for the command. */
static struct sigaction original[NSIG];
static bool changed[NSIG];
static sigset_t original_mask;

int ev_init(void) {
  int i;
  if (pipe(pipe_fds) != 0)
    return -1;
  for (i = 0; i < 2; i++)
    if (fcntl(pipe_fds[i], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(pipe_fds[i], F_SETFL, O_NONBLOCK) != 0)
      return -1;
  return 0;
}

int ev_fd(void) { return pipe_fds[0]; }

void ev_wake(void) {
  int saved = errno;
  char b = 0;
  ssize_t n = write(pipe_fds[1], &b, 1); /* EAGAIN: already readable */
  (void)n;
  errno = saved;
}

void ev_drain(void) {
  char buf[256];
  while (read(pipe_fds[0], buf, sizeof buf) > 0) {
  }
}

static void on_signal(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  if (sig == SIGCHLD) {
    atomic_store(&chld_seen, 1);
  } else {
    /* si_code <= 0: sent by a process (kill, sigqueue, tgkill). The
     * kernel's own, such as a terminal's Ctrl-C (SI_KERNEL), went to the
     * whole foreground process group, the command included. */
    if (!shares_group || si->si_code <= 0)
      atomic_store(&sig_fwd[sig], 1);
    atomic_store(&sig_seen[sig], 1);
  }
  ev_wake();
}

static void set_handler(int sig, int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART | flags;
  sigfillset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
  changed[sig] = true;
}

void ev_catch_signals(bool same_group) {
  struct sigaction ign;
  sigset_t unblock;
  int i;
  shares_group = same_group;
  sigprocmask(SIG_SETMASK, NULL, &original_mask);
  sigemptyset(&unblock);
  for (i = 0; i < cli_signal_count; i++) {
    int sig = cli_signals[i];
    sigaction(sig, NULL, &original[sig]);
    if (original[sig].sa_handler == SIG_IGN)
      continue; /* e.g. SIGHUP under nohup: leave it ignored */
    set_handler(sig, 0);
    sigaddset(&unblock, sig);
  }
  sigaction(SIGCHLD, NULL, &original[SIGCHLD]);
  set_handler(SIGCHLD, SA_NOCLDSTOP);
  sigaddset(&unblock, SIGCHLD);
  /* A closed stderr must not kill zklock while it holds the lock. */
  sigaction(SIGPIPE, NULL, &original[SIGPIPE]);
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, NULL);
  changed[SIGPIPE] = true;
  pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
}

void ev_restore_signals_in_child(void) {
  int sig;
  for (sig = 1; sig < NSIG; sig++)
    if (changed[sig])
      sigaction(sig, &original[sig], NULL);
  sigprocmask(SIG_SETMASK, &original_mask, NULL);
}

void ev_take(ev_batch *b) {
  int i;
  memset(b, 0, sizeof *b);
  for (i = 0; i < cli_signal_count; i++) {
    int sig = cli_signals[i];
    if (atomic_exchange(&sig_seen[sig], 0)) {
      b->signals[b->nsignals] = sig;
      b->forward[b->nsignals] = atomic_exchange(&sig_fwd[sig], 0) != 0;
      b->nsignals++;
    }
  }
  b->child = atomic_exchange(&chld_seen, 0) != 0;
  pthread_mutex_lock(&mu);
  b->acquired = acquired;
  b->acquire_rc = acquire_rc;
  b->token = token_got;
  b->lost = lost;
  b->lost_reason = lost_reason;
  b->lost_at_ms = lost_at;
  b->queue_changed = queue_changed;
  b->revokes = revokes;
  acquired = lost = queue_changed = false;
  revokes = 0;
  pthread_mutex_unlock(&mu);
}

void ev_acquire_cb(zkl_lock *l, int rc, int64_t token, void *arg) {
  (void)l;
  (void)arg;
  pthread_mutex_lock(&mu);
  acquired = true;
  acquire_rc = rc;
  token_got = token;
  pthread_mutex_unlock(&mu);
  ev_wake();
}

void ev_lost_cb(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  int64_t now = cli_now_ms();
  (void)l;
  (void)arg;
  pthread_mutex_lock(&mu);
  lost = true;
  lost_reason = reason;
  lost_at = now;
  pthread_mutex_unlock(&mu);
  ev_wake();
}

void ev_revoke_cb(zkl_lock *l, void *arg) {
  (void)l;
  (void)arg;
  pthread_mutex_lock(&mu);
  revokes++;
  pthread_mutex_unlock(&mu);
  ev_wake();
}

void ev_post_queue_changed(void) {
  pthread_mutex_lock(&mu);
  queue_changed = true;
  pthread_mutex_unlock(&mu);
  ev_wake();
}

/* zklock's own requests on the handle (the watches of the waiting status
 * and of --watch) not answered yet. */
static int requests_out;

void ev_request_sent(void) {
  pthread_mutex_lock(&mu);
  requests_out++;
  pthread_mutex_unlock(&mu);
}

void ev_request_answered(void) {
  bool last;
  pthread_mutex_lock(&mu);
  last = --requests_out == 0;
  pthread_mutex_unlock(&mu);
  if (last)
    ev_wake();
}

void ev_wait_answered(int timeout_ms) {
  int64_t deadline = cli_now_ms() + timeout_ms;
  for (;;) {
    struct pollfd pfd = {pipe_fds[0], POLLIN, 0};
    int64_t left = deadline - cli_now_ms();
    int out;
    pthread_mutex_lock(&mu);
    out = requests_out;
    pthread_mutex_unlock(&mu);
    if (out <= 0 || left <= 0)
      return;
    if (poll(&pfd, 1, (int)left) > 0)
      ev_drain();
  }
}

/* ------------------------------------------------------------ the trace */

/* The events of -v, oldest first: a ring the hook fills (it must not
 * block, so it never waits for room: what does not fit is counted) and
 * the main loop empties. Lock events of one zklock come a few at a time. */
#define TRACE_MAX 64
static ev_trace ring[TRACE_MAX];
static int ring_first, ring_count, ring_dropped;

static void copy_str(char *to, size_t len, const char **field) {
  if (*field) {
    snprintf(to, len, "%s", *field);
    *field = to;
  }
}

void ev_event_cb(zkl_session *s, const zkl_event *ev, void *arg) {
  struct timespec at;
  ev_trace *t;
  (void)arg;
  clock_gettime(CLOCK_REALTIME, &at);
  pthread_mutex_lock(&mu);
  if (ring_count == TRACE_MAX) {
    ring_dropped++;
  } else {
    t = &ring[(ring_first + ring_count++) % TRACE_MAX];
    t->ev = *ev;
    t->at = at;
    copy_str(t->name, sizeof t->name, &t->ev.name);
    copy_str(t->node, sizeof t->node, &t->ev.node);
    copy_str(t->waiting_for, sizeof t->waiting_for, &t->ev.waiting_for);
    copy_str(t->servers, sizeof t->servers, &t->ev.servers);
    t->ev.lock = NULL; /* not to be used later: it may be freed by then */
  }
  /* Through the agent there is no handle for the waiting status's own
   * watches: the agent's news of the waiter's place redraws it. */
  if (ev->type == ZKL_EVENT_QUEUED && !zkl_session_handle(s))
    queue_changed = true;
  pthread_mutex_unlock(&mu);
  ev_wake();
}

bool ev_take_trace(ev_trace *out, int *dropped) {
  bool got = false;
  pthread_mutex_lock(&mu);
  *dropped = ring_dropped;
  ring_dropped = 0;
  if (ring_count > 0) {
    *out = ring[ring_first];
    ring_first = (ring_first + 1) % TRACE_MAX;
    ring_count--;
    got = true;
  }
  pthread_mutex_unlock(&mu);
  if (got) { /* the copy's pointers point into the ring: repoint them */
    if (out->ev.name)
      out->ev.name = out->name;
    if (out->ev.node)
      out->ev.node = out->node;
    if (out->ev.waiting_for)
      out->ev.waiting_for = out->waiting_for;
    if (out->ev.servers)
      out->ev.servers = out->servers;
  }
  return got;
}
