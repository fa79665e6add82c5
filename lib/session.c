/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session.c - the session object: its references, its mutex, the entry and
 * exit of every completion-thread callback, the requests in flight, and the
 * queue of user callbacks.
 *
 * A session is referenced by the user (until close), by each lock, by each
 * watch record the client may still call, and by each request in flight;
 * it is freed when the last reference goes, after its mutex is dropped.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "agent.h"

/* The session whose completion-thread entry point the calling thread is in,
 * if any: user callbacks queued for it run when that entry point returns.
 * Callbacks queued for another session need a carrier request to bring that
 * session's completion thread round. */
static __thread zkl_session *tls_in_session;

unsigned zkl__sessions_alive;

int zkl__session_alloc(zkl_session **out, int timeout_ms, bool owns_handle) {
  zkl_session *s = calloc(1, sizeof *s);
  if (!s)
    return ZKL_ENOMEM;
  if (pthread_mutex_init(&s->mu, NULL) != 0) {
    free(s);
    return ZKL_ESYSTEM;
  }
  if (zkl__cond_init(&s->cond) != ZKL_OK) {
    pthread_mutex_destroy(&s->mu);
    free(s);
    return ZKL_ESYSTEM;
  }
  s->requested_timeout_ms = timeout_ms;
  s->owns_handle = owns_handle;
  s->refs = 1;
  s->calls_tail = &s->calls;
  s->opening = true;
  s->held_tail = &s->held;
  zkl__cleanups_init(s);
  s->owner_len = zkl__owner_data(s->owner_data, sizeof s->owner_data);
  __atomic_add_fetch(&zkl__sessions_alive, 1, __ATOMIC_RELAXED);
  *out = s;
  return ZKL_OK;
}

/* Stores what the options say for the lease (lease.c's fields) and the
 * callbacks (events.c's), before the session's first event: here, and not
 * in open.c, because both open.c and wrap.c make sessions. */
void zkl__session_apply_opts_locked(zkl_session *s, const zkl_open_opts *p) {
  s->lease.margin_ms = p->lease_margin_ms < 0 ? -1 : p->lease_margin_ms;
  s->lease.tick_ms = p->server_tick_ms;
  s->state_cb = p->on_state;
  s->state_arg = p->state_arg;
  s->event_cb = p->on_event;
  s->event_arg = p->event_arg;
}

void zkl__session_free(zkl_session *s) {
  if (s->hooks && s->hooks->free_locked)
    s->hooks->free_locked(s->hooks_ctx);
  free(s->follow.servers); /* follow.c's state: strings only */
  free(s->follow.chroot);
  free(s->follow.wanted);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->mu);
  free(s);
  __atomic_sub_fetch(&zkl__sessions_alive, 1, __ATOMIC_RELAXED);
}

/* Unlocks, and frees the session if nothing references it any more. */
static void unlock_maybe_free(zkl_session *s) {
  bool last = s->refs == 0;
  pthread_mutex_unlock(&s->mu);
  if (last)
    zkl__session_free(s);
}

void zkl__session_ref_locked(zkl_session *s) { s->refs++; }
void zkl__session_unref_locked(zkl_session *s) { s->refs--; }

void zkl__unlock(zkl_session *s) {
  pthread_cond_broadcast(&s->cond);
  unlock_maybe_free(s);
}

void zkl__session_set_hooks_locked(zkl_session *s,
                                   const zkl_session_hooks *hooks, void *ctx) {
  s->hooks = hooks;
  s->hooks_ctx = ctx;
}

void *zkl__session_hooks_ctx_locked(const zkl_session *s) {
  return s->hooks_ctx;
}

