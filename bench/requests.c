/* SPDX-License-Identifier: Apache-2.0 */
/*
 * requests.c - zklock-requests: which requests libzklock sends per cycle,
 * by kind, from the library's own counters (zkl_session.sent, read with
 * zkl__debug_counts). The "trace of the requests each cycle sends" behind
 * the profile in docs/performance.md; it links the convenience library
 * for internal.h, which is why it is not part of zklock-bench.
 *
 *   zklock-requests [-s HOSTS] [CYCLES]
 *
 * Without -s it starts a throwaway server (forceSync=no: counts do not
 * depend on the disk). Runs, after a first cycle that creates the parents:
 *   uncontended   CYCLES acquire+release, blocking, one session
 *   multi-lock    the same with a multi-lock of 1, then 8 names
 *   contended     8 sessions, one thread each, CYCLES grants in all
 *   many locks    100 locks on one session, async, CYCLES cycles in all
 *   long queue    200 waiters on one lock over 4 sessions, async, each
 *                 queueing again after its release; CYCLES handoffs
 * and prints, for each, the requests per cycle of each kind. Then what the
 * lease costs an idle session (-i SECONDS, default 20; 0: skipped): a 10 s
 * session holding nothing, then holding one lock, then the same with the
 * servers' tickTime given (2000, as ZooKeeper ships it): requests a second
 * of each kind, and of them the writes (the lease's, which the servers
 * log to disk).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "internal.h"

static const char *const kind_names[ZKL_RQ_KINDS] = {
    [ZKL_RQ_PARENT] = "parent create",
    [ZKL_RQ_CREATE] = "create",
    [ZKL_RQ_LIST] = "list children",
    [ZKL_RQ_PRED_GET] = "getData pred",
    [ZKL_RQ_OWN_GET] = "getData own",
    [ZKL_RQ_RECOVER_GET] = "recover get",
    [ZKL_RQ_DELETE] = "delete (abandoned)",
    [ZKL_RQ_RELEASE] = "delete (release)",
    [ZKL_RQ_CHILD_WATCH] = "list + child watch",
    [ZKL_RQ_CLEANUP] = "cleanup",
    [ZKL_RQ_CARRIER] = "carrier exists",
    [ZKL_RQ_PROBE] = "probe",
    [ZKL_RQ_LEASE_SYNC] = "lease sync",
    [ZKL_RQ_LEASE_WRITE] = "lease write (multi: check /)",
    [ZKL_RQ_QUERY] = "question (participants, revoke, leader)",
    [ZKL_RQ_TAP] = "wrapped tap",
    [ZKL_RQ_MULTI] = "multi",
    [ZKL_RQ_KIND_CHECK] = "kinds check list",
    [ZKL_RQ_MULTI_LOCK] = "multi-lock transaction",
    [ZKL_RQ_BREAK] = "break",
    [ZKL_RQ_CONFIG] = "configuration read",
    [ZKL_RQ_FLUSH] = "flush (ensemble move)",
    [ZKL_RQ_PART_CHECK] = "first try: part queue list",
    [ZKL_RQ_AHEAD_GET] = "getData ahead of pred",
};

static const char *hosts;
static unsigned run_id;

typedef struct tally {
  unsigned long sent[ZKL_RQ_KINDS];
  unsigned long cycles;
} tally;

static void add_counts(tally *t, zkl_session *s, int sign) {
  zkl_debug_counts c;
  int k;
  zkl__debug_counts(s, &c);
  for (k = 0; k < ZKL_RQ_KINDS; k++)
    t->sent[k] += (unsigned long)sign * c.sent[k];
}

static void print(const char *what, const tally *t) {
  int k;
  unsigned long total = 0;
  printf("\n%s: %lu cycles\n", what, t->cycles);
  for (k = 0; k < ZKL_RQ_KINDS; k++) {
    if (!t->sent[k])
      continue;
    total += t->sent[k];
    printf("  %-22s %6.3f per cycle\n", kind_names[k],
           (double)t->sent[k] / (double)t->cycles);
  }
  printf("  %-22s %6.3f per cycle\n", "all requests",
         (double)total / (double)t->cycles);
}

static int die(const char *what, int rc) {
  fprintf(stderr, "zklock-requests: %s: %s\n", what, zkl_strerror(rc));
  exit(1);
}

/* ------------------------------------------------------------ uncontended */

