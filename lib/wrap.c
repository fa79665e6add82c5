/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wrap.c - sessions built on a handle the application already has, and the
 * watch such a session keeps to hear its handle's session events.
 *
 * A wrapped handle's session events go to the application's default
 * watcher, which the library does not own. The client also delivers every
 * session event to every registered watch, so the session keeps one of its
 * own, "the tap": an exists watch on "/" (a node that is never deleted; one
 * watch on the server). Through it the session hears connection changes
 * and expiry without the application's help, and a session closed while its
 * handle is cut off still hears the reconnect that lets it delete the nodes
 * it owes. The wrap's probe sets it, so its answer also proves the handle
 * connected when the CONNECTED event went to the application before there
 * was a session to forward it to.
 *
 * The tap holds a session reference for as long as the client may call it:
 * until the session takes it out of the client (at once, with no request),
 * or the client delivers an event that ends the watch (expiry, or a change
 * of "/" that is not re-armed).
 *
 * "May call it" is longer than "holds it": the client delivers a session
 * event to a copy of its watchers made when the event came in (its I/O
 * thread's collect_session_watchers), so a tap taken out of the client
 * since can still be called once with that event. So the client knows the
 * tap by a number, not its address: tap_watcher() looks the number up in
 * the registry below, and a tap retired from it is never read again; one
 * retired while a call holds it is freed by that call.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "session.h"

struct zkl_tap {
  zkl_session *s;
  bool registered;      /* the client holds it */
  bool arm_inflight;    /* an exists that sets it has not completed */
  bool unwanted;        /* the session is done with it */
  /* Under taps_mu (retired also under s->mu, so either may read it): */
  uint64_t id;          /* the client's context for it */
  int calls;            /* tap_watcher() calls that found it */
  bool retired;         /* out of the registry: freed by the last call */
  zkl_tap *next;
};

/* Every tap the client may still call, by its number. Lock order: a
 * session's mu, then taps_mu; tap_watcher() takes taps_mu alone first. */
static pthread_mutex_t taps_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl_tap *taps;
static uint64_t taps_next_id;

static void *tap_ctx(const zkl_tap *tap) { return (void *)(uintptr_t)tap->id; }

static zkl_tap *tap_new(zkl_session *s) {
  zkl_tap *tap = calloc(1, sizeof *tap);
  if (!tap)
    return NULL;
  tap->s = s;
  pthread_mutex_lock(&taps_mu);
  tap->id = ++taps_next_id;
  tap->next = taps;
  taps = tap;
  pthread_mutex_unlock(&taps_mu);
  return tap;
}

unsigned zkl__debug_taps(void) {
  const zkl_tap *tap;
  unsigned n = 0;
  pthread_mutex_lock(&taps_mu);
  for (tap = taps; tap; tap = tap->next)
    n++;
  pthread_mutex_unlock(&taps_mu);
  return n;
}

/* Out of the registry. True: free it now; false: a call found it and
 * frees it when it returns. */
static bool tap_retire(zkl_tap *tap) {
  zkl_tap **p;
  bool last;
  pthread_mutex_lock(&taps_mu);
  for (p = &taps; *p; p = &(*p)->next)
    if (*p == tap) {
      *p = tap->next;
      break;
    }
  tap->retired = true;
  last = tap->calls == 0;
  pthread_mutex_unlock(&taps_mu);
  return last;
}

static void tap_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx);
static void tap_remove_locked(zkl_session *s);

static void tap_maybe_free_locked(zkl_tap *tap) {
  zkl_session *s = tap->s;
  if (tap->retired || tap->registered || tap->arm_inflight)
    return;
  if (s->tap == tap)
    s->tap = NULL;
  if (!tap_retire(tap))
    return; /* the call running frees it, and lets go of s */
  free(tap);
  zkl__session_unref_locked(s);
}

bool zkl__tap_held_locked(const zkl_session *s) { return s->tap != NULL; }

static void tap_armed_locked(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  zkl_tap *tap = r->owner;
  int rc = a->rc;
  tap->arm_inflight = false;
  if (rc == ZOK)
    tap->registered = true;
  if (r->kind == ZKL_RQ_PROBE) {
    /* Any answer from the server proves the handle connected now. */
    if (zkl__is_session_over(rc))
      zkl__on_state_locked(s, s->zh, ZOO_EXPIRED_SESSION_STATE);
    else if (rc == ZOK)
      zkl__on_state_locked(s, s->zh, ZOO_CONNECTED_STATE);
  }
  if (tap->registered && tap->unwanted)
    tap_remove_locked(s); /* wrap gave up meanwhile */
  tap_maybe_free_locked(tap);
}

/* Sends the exists that sets the watch; kind says whether it is the wrap's
 * probe. Returns ZOK, ZKL_ENOMEM or the client's refusal. */
static int tap_arm_locked(zkl_session *s, int kind) {
  zkl_req *r = zkl__req_new_locked(s, kind);
  int rc;
  if (!r)
    return ZKL_ENOMEM;
  r->owner = s->tap;
  r->answered_locked = tap_armed_locked;
  rc = zoo_awexists(s->zh, "/", tap_watcher, tap_ctx(s->tap), zkl__on_stat,
                    r);
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    return rc;
  }
  s->tap->arm_inflight = true;
  return ZOK;
}

/* Takes the tap out of the client (zkl__watch_leave_client: no request,
 * which the client could lose for good if the application is closing the
 * handle: the last cleanup's completion is what releases the tap). */
