/*
 * contender.c - one contender of the fault suite (tests/test_fault_suite.c),
 * run as a process of its own so that the driver can SIGKILL and SIGSTOP it.
 *
 *   contender HOSTS LOCK SLOT RESOURCE HISTORY LOG SESSION_MS ACQ_TIMEOUT_MS
 *             HOLD_MS
 *
 * It loops: acquire LOCK (blocking, bounded by ACQ_TIMEOUT_MS), run a short
 * critical section on the shared RESOURCE, release. When its session is lost
 * (ZKL_ELOST from acquire or release) it opens a new one and goes on.
 *
 * The critical section is a read-modify-write of a counter in RESOURCE, which
 * also stands for a storage server that checks fencing tokens: the file holds
 * "highest_token counter"; a write whose token is lower than highest_token is
 * refused. flock() only makes the resource's own check-and-write atomic (as a
 * storage server's request handling would be); it does not protect the
 * read-modify-write, which spans the "work" between reading and writing and
 * is protected by the ZooKeeper lock alone:
 *   1. read  highest, counter              (flock shared)
 *   2. work  1-3 ms (HOLD_MS when armed: see SIGUSR1)
 *   3. write (flock exclusive): re-read highest; token < highest: REJECT and
 *      write nothing; else write "token counter+1" with counter from step 1,
 *      and append "token old new slot pid time" to HISTORY.
 * A second holder during step 2 shows as a lost update in HISTORY (new is
 * not previous new + 1), an out-of-order grant as a REJECT, a paused holder's
 * late write as a REJECT. The contender deliberately does not look at its
 * lost flag before writing: the fence must catch a late write by itself.
 *
 * LOG gets one line per event, each written with a single write() on an
 * O_APPEND descriptor (lines of concurrent writers never interleave):
 *   <t> BEGIN <pid> <slot>           process started
 *   <t> SESSION <id-hex> <timeout>   session opened (negotiated timeout)
 *   <t> SOPENFAIL <rc>               zkl_session_open failed, retrying
 *   <t> ACQ                          acquire called
 *   <t> START <token>                acquire returned ZKL_OK: holds from here
 *   <t> ARMED <token>                told the driver it holds (see SIGUSR1)
 *   <t> ACCEPT <token> <old> <new>   the resource took the write
 *   <t> REJECT <token> <highest>     the resource refused it (stale token)
 *   <t> END <token>                  critical section over, release called
 *   <t> REL <rc>                     release returned rc
 *   <t> FAIL <rc>                    acquire returned rc (not ZKL_OK)
 *   <t> LOST <reason> <token>        the lost callback ran (ZKL_LOST_*);
 *                                    it also writes "L\n" to fd 3
 *   <t> IDLE                         quiesced (see SIGUSR2)
 *   <t> EXIT                         clean exit after SIGTERM
 * <t> is CLOCK_MONOTONIC in microseconds: one clock for every process of the
 * machine, so the driver can compare the lines of all contenders.
 *
 * Signals (handled by a sigwait thread; the library's threads inherit the
 * mask, so no handler ever runs inside the library):
 *   SIGUSR1  arm: at the next grant, write "H <token>\n" to fd 3 (a pipe to
 *            the driver) after step 1, then work HOLD_MS (or the value sent
 *            with sigqueue(), in ms) instead of 1-3 ms, so that the driver
 *            can kill, stop or cut off a contender that surely holds the
 *            lock, between its read and its write.
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
#include <time.h>
#include <unistd.h>

#include "zklock.h"

#define NOTIFY_FD 3
#define RECORD_LEN 42 /* "%020lld %020lld\n" */

static const char *hosts, *lock_name, *resource_path;
static int slot, session_ms, acq_timeout_ms, hold_ms;
static int log_fd = -1, history_fd = -1, notify_fd = -1;

