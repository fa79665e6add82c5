/* SPDX-License-Identifier: Apache-2.0 */
/*
 * contender.c - one contender of the fault suite (tests/test_fault_suite.c),
 * run as a process of its own so that the driver can SIGKILL and SIGSTOP it.
 *
 *   contender [--agent PATH] HOSTS LOCK SLOT RESOURCE HISTORY LOG SESSION_MS
 *             ACQ_TIMEOUT_MS HOLD_MS [MODE]
 *
 * --agent PATH: every session is opened through the zklockd listening on
 * PATH (zkl_session_options.agent; HOSTS is then unused, "-" will do).
 * Its session is the agent's: a SESSION line says id 0 and the agent's
 * timeout. When the agent goes (ZKL_LOST_AGENT, ZKL_EAGENT) the contender
 * does as after an expiry: it opens a new session, retrying (every 50 ms)
 * until an agent answers on PATH again.
 *
 * MODE is "mutex" (the default: one acquire in two is a plain mutex of
 * LOCK, the other a multi-lock of LOCK and LOCK-b, the names in a random
 * order each time, so that opposite orders meet; a multi-lock holder holds
 * LOCK and runs the mutex's section with its token), "rw" (a read/write
 * lock: each acquire takes the read side or the write side; one write in
 * two is a plain mutex on the same name instead, which must exclude
 * readers and writers alike: one name, one lock) or "sem:N" (a semaphore
 * of N leases). It loops: acquire (blocking, bounded by ACQ_TIMEOUT_MS),
 * run a short critical section on the shared RESOURCE, release. When its
 * session is lost (ZKL_ELOST or ZKL_EEXPIRED from acquire) it opens a new
 * one and goes on.
 *
 * RESOURCE stands for a storage server (tests/fault_resource.h: its record,
 * and the HISTORY it appends, under flock, in the order it saw things).
 * flock() only makes the resource's own steps atomic, as a server's request
 * handling would be; the critical section spans several of them, with
 * "work" in between, and only the ZooKeeper lock protects it.
 *
 * mutex: a fenced read-modify-write of a counter.
 *   1. read  highest, counter
 *   2. work  1-3 ms (HOLD_MS when armed: see SIGUSR1)
 *   3. write: token < highest (re-read): REJECT, write nothing; else write
 *      "token counter+1" with counter from step 1 and append to HISTORY.
 *   A second holder during step 2 shows as a lost update in HISTORY, an
 *   out-of-order grant or a paused holder's late write as a REJECT.
 *
 * rw: what the header promises of read/write tokens is what the resource
 * checks: it refuses a write token below the highest write token it
 * accepted, and a read token below that same token; nothing else.
 *   writer  the mutex's read-modify-write, its entry ("W+") and its write
 *           ("W", or "W!" when refused) in HISTORY. One write in four is
 *           followed by a downgrade: the read side is taken while the write
 *           side holds, the write side released, and a reader's section
 *           run on the read token.
 *   reader  1. enter: token < highest: REJECT, nothing more; else note the
 *              counter and append "R+";
 *           2. work 2-8 ms (HOLD_MS when armed);
 *           3. leave: append "R-" with the counter then, and whether the
 *              token is still not stale (the resource vouches for the read:
 *              ACCEPT), or is (REJECT).
 *   A writer beside a reader shows in HISTORY (a W+ while an R+ is open, a
 *   counter that changed under a reader), two writers as for the mutex;
 *   readers overlap each other in HISTORY too, which is what shows that
 *   they really share. Readers take 7 acquires in 10.
 *
 * sem:N: holders register in the resource ("S+", with the number now
 *   registered), work 2-8 ms (HOLD_MS when armed), unregister ("S-"). More
 *   than N registered at once shows in HISTORY. Nothing fences a lease:
 *   no token order says which of N holders is stale.
 *
 * LOG gets one line per event, each written with a single write() on an
 * O_APPEND descriptor (lines of concurrent writers never interleave):
 *   <t> BEGIN <pid> <slot>           process started
 *   <t> SESSION <id-hex> <timeout>   session opened (negotiated timeout)
 *   <t> SOPENFAIL <rc>               zkl_session_open failed, retrying
 *   <t> ACQ [r|w|m ab|m ba]          acquire called (rw: which side;
 *                                    mutex: m for a multi-lock, with the
 *                                    order of its names: ab = LOCK first)
 *   <t> START <token> [r|w|m]        acquire returned ZKL_OK: holds from here
 *   <t> ARMED <token>                told the driver it holds (see SIGUSR1)
 *   <t> ACCEPT <token> <a> <b>       the resource took the write, vouched
 *                                    for the read, registered the lease
 *   <t> REJECT <token> <highest>     the resource refused it (stale token)
 *   <t> END <token>                  critical section over, release called
 *   <t> REL <rc> [<token>]           release returned rc
 *   <t> FAIL <rc>                    acquire returned rc (not ZKL_OK)
 *   <t> LOST <reason> <token>        the lost callback ran (ZKL_LOST_*);
 *                                    it also writes "L\n" to fd 3
 *   <t> HALT <token>                 an armed hold stopped early: told LOST
 *   <t> WORKER <pid> <rc>            a helper forked for the section, named
 *                                    a worker (zkl_session_add_worker: rc)
 *   <t> BUSY <rc> / <t> UNBUSY       the callback thread held busy, and let go
 *   <t> IDLE                         quiesced (see SIGUSR2)
 *   <t> EXIT                         clean exit after SIGTERM
 * A downgrade logs the read side's START while the write side's section
 * is still open: END and REL carry the token they close. A forked helper
 * (SIGUSR1, below) writes its lines (ARMED, ACCEPT, REJECT) into this log
 * too, between WORKER and END: the section is its parent's.
 * <t> is CLOCK_MONOTONIC in microseconds: one clock for every process of the
 * machine, so the driver can compare the lines of all contenders.
 *
 * Signals (handled by a sigwait thread; the library's threads inherit the
 * mask, so no handler ever runs inside the library):
 *   SIGUSR1  arm: at the next grant, write "H <token> <r|w|m|->\n" to fd 3 (a
 *            pipe to the driver) once the resource has seen the holder
 *            (after step 1, R+ or S+), then work HOLD_MS instead, so that the
 *            driver can kill, stop or cut off a contender that surely holds.
 *            A value sent with sigqueue() carries the hold in ms (low 24
 *            bits; 0: HOLD_MS) and, for rw, the side to take at the next
 *            acquire (bits 24-25: 1 read, 2 write, 0 either) and, for
 *            mutex, the form (bits 26-27: 1 a plain mutex, 2 a multi-lock,
 *            0 either; "H" says m for a multi-lock). With bit 28 set it
 *            arms nothing: it pins the form of every acquire from then on
 *            (bits 26-27; 0 unpins), and once an acquire of a pinned form
 *            begins, writes "F p\n" or "F m\n" to fd 3: it holds nothing
 *            of the other form then (the driver's lost create of a
 *            multi-lock arms the proxies between a plain pin and a multi
 *            one, so that the first multi its proxy sees is an enqueue,
 *            not a multi-lock's release). Bits 29-30 say how the armed
 *            section runs:
 *              0  here, as above;
 *              1  in a helper: a child forked without exec (it shares the
 *                 library's sockets), named a worker of the session
 *                 (zkl_session_add_worker) and given PR_SET_PDEATHSIG
 *                 SIGKILL, does the whole section (steps 1-3, "H" from it)
 *                 on the resource, under this process's pid and token; the
 *                 contender waits for it, then releases;
 *              2  with the library's callback thread held busy: at the
 *                 grant an async acquire of a lock of its own
 *                 (LOCK-busySLOT) is made, whose callback blocks that
 *                 thread for 2 x SESSION_MS + 1000 ms; the hold goes on
 *                 meanwhile, and the busy lock is released after it.
 *            An armed hold ends when told LOST: it works in steps of 50 to
 *            150 ms and looks for a loss of its token between two (a step
 *            once begun is finished, as a real section finishes the unit
 *            of work it is in), then does its step 3 (the write, fenced:
 *            a holder told late, or paused, is refused), ENDs and releases.
 *            The END of an armed section writes "E <token>\n" to fd 3.
 *   SIGUSR2  quiesce: stop acquiring (a pending acquire is canceled), close
 *            nothing, log IDLE and write "I\n" to fd 3, then wait for SIGTERM.
 *   SIGTERM  finish the current critical section, release, free, close the
 *            session, log EXIT, exit 0.
 *
 * Exit status: 0 after SIGTERM, 2 for bad arguments or an unusable resource.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault_resource.h"
#include "zklock.h"

#define NOTIFY_FD 3
#define SIDE_ANY 0
#define SIDE_READ 1
#define SIDE_WRITE 2
#define FORM_ANY 0
#define FORM_PLAIN 1
#define FORM_MULTI 2
#define PIN_ONLY (1 << 28) /* SIGUSR1's value: a pin, no arming */
/* How an armed section runs (SIGUSR1's bits 29-30). */
#define HOW_HERE 0
#define HOW_FORK 1
#define HOW_BUSY 2
/* An armed hold works in steps this long, and looks for a loss between. */
#define STEP_MIN_US 50000
#define STEP_SPREAD_US 100001

