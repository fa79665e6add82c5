/* SPDX-License-Identifier: Apache-2.0 */
/* zk.c - raw ZooKeeper C client handles for the floors and for setup:
 * connecting with a bounded wait, the client's log kept out of the table,
 * the host list resolved once per window rather than at every poll,
 * parents made and removed. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define CONNECT_TIMEOUT_S 20

/* The handle's context: its session state, for the bounded connect wait.
 * Owned by the handle; bench_zk_close() frees it after the client's threads
 * are gone, so the watcher can never see it freed. */
typedef struct conn {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int state;
} conn;

static void discard_log(const char *line) { (void)line; }

static void conn_watcher(zhandle_t *zh, int type, int state, const char *path,
                         void *ctx) {
  conn *c = ctx;
  (void)zh;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&c->mu);
  c->state = state;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mu);
}

zhandle_t *bench_zk_connect(const bench_ctx *ctx, char *err, size_t errlen) {
  const char *hosts = ctx->hosts;
  conn *c = calloc(1, sizeof *c);
  zhandle_t *zh;
  struct timespec ts;
  bool up;
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cond, NULL);
  zh = zookeeper_init2(hosts, conn_watcher, ctx->session_ms, NULL, c, 0,
                       discard_log);
  if (!zh) {
    snprintf(err, errlen, "zookeeper_init2: %s", strerror(errno));
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return NULL;
  }
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += CONNECT_TIMEOUT_S;
  pthread_mutex_lock(&c->mu);
  while (c->state != ZOO_CONNECTED_STATE)
    if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) == ETIMEDOUT)
      break;
  up = c->state == ZOO_CONNECTED_STATE;
  pthread_mutex_unlock(&c->mu);
  if (!up) {
    snprintf(err, errlen, "no connection to %s within %d s", hosts,
             CONNECT_TIMEOUT_S);
    bench_zk_close(zh);
    return NULL;
  }
  /* By default the client resolves its host list again every time it
   * polls its socket (getaddrinfo and a re-seeded srand, twice or more per
   * request): measured here, three quarters of its instructions on a
   * create+delete loop. The floors are the client at its best, so they
   * allow one resolution per window; 0 keeps the client's default. */
  if (ctx->resolve_delay_ms != 0)
    zoo_set_servers_resolution_delay(zh, ctx->resolve_delay_ms);
  return zh;
}

void bench_zk_close(zhandle_t *zh) {
  conn *c;
  if (!zh)
    return;
  c = (conn *)zoo_get_context(zh);
  zookeeper_close(zh); /* joins the client's threads: the watcher is done */
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

int bench_zk_mkdirs(zhandle_t *zh, const char *path) {
  char buf[512];
  size_t i, len = strlen(path);
  int rc = ZOK;
  if (len >= sizeof buf)
    return ZBADARGUMENTS;
  for (i = 1; i <= len; i++) {
    if (i < len && path[i] != '/')
      continue;
    memcpy(buf, path, i);
    buf[i] = '\0';
    rc = zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZNODEEXISTS)
      rc = ZOK;
    if (rc != ZOK)
      break;
  }
  return rc;
}

void bench_zk_rmtree(zhandle_t *zh, const char *path) {
  struct String_vector sv = {0, NULL};
  char child[512];
  int i;
  if (zoo_get_children(zh, path, 0, &sv) == ZOK) {
    for (i = 0; i < sv.count; i++) {
      snprintf(child, sizeof child, "%s/%s", path, sv.data[i]);
      bench_zk_rmtree(zh, child);
    }
    deallocate_String_vector(&sv);
  }
  zoo_delete(zh, path, -1);
}
