/* SPDX-License-Identifier: Apache-2.0 */
/* test_contention.c - mutual exclusion under contention (16 sessions x 200
 * cycles around a non-atomic read-modify-write), tokens in grant order, a
 * cancel storm (cancels, timeouts, reentrant holds, frees and closes at
 * every moment, racing grants and watch events), and a holder killed with
 * SIGKILL. */
#include "config.h"

#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "zktest.h"

#define SESSIONS 16
#define CYCLES 200

static char contention_name[64];
static const char *self_path; /* argv[0]: /proc/self/exe is valgrind under it */
static volatile long shared_counter; /* guarded only by the ZooKeeper lock */
static int64_t grant_tokens[SESSIONS * CYCLES];
static int worker_errors;

static void *worker(void *arg) {
  zkl_session *s = NULL;
  zkl_lock *l = NULL;
  int i, rc;
  (void)arg;
  rc = zkt_open(&s, zkt_hosts(), 20000, 0, 0);
  if (rc == ZKL_OK)
    rc = zkl_lock_new(&l, s, contention_name);
  for (i = 0; rc == ZKL_OK && i < CYCLES; i++) {
    int64_t token;
    long seen;
    rc = zkl_lock_acquire(l, 60000, &token);
    if (rc != ZKL_OK)
      break;
    /* Read, give others every chance to interleave, write back: any
     * second holder makes the final count come out short. */
    seen = shared_counter;
    sched_yield();
    if (seen < SESSIONS * CYCLES)
      grant_tokens[seen] = token;
    shared_counter = seen + 1;
    rc = zkl_lock_release(l);
  }
  if (rc != ZKL_OK) {
    fprintf(stderr, "worker: %s\n", zkl_strerror(rc));
    __sync_fetch_and_add(&worker_errors, 1);
  }
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  return NULL;
}

/* The workers (and the storm's threads) only record: what they saw is
 * asserted here, on the test's thread, once they are joined. */