/* names 0: a mutex; else a multi-lock of that many names. */
static void uncontended(int cycles, int names) {
  zkl_session *s;
  zkl_lock *l;
  tally t = {{0}, 0};
  char name[64], multi[ZKL_MULTI_NAMES_MAX][64], what[64];
  const char *ptrs[ZKL_MULTI_NAMES_MAX];
  int i, rc;
  snprintf(name, sizeof name, "requests/%u/one", run_id);
  for (i = 0; i < names; i++) {
    snprintf(multi[i], sizeof multi[i], "requests/%u/multi-%d/%d", run_id,
             names, i);
    ptrs[i] = multi[i];
  }
  if ((rc = bench_open_session(&s, hosts, 10000)) != ZKL_OK)
    die("session", rc);
  if ((rc = names ? zkl_lock_new_multi(&l, s, ptrs, names)
                  : zkl_lock_new(&l, s, name)) != ZKL_OK)
    die("lock", rc);
  /* the first cycle creates the parents */
  if ((rc = zkl_lock_acquire(l, 10000, NULL)) != ZKL_OK ||
      (rc = zkl_lock_release(l)) != ZKL_OK)
    die("first cycle", rc);
  zkl__debug_wait_settled(s, 10000);
  add_counts(&t, s, -1);
  for (i = 0; i < cycles; i++) {
    if ((rc = zkl_lock_acquire(l, 10000, NULL)) != ZKL_OK ||
        (rc = zkl_lock_release(l)) != ZKL_OK)
      die("cycle", rc);
    t.cycles++;
  }
  zkl__debug_wait_settled(s, 10000);
  add_counts(&t, s, 1);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  if (names)
    snprintf(what, sizeof what, "multi-lock of %d name%s (blocking, one "
             "session)", names, names == 1 ? "" : "s");
  else
    snprintf(what, sizeof what, "uncontended (blocking, one session)");
  print(what, &t);
}

/* -------------------------------------------------------------- contended */

#define CONTENDERS 8

typedef struct contender {
  zkl_session *s;
  zkl_lock *l;
  int cycles;
  pthread_t tid;
} contender;

static void *contend(void *arg) {
  contender *c = arg;
  int i, rc;
  for (i = 0; i < c->cycles; i++)
    if ((rc = zkl_lock_acquire(c->l, 30000, NULL)) != ZKL_OK ||
        (rc = zkl_lock_release(c->l)) != ZKL_OK)
      die("contended cycle", rc);
  return NULL;
}

static void contended(int cycles) {
  contender cs[CONTENDERS];
  tally t = {{0}, 0};
  char name[64];
  int i, rc;
  snprintf(name, sizeof name, "requests/%u/contended", run_id);
  for (i = 0; i < CONTENDERS; i++) {
    if ((rc = bench_open_session(&cs[i].s, hosts, 10000)) != ZKL_OK)
      die("session", rc);
    if ((rc = zkl_lock_new(&cs[i].l, cs[i].s, name)) != ZKL_OK)
      die("lock", rc);
    cs[i].cycles = cycles / CONTENDERS;
    t.cycles += (unsigned long)cs[i].cycles;
  }
  if ((rc = zkl_lock_acquire(cs[0].l, 10000, NULL)) != ZKL_OK ||
      (rc = zkl_lock_release(cs[0].l)) != ZKL_OK)
    die("first cycle", rc);
  for (i = 0; i < CONTENDERS; i++) {
    zkl__debug_wait_settled(cs[i].s, 10000);
    add_counts(&t, cs[i].s, -1);
  }
  for (i = 0; i < CONTENDERS; i++)
    pthread_create(&cs[i].tid, NULL, contend, &cs[i]);
  for (i = 0; i < CONTENDERS; i++)
    pthread_join(cs[i].tid, NULL);
  for (i = 0; i < CONTENDERS; i++) {
    zkl__debug_wait_settled(cs[i].s, 10000);
    add_counts(&t, cs[i].s, 1);
    zkl_lock_free(cs[i].l);
    zkl_session_close(cs[i].s, NULL);
  }
  print("contended (8 sessions, one thread each, one lock)", &t);
}