bool zkl__is_connection_loss(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

bool zkl__is_session_over(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE ||
         rc == ZAUTHFAILED || rc == ZSESSIONMOVED;
}

bool zkl__watch_leave_client(zhandle_t *zh, const char *path, int wtype,
                             watcher_fn watcher, void *ctx) {
  return zoo_remove_watches(zh, path, wtype, watcher, ctx, 1) == ZOK;
}

int zkl__session_usable_locked(const zkl_session *s) {
  if (s->closing)
    return ZKL_ECLOSED;
  if (s->dead)
    return s->dead;
  return ZKL_OK;
}

bool zkl__session_quiet_locked(const zkl_session *s) {
  return s->inflight == 0 && s->busy == 0 && !s->calls;
}

/* ------------------------------------------------------------ requests */

zkl_req *zkl__req_new_locked(zkl_session *s, int kind) {
  zkl_req *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->s = s;
  r->kind = kind;
  r->sent_ms = zkl__now_ms();
  s->sent[kind]++;
  s->refs++;
  s->inflight++;
  return r;
}

void zkl__req_done_locked(zkl_req *r) {
  zkl_session *s = r->s;
  free(r->path);
  free(r);
  s->inflight--;
  s->refs--;
}

void zkl__req_abort_locked(zkl_req *r) {
  r->s->sent[r->kind]--; /* never left */
  zkl__req_done_locked(r);
}

/* ----------------------------------------------- completion-thread entry */

void zkl__enter_locked(zkl_session *s) {
  zkl__mark_zk_thread();
  pthread_mutex_lock(&s->mu);
  s->busy++;
  tls_in_session = s;
}

int zkl__enter_req_locked(zkl_req *r, int rc) {
  zkl_session *s = r->s;
  zkl__enter_locked(s);
  if (rc == ZRUNTIMEINCONSISTENCY)
    rc = ZCONNECTIONLOSS; /* the outcome is unknown, as for a lost one */
  if (s->answer_seen_locked)
    s->answer_seen_locked(s, r, rc);
  return rc;
}

static void release_calls_locked(zkl_call *list) {
  zkl_call *c, *next;
  for (c = list; c; c = next) {
    next = c->next;
    c->release_locked(c);
  }
}

void zkl__drain_calls_locked(zkl_session *s) {
  zkl_session *outer = tls_in_session;
  tls_in_session = s;
  while (s->calls) {
    zkl_call *batch = s->calls, *c;
    s->calls = NULL;
    s->calls_tail = &s->calls;
    pthread_mutex_unlock(&s->mu);
    for (c = batch; c; c = c->next)
      c->run(c);
    pthread_mutex_lock(&s->mu);
    release_calls_locked(batch);
  }
  tls_in_session = outer;
}

void zkl__run_calls_locked(zkl_session *s, zkl_call *list) {
  zkl_call *c;
  s->busy++;
  pthread_mutex_unlock(&s->mu);
  for (c = list; c; c = c->next)
    c->run(c);
  pthread_mutex_lock(&s->mu);
  release_calls_locked(list);
  s->busy--;
  pthread_cond_broadcast(&s->cond);
}

void zkl__leave(zkl_session *s) {
  zkl__drain_calls_locked(s);
  tls_in_session = NULL;
  s->busy--;
  pthread_cond_broadcast(&s->cond);
  unlock_maybe_free(s);
}

/* Its completion's frame runs the queued callbacks: that is all it is for. */
static void carrier_done_locked(zkl_req *r, const zkl_answer *a) {
  (void)a;
  r->s->carrier_inflight = false;
}

/* A cheap read whose only purpose is that its completion runs on the
 * completion thread, where queued callbacks are then run. When disconnected
 * it completes (with ZCONNECTIONLOSS) as soon as the client gives up its
 * current connection attempt. */
static void ensure_carrier_locked(zkl_session *s) {
  zkl_req *r;
  if (s->carrier_inflight || !s->zh || s->closed)
    return;
  r = zkl__req_new_locked(s, ZKL_RQ_CARRIER);
  if (!r)
    return; /* retried by the next queued call or completion */
  r->answered_locked = carrier_done_locked;
  if (zoo_aexists(s->zh, "/", 0, zkl__on_stat, r) != ZOK) {
    /* A dead handle: the session-over event, or close, runs the queue. */
    zkl__req_abort_locked(r);
    return;
  }
  s->carrier_inflight = true;
}

void zkl__session_opened_locked(zkl_session *s, bool ok) {
  zkl_call *c = s->held, *next;
  s->opening = false;
  if (!ok) { /* nor anything the session's end may still produce */
    s->state_cb = NULL;
    s->event_cb = NULL;
  }
  s->held = NULL;
  s->held_tail = &s->held;
  for (; c; c = next) {
    next = c->next;
    if (ok)
      zkl__queue_call_locked(s, c);
    else
      c->release_locked(c);
  }
}

void zkl__hold_or_queue_call_locked(zkl_session *s, zkl_call *c) {
  if (!s->opening) {
    zkl__queue_call_locked(s, c);
    return;
  }
  c->next = NULL;
  *s->held_tail = c;
  s->held_tail = &c->next;
}

void zkl__queue_call_locked(zkl_session *s, zkl_call *c) {
  c->next = NULL;
  *s->calls_tail = c;
  s->calls_tail = &c->next;
  if (tls_in_session != s)
    ensure_carrier_locked(s);
}

/* ------------------------------------------------------------ accessors */

/* The const getters lock s->mu, which is not part of what they promise
 * to leave as it was. */
zhandle_t *zkl_session_handle(const zkl_session *s) {
  if (s && ZKL_REMOTE_SESSION(s))
    return NULL; /* the agent's session has the handle */
  return s ? s->zh : NULL;
}

int zkl_session_timeout(const zkl_session *cs) {
  if (cs && ZKL_REMOTE_SESSION(cs))
    return zkl__remote_timeout(cs);
  zkl_session *s = (zkl_session *)cs;
  int t;
  if (!s)
    return 0;
  pthread_mutex_lock(&s->mu);
  t = s->negotiated_timeout_ms;
  pthread_mutex_unlock(&s->mu);
  return t;
}
