/* SPDX-License-Identifier: Apache-2.0 */
/*
 * raw.c - the floors: what the raw ZooKeeper C client does with the fewest
 * requests, on the same server in the same run as the library.
 *
 *   create+delete     one session, one thread: zoo_create (ephemeral
 *                     sequential) then zoo_delete, one at a time. The least
 *                     any lock's acquire+release can cost: two writes.
 *   pipelined         the same cycles from one session with `inflight` of
 *                     them in flight at once (async calls; the next create
 *                     of a slot is sent from the delete's completion).
 *   recipe            the best contended recipe written with synchronous
 *                     calls, one session and one thread per contender:
 *                     create, list, watch the predecessor with getData, and
 *                     on its deletion hold at once if it was the lowest node
 *                     of the listing (else list again). No unique ids, no
 *                     lost-reply recovery, no own-node watch, no lease: the
 *                     recipe stripped to the requests on the handoff path.
 *   multi             one session, one thread, `names` parents: one
 *                     zoo_multi of `names` ephemeral sequential creates (one
 *                     under each parent), then one zoo_multi of their
 *                     deletes. What a multi-lock's transaction costs at
 *                     least: two round trips, 2 x names writes, whatever
 *                     the count; no listing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define WAIT_S 30.0 /* bound on any single wait of a floor */
#define MAX_ERRORS 100 /* a client that fails this often in a row stops */

static atomic_uint parent_serial;

/* A fresh persistent parent for one run: sequence numbers start at 0 and
 * nothing of an earlier run is listed. */
static int make_parent(zhandle_t *zh, const bench_ctx *c, const char *kind,
                       char *buf, size_t len) {
  snprintf(buf, len, "/bench/raw-%u-%s-%u", c->run_id, kind,
           atomic_fetch_add(&parent_serial, 1));
  return bench_zk_mkdirs(zh, buf);
}

/* ---------------------------------------------------------- create+delete */

typedef struct cd_thread {
  const bench_ctx *c;
  bench_window *w;
  char parent[256];
  bench_lat lat;
} cd_thread;

static void *cd_main(void *arg) {
  cd_thread *t = arg;
  char err[160], path[300], created[300];
  zhandle_t *zh = bench_zk_connect(t->c, err, sizeof err);
  int rc, failures = 0;
  if (!zh) {
    bench_window_fail(t->w, "%s", err);
    return NULL;
  }
  rc = make_parent(zh, t->c, "cd", t->parent, sizeof t->parent);
  if (rc != ZOK) {
    bench_window_fail(t->w, "create %s: %s", t->parent, zerror(rc));
    bench_zk_close(zh);
    return NULL;
  }
  snprintf(path, sizeof path, "%s/lock-", t->parent);
  bench_window_ready(t->w);
  while (atomic_load(&t->w->phase) != BENCH_STOP && failures < MAX_ERRORS) {
    double t0 = bench_now();
    rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                    ZOO_EPHEMERAL_SEQUENTIAL, created, sizeof created);
    if (rc != ZOK) {
      atomic_fetch_add(&t->w->errors, 1);
      failures++;
      continue;
    }
    failures = 0;
    if (atomic_load(&t->w->phase) == BENCH_MEASURE)
      bench_lat_add(&t->lat, (bench_now() - t0) * 1e3);
    bench_window_hold(t->w);
    if (zoo_delete(zh, created, -1) != ZOK)
      atomic_fetch_add(&t->w->errors, 1);
  }
  bench_zk_rmtree(zh, t->parent);
  bench_zk_close(zh);
  bench_window_done(t->w);
  return NULL;
}

void raw_create_delete(const bench_ctx *c, bench_result *r) {
  bench_window w;
  cd_thread t = {0};
  bench_window_init(&w);
  t.c = c;
  t.w = &w;
  if (bench_run_threads(c, &w, 1, cd_main, &t, sizeof t, r)) {
    r->p50_ms = bench_lat_quantile(&t.lat, 0.50);
    r->p99_ms = bench_lat_quantile(&t.lat, 0.99);
  }
  bench_lat_free(&t.lat);
  bench_window_destroy(&w);
}