/* ------------------------------------------------------------- many locks */

#define MANY 100
#define QUEUE 200
#define QUEUE_SESSIONS 4

typedef struct many {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int left;     /* cycles still to start */
  int finished; /* slots that stopped */
} many;

typedef struct mslot {
  many *m;
  zkl_lock *l;
} mslot;

static void m_acquired(zkl_lock *l, int rc, int64_t token, void *arg);

static void m_next(mslot *sl) {
  bool go;
  pthread_mutex_lock(&sl->m->mu);
  go = sl->m->left > 0;
  if (go)
    sl->m->left--;
  else
    sl->m->finished++;
  pthread_cond_broadcast(&sl->m->cond);
  pthread_mutex_unlock(&sl->m->mu);
  if (go && zkl_lock_acquire_async(sl->l, -1, m_acquired, sl) != ZKL_OK)
    die("acquire_async", ZKL_EINVAL);
}

static void m_released(zkl_lock *l, int rc, void *arg) {
  (void)l;
  if (rc != ZKL_OK)
    die("release", rc);
  m_next(arg);
}

static void m_acquired(zkl_lock *l, int rc, int64_t token, void *arg) {
  (void)token;
  if (rc != ZKL_OK)
    die("acquire", rc);
  if (zkl_lock_release_async(l, m_released, arg) != ZKL_OK)
    die("release_async", ZKL_EINVAL);
}

/* `locks` contenders cycling through the async API on `sessions`
 * sessions: different lock names (many locks), or one name (a queue). */
static void async_cycles(int cycles, int sessions, int locks, bool one_name,
                         const char *what) {
  zkl_session *ss[8];
  mslot *slots = calloc((size_t)locks, sizeof *slots);
  many m;
  tally t = {{0}, 0};
  char name[64];
  int i, rc, round;
  if (!slots)
    die("slots", ZKL_ENOMEM);
  pthread_mutex_init(&m.mu, NULL);
  pthread_cond_init(&m.cond, NULL);
  for (i = 0; i < sessions; i++)
    if ((rc = bench_open_session(&ss[i], hosts, 10000)) != ZKL_OK)
      die("session", rc);
  for (i = 0; i < locks; i++) {
    if (one_name)
      snprintf(name, sizeof name, "requests/%u/queue", run_id);
    else
      snprintf(name, sizeof name, "requests/%u/many/%d", run_id, i);
    slots[i].m = &m;
    if ((rc = zkl_lock_new(&slots[i].l, ss[i % sessions], name)) != ZKL_OK)
      die("lock", rc);
  }
  /* round 0: one cycle each (the parents, the queue filled); round 1:
   * counted */
  for (round = 0; round < 2; round++) {
    int want = round == 0 ? locks : cycles;
    pthread_mutex_lock(&m.mu);
    m.left = want;
    m.finished = 0;
    pthread_mutex_unlock(&m.mu);
    if (round == 1) {
      for (i = 0; i < sessions; i++) {
        zkl__debug_wait_settled(ss[i], 10000);
        add_counts(&t, ss[i], -1);
      }
      t.cycles = (unsigned long)want;
    }
    for (i = 0; i < locks; i++)
      m_next(&slots[i]);
    {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 120;
      pthread_mutex_lock(&m.mu);
      while (m.finished < locks)
        if (pthread_cond_timedwait(&m.cond, &m.mu, &ts) != 0)
          die("async cycles: no progress in 120 s", ZKL_ETIMEDOUT);
      pthread_mutex_unlock(&m.mu);
    }
  }
  for (i = 0; i < sessions; i++) {
    zkl__debug_wait_settled(ss[i], 10000);
    add_counts(&t, ss[i], 1);
  }
  for (i = 0; i < locks; i++)
    zkl_lock_free(slots[i].l);
  for (i = 0; i < sessions; i++)
    zkl_session_close(ss[i], NULL);
  free(slots);
  print(what, &t);
}