static const char *hosts, *lock_name, *resource_path;
static const char *agent_path; /* --agent: zklockd's socket, or NULL */
static char second_name[300]; /* mutex: LOCK-b, the multi-locks' other name */
static char busy_name[300];   /* LOCK-busySLOT: the busy callback's lock */
/* The pid the resource knows this holder by: a forked helper writes under
 * its parent's, as part of its parent's section. */
static long holder_pid;
static int slot, session_ms, acq_timeout_ms, hold_ms;
static int mode = FR_MUTEX, sem_limit;
static int log_fd = -1, history_fd = -1, notify_fd = -1;

static atomic_bool stop_flag, quiesce_flag, armed_flag;
static atomic_int armed_hold_ms; /* the hold the driver asked for, 0: HOLD_MS */
static atomic_int armed_side;    /* rw: the side it asked for, SIDE_* */
static atomic_int armed_form;    /* mutex: the form it asked for, FORM_* */
static atomic_int armed_how;     /* HOW_*: how the armed section runs */
/* The token of the last hold told LOST: an armed hold of that token stops
 * at its next step. */
static atomic_llong lost_token;
/* The token of the armed section under way (0: none): its END tells the
 * driver ("E"). */
static long long armed_token;
/* mutex: the form every acquire takes until told otherwise (FORM_ANY:
 * chosen at random), and the generation of that order, told back once. */
