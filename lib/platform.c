/* SPDX-License-Identifier: Apache-2.0 */
/* platform.c - clocks, condition variables, thread marks and logging. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

int64_t zkl__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int zkl__cond_init(pthread_cond_t *c) {
  pthread_condattr_t attr;
  int rc;
  if (pthread_condattr_init(&attr) != 0)
    return ZKL_ESYSTEM;
  /* Deadlines are monotonic: a wall-clock step must not stretch or cut a
   * lock timeout. */
  rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_cond_init(c, &attr);
  pthread_condattr_destroy(&attr);
  return rc == 0 ? ZKL_OK : ZKL_ESYSTEM;
}

void zkl__cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m,
                          int64_t deadline_ms) {
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline_ms / 1000);
  ts.tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
  pthread_cond_timedwait(c, m, &ts);
}

/* Set once a thread has run one of our ZooKeeper callbacks: ZooKeeper's
 * completion threads run nothing else of ours, and they live as long as
 * their handle, so the mark never needs clearing. */
static __thread bool zk_thread_mark;

void zkl__mark_zk_thread(void) { zk_thread_mark = true; }
bool zkl__on_zk_thread(void) { return zk_thread_mark; }

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl_log_cb log_fn;
static void *log_arg;

int zkl_on_log(zkl_log_cb cb, void *arg) {
  pthread_mutex_lock(&log_mu);
  log_fn = cb;
  log_arg = arg;
  pthread_mutex_unlock(&log_mu);
  return ZKL_OK;
}

/* An environment variable set to something other than "" or "0". */
static bool env_on(const char *name) {
  const char *env = getenv(name);
  return env && *env && strcmp(env, "0") != 0;
}

static void log_line(const char *line) {
  zkl_log_cb fn;
  void *arg;
  pthread_mutex_lock(&log_mu);
  fn = log_fn;
  arg = log_arg;
  pthread_mutex_unlock(&log_mu);
  if (fn) {
    fn(line, arg);
    return;
  }
  /* ZKLOCK_TRACE=1 (engine.c's transitions) prints without ZKLOCK_DEBUG,
   * and with them the rest of the log, to read them in */
  if (env_on("ZKLOCK_DEBUG") || env_on("ZKLOCK_TRACE"))
    fprintf(stderr, "zklock: %s\n", line);
}

void zkl__log(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  log_line(buf);
}

void zkl__zk_log(const char *line) {
  char buf[1024];
  size_t n;
  int saved = errno; /* the client logs from paths that then read errno */
  n = strlen(line);
  if (n >= sizeof buf)
    n = sizeof buf - 1;
  memcpy(buf, line, n);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    n--;
  buf[n] = '\0';
  log_line(buf);
  errno = saved;
}
