/* SPDX-License-Identifier: Apache-2.0 */
/*
 * entries.c - what a contender does, seen from outside the state machine:
 * the shared entry points of the blocking and async faces (acquire,
 * release, cancel, free), and what the session tells the engine (its hooks:
 * reconnects, expiry, close, the clock, the lease). Both only ask the
 * machine (engine.c) by events; the machine decides.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

static bool acquiring(zkl_att_state st) {
  return st >= ZKL_AS_PREPARING && st <= ZKL_AS_SUSPENDED;
}

/* ---------------------------------------------------------- the entries */

int zkl__acquire_locked(zkl_lock *l, int timeout_ms, zkl_target *t) {
  zkl_session *s = l->s;
  int rc = zkl__session_usable_locked(s);
  if (rc != ZKL_OK)
    return rc;
  zkl__lease_enforce_locked(s); /* no reentrant hold on a lapsed lease */
  if (l->att) {
    if (zkl__attempt_state(l->att) != ZKL_AS_HELD)
      return ZKL_EINPROGRESS;
    /* Reentrant: one more hold on the same node and token. */
    l->hold_count++;
    zkl__notify_locked(l, t, ZKL_OK, l->token);
    return ZKL_OK;
  }
  if (l->recipe->admit_locked &&
      (rc = l->recipe->admit_locked(l->arg)) != ZKL_OK)
    return rc;
  if (timeout_ms == 0 && !s->connected)
    return ZKL_ECONNECT; /* no exchange with the server can happen now */
  return zkl__attempt_start_locked(l, timeout_ms, t);
}

int zkl__release_locked(zkl_lock *l, zkl_target *t) {
  zkl_session *s = l->s;
  zkl_att_state st;
  if (s->closing)
    return ZKL_ECLOSED;
  /* A holder frozen past its lease that releases first thing on waking must
   * hear ZKL_ELOST, not ZKL_OK: someone else may have held the lock. */
  zkl__lease_enforce_locked(s);
  if (l->att && zkl__attempt_state(l->att) == ZKL_AS_STOPPING) {
    /* Past its maximum hold, told so, its node kept for the holder to
     * stop: this release says it has, and lets the node go. */
    l->lost = false;
    zkl__attempt_event_locked(l->att, ZKL_EV_RELEASE, 0, NULL);
    return ZKL_ELOST;
  }
  if (l->lost) {
    l->lost = false;
    return ZKL_ELOST;
  }
  if (s->dead)
    return s->dead; /* the session's end released everything */
  st = l->att ? zkl__attempt_state(l->att) : ZKL_AS_NEW;
  if (st == ZKL_AS_RELEASING)
    return ZKL_EINPROGRESS;
  if (st != ZKL_AS_HELD)
    return ZKL_ENOTHELD;
  if (l->hold_count > 1) {
    l->hold_count--;
    zkl__notify_locked(l, t, ZKL_OK, 0);
    return ZKL_OK;
  }
  zkl__attempt_event_locked(l->att, ZKL_EV_RELEASE, 0, t);
  t->notice = NULL; /* the attempt's now */
  return ZKL_OK;
}

int zkl__cancel_locked(zkl_lock *l) {
  if (l->s->closing)
    return ZKL_ECLOSED;
  if (!l->att || !acquiring(zkl__attempt_state(l->att)))
    return ZKL_EIDLE;
  zkl__attempt_event_locked(l->att, ZKL_EV_CANCEL, ZKL_ECANCELED, NULL);
  return ZKL_OK;
}

void zkl__contender_free_locked(zkl_lock *l) {
  zkl_target none = {0};
  int i;
  l->freed = true;
  if (l->att && !l->s->closed) {
    zkl__attempt_event_locked(l->att, ZKL_EV_CANCEL, ZKL_ECLOSED, NULL);
    if (l->att)
      zkl__attempt_event_locked(l->att, ZKL_EV_RELEASE, 0, &none);
  }
  for (i = 0; i < l->n_parts; i++)
    zkl__contender_free_locked(l->parts[i]); /* their attempts end too */
  zkl__lock_unref_locked(l);
}

const char *zkl__lock_held_node_locked(const zkl_lock *l) {
  return l->att && zkl__attempt_state(l->att) == ZKL_AS_HELD
             ? zkl__attempt_node(l->att)
             : NULL;
}

bool zkl__lock_busy_locked(const zkl_lock *l) {
  zkl_att_state st = l->att ? zkl__attempt_state(l->att) : ZKL_AS_NEW;
  return acquiring(st) || st == ZKL_AS_HELD;
}

int zkl__lock_node_path_locked(const zkl_lock *l, char *buf, size_t len) {
  const char *node = l->att ? zkl__attempt_node(l->att) : NULL;
  int n;
  if (!zkl__lock_busy_locked(l))
    return ZKL_ENOTHELD;
  /* A contender with no node of its own (a multi-lock) shows its first
   * part's. */
  if (l->recipe->make == ZKL_MAKE_PARTS_TOGETHER && l->n_parts > 0)
    return l->parts[0]->att && zkl__lock_busy_locked(l->parts[0])
               ? zkl__lock_node_path_locked(l->parts[0], buf, len)
               : ZKL_ENOTHELD;
  if (!node)
    return ZKL_ENOTHELD;
  n = snprintf(buf, len, "%s/%s", l->queue, node);
  return n >= 0 && (size_t)n < len ? ZKL_OK : ZKL_EINVAL;
}