/* ------------------------------------------------------------ idle */

/* A window of `seconds` with nothing to do, bounded by a timed wait on a
 * condition nobody signals: what is measured is what the session sends
 * by itself meanwhile. */
static void idle_window(int seconds) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += seconds;
  pthread_mutex_lock(&mu);
  while (pthread_cond_timedwait(&cond, &mu, &ts) == 0) {
  }
  pthread_mutex_unlock(&mu);
}

static void idle_print(const char *what, const tally *t, int seconds) {
  int k;
  unsigned long total = 0;
  printf("\n%s: %d s\n", what, seconds);
  for (k = 0; k < ZKL_RQ_KINDS; k++) {
    if (!t->sent[k])
      continue;
    total += t->sent[k];
    printf("  %-28s %6.3f a second\n", kind_names[k],
           (double)t->sent[k] / seconds);
  }
  printf("  %-28s %6.3f a second\n", "all requests",
         (double)total / seconds);
}

/* tick_ms: what the session is told of the servers' tickTime (0: none). */
static void idle(int seconds, int tick_ms) {
  zkl_session *s;
  zkl_lock *l;
  tally none = {{0}, 0}, held = {{0}, 0};
  char name[64], what[160];
  int rc;
  snprintf(name, sizeof name, "requests/%u/idle-%d", run_id, tick_ms);
  if ((rc = bench_open_session(&s, hosts, 10000)) != ZKL_OK)
    die("session", rc);
  if (tick_ms && (rc = zkl_session_set_server_tick(s, tick_ms)) != ZKL_OK)
    die("server tick", rc);
  if ((rc = zkl_lock_new(&l, s, name)) != ZKL_OK)
    die("lock", rc);
  add_counts(&none, s, -1);
  idle_window(seconds);
  add_counts(&none, s, 1);
  if ((rc = zkl_lock_acquire(l, 10000, NULL)) != ZKL_OK)
    die("acquire", rc);
  add_counts(&held, s, -1);
  idle_window(seconds);
  add_counts(&held, s, 1);
  if ((rc = zkl_lock_release(l)) != ZKL_OK)
    die("release", rc);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  snprintf(what, sizeof what, "idle session of 10 s, %s, holding nothing",
           tick_ms ? "tickTime 2000 given" : "tickTime not given");
  idle_print(what, &none, seconds);
  snprintf(what, sizeof what, "idle session of 10 s, %s, holding one lock",
           tick_ms ? "tickTime 2000 given" : "tickTime not given");
  idle_print(what, &held, seconds);
}

int main(int argc, char **argv) {
  int cycles = 2000, opt, idle_s = 20;
  while ((opt = getopt(argc, argv, "s:i:h")) != -1) {
    if (opt == 's') {
      hosts = optarg;
    } else if (opt == 'i') {
      idle_s = atoi(optarg);
    } else {
      fprintf(stderr, "usage: zklock-requests [-s HOSTS] [-i SECONDS] "
                      "[CYCLES]\n");
      return opt == 'h' ? 0 : 2;
    }
  }
  if (optind < argc)
    cycles = atoi(argv[optind]);
  if (cycles < CONTENDERS)
    cycles = CONTENDERS;
  if (!hosts && !(hosts = server_start(true)))
    return 99;
  run_id = (unsigned)getpid() ^ (unsigned)time(NULL);
  printf("libzklock %s: requests sent per acquire+release cycle, by kind "
         "(zkl_session.sent)\n", zkl_version_string());
  uncontended(cycles, 0);
  uncontended(cycles, 1);
  uncontended(cycles, 8);
  contended(cycles);
  async_cycles(cycles, 1, MANY, false,
               "many locks (100 locks on one session, async)");
  async_cycles(cycles, QUEUE_SESSIONS, QUEUE, true,
               "long queue (200 waiters on one lock over 4 sessions, async; "
               "a cycle is a handoff)");
  if (idle_s > 0) {
    idle(idle_s, 0);
    idle(idle_s, 2000);
  }
  server_stop_all();
  return 0;
}
