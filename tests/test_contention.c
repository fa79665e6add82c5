/* test_contention.c - mutual exclusion under contention (16 sessions x 200
 * cycles around a non-atomic read-modify-write), tokens in grant order, and a
 * holder killed with SIGKILL. */
#include "config.h"

#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
  rc = zkl_session_open(&s, zkt_hosts(), 20000);
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
  zkl_session_close(s);
  return NULL;
}

static void test_mutual_exclusion(void) {
  pthread_t threads[SESSIONS];
  int i, increasing = 1;
  char parent[512];
  zkt_name(contention_name, sizeof contention_name, "contention");
  shared_counter = 0;
  worker_errors = 0;
  for (i = 0; i < SESSIONS; i++)
    CU_ASSERT_FATAL(pthread_create(&threads[i], NULL, worker, NULL) == 0);
  for (i = 0; i < SESSIONS; i++)
    pthread_join(threads[i], NULL);
  CU_ASSERT_EQUAL(worker_errors, 0);
  CU_ASSERT_EQUAL(shared_counter, SESSIONS * CYCLES);
  for (i = 1; i < SESSIONS * CYCLES; i++)
    if (grant_tokens[i] <= grant_tokens[i - 1])
      increasing = 0;
  CU_ASSERT(increasing);
  printf("\n    %d grants, tokens %" PRId64 "..%" PRId64 "\n",
         SESSIONS * CYCLES, grant_tokens[0],
         grant_tokens[SESSIONS * CYCLES - 1]);
  zkt_parent(parent, sizeof parent, contention_name);
  CU_ASSERT(zkt_wait_children(parent, 0, 10000) <= 0);
}

/* The child: holds the lock on its own short session, tells the parent its
 * token on stdout, and waits to be killed. */
static int child_hold(const char *hosts, const char *name, int session_ms) {
  zkl_session *s;
  zkl_lock *l;
  int64_t token;
  if (zkl_session_open(&s, hosts, session_ms) != ZKL_OK ||
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
  int fds[2], status;
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
  CU_ASSERT_FATAL(in != NULL);
  CU_ASSERT_EQUAL(fscanf(in, "%" SCNd64, &child_token), 1);
  fclose(in);
  CU_ASSERT(child_token > 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EBUSY);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  /* The server expires the dead holder's session; the waiter must get the
   * lock within the session timeout plus 2 s. */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, session_ms + 2000, &token), ZKL_OK);
  CU_ASSERT(token > child_token);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkl_session_close(s);
}

int main(int argc, char **argv) {
  static const zkt_test tests[] = {
      {"16 sessions x 200 cycles", test_mutual_exclusion},
      {"holder killed", test_holder_killed},
      {NULL, NULL}};
  self_path = argv[0];
  if (argc == 5 && strcmp(argv[1], "--child-hold") == 0)
    return child_hold(argv[2], argv[3], atoi(argv[4]));
  return zkt_main("contention", tests);
}
