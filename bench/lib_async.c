/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lib_async.c - libzklock's async API: many contenders driven by callbacks
 * on a few sessions, without a thread per contender.
 *
 * Every contender (a "slot") cycles on its own: acquire_async -> (granted)
 * exclusion check -> release_async -> (released) acquire_async again, all
 * from the completion thread of its session, until the window says stop.
 *
 *   many locks  one session, `slots` different lock names: as many cycles in
 *               flight as slots, like the pipelined floor.
 *   long queue  `slots` contenders for one lock name spread over `sessions`
 *               sessions; a granted contender releases and queues again at
 *               the tail, so the queue stays `slots` long. Why not one
 *               session per waiter: each zkl_session is a ZooKeeper session
 *               with three threads (the client's I/O and completion
 *               threads, the library's timer) and a connection the server
 *               pings; 1,000 of them would be 3,000 threads and 1,000
 *               connections on two cores shared with the server, and the
 *               benchmark would measure the scheduler. Waiters of one
 *               session are still separate contenders with separate nodes
 *               (zkl_lock objects exclude each other within a session), so
 *               the queue the server holds is the same; and the same few
 *               sessions serve the short queue it is compared with.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "zklock.h"

#define SETUP_S 120.0 /* bound on the warm-up: every slot granted once */

static atomic_uint name_serial;

typedef struct async_run async_run;

typedef struct slot {
  async_run *run;
  zkl_lock *l;
} slot;

struct async_run {
  bench_window w;
  bool one_name;
  pthread_mutex_t order_mu; /* one name: tokens rise from grant to grant */
  int64_t last_token;
  uint64_t order_errors;
};

static void acquired(zkl_lock *l, int rc, int64_t token, void *arg);

static bool stopping(const async_run *run) {
  return atomic_load(&run->w.phase) == BENCH_STOP;
}

static void requeue(slot *sl) {
  if (stopping(sl->run)) {
    bench_window_done(&sl->run->w);
    return;
  }
  if (zkl_lock_acquire_async(sl->l, -1, acquired, sl) != ZKL_OK) {
    if (!stopping(sl->run))
      atomic_fetch_add(&sl->run->w.errors, 1);
    bench_window_done(&sl->run->w);
  }
}

static void released(zkl_lock *l, int rc, void *arg) {
  slot *sl = arg;
  (void)l;
  if (rc != ZKL_OK && !stopping(sl->run))
    atomic_fetch_add(&sl->run->w.errors, 1);
  requeue(sl);
}

static void acquired(zkl_lock *l, int rc, int64_t token, void *arg) {
  slot *sl = arg;
  async_run *run = sl->run;
  if (rc != ZKL_OK) {
    if (!stopping(run))
      atomic_fetch_add(&run->w.errors, 1);
    requeue(sl);
    return;
  }
  if (run->one_name) {
    pthread_mutex_lock(&run->order_mu);
    if (token <= run->last_token)
      run->order_errors++;
    run->last_token = token;
    pthread_mutex_unlock(&run->order_mu);
  }
  bench_window_hold(&run->w);
  if (zkl_lock_release_async(l, released, sl) != ZKL_OK) {
    if (!stopping(run)) /* a closing session refuses it: not an error */
      atomic_fetch_add(&run->w.errors, 1);
    bench_window_done(&run->w);
  }
}

/* Opens `sessions` sessions and `nslots` locks (one name or one each),
 * starts every slot, warms up until every slot could have been granted
 * once, runs the window, and closes everything. */
static void run_slots(const bench_ctx *c, int sessions, int nslots,
                      bool one_name, bench_result *r) {
  async_run *run = calloc(1, sizeof *run);
  zkl_session **ss = calloc((size_t)sessions, sizeof *ss);
  slot *slots = calloc((size_t)nslots, sizeof *slots);
  char name[160];
  unsigned serial = atomic_fetch_add(&name_serial, 1);
  int i, rc = ZKL_OK, opened = 0, started = 0, made = 0;

  if (!run || !ss || !slots) {
    bench_fail(r, "out of memory");
    goto out;
  }
  bench_window_init(&run->w);
  pthread_mutex_init(&run->order_mu, NULL);
  run->one_name = one_name;
  for (i = 0; i < sessions && rc == ZKL_OK; i++) {
    rc = bench_open_session(&ss[i], c->hosts, c->session_ms);
    if (rc == ZKL_OK)
      opened++;
  }
  for (i = 0; i < nslots && rc == ZKL_OK; i++) {
    if (one_name)
      snprintf(name, sizeof name, "bench/%u/queue-%u", c->run_id, serial);
    else
      snprintf(name, sizeof name, "bench/%u/many-%u/%d", c->run_id, serial,
               i);
    slots[i].run = run;
    rc = zkl_lock_new(&slots[i].l, ss[i % sessions], name);
    if (rc == ZKL_OK)
      made++;
  }
  if (rc != ZKL_OK) {
    bench_fail(r, "setup: %s", zkl_strerror(rc));
    goto close;
  }
  for (i = 0; i < nslots; i++) {
    rc = zkl_lock_acquire_async(slots[i].l, -1, acquired, &slots[i]);
    if (rc != ZKL_OK)
      break;
    started++;
  }
  if (rc != ZKL_OK) {
    bench_fail(r, "acquire_async: %s", zkl_strerror(rc));
  } else if (!bench_window_wait_ops(&run->w, (uint64_t)nslots, SETUP_S)) {
    bench_fail(r, "warm-up: %llu of %d grants within %.0f s",
               (unsigned long long)atomic_load(&run->w.ops), nslots, SETUP_S);
  } else {
    bench_window_run(&run->w, c, r);
    r->ok = true;
  }
close:
  atomic_store(&run->w.phase, BENCH_STOP);
  /* Each close completes its pending acquires (ZKL_ECLOSED) and returns
   * once every callback of its session has run: then every started slot
   * has reported done. */
  for (i = 0; i < opened; i++)
    zkl_session_close(ss[i], NULL);
  for (i = 0; i < made; i++)
    zkl_lock_free(slots[i].l);
  if (r->ok && !bench_window_wait_done(&run->w, started, 1))
    bench_fail(r, "%d of %d contenders did not finish", started - run->w.done,
               started);
  bench_window_totals(&run->w, r);
  r->overlaps += run->order_errors;
  pthread_mutex_destroy(&run->order_mu);
  bench_window_destroy(&run->w);
out:
  free(slots);
  free(ss);
  free(run);
  r->p50_ms = r->p99_ms = NAN;
}

void lib_many_locks(const bench_ctx *c, int locks, bench_result *r) {
  run_slots(c, 1, locks, false, r);
}

void lib_long_queue(const bench_ctx *c, int sessions, int waiters,
                    bench_result *r) {
  run_slots(c, sessions < waiters ? sessions : waiters, waiters, true, r);
}