static atomic_int pinned_form;
static atomic_uint pin_gen, pin_told;
/* The token each side holds, for the lost callback's line (0: the mutex,
 * the semaphore and the read side; 1: the write side). */
static atomic_llong current_token[2];

/* The session and locks in use; acquiring: the one in acquire, for the
 * signal thread's cancel. */
static pthread_mutex_t cur_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cur_cond = PTHREAD_COND_INITIALIZER;
static zkl_session *cur_session;
static zkl_lock *cur_lock;     /* mutex or semaphore */
static zkl_rwlock *cur_rw;     /* rw */
static zkl_lock *cur_mutex;    /* rw: a mutex on the same name, a writer */
static zkl_lock *cur_multi[2]; /* mutex: multi-locks of {LOCK, LOCK-b} and
                                  {LOCK-b, LOCK} */
static zkl_lock *cur_busy;     /* the busy callback's lock (HOW_BUSY) */
static zkl_lock *acquiring;

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* One line, one write(). Safe on any thread (no lock, no allocation). */
static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
  char buf[256];
  va_list ap;
  int n = snprintf(buf, sizeof buf, "%lld ", fr_now_us());
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(log_fd, buf, (size_t)n) < 0) {
    /* nothing sensible to do: the checker will miss the line */
  }
}

static void notify(const char *msg) {
  if (notify_fd >= 0 && write(notify_fd, msg, strlen(msg)) < 0) {
    /* no driver listening (run by hand): fine */
  }
}

/* The library's diagnostics and the ZooKeeper client's log, timestamped on
 * stderr (a file per process in the driver's run directory). */
static void on_log(const char *line, void *arg) {
  char buf[1200];
  int n = snprintf(buf, sizeof buf, "%lld %s\n", fr_now_us(), line);
  (void)arg;
  if (n > (int)sizeof buf - 1)
    n = (int)sizeof buf - 1;
  if (write(2, buf, (size_t)n) < 0) {
  }
}

/* On a library thread: must not block; one write() and done. arg: the
 * index of the side's token. */
static void on_lost(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  long long token = (long long)atomic_load(&current_token[(intptr_t)arg]);
  (void)l;
  logf_("LOST %d %lld", reason, token);
  if (token)
    atomic_store(&lost_token, token);
  notify("L\n");
}

static void *signal_thread(void *arg) {
  sigset_t *set = arg;
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(set, &info);
    if (sig < 0)
      continue;
    if (sig == SIGUSR1) {
      int v = info.si_code == SI_QUEUE ? info.si_value.sival_int : 0;
      if (v & PIN_ONLY) {
        atomic_store(&pinned_form, (v >> 26) & 3);
        atomic_fetch_add(&pin_gen, 1);
        continue;
      }
      atomic_store(&armed_hold_ms, v & 0xffffff);
      atomic_store(&armed_side, (v >> 24) & 3);
      atomic_store(&armed_form, (v >> 26) & 3);
      atomic_store(&armed_how, (v >> 29) & 3);
      atomic_store(&armed_flag, true);
      continue;
    }
    if (sig == SIGUSR2)
      atomic_store(&quiesce_flag, true);
    else if (sig == SIGTERM || sig == SIGINT)
      atomic_store(&stop_flag, true);
    pthread_mutex_lock(&cur_mu);
    /* Cancels a pending acquire; when the acquire has not begun yet or has
     * just succeeded, ZKL_EIDLE, and the main loop sees the flag at its
     * next turn. */
    if (acquiring)
      zkl_lock_cancel(acquiring);
    pthread_cond_broadcast(&cur_cond);
    pthread_mutex_unlock(&cur_mu);
  }
  return NULL;
}

static void close_session(void) {
  zkl_session *s;
  zkl_lock *l, *m, *ml[2], *busy;
  zkl_rwlock *rw;
  pthread_mutex_lock(&cur_mu);
  s = cur_session;
  busy = cur_busy;
  cur_busy = NULL;
  ml[0] = cur_multi[0];
  ml[1] = cur_multi[1];
  cur_multi[0] = cur_multi[1] = NULL;
  l = cur_lock;
  rw = cur_rw;
  m = cur_mutex;
  cur_session = NULL;
  cur_lock = NULL;
  cur_rw = NULL;
  cur_mutex = NULL;
  acquiring = NULL;
  pthread_mutex_unlock(&cur_mu);
  zkl_lock_free(l);
  zkl_lock_free(m);
  zkl_lock_free(ml[0]);
  zkl_lock_free(ml[1]);
  zkl_lock_free(busy);
  zkl_rwlock_free(rw);
  zkl_session_close(s, NULL);
}

