/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events.c - what happens to a session: the client's session events
 * (connected, disconnected, expired, authentication failed), from the
 * library's own watcher, the tap of a wrapped handle or the application's
 * forward; the clock's tick; and the state callback that tells the
 * application what the library sees.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "session.h"
#include "agent.h"

/* ------------------------------------------------------- state callback */

typedef struct state_call {
  zkl_call base;
  zkl_session *s; /* reference */
  zkl_state_cb cb;
  void *arg;
  zkl_state state;
} state_call;

static void state_call_run(zkl_call *c) {
  state_call *sc = (state_call *)c;
  sc->cb(sc->s, sc->state, sc->arg);
}

static void state_call_release_locked(zkl_call *c) {
  state_call *sc = (state_call *)c;
  zkl__session_unref_locked(sc->s);
  free(sc);
}

/* Queues the state callback for the completion thread. After close began,
 * only ZKL_STATE_CLOSED is reported, by close itself. */
static void report_locked(zkl_session *s, zkl_state state) {
  state_call *sc;
  zkl_event ev = {0};
  if (s->closing)
    return;
  ev.type = ZKL_EVENT_SESSION;
  ev.reason = state;
  zkl__emit_locked(s, &ev, NULL);
  if (!s->state_cb)
    return;
  if (!(sc = calloc(1, sizeof *sc))) {
    zkl__log("out of memory: session state %d not reported", state);
    return;
  }
  sc->base.run = state_call_run;
  sc->base.release_locked = state_call_release_locked;
  sc->s = s;
  zkl__session_ref_locked(s);
  sc->cb = s->state_cb;
  sc->arg = s->state_arg;
  sc->state = state;
  zkl__hold_or_queue_call_locked(s, &sc->base);
}

void zkl__report_closed_locked(zkl_session *s) {
  zkl_state_cb cb = s->state_cb;
  void *arg = s->state_arg;
  s->state_cb = NULL;
  if (!cb || s->opening)
    return; /* a failed open tells nothing */
  s->busy++; /* a callback of ours is running */
  pthread_mutex_unlock(&s->mu);
  cb(s, ZKL_STATE_CLOSED, arg);
  pthread_mutex_lock(&s->mu);
  s->busy--;
}