static atomic_bool stop_flag, quiesce_flag, armed_flag;
static atomic_int armed_hold_ms; /* the hold the driver asked for, 0: HOLD_MS */
static atomic_llong current_token; /* for the lost callback's line */

/* The session and lock in use, for the signal thread's cancel. */
static pthread_mutex_t cur_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cur_cond = PTHREAD_COND_INITIALIZER;
static zkl_session *cur_session;
static zkl_lock *cur_lock;

static long long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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
  int n = snprintf(buf, sizeof buf, "%lld ", now_us());
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
  int n = snprintf(buf, sizeof buf, "%lld %s\n", now_us(), line);
  (void)arg;
  if (n > (int)sizeof buf - 1)
    n = (int)sizeof buf - 1;
  if (write(2, buf, (size_t)n) < 0) {
  }
}

/* On a library thread: must not block; one write() and done. */
static void on_lost(zkl_lock *l, int reason, void *arg) {
  (void)l;
  (void)arg;
  logf_("LOST %d %lld", reason, (long long)atomic_load(&current_token));
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
      atomic_store(&armed_hold_ms,
                   info.si_code == SI_QUEUE ? info.si_value.sival_int : 0);
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
    if (cur_lock)
      zkl_lock_cancel(cur_lock);
    pthread_cond_broadcast(&cur_cond);
    pthread_mutex_unlock(&cur_mu);
  }
  return NULL;
}

static void close_session(void) {
  zkl_session *s;
  zkl_lock *l;
  pthread_mutex_lock(&cur_mu);
  s = cur_session;
  l = cur_lock;
  cur_session = NULL;
  cur_lock = NULL;
  pthread_mutex_unlock(&cur_mu);
  zkl_lock_free(l);
  zkl_session_close(s);
}

/* Opens a session and a lock on it; retries until it works or we stop.
 * Returns 0, or -1 when told to stop. */
static int open_session(void) {
  for (;;) {
    zkl_session *s = NULL;
    zkl_lock *l = NULL;
    char info[32];
    int rc;
    if (atomic_load(&stop_flag))
      return -1;
    rc = zkl_session_open(&s, hosts, session_ms);
    if (rc != ZKL_OK) {
      logf_("SOPENFAIL %d", rc);
      continue; /* the open itself waited up to session_ms */
    }
    rc = zkl_lock_new(&l, s, lock_name);
    if (rc != ZKL_OK) {
      logf_("SOPENFAIL %d", rc);
      zkl_session_close(s);
      continue;
    }
    snprintf(info, sizeof info, "slot=%d", slot);
    zkl_lock_set_owner_info(l, info);
    zkl_lock_on_lost(l, on_lost, NULL);
    {
      const clientid_t *id = zoo_client_id(zkl_session_handle(s));
      logf_("SESSION %llx %d", id ? (unsigned long long)id->client_id : 0ULL,
            zkl_session_timeout(s));
    }
    pthread_mutex_lock(&cur_mu);
    cur_session = s;
    cur_lock = l;
    pthread_mutex_unlock(&cur_mu);
    return 0;
  }
}

static int read_record(int fd, long long *highest, long long *counter) {
  char buf[RECORD_LEN + 1];
  ssize_t n = pread(fd, buf, RECORD_LEN, 0);
  if (n != RECORD_LEN)
    return -1;
  buf[n] = '\0';
  return sscanf(buf, "%lld %lld", highest, counter) == 2 ? 0 : -1;
}