static int new_locks(zkl_session *s, zkl_lock **l, zkl_rwlock **rw,
                     zkl_lock **m, zkl_lock **ml) {
  char info[32];
  int rc, i;
  *l = NULL;
  *rw = NULL;
  *m = NULL;
  ml[0] = ml[1] = NULL;
  snprintf(info, sizeof info, "slot=%d", slot);
  if (mode == FR_RW) {
    rc = zkl_rwlock_new(rw, s, lock_name);
    if (rc == ZKL_OK && (rc = zkl_lock_new(m, s, lock_name)) != ZKL_OK) {
      zkl_rwlock_free(*rw);
      *rw = NULL;
    }
    if (rc != ZKL_OK)
      return rc;
    for (i = 0; i < 3; i++) {
      zkl_lock *side = i == 2   ? *m
                       : i == 1 ? zkl_rwlock_write(*rw)
                                : zkl_rwlock_read(*rw);
      zkl_lock_set_owner_info(side, info);
      zkl_lock_on_lost(side, on_lost, (void *)(intptr_t)(i ? 1 : 0));
    }
    return ZKL_OK;
  }
  rc = mode == FR_SEM ? zkl_lock_new_semaphore(l, s, lock_name, sem_limit)
                      : zkl_lock_new(l, s, lock_name);
  if (rc != ZKL_OK)
    return rc;
  zkl_lock_set_owner_info(*l, info);
  zkl_lock_on_lost(*l, on_lost, (void *)(intptr_t)0);
  if (mode != FR_MUTEX)
    return ZKL_OK;
  /* The two orders of the two names: opposite orders meet in the queues. */
  for (i = 0; i < 2; i++) {
    const char *names[2] = {i ? second_name : lock_name,
                            i ? lock_name : second_name};
    if ((rc = zkl_lock_new_multi(&ml[i], s, names, 2)) != ZKL_OK) {
      zkl_lock_free(ml[0]);
      zkl_lock_free(*l);
      ml[0] = *l = NULL;
      return rc;
    }
    zkl_lock_set_owner_info(ml[i], info);
    zkl_lock_on_lost(ml[i], on_lost, (void *)(intptr_t)0);
  }
  return ZKL_OK;
}

/* Opens a session and the lock on it; retries until it works or we stop.
 * Returns 0, or -1 when told to stop. */
/* zkl_session_open() on hosts with this session timeout. */
static int session_open_with(zkl_session **out, const char *h, int ms) {
  zkl_session_options o;
  zkl_session_options_init(&o);
  if (agent_path) {
    o.agent = agent_path; /* the agent's session has the settings */
  } else {
    o.hosts = h;
    o.session_timeout_ms = ms;
  }
  return zkl_session_open(out, &o);
}

static int open_session(void) {
  for (;;) {
    zkl_session *s = NULL;
    zkl_lock *l, *m, *ml[2], *busy = NULL;
    zkl_rwlock *rw;
    int rc;
    if (atomic_load(&stop_flag))
      return -1;
    rc = session_open_with(&s, hosts, session_ms);
    if (rc != ZKL_OK) {
      logf_("SOPENFAIL %d", rc);
      /* Direct, the open itself waited up to session_ms. Through an agent
       * that is gone, connect() fails at once: a retry delay, not a
       * wait for anything, until the driver restarted it. */
      if (agent_path)
        sleep_us(50000);
      continue;
    }
    rc = zkl_lock_new(&busy, s, busy_name);
    if (rc == ZKL_OK && (rc = new_locks(s, &l, &rw, &m, ml)) != ZKL_OK)
      zkl_lock_free(busy);
    if (rc != ZKL_OK) {
      logf_("SOPENFAIL %d", rc);
      zkl_session_close(s, NULL);
      continue;
    }
    {
      /* Through an agent there is no handle here: the agent's session. */
      zhandle_t *zh = zkl_session_handle(s);
      const clientid_t *id = zh ? zoo_client_id(zh) : NULL;
      logf_("SESSION %llx %d", id ? (unsigned long long)id->client_id : 0ULL,
            zkl_session_timeout(s));
    }
    pthread_mutex_lock(&cur_mu);
    cur_session = s;
    cur_lock = l;
    cur_rw = rw;
    cur_mutex = m;
    cur_multi[0] = ml[0];
    cur_multi[1] = ml[1];
    cur_busy = busy;
    pthread_mutex_unlock(&cur_mu);
    return 0;
  }
}

/* ------------------------------------------------------------ resource */

static void die(const char *what) {
  fprintf(stderr, "contender: %s\n", what);
  exit(2);
}