int zkl_session_on_state(zkl_session *s, zkl_state_cb cb, void *arg) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_on_state(s, cb, arg);
  int rc;
  if (!s)
    return ZKL_EINVAL;
  pthread_mutex_lock(&s->mu);
  rc = s->closing ? ZKL_ECLOSED : ZKL_OK;
  if (rc == ZKL_OK) {
    s->state_cb = cb;
    s->state_arg = arg;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* ------------------------------------------------------------ event hook */

typedef struct event_call {
  zkl_call base;
  zkl_session *s; /* reference */
  zkl_event_cb cb;
  void *arg;
  zkl_event ev;
  char strings[]; /* name, node, waiting_for, servers, NUL-terminated */
} event_call;

static void event_call_run(zkl_call *c) {
  event_call *ec = (event_call *)c;
  ec->cb(ec->s, &ec->ev, ec->arg);
}

static void event_call_release_locked(zkl_call *c) {
  event_call *ec = (event_call *)c;
  if (ec->ev.lock)
    zkl__lock_unref_locked(ec->ev.lock);
  zkl__session_unref_locked(ec->s);
  free(ec);
}

/* Copies a string of the event into the call's own buffer. */
static const char *keep(char **at, const char *str) {
  char *mine = *at;
  if (!str)
    return NULL;
  strcpy(mine, str);
  *at += strlen(str) + 1;
  return mine;
}

void zkl__emit_locked(zkl_session *s, const zkl_event *ev, zkl_call **direct) {
  event_call *ec;
  size_t room = 0;
  char *at;
  if (!s->event_cb || s->closed)
    return; /* no hook: nothing recorded, nothing allocated */
  if (ev->name)
    room += strlen(ev->name) + 1;
  if (ev->node)
    room += strlen(ev->node) + 1;
  if (ev->waiting_for)
    room += strlen(ev->waiting_for) + 1;
  if (ev->servers)
    room += strlen(ev->servers) + 1;
  if (!(ec = calloc(1, sizeof *ec + room))) {
    zkl__log("out of memory: event %d not reported", ev->type);
    return;
  }
  ec->base.run = event_call_run;
  ec->base.release_locked = event_call_release_locked;
  ec->s = s;
  zkl__session_ref_locked(s);
  /* The lock stays a lock until the call is done with it: the user may free
   * it while the event waits in the queue, and ev->lock must not then name
   * freed memory, or a new lock made at its address. */
  if (ev->lock)
    zkl__lock_ref_locked(ev->lock);
  ec->cb = s->event_cb;
  ec->arg = s->event_arg;
  ec->ev = *ev;
  at = ec->strings;
  ec->ev.name = keep(&at, ev->name);
  ec->ev.node = keep(&at, ev->node);
  ec->ev.waiting_for = keep(&at, ev->waiting_for);
  ec->ev.servers = keep(&at, ev->servers);
  if (direct) {
    zkl_call **tail = direct;
    while (*tail)
      tail = &(*tail)->next;
    *tail = &ec->base; /* after the lost notice, in order */
  } else {
    zkl__hold_or_queue_call_locked(s, &ec->base);
  }
}

int zkl_session_on_event(zkl_session *s, zkl_event_cb cb, void *arg) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_on_event(s, cb, arg);
  int rc;
  if (!s)
    return ZKL_EINVAL;
  pthread_mutex_lock(&s->mu);
  rc = s->closing ? ZKL_ECLOSED : ZKL_OK;
  if (rc == ZKL_OK) {
    s->event_cb = cb;
    s->event_arg = arg;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* -------------------------------------------------------- session events */

static void over_locked(zkl_session *s, int why) {
  if (s->dead)
    return;
  s->dead = why;
  s->connected = false;
  zkl__lease_disconnected_locked(s);
  if (why == ZKL_EEXPIRED)
    s->expiries++;
  if (s->hooks)
    s->hooks->over_locked(s->hooks_ctx, why);
  /* In-flight cleanups complete with ZSESSIONEXPIRED; queued ones are moot:
   * the server deleted the session's ephemeral nodes with it. */
  zkl__cleanups_drop_locked(s);
  pthread_cond_broadcast(&s->cond);
  report_locked(s, why == ZAUTHFAILED ? ZKL_STATE_AUTH_FAILED
                                      : ZKL_STATE_EXPIRED);
}

static void connected_locked(zkl_session *s, zhandle_t *zh) {
  const clientid_t *id = zoo_client_id(zh);
  if (s->dead || s->connected)
    return; /* the same event from two watchers (tap and forward) */
  if (s->closed)
    return; /* the open gave up, or the user closed the session, before it
             * connected: the handle is on its way to zookeeper_close(), and
             * a request sent on it now (the configuration read) would be
             * queued, never answered, and leaked by the client */
  s->session_id = id ? id->client_id : 0;
  s->negotiated_timeout_ms = zoo_recv_timeout(zh);
  s->connected = true;
  pthread_cond_broadcast(&s->cond);
  /* A session this library created is new at its first connection: its
   * creation went through the leader (lease.c). */
  zkl__lease_connected_locked(s, !s->was_connected);
  if (s->hooks)
    s->hooks->connected_locked(s->hooks_ctx);
  zkl__cleanups_run_locked(s);
  if (s->follow.connected_locked) /* a change may have come meanwhile */
    s->follow.connected_locked(s);
  if (s->was_connected)
    s->reconnects++;
  report_locked(s, s->was_connected ? ZKL_STATE_RECONNECTED
                                    : ZKL_STATE_CONNECTED);
  s->was_connected = true;
}

void zkl__on_state_locked(zkl_session *s, zhandle_t *zh, int state) {
  if (state == ZOO_CONNECTED_STATE) {
    connected_locked(s, zh);
  } else if (state == ZOO_EXPIRED_SESSION_STATE) {
    zkl__log("session 0x%llx expired", (unsigned long long)s->session_id);
    over_locked(s, ZKL_EEXPIRED);
  } else if (state == ZOO_AUTH_FAILED_STATE) {
    over_locked(s, ZAUTHFAILED);
  } else if (s->connected) {
    /* CONNECTING, ASSOCIATING, NOTCONNECTED, or read-only (no writes, so
     * no locking): not connected. */
    s->connected = false;
    s->disconnects++;
    zkl__lease_disconnected_locked(s);
    pthread_cond_broadcast(&s->cond);
    report_locked(s, ZKL_STATE_SUSPENDED);
  }
}

void zkl__session_watcher(zhandle_t *zh, int type, int state,
                          const char *path, void *ctx) {
  zkl_session *s = ctx;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    return; /* the library sets no default-watcher watches */
  zkl__enter_locked(s);
  zkl__on_state_locked(s, zh, state);
  zkl__leave(s);
}

void zkl_session_forward_watcher_event(zkl_session *s, int type, int state) {
  if (!s || type != ZOO_SESSION_EVENT || ZKL_REMOTE_SESSION(s))
    return;
  zkl__enter_locked(s);
  if (!s->owns_handle && !s->closing)
    zkl__on_state_locked(s, s->zh, state);
  zkl__leave(s);
}

/* ------------------------------------------------------------ the clock */

static int64_t earliest(int64_t a, int64_t b) {
  if (a == 0)
    return b;
  if (b == 0)
    return a;
  return a < b ? a : b;
}

int64_t zkl__session_tick_locked(void *ctx, int64_t now) {
  zkl_session *s = ctx;
  zkl_call *notices = NULL, *handed, **tail;
  int64_t next = 0;
  if (s->hooks)
    next = s->hooks->tick_locked(s->hooks_ctx, now, &notices);
  next = earliest(next, zkl__lease_tick_locked(s, now, &notices));
  /* plus the notices a user's call found meanwhile */
  handed = zkl__lease_take_notices_locked(s);
  for (tail = &notices; *tail; tail = &(*tail)->next)
    ;
  *tail = handed;
  if (notices) {
    /* Run here, not on the completion thread: that one may be stuck
     * behind a connection attempt to an unreachable server for longer
     * than the lease had left. */
    zkl__run_calls_locked(s, notices);
    return now; /* time passed while they ran: look again at once */
  }
  return next;
}