/* -------------------------------------------------------------- pipelined */

typedef struct pipe_run {
  bench_window *w;
  zhandle_t *zh;
  char path[300];
} pipe_run;

static void pipe_created(int rc, const char *value, const void *data);

static void pipe_next(pipe_run *p) {
  if (atomic_load(&p->w->phase) == BENCH_STOP ||
      zoo_acreate(p->zh, p->path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                  ZOO_EPHEMERAL_SEQUENTIAL, pipe_created, p) != ZOK)
    bench_window_done(p->w);
}

static void pipe_deleted(int rc, const void *data) {
  pipe_run *p = (pipe_run *)data;
  if (rc == ZOK)
    bench_window_hold(p->w); /* one whole cycle */
  else
    atomic_fetch_add(&p->w->errors, 1);
  pipe_next(p);
}

static void pipe_created(int rc, const char *value, const void *data) {
  pipe_run *p = (pipe_run *)data;
  if (rc != ZOK) {
    atomic_fetch_add(&p->w->errors, 1);
    pipe_next(p);
    return;
  }
  if (zoo_adelete(p->zh, value, -1, pipe_deleted, p) != ZOK) {
    atomic_fetch_add(&p->w->errors, 1);
    bench_window_done(p->w);
  }
}

void raw_pipelined(const bench_ctx *c, int inflight, bench_result *r) {
  bench_window w;
  pipe_run p;
  char err[160], parent[256];
  int i, rc, sent = 0;
  bench_window_init(&w);
  memset(&p, 0, sizeof p);
  p.w = &w;
  p.zh = bench_zk_connect(c, err, sizeof err);
  if (!p.zh) {
    bench_fail(r, "%s", err);
    bench_window_destroy(&w);
    return;
  }
  rc = make_parent(p.zh, c, "pipe", parent, sizeof parent);
  if (rc != ZOK) {
    bench_fail(r, "create %s: %s", parent, zerror(rc));
  } else {
    snprintf(p.path, sizeof p.path, "%s/lock-", parent);
    for (i = 0; i < inflight; i++) {
      if (zoo_acreate(p.zh, p.path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                      ZOO_EPHEMERAL_SEQUENTIAL, pipe_created, &p) != ZOK)
        break;
      sent++;
    }
    if (sent < inflight) {
      bench_fail(r, "zoo_acreate refused after %d requests", sent);
    } else {
      bench_window_run(&w, c, r);
      r->ok = true;
    }
    atomic_store(&w.phase, BENCH_STOP);
    if (!bench_window_wait_done(&w, sent, WAIT_S))
      bench_fail(r, "pipelined cycles did not stop within %.0f s", WAIT_S);
    bench_window_totals(&w, r);
    bench_zk_rmtree(p.zh, parent);
  }
  bench_zk_close(p.zh);
  bench_window_destroy(&w);
}

/* ------------------------------------------- pipelined, shaped as a lock
 *
 * The least any lock recipe on ZooKeeper sends per uncontended cycle: the
 * create, the listing that tells the contender it is first (sent right
 * behind the create, as libzklock sends it), and the delete once the
 * listing is back. One parent per slot, as one lock name per slot. */

typedef struct lock_slot {
  bench_window *w;
  zhandle_t *zh;
  char parent[300];
  char path[320];
  char made[340];
} lock_slot;

static void slot_next(lock_slot *sl);

static void slot_deleted(int rc, const void *data) {
  lock_slot *sl = (lock_slot *)data;
  if (rc == ZOK)
    bench_window_hold(sl->w);
  else
    atomic_fetch_add(&sl->w->errors, 1);
  slot_next(sl);
}

static void slot_created(int rc, const char *value, const void *data) {
  lock_slot *sl = (lock_slot *)data;
  if (rc == ZOK)
    snprintf(sl->made, sizeof sl->made, "%s", value);
  else
    sl->made[0] = '\0';
}

static void slot_listed(int rc, const struct String_vector *kids,
                        const void *data) {
  lock_slot *sl = (lock_slot *)data;
  (void)kids;
  if (rc != ZOK || !sl->made[0]) {
    atomic_fetch_add(&sl->w->errors, 1);
    slot_next(sl);
    return;
  }
  if (zoo_adelete(sl->zh, sl->made, -1, slot_deleted, sl) != ZOK) {
    atomic_fetch_add(&sl->w->errors, 1);
    bench_window_done(sl->w);
  }
}