static int res_open(void) {
  int fd = open(resource_path, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    die("cannot open the resource");
  return fd;
}

static void res_lock(int fd, fr_state *st) {
  if (flock(fd, LOCK_EX) != 0 || fr_read(fd, mode, st) != 0)
    die("cannot read the resource");
}

static void res_put(int fd, const fr_state *st) {
  if (fr_write(fd, mode, st) != 0)
    die("cannot write the resource");
}

static void hist(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void hist(const char *fmt, ...) {
  char buf[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (fr_history(history_fd, slot, holder_pid, "%s", buf) != 0)
    die("cannot write the history");
}

/* Whether the driver's arming (SIGUSR1) asks for a section of this side
 * and form; work() takes it. */
static bool armed_for(int side, int form) {
  int want = atomic_load(&armed_side), want_form = atomic_load(&armed_form);
  return atomic_load(&armed_flag) && (want == SIDE_ANY || want == side) &&
         (want_form == FORM_ANY || want_form == form);
}

/* ------------------------------------------------- the busy callback */

static pthread_mutex_t busy_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t busy_cond; /* on CLOCK_MONOTONIC: main() sets it up */
static bool busy_started;        /* main thread only */
static bool busy_on;             /* under busy_mu: its acquire is out, or
                                    its callback blocks */
static int busy_rc;
static long long busy_until_us;

/* The busy lock's acquire callback, on the library's callback thread (the
 * ZooKeeper client's completion thread direct, the agent client's
 * callback thread through an agent): it keeps that thread until
 * busy_until_us, on purpose, as a program's slow callback would. */
static void busy_cb(zkl_lock *l, int rc, int64_t token, void *arg) {
  struct timespec ts;
  (void)l;
  (void)token;
  (void)arg;
  logf_("BUSY %d", rc);
  pthread_mutex_lock(&busy_mu);
  busy_rc = rc;
  ts.tv_sec = (time_t)(busy_until_us / 1000000);
  ts.tv_nsec = (long)(busy_until_us % 1000000) * 1000;
  while (fr_now_us() < busy_until_us &&
         pthread_cond_timedwait(&busy_cond, &busy_mu, &ts) != ETIMEDOUT)
    ;
  busy_on = false;
  pthread_cond_broadcast(&busy_cond);
  pthread_mutex_unlock(&busy_mu);
  logf_("UNBUSY");
}

/* HOW_BUSY: the callback thread is kept busy for longer than the session
 * timeout, from about now: 2T + 1 s, as long as it took an agent client
 * whose one thread ran the callbacks and the pings (before 39031c4) to
 * have its lock freed under it (the agent of then took a client silent for
 * T as frozen, and freed its locks once the last deadline it had relayed
 * had passed: about 2T - m after its last ping). */
static void start_busy(void) {
  zkl_lock *l;
  int rc;
  pthread_mutex_lock(&cur_mu);
  l = cur_busy;
  pthread_mutex_unlock(&cur_mu);
  pthread_mutex_lock(&busy_mu);
  busy_until_us = fr_now_us() + (2 * session_ms + 1000) * 1000LL;
  busy_on = true;
  busy_rc = ZKL_OK;
  pthread_mutex_unlock(&busy_mu);
  busy_started = true;
  rc = zkl_lock_acquire_async(l, acq_timeout_ms, busy_cb, NULL);
  if (rc != ZKL_OK) {
    logf_("BUSY %d", rc);
    pthread_mutex_lock(&busy_mu);
    busy_on = false;
    busy_rc = rc;
    pthread_mutex_unlock(&busy_mu);
  }
}

/* After a busy section: waits (bounded) for the callback to let go of the
 * thread, then releases the busy lock. */
static void end_busy(void) {
  struct timespec ts;
  long long bound;
  bool on;
  int rc;
  zkl_lock *l;
  if (!busy_started)
    return;
  busy_started = false;
  pthread_mutex_lock(&busy_mu);
  bound = busy_until_us + (long long)acq_timeout_ms * 1000;
  ts.tv_sec = (time_t)(bound / 1000000);
  ts.tv_nsec = (long)(bound % 1000000) * 1000;
  while (busy_on && pthread_cond_timedwait(&busy_cond, &busy_mu, &ts) == 0)
    ;
  on = busy_on;
  rc = busy_rc;
  pthread_mutex_unlock(&busy_mu);
  pthread_mutex_lock(&cur_mu);
  l = cur_busy;
  pthread_mutex_unlock(&cur_mu);
  if (on) /* its acquire never came back: ends it (the callback says so) */
    zkl_lock_cancel(l);
  else if (rc == ZKL_OK)
    zkl_lock_release(l);
}

/* Step 2: the work. Armed (for this side, in this form): tell the driver
 * we hold, then hold as long as it asked, in steps, until told LOST. */
static void work(long long token, int side, int form, long min_us,
                 long spread_us, bool armable) {
  if (armable && armed_for(side, form) && atomic_exchange(&armed_flag, false)) {
    char msg[64];
    int ms = atomic_load(&armed_hold_ms);
    long long end = fr_now_us() + (long long)(ms > 0 ? ms : hold_ms) * 1000;
    if (atomic_load(&armed_how) == HOW_BUSY)
      start_busy();
    armed_token = token;
    logf_("ARMED %lld", token);
    snprintf(msg, sizeof msg, "H %lld %c\n", token,
             side == SIDE_READ    ? 'r'
             : side == SIDE_WRITE ? 'w'
             : form == FORM_MULTI ? 'm'
                                  : '-');
    notify(msg);
    for (;;) {
      long long left = end - fr_now_us();
      long step = STEP_MIN_US + rand() % STEP_SPREAD_US;
      if (atomic_load(&lost_token) == token) {
        logf_("HALT %lld", token);
        break;
      }
      if (left <= 0)
        break;
      sleep_us(step < left ? step : (long)left);
    }
  } else {
    sleep_us(min_us + rand() % spread_us);
  }
}

/* The mutex's section (and the rw writer's, which also logs its entry).
 * Returns true when the write was accepted. */
static bool write_section(long long token, int form, bool armable) {
  fr_state st;
  long long counter;
  int fd = res_open();
  /* 1. read */
  res_lock(fd, &st);
  counter = st.counter;
  if (mode == FR_RW) {
    st.sections++;
    res_put(fd, &st);
    hist("W+ %lld %lld", token, counter);
  }
  flock(fd, LOCK_UN);
  /* 2. work */
  work(token, mode == FR_RW ? SIDE_WRITE : SIDE_ANY, form, 1000, 2000,
       armable);
  /* 3. fenced write */
  res_lock(fd, &st);
  bool ok = token >= st.highest;
  if (!ok) {
    if (mode == FR_RW)
      hist("W! %lld %lld", token, st.highest);
    logf_("REJECT %lld %lld", token, st.highest);
  } else {
    st.highest = token;
    st.counter = counter + 1;
    res_put(fd, &st);
    if (mode == FR_RW)
      hist("W %lld %lld %lld", token, counter, counter + 1);
    else
      hist("%lld %lld %lld", token, counter, counter + 1);
    logf_("ACCEPT %lld %lld %lld", token, counter, counter + 1);
  }
  flock(fd, LOCK_UN);
  close(fd);
  return ok;
}

static void read_section(long long token, bool armable) {
  fr_state st;
  long long c0;
  int fd = res_open();
  /* 1. enter */
  res_lock(fd, &st);
  if (token < st.highest) {
    flock(fd, LOCK_UN);
    close(fd);
    logf_("REJECT %lld %lld", token, st.highest);
    return;
  }
  c0 = st.counter;
  st.sections++;
  res_put(fd, &st);
  hist("R+ %lld %lld", token, c0);
  flock(fd, LOCK_UN);
  /* 2. work: longer than a writer's, so that readers meet */
  work(token, SIDE_READ, FORM_ANY, 2000, 6000, armable);
  /* 3. leave */
  res_lock(fd, &st);
  bool ok = token >= st.highest;
  hist("R- %lld %lld %lld %d", token, c0, st.counter, ok ? 1 : 0);
  flock(fd, LOCK_UN);
  close(fd);
  if (ok)
    logf_("ACCEPT %lld %lld %lld", token, c0, st.counter);
  else
    logf_("REJECT %lld %lld", token, st.highest);
}

static void sem_section(long long token) {
  fr_state st;
  int fd = res_open(), i, held;
  long pid = holder_pid;
  /* 1. register */
  res_lock(fd, &st);
  for (i = 0; i < FR_SEM_ENTRIES && st.pid[i]; i++)
    ;
  if (i == FR_SEM_ENTRIES)
    die("the semaphore's table is full");
  st.pid[i] = pid;
  st.token[i] = token;
  held = fr_sem_held(&st);
  st.total++;
  if (held > sem_limit)
    st.over++;
  res_put(fd, &st);
  hist("S+ %lld %d", token, held);
  flock(fd, LOCK_UN);
  logf_("ACCEPT %lld %d %d", token, held, sem_limit);
  /* 2. work */
  work(token, SIDE_ANY, FORM_ANY, 2000, 6000, true);
  /* 3. unregister */
  res_lock(fd, &st);
  for (i = 0; i < FR_SEM_ENTRIES; i++)
    if (st.pid[i] == pid && st.token[i] == token) {
      st.pid[i] = 0;
      st.token[i] = 0;
    }
  res_put(fd, &st);
  hist("S- %lld %d", token, fr_sem_held(&st));
  flock(fd, LOCK_UN);
  close(fd);
}

/* The section of a holder: steps 1-3 on the resource. */
static void run_section(long long token, int side, int form) {
  if (mode == FR_SEM)
    sem_section(token);
  else if (side == SIDE_READ)
    read_section(token, true);
  else
    write_section(token, form, true);
}

/* HOW_FORK: the armed section runs in a helper forked without exec, as a
 * program hands its work to a child: the child shares the library's
 * sockets (the agent's connection, or the ZooKeeper client's) but none of
 * its threads, and is not the holder. It is named a worker before it
 * starts, and dies with its parent (PR_SET_PDEATHSIG): through an agent,
 * the lock of a parent killed while the helper works passes once both are
 * gone; direct, at the session's expiry. The child is a fork of a process
 * with threads: it calls nothing that takes a lock another thread may
 * hold (the resource's and the log's own calls: open, flock, read, write,
 * nanosleep, the string functions; rand's lock is only ever this thread's).
 * Waits for it. */
static void forked_section(long long token, int side, int form) {
  zkl_session *s;
  pid_t parent = getpid(), pid;
  int go[2], rc, status;
  char c = 'g';
  pthread_mutex_lock(&cur_mu);
  s = cur_session;
  pthread_mutex_unlock(&cur_mu);
  if (pipe2(go, O_CLOEXEC) != 0)
    die("pipe");
  if ((pid = fork()) < 0)
    die("fork");
  if (pid == 0) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
      _exit(3);
    close(go[1]);
    /* Not before it is a worker: a kill of the parent in between would
     * let the lock pass while it works. */
    if (read(go[0], &c, 1) != 1)
      _exit(3);
    run_section(token, side, form); /* takes the arming, says "H" */
    _exit(0);
  }
  close(go[0]);
  atomic_store(&armed_flag, false); /* the helper's copy runs the arming */
  armed_token = token;
  rc = zkl_session_add_worker(s, pid);
  logf_("WORKER %ld %d", (long)pid, rc);
  if (write(go[1], &c, 1) != 1)
    logf_("WORKER %ld did not start", (long)pid);
  close(go[1]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
}

/* ---------------------------------------------------------------- loop */

/* After SIGUSR2: hold nothing, keep the session, wait for SIGTERM. */
static void idle_until_stopped(void) {
  logf_("IDLE");
  notify("I\n");
  pthread_mutex_lock(&cur_mu);
  while (!atomic_load(&stop_flag))
    pthread_cond_wait(&cur_cond, &cur_mu);
  pthread_mutex_unlock(&cur_mu);
}

/* Acquires l (the signal thread may cancel it meanwhile). */
static int acquire(zkl_lock *l, int64_t *token) {
  int rc;
  pthread_mutex_lock(&cur_mu);
  acquiring = l;
  pthread_mutex_unlock(&cur_mu);
  /* A quiesce or stop that came before `acquiring` was set found nothing
   * to cancel: look again. */
  if (atomic_load(&quiesce_flag) || atomic_load(&stop_flag))
    rc = ZKL_ECANCELED;
  else
    rc = zkl_lock_acquire(l, acq_timeout_ms, token);
  pthread_mutex_lock(&cur_mu);
  acquiring = NULL;
  pthread_mutex_unlock(&cur_mu);
  return rc;
}

/* Releases side l of token; returns its rc. */
static int release(zkl_lock *l, long long token, int idx) {
  int rc;
  logf_("END %lld", token);
  if (armed_token && token == armed_token) {
    char msg[48];
    snprintf(msg, sizeof msg, "E %lld\n", token);
    notify(msg);
    armed_token = 0;
  }
  rc = zkl_lock_release(l);
  if (mode == FR_RW)
    logf_("REL %d %lld", rc, token);
  else
    logf_("REL %d", rc);
  atomic_store(&current_token[idx], 0);
  return rc;
}

/* Whether the loop goes on with this session after rc: an acquire that
 * timed out or was canceled, a release that worked or said the lock had
 * been lost (told once; the session may live on: the next acquire says).
 * Anything else (ZKL_EEXPIRED, ZKL_ELOST from an acquire: our node was
 * deleted, the unexpected) starts over on a fresh session. */
static bool go_on(int rc, bool from_release) {
  return from_release ? rc == ZKL_OK || rc == ZKL_ELOST
                      : rc == ZKL_ETIMEDOUT || rc == ZKL_ECANCELED;
}

/* A downgrade: the write side holds (its write accepted); take the read
 * side (granted at once), let the write side go, read. Returns whether to
 * go on with the session. */
static bool downgrade(zkl_rwlock *rw, long long wtoken) {
  int64_t rtoken = 0;
  int rc, wrc;
  logf_("ACQ r");
  rc = acquire(zkl_rwlock_read(rw), &rtoken);
  if (rc != ZKL_OK) {
    logf_("FAIL %d", rc);
    wrc = release(zkl_rwlock_write(rw), wtoken, 1);
    return go_on(rc, false) && go_on(wrc, true);
  }
  atomic_store(&current_token[0], (long long)rtoken);
  logf_("START %lld r", (long long)rtoken);
  wrc = release(zkl_rwlock_write(rw), wtoken, 1);
  read_section((long long)rtoken, false);
  rc = release(zkl_rwlock_read(rw), (long long)rtoken, 0);
  return go_on(wrc, true) && go_on(rc, true);
}

/* mutex: the form of the next acquire. The driver's arming asks for one
 * (kill that holder), else its pin (SIGUSR1 with PIN_ONLY: told back once
 * per pin with "F p" or "F m", once an acquire of that form begins), else
 * a plain mutex or a multi-lock, one in two. */
static int choose_form(void) {
  unsigned gen = atomic_load(&pin_gen);
  int pin = atomic_load(&pinned_form);
  int want = atomic_load(&armed_flag) ? atomic_load(&armed_form) : FORM_ANY;
  if (want != FORM_ANY)
    return want;
  if (pin != FORM_ANY) {
    if (atomic_exchange(&pin_told, gen) != gen)
      notify(pin == FORM_MULTI ? "F m\n" : "F p\n");
    return pin;
  }
  return rand() % 2 ? FORM_MULTI : FORM_PLAIN;
}

/* One acquire and its section. Returns whether to go on with the
 * session (go_on()). */
static bool one_turn_(void) {
  int64_t token = 0;
  int rc, side = SIDE_ANY, idx = 0, form = FORM_PLAIN;
  zkl_lock *l, *m, *ml[2];
  zkl_rwlock *rw;
  bool as_mutex = false;
  pthread_mutex_lock(&cur_mu);
  l = cur_lock;
  ml[0] = cur_multi[0];
  ml[1] = cur_multi[1];
  rw = cur_rw;
  m = cur_mutex;
  pthread_mutex_unlock(&cur_mu);
  if (mode == FR_RW) {
    int want = atomic_load(&armed_flag) ? atomic_load(&armed_side) : SIDE_ANY;
    side = want != SIDE_ANY ? want
           : rand() % 10 < 7 ? SIDE_READ
                             : SIDE_WRITE;
    idx = side == SIDE_WRITE;
    as_mutex = idx && rand() % 2 == 0;
    l = as_mutex ? m : idx ? zkl_rwlock_write(rw) : zkl_rwlock_read(rw);
    logf_("ACQ %c", side == SIDE_READ ? 'r' : 'w');
  } else if (mode == FR_MUTEX && (form = choose_form()) == FORM_MULTI) {
    int order = rand() % 2;
    l = ml[order];
    logf_("ACQ m %s", order ? "ba" : "ab");
  } else {
    logf_("ACQ");
  }
  rc = acquire(l, &token);
  if (rc != ZKL_OK) {
    logf_("FAIL %d", rc);
    return go_on(rc, false);
  }
  atomic_store(&current_token[idx], (long long)token);
  if (mode == FR_RW) {
    logf_("START %lld %c", (long long)token, side == SIDE_READ ? 'r' : 'w');
    if (armed_for(side, FORM_ANY) && atomic_load(&armed_how) == HOW_FORK) {
      forked_section((long long)token, side, FORM_ANY);
    } else if (side == SIDE_READ) {
      read_section((long long)token, true);
    } else if (write_section((long long)token, FORM_ANY, true) && !as_mutex &&
               rand() % 4 == 0 &&
               !atomic_load(&quiesce_flag) && !atomic_load(&stop_flag)) {
      return downgrade(rw, (long long)token);
    }
  } else {
    logf_("START %lld%s", (long long)token, form == FORM_MULTI ? " m" : "");
    if (armed_for(SIDE_ANY, mode == FR_SEM ? FORM_ANY : form) &&
        atomic_load(&armed_how) == HOW_FORK)
      forked_section((long long)token, SIDE_ANY, form);
    else if (mode == FR_SEM)
      sem_section((long long)token);
    else
      write_section((long long)token, form, true);
  }
  return go_on(release(l, (long long)token, idx), true);
}

/* A turn, and the busy lock let go of after it (HOW_BUSY). */
static bool one_turn(void) {
  bool more = one_turn_();
  end_busy();
  return more;
}

static int parse_mode(const char *m) {
  if (!strcmp(m, "mutex"))
    return FR_MUTEX;
  if (!strcmp(m, "rw"))
    return FR_RW;
  if (!strncmp(m, "sem:", 4) && (sem_limit = atoi(m + 4)) > 0)
    return FR_SEM;
  return -1;
}

int main(int argc, char **argv) {
  static sigset_t set;
  pthread_t sig_thread;
  if (argc > 2 && !strcmp(argv[1], "--agent")) {
    agent_path = argv[2];
    argv += 2;
    argc -= 2;
  }
  if ((argc != 10 && argc != 11) ||
      (argc == 11 && (mode = parse_mode(argv[10])) < 0)) {
    fprintf(stderr,
            "usage: contender [--agent PATH] HOSTS LOCK SLOT RESOURCE HISTORY "
            "LOG SESSION_MS ACQ_TIMEOUT_MS HOLD_MS [mutex|rw|sem:N]\n");
    return 2;
  }
  hosts = argv[1];
  lock_name = argv[2];
  snprintf(second_name, sizeof second_name, "%s-b", lock_name);
  slot = atoi(argv[3]);
  snprintf(busy_name, sizeof busy_name, "%s-busy%d", lock_name, slot);
  holder_pid = (long)getpid();
  {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&busy_cond, &ca);
    pthread_condattr_destroy(&ca);
  }
  resource_path = argv[4];
  session_ms = atoi(argv[7]);
  acq_timeout_ms = atoi(argv[8]);
  hold_ms = atoi(argv[9]);
  /* fd 3 is the driver's pipe when it was open at start (run by hand, the
   * files below would take the number). */
  if (fcntl(NOTIFY_FD, F_GETFD) >= 0)
    notify_fd = NOTIFY_FD;
  history_fd = open(argv[5], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  log_fd = open(argv[6], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (history_fd < 0 || log_fd < 0 || session_ms <= 0 || acq_timeout_ms <= 0) {
    fprintf(stderr, "contender: bad arguments\n");
    return 2;
  }
  srand((unsigned)getpid());

  /* Before any thread exists, so every thread inherits the mask. */
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN); /* the notify pipe of a dead driver */
  if (pthread_create(&sig_thread, NULL, signal_thread, &set) != 0) {
    fprintf(stderr, "contender: pthread_create failed\n");
    return 2;
  }
  pthread_detach(sig_thread);
  zkl_on_log(on_log, NULL);
  logf_("BEGIN %ld %d", (long)getpid(), slot);

  if (open_session() != 0)
    goto out;
  while (!atomic_load(&stop_flag)) {
    if (atomic_load(&quiesce_flag)) {
      idle_until_stopped();
      break;
    }
    if (one_turn())
      continue;
    close_session();
    if (open_session() != 0)
      goto out;
  }
out:
  close_session();
  logf_("EXIT");
  return 0;
}
