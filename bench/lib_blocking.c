/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lib_blocking.c - libzklock's blocking API, as an application would use
 * it: n sessions, one thread each, all contending for one lock name (n = 1
 * is the uncontended workload). Each cycle is zkl_lock_acquire (no bound
 * but WAIT_MS), the exclusion check, zkl_lock_release. The lock is a mutex,
 * the write side of a read/write lock, or a semaphore of one lease: all
 * three exclude, so the same checks hold. lib_multilock() runs the same
 * cycles on one session with a multi-lock of several names
 * (zkl_lock_new_multi): the token, the czxid its nodes share, rises too.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "zklock.h"

#define WAIT_MS 30000 /* an acquire that takes this long counts as an error */
#define MAX_ERRORS 100

static atomic_uint name_serial;

typedef struct blk_thread {
  const bench_ctx *c;
  bench_lock_kind kind;
  bench_window *w;
  const char *name;
  const char *const *names; /* BENCH_MULTI: nnames names */
  int nnames;
  bench_lat lat;
  /* tokens must rise from one grant to the next, whoever holds */
  pthread_mutex_t *order_mu;
  int64_t *last_token;
  atomic_uint_fast64_t *order_errors;
} blk_thread;

static void *blk_main(void *arg) {
  blk_thread *t = arg;
  zkl_session *s = NULL;
  zkl_lock *l = NULL;
  zkl_rwlock *rw = NULL;
  int rc, failures = 0;
  rc = bench_open_session(&s, t->c->hosts, t->c->session_ms);
  if (rc == ZKL_OK) {
    switch (t->kind) {
    case BENCH_MUTEX:
      rc = zkl_lock_new(&l, s, t->name);
      break;
    case BENCH_RW_WRITE:
      if ((rc = zkl_rwlock_new(&rw, s, t->name)) == ZKL_OK)
        l = zkl_rwlock_write(rw);
      break;
    case BENCH_SEMAPHORE:
      rc = zkl_lock_new_semaphore(&l, s, t->name, 1);
      break;
    case BENCH_WATCHED:
      if ((rc = zkl_lock_new(&l, s, t->name)) == ZKL_OK)
        rc = zkl_lock_set_watch_after(l, 0);
      break;
    case BENCH_MULTI:
      rc = zkl_lock_new_multi(&l, s, t->names, t->nnames);
      break;
    }
  }
  if (rc != ZKL_OK) {
    bench_window_fail(t->w, "session: %s", zkl_strerror(rc));
    zkl_session_close(s, NULL);
    return NULL;
  }
  bench_window_ready(t->w);
  while (atomic_load(&t->w->phase) != BENCH_STOP && failures < MAX_ERRORS) {
    double t0 = bench_now();
    int64_t token = 0;
    rc = zkl_lock_acquire(l, WAIT_MS, &token);
    if (rc != ZKL_OK) {
      atomic_fetch_add(&t->w->errors, 1);
      failures++;
      continue;
    }
    failures = 0;
    if (atomic_load(&t->w->phase) == BENCH_MEASURE)
      bench_lat_add(&t->lat, (bench_now() - t0) * 1e3);
    pthread_mutex_lock(t->order_mu);
    if (token <= *t->last_token)
      atomic_fetch_add(t->order_errors, 1);
    *t->last_token = token;
    pthread_mutex_unlock(t->order_mu);
    bench_window_hold(t->w);
    if (zkl_lock_release(l) != ZKL_OK)
      atomic_fetch_add(&t->w->errors, 1);
  }
  if (rw)
    zkl_rwlock_free(rw);
  else
    zkl_lock_free(l);
  zkl_session_close(s, NULL);
  bench_window_done(t->w);
  return NULL;
}

/* n sessions, one thread each, on one lock; with BENCH_MULTI, n = 1 and
 * names (nnames of them) are the multi-lock's. */
static void run_blocking(const bench_ctx *c, int n, bench_lock_kind kind,
                         const char *const *names, int nnames, const char *name,
                         bench_result *r) {
  bench_window w;
  blk_thread *ts = calloc((size_t)n, sizeof *ts);
  pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
  int64_t last_token = 0;
  atomic_uint_fast64_t order_errors;
  bench_lat all = {0};
  int i;
  if (!ts) {
    bench_fail(r, "out of memory");
    return;
  }
  atomic_init(&order_errors, 0);
  bench_window_init(&w);
  for (i = 0; i < n; i++) {
    ts[i].c = c;
    ts[i].kind = kind;
    ts[i].w = &w;
    ts[i].name = name;
    ts[i].names = names;
    ts[i].nnames = nnames;
    ts[i].order_mu = &order_mu;
    ts[i].last_token = &last_token;
    ts[i].order_errors = &order_errors;
  }
  if (bench_run_threads(c, &w, n, blk_main, ts, sizeof *ts, r)) {
    for (i = 0; i < n; i++)
      bench_lat_merge(&all, &ts[i].lat);
    r->p50_ms = bench_lat_quantile(&all, 0.50);
    r->p99_ms = bench_lat_quantile(&all, 0.99);
  }
  /* A token that did not rise means two grants out of order: as bad as an
   * overlap, and reported with them. */
  r->overlaps += atomic_load(&order_errors);
  for (i = 0; i < n; i++)
    bench_lat_free(&ts[i].lat);
  bench_lat_free(&all);
  free(ts);
  bench_window_destroy(&w);
}

void lib_blocking(const bench_ctx *c, int n, bench_result *r) {
  lib_blocking_kind(c, n, BENCH_MUTEX, r);
}

void lib_blocking_kind(const bench_ctx *c, int n, bench_lock_kind kind,
                       bench_result *r) {
  char name[128];
  snprintf(name, sizeof name, "bench/%u/blocking-%u", c->run_id,
           atomic_fetch_add(&name_serial, 1));
  run_blocking(c, n, kind, NULL, 0, name, r);
}

void lib_multilock(const bench_ctx *c, int names, bench_result *r) {
  char base[128], (*buf)[160] = calloc((size_t)names, sizeof *buf);
  const char **ptrs = calloc((size_t)names, sizeof *ptrs);
  int i;
  if (!buf || !ptrs) {
    bench_fail(r, "out of memory");
  } else {
    snprintf(base, sizeof base, "bench/%u/multi-%u", c->run_id,
             atomic_fetch_add(&name_serial, 1));
    for (i = 0; i < names; i++) {
      snprintf(buf[i], sizeof buf[i], "%s/%d", base, i);
      ptrs[i] = buf[i];
    }
    run_blocking(c, 1, BENCH_MULTI, ptrs, names, base, r);
  }
  free(ptrs);
  free(buf);
}
