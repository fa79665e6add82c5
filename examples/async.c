/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async.c - the watch-callback API: start acquires on many locks from one
 * session without a thread per lock; each callback runs exactly once on the
 * ZooKeeper completion thread.
 *
 *   usage: async [HOSTS [COUNT]]       (default 127.0.0.1:2181, 10 locks)
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <zklock.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int outstanding;

static void one_done(void) {
  pthread_mutex_lock(&mu);
  outstanding--;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&mu);
}

static void released(zkl_lock *lock, int rc, void *arg) {
  (void)arg;
  if (rc != ZKL_OK)
    fprintf(stderr, "%s: release: %s\n", zkl_lock_name(lock), zkl_strerror(rc));
  one_done();
}

static void acquired(zkl_lock *lock, int rc, int64_t token, void *arg) {
  (void)arg;
  if (rc != ZKL_OK) {
    fprintf(stderr, "%s: %s\n", zkl_lock_name(lock), zkl_strerror(rc));
    one_done();
    return;
  }
  printf("%s: token %" PRId64 "\n", zkl_lock_name(lock), token);
  /* Callbacks must not block: start the release and return. */
  if (zkl_lock_release_async(lock, released, NULL) != ZKL_OK)
    one_done();
}

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
  int count = argc > 2 ? atoi(argv[2]) : 10, i, rc;
  zkl_session_options o;
  zkl_session *session;
  zkl_lock **locks;

  if (count <= 0)
    count = 10;
  zkl_session_options_init(&o);
  o.hosts = hosts;
  o.session_timeout_ms = 10000;
  rc = zkl_session_open(&session, &o);
  if (rc != ZKL_OK) {
    fprintf(stderr, "cannot connect to %s: %s\n", hosts, zkl_strerror(rc));
    return 1;
  }
  locks = calloc((size_t)count, sizeof *locks);
  for (i = 0; locks && i < count; i++) {
    char name[64];
    snprintf(name, sizeof name, "example-async/%d", i);
    if (zkl_lock_new(&locks[i], session, name) != ZKL_OK)
      break;
    pthread_mutex_lock(&mu);
    outstanding++;
    pthread_mutex_unlock(&mu);
    if (zkl_lock_acquire_async(locks[i], 5000, acquired, NULL) != ZKL_OK)
      one_done();
  }
  pthread_mutex_lock(&mu);
  while (outstanding > 0)
    pthread_cond_wait(&cond, &mu);
  pthread_mutex_unlock(&mu);

  for (i = 0; locks && i < count; i++)
    zkl_lock_free(locks[i]);
  free(locks);
  zkl_session_close(session, NULL);
  return 0;
}