static void slot_next(lock_slot *sl) {
  if (atomic_load(&sl->w->phase) == BENCH_STOP ||
      zoo_acreate(sl->zh, sl->path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                  ZOO_EPHEMERAL_SEQUENTIAL, slot_created, sl) != ZOK ||
      zoo_aget_children(sl->zh, sl->parent, 0, slot_listed, sl) != ZOK)
    bench_window_done(sl->w);
}

void raw_pipelined_locks(const bench_ctx *c, int inflight, bench_result *r) {
  bench_window w;
  lock_slot *slots = calloc((size_t)inflight, sizeof *slots);
  zhandle_t *zh;
  char err[160], parent[256];
  int i, rc = ZOK, sent = 0;
  bench_window_init(&w);
  if (!slots) {
    bench_fail(r, "out of memory");
    bench_window_destroy(&w);
    return;
  }
  zh = bench_zk_connect(c, err, sizeof err);
  if (!zh) {
    bench_fail(r, "%s", err);
    free(slots);
    bench_window_destroy(&w);
    return;
  }
  rc = make_parent(zh, c, "locks", parent, sizeof parent);
  for (i = 0; i < inflight && rc == ZOK; i++) {
    slots[i].w = &w;
    slots[i].zh = zh;
    snprintf(slots[i].parent, sizeof slots[i].parent, "%s/%d", parent, i);
    snprintf(slots[i].path, sizeof slots[i].path, "%s/lock-",
             slots[i].parent);
    rc = bench_zk_mkdirs(zh, slots[i].parent);
  }
  if (rc != ZOK) {
    bench_fail(r, "create %s/...: %s", parent, zerror(rc));
  } else {
    for (i = 0; i < inflight; i++) {
      if (zoo_acreate(zh, slots[i].path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                      ZOO_EPHEMERAL_SEQUENTIAL, slot_created,
                      &slots[i]) != ZOK ||
          zoo_aget_children(zh, slots[i].parent, 0, slot_listed,
                            &slots[i]) != ZOK)
        break;
      sent++;
    }
    if (sent < inflight) {
      bench_fail(r, "the client refused a request after %d cycles", sent);
    } else {
      bench_window_run(&w, c, r);
      r->ok = true;
    }
    atomic_store(&w.phase, BENCH_STOP);
    if (!bench_window_wait_done(&w, sent, WAIT_S))
      bench_fail(r, "pipelined cycles did not stop within %.0f s", WAIT_S);
    bench_window_totals(&w, r);
  }
  bench_zk_rmtree(zh, parent);
  bench_zk_close(zh);
  free(slots);
  bench_window_destroy(&w);
}

/* ----------------------------------------------------------------- recipe */

typedef struct recipe_thread {
  const bench_ctx *c;
  bench_window *w;
  const char *parent;
  bench_lat lat;
  /* the predecessor's watch */
  pthread_mutex_t mu;
  pthread_cond_t cond;
  bool fired;
} recipe_thread;

static void pred_watcher(zhandle_t *zh, int type, int state, const char *path,
                         void *ctx) {
  recipe_thread *t = ctx;
  (void)zh;
  (void)state;
  (void)path;
  if (type == ZOO_SESSION_EVENT)
    return; /* the watch stays armed across a reconnect */
  pthread_mutex_lock(&t->mu);
  t->fired = true;
  pthread_cond_signal(&t->cond);
  pthread_mutex_unlock(&t->mu);
}

static bool wait_fired(recipe_thread *t) {
  struct timespec ts;
  bool fired;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)WAIT_S;
  pthread_mutex_lock(&t->mu);
  while (!t->fired)
    if (pthread_cond_timedwait(&t->cond, &t->mu, &ts) == ETIMEDOUT)
      break;
  fired = t->fired;
  t->fired = false;
  pthread_mutex_unlock(&t->mu);
  return fired;
}