static void test_mutual_exclusion(void) {
  pthread_t threads[SESSIONS];
  int i, started, increasing = 1;
  zkt_name(contention_name, sizeof contention_name, "contention");
  shared_counter = 0;
  worker_errors = 0;
  for (started = 0; started < SESSIONS; started++)
    if (pthread_create(&threads[started], NULL, worker, NULL) != 0)
      break;
  for (i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  CU_ASSERT_EQUAL_FATAL(started, SESSIONS); /* all ran, or none is left */
  CU_ASSERT_EQUAL(worker_errors, 0);
  CU_ASSERT_EQUAL(shared_counter, SESSIONS * CYCLES);
  for (i = 1; i < SESSIONS * CYCLES; i++)
    if (grant_tokens[i] <= grant_tokens[i - 1])
      increasing = 0;
  CU_ASSERT(increasing);
  printf("\n    %d grants, tokens %" PRId64 "..%" PRId64 "\n",
         SESSIONS * CYCLES, grant_tokens[0],
         grant_tokens[SESSIONS * CYCLES - 1]);
  zkt_assert_parent_empty(contention_name);
}

/* ------------------------------------------------------------ cancel storm
 * Sessions acquire with short timeouts while another thread cancels their
 * locks at random moments; now and then a lock is reentered, or freed or
 * its session closed while it holds or waits. Cancels then land in every
 * phase: with a create, a listing or a watch's getData in flight, and
 * between a watch event's arrival and its delivery. What must hold: no
 * overlap of holders, no error but ZKL_ETIMEDOUT and ZKL_ECANCELED, no node
 * left, and (under ASan, TSan and valgrind, which run this test) no memory
 * error or race. */
#define STORM_THREADS 6
#define STORM_GRANTS 1500
#define STORM_CANCELS 800

static char storm_name[64];
static pthread_mutex_t storm_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl_lock *storm_locks[STORM_THREADS]; /* what the canceller may hit */
static zkt_counter storm_grants, storm_cancels;
static int storm_stop, storm_errors, storm_inside, storm_overlaps;

static int storm_stopped(void) { return __atomic_load_n(&storm_stop, __ATOMIC_ACQUIRE); }

static void storm_error(const char *what, int rc) {
  fprintf(stderr, "cancel storm: %s: %s\n", what, zkl_strerror(rc));
  __atomic_add_fetch(&storm_errors, 1, __ATOMIC_RELAXED);
}

static void storm_publish(int i, zkl_lock *l) {
  pthread_mutex_lock(&storm_mu);
  storm_locks[i] = l;
  pthread_mutex_unlock(&storm_mu);
}

static void *storm_worker(void *arg) {
  int i = (int)(intptr_t)arg;
  unsigned seed = 7919u * (unsigned)(i + 1);
  while (!storm_stopped()) {
    zkl_session *s;
    zkl_lock *l;
    int k, rounds = 1 + rand_r(&seed) % 30, rc;
    if ((rc = zkt_open(&s, zkt_hosts(), 10000, 0, 0)) != ZKL_OK) {
      storm_error("session open", rc);
      break;
    }
    if ((rc = zkl_lock_new(&l, s, storm_name)) != ZKL_OK) {
      storm_error("lock new", rc);
      zkl_session_close(s, NULL);
      break;
    }
    storm_publish(i, l);
    for (k = 0; k < rounds && !storm_stopped(); k++) {
      int64_t token;
      rc = zkl_lock_acquire(l, 1 + rand_r(&seed) % 300, &token);
      if (rc == ZKL_ECANCELED) {
        zkt_counter_add(&storm_cancels, 1);
        continue;
      }
      if (rc == ZKL_ETIMEDOUT)
        continue;
      if (rc != ZKL_OK) {
        storm_error("acquire", rc);
        continue;
      }
      if (__atomic_add_fetch(&storm_inside, 1, __ATOMIC_ACQ_REL) != 1)
        __atomic_add_fetch(&storm_overlaps, 1, __ATOMIC_RELAXED);
      zkt_counter_add(&storm_grants, 1);
      if (rand_r(&seed) % 8 == 0)
        sched_yield();
      if (rand_r(&seed) % 10 == 0) { /* reentrant hold */
        if ((rc = zkl_lock_acquire(l, 0, NULL)) != ZKL_OK)
          storm_error("reentrant acquire", rc);
        else if ((rc = zkl_lock_release(l)) != ZKL_OK)
          storm_error("reentrant release", rc);
      }
      __atomic_sub_fetch(&storm_inside, 1, __ATOMIC_ACQ_REL);
      if (rand_r(&seed) % 15 == 0)
        break; /* freed or closed while it holds */
      if ((rc = zkl_lock_release(l)) != ZKL_OK)
        storm_error("release", rc);
    }
    storm_publish(i, NULL);
    if (rand_r(&seed) % 2) {
      zkl_lock_free(l);
      zkl_session_close(s, NULL);
    } else {
      zkl_session_close(s, NULL);
      zkl_lock_free(l);
    }
  }
  return NULL;
}

static void *storm_canceller(void *arg) {
  unsigned seed = 42;
  zkl_lock *l;
  (void)arg;
  while (!storm_stopped()) {
    struct timespec ts = {0, (long)(rand_r(&seed) % 2000) * 1000L};
    nanosleep(&ts, NULL); /* a random moment, not a synchronisation */
    pthread_mutex_lock(&storm_mu);
    l = storm_locks[rand_r(&seed) % STORM_THREADS];
    if (l)
      (void)zkl_lock_cancel(l); /* ZKL_EIDLE when it does not wait */
    pthread_mutex_unlock(&storm_mu);
  }
  return NULL;
}

static void test_cancel_storm(void) {
  pthread_t threads[STORM_THREADS], canceller;
  int i, started, canceller_started, grants = 0, cancels = 0;
  zkt_name(storm_name, sizeof storm_name, "storm");
  zkt_counter_init(&storm_grants);
  zkt_counter_init(&storm_cancels);
  storm_stop = storm_errors = storm_inside = storm_overlaps = 0;
  for (started = 0; started < STORM_THREADS; started++)
    if (pthread_create(&threads[started], NULL, storm_worker,
                       (void *)(intptr_t)started) != 0)
      break;
  canceller_started =
      pthread_create(&canceller, NULL, storm_canceller, NULL) == 0;
  if (started == STORM_THREADS && canceller_started) {
    grants = zkt_counter_wait(&storm_grants, STORM_GRANTS, 300000);
    cancels = zkt_counter_wait(&storm_cancels, STORM_CANCELS, 300000);
  }
  __atomic_store_n(&storm_stop, 1, __ATOMIC_RELEASE);
  for (i = 0; i < started; i++)
    pthread_join(threads[i], NULL);
  if (canceller_started)
    pthread_join(canceller, NULL);
  CU_ASSERT_FATAL(started == STORM_THREADS && canceller_started);
  printf("\n    %d grants, %d cancelled acquires\n", zkt_counter_get(&storm_grants),
         zkt_counter_get(&storm_cancels));
  CU_ASSERT(grants >= STORM_GRANTS);
  CU_ASSERT(cancels >= STORM_CANCELS);
  CU_ASSERT_EQUAL(storm_errors, 0);
  CU_ASSERT_EQUAL(storm_overlaps, 0);
  zkt_assert_parent_empty(storm_name);
}

/* The child: holds the lock on its own short session, tells the parent its
 * token on stdout, and waits to be killed. */
static int child_hold(const char *hosts, const char *name, int session_ms) {
  zkl_session *s;
  zkl_lock *l;
  int64_t token;
  if (zkt_open(&s, hosts, session_ms, 0, 0) != ZKL_OK ||
      zkl_lock_new(&l, s, name) != ZKL_OK ||
      zkl_lock_acquire(l, 10000, &token) != ZKL_OK)
    return 1;
  printf("%" PRId64 "\n", token);
  fflush(stdout);
  for (;;)
    pause();
}

static void test_holder_killed(void) {
  const int session_ms = 2000;
  char name[64], ms[16];
  zkl_session *s = zkt_session(10000);
  zkl_lock *l;
  int fds[2], status, rc;
  int64_t child_token = 0, token = 0;
  pid_t pid;
  FILE *in;
  zkt_name(name, sizeof name, "killed");
  snprintf(ms, sizeof ms, "%d", session_ms);
  CU_ASSERT_FATAL(pipe(fds) == 0);
  pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(self_path, "test_contention", "--child-hold", zkt_hosts(), name, ms,
          (char *)NULL);
    _exit(127);
  }
  CU_ASSERT_FATAL(pid > 0);
  close(fds[1]);
  in = fdopen(fds[0], "r");
  if (in) {
    CU_ASSERT_EQUAL(fscanf(in, "%" SCNd64, &child_token), 1);
    fclose(in);
  } else {
    close(fds[0]);
  }
  CU_ASSERT(child_token > 0);
  rc = zkl_lock_new(&l, s, name);
  if (in == NULL || rc != ZKL_OK) { /* the child must not outlive us */
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    zkl_session_close(s, NULL);
    CU_FAIL_FATAL("could not watch the holder");
  }
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(kill(pid, SIGKILL), 0);
  CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
  CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL); /* held */
  /* The server expires the dead holder's session; the waiter must get the
   * lock within the session timeout plus 2 s. */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, session_ms + 2000, &token), ZKL_OK);
  CU_ASSERT(token > child_token);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name); /* the dead holder's node went too */
}

int main(int argc, char **argv) {
  static const zkt_test tests[] = {
      {"16 sessions x 200 cycles: one holder at a time, tokens increasing", test_mutual_exclusion},
      {"a storm of cancels and timeouts beside grants leaves no overlap and no error", test_cancel_storm},
      {"a killed holder's lock goes to the waiter when its session expires, with a higher token", test_holder_killed},
      {NULL, NULL}};
  self_path = argv[0];
  if (argc == 5 && strcmp(argv[1], "--child-hold") == 0)
    return child_hold(argv[2], argv[3], atoi(argv[4]));
  return zkt_main("contention", tests);
}