/* The critical section: steps 1-3 of the header comment. */
static void critical_section(long long token) {
  long long highest, counter, highest2, counter2;
  int fd = open(resource_path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    perror("contender: open resource");
    exit(2);
  }
  /* 1. read */
  if (flock(fd, LOCK_SH) != 0 || read_record(fd, &highest, &counter) != 0) {
    fprintf(stderr, "contender: cannot read the resource\n");
    exit(2);
  }
  flock(fd, LOCK_UN);
  /* 2. work */
  if (atomic_exchange(&armed_flag, false)) {
    char msg[64];
    int ms = atomic_load(&armed_hold_ms);
    logf_("ARMED %lld", token);
    snprintf(msg, sizeof msg, "H %lld\n", token);
    notify(msg);
    sleep_us((long)(ms > 0 ? ms : hold_ms) * 1000);
  } else {
    sleep_us(1000 + rand() % 2000);
  }
  /* 3. fenced write */
  if (flock(fd, LOCK_EX) != 0 || read_record(fd, &highest2, &counter2) != 0) {
    fprintf(stderr, "contender: cannot read the resource\n");
    exit(2);
  }
  if (token < highest2) {
    logf_("REJECT %lld %lld", token, highest2);
  } else {
    char rec[RECORD_LEN + 1], hist[160];
    int n;
    snprintf(rec, sizeof rec, "%020lld %020lld\n", token, counter + 1);
    if (pwrite(fd, rec, RECORD_LEN, 0) != RECORD_LEN) {
      perror("contender: write resource");
      exit(2);
    }
    n = snprintf(hist, sizeof hist, "%lld %lld %lld %d %ld %lld\n", token,
                 counter, counter + 1, slot, (long)getpid(), now_us());
    if (write(history_fd, hist, (size_t)n) != n) {
      perror("contender: write history");
      exit(2);
    }
    logf_("ACCEPT %lld %lld %lld", token, counter, counter + 1);
  }
  flock(fd, LOCK_UN);
  close(fd);
}

/* After SIGUSR2: hold nothing, keep the session, wait for SIGTERM. */
static void idle_until_stopped(void) {
  logf_("IDLE");
  notify("I\n");
  pthread_mutex_lock(&cur_mu);
  while (!atomic_load(&stop_flag))
    pthread_cond_wait(&cur_cond, &cur_mu);
  pthread_mutex_unlock(&cur_mu);
}

int main(int argc, char **argv) {
  static sigset_t set;
  pthread_t sig_thread;
  if (argc != 10) {
    fprintf(stderr,
            "usage: contender HOSTS LOCK SLOT RESOURCE HISTORY LOG SESSION_MS "
            "ACQ_TIMEOUT_MS HOLD_MS\n");
    return 2;
  }
  hosts = argv[1];
  lock_name = argv[2];
  slot = atoi(argv[3]);
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
  zkl_set_log_handler(on_log, NULL);
  logf_("BEGIN %ld %d", (long)getpid(), slot);

  if (open_session() != 0)
    goto out;
  while (!atomic_load(&stop_flag)) {
    int64_t token = 0;
    int rc;
    zkl_lock *l;
    if (atomic_load(&quiesce_flag)) {
      idle_until_stopped();
      break;
    }
    pthread_mutex_lock(&cur_mu);
    l = cur_lock;
    pthread_mutex_unlock(&cur_mu);
    logf_("ACQ");
    rc = zkl_lock_acquire(l, acq_timeout_ms, &token);
    if (rc == ZKL_OK) {
      atomic_store(&current_token, (long long)token);
      logf_("START %lld", (long long)token);
      critical_section((long long)token);
      logf_("END %lld", (long long)token);
      rc = zkl_lock_release(l);
      logf_("REL %d", rc);
      atomic_store(&current_token, 0);
      /* ZKL_ELOST: told once; the session may live on (lease or node
       * loss), and the next acquire says whether it does. */
      if (rc == ZKL_OK || rc == ZKL_ELOST)
        continue;
    } else {
      logf_("FAIL %d", rc);
      if (rc == ZKL_ETIMEDOUT || rc == ZKL_ECANCELED)
        continue;
    }
    /* ZKL_EEXPIRED or ZKL_ELOST from acquire (session expired, or our node
     * deleted), or
     * anything unexpected: start over on a fresh session. */
    close_session();
    if (open_session() != 0)
      goto out;
  }
out:
  close_session();
  logf_("EXIT");
  return 0;
}