static long seq_of(const char *name) {
  const char *dash = strrchr(name, '-');
  return dash ? strtol(dash + 1, NULL, 10) : -1;
}

/* Acquires: 0 when held, -1 on an error (the node is then deleted). */
static int recipe_acquire(recipe_thread *t, zhandle_t *zh, char *own,
                          size_t ownlen) {
  char path[300];
  long mine;
  int rc;
  snprintf(path, sizeof path, "%s/lock-", t->parent);
  rc = zoo_create(zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                  ZOO_EPHEMERAL_SEQUENTIAL, own, (int)ownlen);
  if (rc != ZOK)
    return -1;
  mine = seq_of(own);
  for (;;) {
    struct String_vector sv = {0, NULL};
    const char *pred = NULL;
    long pred_seq = -1;
    int lower = 0, i;
    bool found = false, pred_lowest;
    char buf[16];
    int buflen = sizeof buf;
    rc = zoo_get_children(zh, t->parent, 0, &sv);
    if (rc != ZOK)
      break;
    for (i = 0; i < sv.count; i++) {
      long s = seq_of(sv.data[i]);
      if (s == mine) {
        found = true;
      } else if (s < mine) {
        lower++;
        if (s > pred_seq) {
          pred_seq = s;
          pred = sv.data[i];
        }
      }
    }
    if (!found || lower == 0) {
      deallocate_String_vector(&sv);
      return found ? 0 : -1;
    }
    pred_lowest = lower == 1;
    snprintf(path, sizeof path, "%s/%s", t->parent, pred);
    deallocate_String_vector(&sv);
    rc = zoo_wget(zh, path, pred_watcher, t, buf, &buflen, NULL);
    if (rc == ZNONODE) {
      if (pred_lowest)
        return 0; /* gone before the watch: held */
      continue;
    }
    if (rc != ZOK || !wait_fired(t))
      break;
    if (pred_lowest)
      return 0; /* the lowest went: no lower node can appear */
  }
  zoo_delete(zh, own, -1);
  return -1;
}

static void *recipe_main(void *arg) {
  recipe_thread *t = arg;
  char err[160], own[300];
  zhandle_t *zh = bench_zk_connect(t->c, err, sizeof err);
  int failures = 0;
  if (!zh) {
    bench_window_fail(t->w, "%s", err);
    return NULL;
  }
  bench_window_ready(t->w);
  while (atomic_load(&t->w->phase) != BENCH_STOP && failures < MAX_ERRORS) {
    double t0 = bench_now();
    if (recipe_acquire(t, zh, own, sizeof own) != 0) {
      atomic_fetch_add(&t->w->errors, 1);
      failures++;
      continue;
    }
    failures = 0;
    if (atomic_load(&t->w->phase) == BENCH_MEASURE)
      bench_lat_add(&t->lat, (bench_now() - t0) * 1e3);
    bench_window_hold(t->w);
    if (zoo_delete(zh, own, -1) != ZOK)
      atomic_fetch_add(&t->w->errors, 1);
  }
  bench_zk_close(zh);
  bench_window_done(t->w);
  return NULL;
}

void raw_recipe(const bench_ctx *c, int n, bench_result *r) {
  bench_window w;
  recipe_thread *ts = calloc((size_t)n, sizeof *ts);
  char err[160], parent[256];
  zhandle_t *setup;
  int i, rc;
  bench_window_init(&w);
  setup = ts ? bench_zk_connect(c, err, sizeof err) : NULL;
  if (!setup) {
    bench_fail(r, "%s", ts ? err : "out of memory");
    free(ts);
    bench_window_destroy(&w);
    return;
  }
  rc = make_parent(setup, c, "recipe", parent, sizeof parent);
  if (rc != ZOK) {
    bench_fail(r, "create %s: %s", parent, zerror(rc));
  } else {
    bench_lat all = {0};
    for (i = 0; i < n; i++) {
      ts[i].c = c;
      ts[i].w = &w;
      ts[i].parent = parent;
      pthread_mutex_init(&ts[i].mu, NULL);
      pthread_cond_init(&ts[i].cond, NULL);
    }
    if (bench_run_threads(c, &w, n, recipe_main, ts, sizeof *ts, r)) {
      for (i = 0; i < n; i++)
        bench_lat_merge(&all, &ts[i].lat);
      r->p50_ms = bench_lat_quantile(&all, 0.50);
      r->p99_ms = bench_lat_quantile(&all, 0.99);
    }
    for (i = 0; i < n; i++) {
      bench_lat_free(&ts[i].lat);
      pthread_cond_destroy(&ts[i].cond);
      pthread_mutex_destroy(&ts[i].mu);
    }
    bench_lat_free(&all);
    bench_zk_rmtree(setup, parent);
  }
  bench_zk_close(setup);
  free(ts);
  bench_window_destroy(&w);
}