int64_t zkl__lock_token_locked(zkl_lock *l) {
  zkl__lease_enforce_locked(l->s); /* a lapsed hold reads as none */
  return l->token;
}

/* ------------------------------------------------------ session's hooks */

typedef struct {
  zkl_att_event ev;
  int code;
  void *arg;
} posting;

static void post_one(zkl_lock *l, void *ctx) {
  posting *p = ctx;
  if (l->att)
    zkl__attempt_event_locked(l->att, p->ev, p->code, p->arg);
}

static void post_all_locked(void *engine, zkl_att_event ev, int code,
                            void *arg) {
  posting p = {ev, code, arg};
  zkl__each_lock_locked(engine, post_one, &p);
}

/* Observers hear connects, expiry and close; one may remove itself. */
static void tell_observers_locked(zkl_engine *e, zkl_att_event ev, int code) {
  zkl_link *n, *next;
  for (n = e->observers.next; n != &e->observers; n = next) {
    next = n->next;
    zkl_observer *o = zkl__container_of(n, zkl_observer, link);
    o->event_locked(o, ev, code);
  }
}

void zkl__observer_add_locked(zkl_engine *e, zkl_observer *o) {
  zkl__list_push(&e->observers, &o->link);
}

void zkl__observer_remove_locked(zkl_observer *o) {
  zkl__list_remove(&o->link);
}

static void connected_locked(void *ctx) {
  post_all_locked(ctx, ZKL_EV_CONNECTED, 0, NULL);
  tell_observers_locked(ctx, ZKL_EV_CONNECTED, 0);
}

static void over_locked(void *ctx, int why) {
  post_all_locked(ctx, ZKL_EV_OVER, why, NULL);
  tell_observers_locked(ctx, ZKL_EV_OVER, why);
}

static void closing_locked(void *ctx) {
  post_all_locked(ctx, ZKL_EV_CLOSE, 0, NULL);
  tell_observers_locked(ctx, ZKL_EV_CLOSE, 0);
}

static void closed_locked(void *ctx, bool handle_closed) {
  zkl_engine *e = ctx;
  if (handle_closed)
    zkl__watches_forget_all_locked(e->s);
  else
    zkl__watches_drop_all_locked(e->s);
}

/* Fails every acquire whose deadline passed and ends every hold that
 * lasted its maximum; returns the next deadline. */
static int64_t tick_locked(void *ctx, int64_t now, zkl_call **direct) {
  zkl_tick tick = {now, 0, direct};
  post_all_locked(ctx, ZKL_EV_TICK, 0, &tick);
  return tick.next;
}

static void lease_lost_locked(void *ctx, zkl_call **direct) {
  post_all_locked(ctx, ZKL_EV_LEASE_LOST, 0, direct);
}

static void engine_free_locked(void *ctx) { free(ctx); }

static const zkl_session_hooks hooks = {
    connected_locked, over_locked,       closing_locked,    closed_locked,
    tick_locked,      lease_lost_locked, engine_free_locked};

zkl_engine *zkl__engine_of_locked(zkl_session *s) {
  zkl_engine *e = zkl__session_hooks_ctx_locked(s);
  if (e)
    return e;
  if (!(e = calloc(1, sizeof *e)))
    return NULL;
  e->s = s;
  zkl__list_init(&e->locks);
  zkl__list_init(&e->watches);
  zkl__list_init(&e->observers);
  zkl__session_set_hooks_locked(s, &hooks, e);
  return e;
}

static void count_suspended(zkl_lock *l, void *ctx) {
  if (l->att && zkl__attempt_state(l->att) == ZKL_AS_SUSPENDED)
    (*(unsigned *)ctx)++;
}

unsigned zkl__engine_suspended_locked(const zkl_session *s) {
  zkl_engine *e = zkl__session_hooks_ctx_locked(s);
  unsigned n = 0;
  if (e)
    zkl__each_lock_locked(e, count_suspended, &n);
  return n;
}

/* ------------------------------------------------- contenders, made here */

int zkl__contender_new(zkl_lock **out, zkl_session *s, const char *name,
                       const char *queue, const zkl_recipe *r,
                       const void *arg) {
  bool attached;
  pthread_mutex_lock(&s->mu);
  attached = zkl__engine_of_locked(s) != NULL;
  pthread_mutex_unlock(&s->mu);
  return attached ? zkl__lock_object_new(out, s, name, queue, r, arg)
                  : ZKL_ENOMEM;
}

void zkl__contender_free(zkl_lock *l) {
  zkl_session *s = l->s;
  pthread_mutex_lock(&s->mu);
  zkl__contender_free_locked(l);
  zkl__unlock(s);
}

void zkl__contenders_free(zkl_lock *const *ls, int n) {
  zkl_session *s = ls[0]->s;
  int i;
  pthread_mutex_lock(&s->mu);
  for (i = 0; i < n; i++)
    zkl__lock_ref_locked(ls[i]);
  for (i = 0; i < n; i++)
    zkl__contender_free_locked(ls[i]);
  for (i = 0; i < n; i++)
    zkl__lock_unref_locked(ls[i]); /* the last one may free the recipe's arg */
  zkl__unlock(s);
}
