/* SPDX-License-Identifier: Apache-2.0 */
/* measure.c - clocks, CPU time, latency quantiles and the measuring window
 * that every in-process contestant shares with the driver. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bench_cpu_self(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return NAN;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

void bench_sleep_until(double t) {
  struct timespec ts;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* -------------------------------------------------------------- latencies */

void bench_lat_add(bench_lat *l, double ms) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 4096;
    float *p = realloc(l->ms, cap * sizeof *p);
    if (!p)
      return; /* a lost sample, not a lost run */
    l->ms = p;
    l->cap = cap;
  }
  l->ms[l->n++] = (float)ms;
}

void bench_lat_merge(bench_lat *into, bench_lat *from) {
  size_t i;
  for (i = 0; i < from->n; i++)
    bench_lat_add(into, from->ms[i]);
  bench_lat_free(from);
}

void bench_lat_free(bench_lat *l) {
  free(l->ms);
  l->ms = NULL;
  l->n = l->cap = 0;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

double bench_lat_quantile(bench_lat *l, double p) {
  size_t i;
  if (l->n == 0)
    return NAN;
  qsort(l->ms, l->n, sizeof *l->ms, cmp_float);
  i = (size_t)(p * (double)l->n);
  if (i >= l->n)
    i = l->n - 1;
  return l->ms[i];
}

/* ----------------------------------------------------------------- window */

static void abs_timeout(struct timespec *ts, double timeout_s) {
  double t;
  clock_gettime(CLOCK_REALTIME, ts);
  t = (double)ts->tv_nsec / 1e9 + timeout_s;
  ts->tv_sec += (time_t)t;
  ts->tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
}

void bench_window_init(bench_window *w) {
  memset(w, 0, sizeof *w);
  atomic_init(&w->phase, BENCH_WARM);
  atomic_init(&w->ops, 0);
  atomic_init(&w->errors, 0);
  atomic_init(&w->overlaps, 0);
  atomic_init(&w->inside, 0);
  atomic_init(&w->ops_target, 0);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cond, NULL);
}

void bench_window_destroy(bench_window *w) {
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->mu);
}

void bench_window_ready(bench_window *w) {
  pthread_mutex_lock(&w->mu);
  w->ready++;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->mu);
}

void bench_window_fail(bench_window *w, const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&w->mu);
  if (!w->error[0]) {
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
  }
  w->failed++;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->mu);
}

void bench_window_done(bench_window *w) {
  pthread_mutex_lock(&w->mu);
  w->done++;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->mu);
}

bool bench_window_wait_ready(bench_window *w, int n, double timeout_s) {
  struct timespec ts;
  bool ok;
  abs_timeout(&ts, timeout_s);
  pthread_mutex_lock(&w->mu);
  while (w->ready + w->failed < n)
    if (pthread_cond_timedwait(&w->cond, &w->mu, &ts) == ETIMEDOUT)
      break;
  ok = w->ready == n;
  if (!ok && !w->error[0])
    snprintf(w->error, sizeof w->error, "setup: %d of %d ready after %.0f s",
             w->ready, n, timeout_s);
  pthread_mutex_unlock(&w->mu);
  return ok;
}

bool bench_window_wait_done(bench_window *w, int n, double timeout_s) {
  struct timespec ts;
  bool ok;
  abs_timeout(&ts, timeout_s);
  pthread_mutex_lock(&w->mu);
  while (w->done < n)
    if (pthread_cond_timedwait(&w->cond, &w->mu, &ts) == ETIMEDOUT)
      break;
  ok = w->done >= n;
  pthread_mutex_unlock(&w->mu);
  return ok;
}

bool bench_window_wait_ops(bench_window *w, uint64_t want, double timeout_s) {
  struct timespec ts;
  bool ok;
  /* The grant that reaches the target signals (bench_window_hold); the
   * target is published before the count is checked under the mutex, so
   * that grant cannot be missed. */
  atomic_store(&w->ops_target, want);
  abs_timeout(&ts, timeout_s);
  pthread_mutex_lock(&w->mu);
  while (atomic_load(&w->ops) < want && w->failed == 0)
    if (pthread_cond_timedwait(&w->cond, &w->mu, &ts) == ETIMEDOUT)
      break;
  ok = atomic_load(&w->ops) >= want && w->failed == 0;
  pthread_mutex_unlock(&w->mu);
  atomic_store(&w->ops_target, 0);
  return ok;
}

void bench_window_hold(bench_window *w) {
  uint64_t n;
  if (atomic_fetch_add(&w->inside, 1) != 0)
    atomic_fetch_add(&w->overlaps, 1);
  n = atomic_fetch_add(&w->ops, 1) + 1;
  atomic_fetch_sub(&w->inside, 1);
  if (n == atomic_load(&w->ops_target)) {
    pthread_mutex_lock(&w->mu);
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
  }
}

void bench_window_run(bench_window *w, const bench_ctx *c, bench_result *r) {
  double t0, t1, c0, c1;
  uint64_t o0, o1;
  bench_sleep_until(bench_now() + c->warm_s);
  if (c->before_window)
    c->before_window();
  o0 = atomic_load(&w->ops);
  c0 = bench_cpu_self();
  t0 = bench_now();
  atomic_store(&w->phase, BENCH_MEASURE);
  bench_sleep_until(t0 + c->secs);
  o1 = atomic_load(&w->ops);
  c1 = bench_cpu_self();
  t1 = bench_now();
  atomic_store(&w->phase, BENCH_STOP);
  r->seconds = t1 - t0;
  r->ops = o1 - o0;
  r->rate = r->seconds > 0 ? (double)r->ops / r->seconds : 0;
  r->cpu_s = c1 - c0;
}

void bench_window_totals(bench_window *w, bench_result *r) {
  r->overlaps = atomic_load(&w->overlaps);
  r->errors = atomic_load(&w->errors);
}

/* ------------------------------------------------------------ threads */

bool bench_run_threads(const bench_ctx *c, bench_window *w, int n,
                        void *(*fn)(void *), void *args, size_t sz,
                        bench_result *r) {
  pthread_t *tids = calloc((size_t)n, sizeof *tids);
  int i, started = 0;
  bool ok;
  if (!tids) {
    bench_fail(r, "out of memory");
    return false;
  }
  for (i = 0; i < n; i++) {
    int e = pthread_create(&tids[i], NULL, fn, (char *)args + (size_t)i * sz);
    if (e != 0) {
      bench_window_fail(w, "pthread_create: %s", strerror(e));
      break;
    }
    started++;
  }
  ok = started == n && bench_window_wait_ready(w, n, 60);
  if (ok)
    bench_window_run(w, c, r);
  else
    bench_fail(r, "%s", w->error);
  atomic_store(&w->phase, BENCH_STOP);
  for (i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
  free(tids);
  bench_window_totals(w, r);
  r->ok = ok;
  return ok;
}

void bench_fail(bench_result *r, const char *fmt, ...) {
  va_list ap;
  r->ok = false;
  va_start(ap, fmt);
  vsnprintf(r->error, sizeof r->error, fmt, ap);
  va_end(ap);
}