/* ------------------------------------------------------------------ multi */

typedef struct multi_thread {
  const bench_ctx *c;
  bench_window *w;
  int names;
  bench_lat lat;
} multi_thread;

static void *multi_main(void *arg) {
  multi_thread *t = arg;
  int n = t->names, i, rc = ZOK, failures = 0;
  char err[160];
  char(*parents)[256] = calloc((size_t)n, sizeof *parents);
  char(*paths)[300] = calloc((size_t)n, sizeof *paths);
  char(*created)[300] = calloc((size_t)n, sizeof *created);
  zoo_op_t *creates = calloc((size_t)n, sizeof *creates);
  zoo_op_t *deletes = calloc((size_t)n, sizeof *deletes);
  zoo_op_result_t *results = calloc((size_t)n, sizeof *results);
  zhandle_t *zh = NULL;
  if (!parents || !paths || !created || !creates || !deletes || !results) {
    bench_window_fail(t->w, "out of memory");
    goto out;
  }
  if (!(zh = bench_zk_connect(t->c, err, sizeof err))) {
    bench_window_fail(t->w, "%s", err);
    goto out;
  }
  for (i = 0; i < n && rc == ZOK; i++)
    if ((rc = make_parent(zh, t->c, "multi", parents[i], sizeof parents[i])) ==
        ZOK)
      snprintf(paths[i], sizeof paths[i], "%s/lock-", parents[i]);
  if (rc != ZOK) {
    bench_window_fail(t->w, "create %s: %s", parents[i - 1], zerror(rc));
    goto out;
  }
  for (i = 0; i < n; i++) {
    zoo_create_op_init(&creates[i], paths[i], NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_EPHEMERAL_SEQUENTIAL, created[i],
                       (int)sizeof created[i]);
    zoo_delete_op_init(&deletes[i], created[i], -1);
  }
  bench_window_ready(t->w);
  while (atomic_load(&t->w->phase) != BENCH_STOP && failures < MAX_ERRORS) {
    double t0 = bench_now();
    rc = zoo_multi(zh, n, creates, results);
    if (rc != ZOK) {
      atomic_fetch_add(&t->w->errors, 1);
      failures++;
      continue;
    }
    failures = 0;
    if (atomic_load(&t->w->phase) == BENCH_MEASURE)
      bench_lat_add(&t->lat, (bench_now() - t0) * 1e3);
    bench_window_hold(t->w);
    if (zoo_multi(zh, n, deletes, results) != ZOK)
      atomic_fetch_add(&t->w->errors, 1);
  }
  bench_window_done(t->w);
out:
  if (zh) {
    for (i = 0; i < n; i++)
      if (parents[i][0])
        bench_zk_rmtree(zh, parents[i]);
    bench_zk_close(zh);
  }
  free(results);
  free(deletes);
  free(creates);
  free(created);
  free(paths);
  free(parents);
  return NULL;
}

void raw_multi(const bench_ctx *c, int names, bench_result *r) {
  bench_window w;
  multi_thread t = {0};
  bench_window_init(&w);
  t.c = c;
  t.w = &w;
  t.names = names;
  if (bench_run_threads(c, &w, 1, multi_main, &t, sizeof t, r)) {
    r->p50_ms = bench_lat_quantile(&t.lat, 0.50);
    r->p99_ms = bench_lat_quantile(&t.lat, 0.99);
  }
  bench_lat_free(&t.lat);
  bench_window_destroy(&w);
}