static void tap_remove_locked(zkl_session *s) {
  zkl_tap *tap = s->tap;
  if (!tap || !tap->unwanted || !tap->registered || s->dead)
    return;
  /* Not there: the client has taken it out to deliver an event to it, and
   * tap_watcher() is about to run. */
  if (zkl__watch_leave_client(s->zh, "/", ZWATCHTYPE_DATA, tap_watcher,
                              tap_ctx(tap)))
    tap->registered = false;
}

static void cleanups_drained_locked(zkl_session *s) {
  zkl__tap_release_locked(s);
}

void zkl__tap_release_locked(zkl_session *s) {
  /* Until the deletions a closed session owes are done, the tap is how it
   * hears the reconnect that lets it make them. */
  if (!s->tap || !s->closing || zkl__cleanups_count_locked(s) > 0)
    return;
  s->tap->unwanted = true;
  tap_remove_locked(s);
  tap_maybe_free_locked(s->tap); /* the caller holds a reference of its own */
}

static void tap_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx) {
  uint64_t id = (uint64_t)(uintptr_t)ctx;
  zkl_tap *tap;
  zkl_session *s;
  bool last;
  (void)path;
  pthread_mutex_lock(&taps_mu);
  for (tap = taps; tap && tap->id != id; tap = tap->next)
    ;
  if (tap)
    tap->calls++; /* not freed, nor its session reference let go, till we
                     return */
  pthread_mutex_unlock(&taps_mu);
  if (!tap)
    return; /* a session event for a tap taken out of the client since */
  s = tap->s;
  zkl__enter_locked(s);
  zkl__session_ref_locked(s); /* freeing the tap must not free s under us */
  if (tap->retired) {
    /* Taken out and retired while this event waited: nothing to hear. */
  } else if (type == ZOO_SESSION_EVENT) {
    zkl__on_state_locked(s, zh, state);
    if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
      tap->registered = false; /* the client calls it no more */
  } else {
    tap->registered = false; /* "/" changed: the watch fired, once */
    if (!tap->unwanted && !s->dead)
      tap_arm_locked(s, ZKL_RQ_TAP);
  }
  tap_maybe_free_locked(tap);
  pthread_mutex_lock(&taps_mu);
  last = --tap->calls == 0 && tap->retired;
  pthread_mutex_unlock(&taps_mu);
  if (last) {
    free(tap);
    zkl__session_unref_locked(s); /* the tap's */
  }
  zkl__session_unref_locked(s);
  zkl__leave(s);
}

/* ------------------------------------------------------------------ wrap */

/* Sends the probe until the server answers it, the session turns out to be
 * over, or the deadline passes; the client fails requests at once while no
 * server takes its connection, so retries are paced. */
static int probe_locked(zkl_session *s, int64_t deadline) {
  while (zkl__now_ms() < deadline) {
    int sent = tap_arm_locked(s, ZKL_RQ_PROBE);
    if (sent != ZOK)
      return sent == ZKL_ENOMEM ? ZKL_ENOMEM : ZKL_EEXPIRED;
    while (s->tap->arm_inflight && zkl__now_ms() < deadline)
      zkl__cond_wait_until(&s->cond, &s->mu, deadline);
    if (s->dead)
      return ZKL_EEXPIRED;
    if (s->tap->registered)
      return ZKL_OK;
    if (s->tap->arm_inflight)
      break; /* no answer within the bound */
    zkl__cond_wait_until(&s->cond, &s->mu, zkl__now_ms() + 50);
  }
  return ZKL_ECONNECT;
}

int zkl__session_wrap(zkl_session **out, const zkl_open_opts *p) {
  zhandle_t *zh = p->handle;
  zkl_session *s;
  int rc, timeout;
  bool last;

  if (is_unrecoverable(zh))
    return ZKL_EEXPIRED;
  timeout = zoo_recv_timeout(zh);
  if (timeout <= 0)
    timeout = ZKL_SESSION_TIMEOUT_DEFAULT_MS;
  rc = zkl__session_alloc(&s, timeout, false);
  if (rc != ZKL_OK)
    return rc;
  zkl__lease_attach(s);
  s->zh = zh;
  if (!(s->tap = tap_new(s))) {
    zkl__session_free(s);
    return ZKL_ENOMEM;
  }
  s->refs++; /* the tap's */
  s->cleanups.drained_locked = cleanups_drained_locked;
  if (zkl__timer_start(&s->timer, &s->mu, zkl__session_tick_locked, s) !=
      ZKL_OK) {
    tap_retire(s->tap); /* never given to the client */
    free(s->tap);
    zkl__session_free(s);
    return ZKL_ESYSTEM;
  }
  pthread_mutex_lock(&s->mu);
  zkl__session_apply_opts_locked(s, p);
  rc = probe_locked(s, zkl__now_ms() + (p->connect_timeout_ms > 0
                                            ? p->connect_timeout_ms
                                            : timeout));
  if (rc == ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    *out = s;
    return ZKL_OK;
  }
  /* The probe's completion may still come and hold the last references:
   * the session is freed by whichever of us lets go last. */
  zkl__session_opened_locked(s, false);
  s->tap->unwanted = true;
  tap_maybe_free_locked(s->tap);
  s->refs--; /* the user's */
  last = s->refs == 0;
  pthread_mutex_unlock(&s->mu);
  zkl__timer_stop(&s->timer);
  if (last)
    zkl__session_free(s);
  return rc;
}
