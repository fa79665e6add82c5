/*
 * session.c - one ZooKeeper session: connecting, session events, the queue
 * of user callbacks, background cleanup, and closing.
 *
 * Life of a session: it is referenced by the user (until close), by each of
 * its locks, by each watch record the client may still call, and by each
 * request in flight; it is freed when the last reference goes, after its
 * lock has been dropped.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The session whose completion-thread entry point the calling thread is in,
 * if any: user callbacks queued for it run when that entry point returns.
 * Callbacks queued for another session need a carrier request to bring that
 * session's completion thread round. */
static __thread zkl_session *tls_in_session;

_Static_assert(ZKL_RQ_KINDS <= 16, "zkl_session.sent is too small");

static void session_free(zkl_session *s) {
  pthread_cond_destroy(&s->cond);
  pthread_cond_destroy(&s->timer_cond);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* Unlocks, and frees the session if nothing references it any more. */
static void unlock_maybe_free(zkl_session *s) {
  bool last = s->refs == 0;
  pthread_mutex_unlock(&s->mu);
  if (last)
    session_free(s);
}

void zkl__session_unref_locked(zkl_session *s) { s->refs--; }

void zkl__unlock(zkl_session *s) {
  pthread_cond_broadcast(&s->cond);
  unlock_maybe_free(s);
}

bool zkl__is_connection_loss(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

bool zkl__is_session_over(int rc) {
  return rc == ZSESSIONEXPIRED || rc == ZCLOSING || rc == ZINVALIDSTATE ||
         rc == ZAUTHFAILED || rc == ZSESSIONMOVED;
}

int zkl__session_usable_locked(const zkl_session *s) {
  if (s->closing)
    return ZKL_ECLOSED;
  if (s->dead)
    return s->dead;
  return ZKL_OK;
}

/* ------------------------------------------------------------ requests */

zkl_req *zkl__req_new(zkl_session *s, int kind, zkl_attempt *att) {
  zkl_req *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->s = s;
  r->kind = kind;
  r->att = att;
  r->sent_ms = zkl__now_ms();
  s->sent[kind]++;
  s->refs++;
  s->inflight++;
  if (att) {
    att->refs++;
    att->pending++;
    r->round = att->round;
  }
  return r;
}

void zkl__req_done_locked(zkl_req *r) {
  zkl_session *s = r->s;
  if (r->att) {
    r->att->pending--;
    zkl__attempt_unref_locked(r->att);
  }
  free(r->path);
  free(r);
  s->inflight--;
  zkl__session_unref_locked(s);
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

/* Everything but the client's own verdicts (a lost connection, a closing or
 * dead handle) is an answer from the server. */
static bool server_answered(int rc) {
  return rc == ZOK || (rc <= ZAPIERROR && rc != ZSESSIONEXPIRED &&
                       rc != ZCLOSING && rc != ZSESSIONMOVED &&
                       rc != ZAUTHFAILED);
}

void zkl__enter_req_locked(zkl_req *r, int rc) {
  zkl_session *s = r->s;
  zkl__enter_locked(s);
  if (server_answered(rc) && r->sent_ms > s->last_ack_ms)
    s->last_ack_ms = r->sent_ms;
}

static void run_call(zkl_call *c) {
  switch (c->kind) {
  case ZKL_CALL_ACQUIRE:
    c->acquire_cb(c->l, c->rc, c->token, c->arg);
    break;
  case ZKL_CALL_DONE:
    if (c->done_cb)
      c->done_cb(c->l, c->rc, c->arg);
    break;
  case ZKL_CALL_LOST:
    c->lost_cb(c->l, c->rc, c->arg);
    break;
  }
}

/* Runs queued user callbacks, in order, with the lock dropped. Called with
 * s->mu held on a completion thread (or by close as a last resort). */
static void drain_calls_locked(zkl_session *s) {
  zkl_session *outer = tls_in_session;
  tls_in_session = s;
  while (s->calls) {
    zkl_call *batch = s->calls, *c, *next;
    s->calls = NULL;
    s->calls_tail = &s->calls;
    pthread_mutex_unlock(&s->mu);
    for (c = batch; c; c = c->next)
      run_call(c);
    pthread_mutex_lock(&s->mu);
    for (c = batch; c; c = next) {
      next = c->next;
      zkl__lock_unref_locked(c->l);
      free(c);
    }
  }
  tls_in_session = outer;
}

void zkl__run_calls_locked(zkl_session *s, zkl_call *list) {
  zkl_call *c, *next;
  s->busy++;
  pthread_mutex_unlock(&s->mu);
  for (c = list; c; c = c->next)
    run_call(c);
  pthread_mutex_lock(&s->mu);
  for (c = list; c; c = next) {
    next = c->next;
    zkl__lock_unref_locked(c->l);
    free(c);
  }
  s->busy--;
  pthread_cond_broadcast(&s->cond);
}

void zkl__leave(zkl_session *s) {
  drain_calls_locked(s);
  tls_in_session = NULL;
  s->busy--;
  pthread_cond_broadcast(&s->cond);
  unlock_maybe_free(s);
}

static void carrier_done(int rc, const struct Stat *stat, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  (void)rc;
  (void)stat;
  zkl__enter_req_locked(r, rc);
  s->carrier_inflight = false;
  zkl__req_done_locked(r);
  zkl__leave(s);
}

/* A cheap read whose only purpose is that its completion runs on the
 * completion thread, where queued callbacks are then run. When disconnected
 * it completes (with ZCONNECTIONLOSS) as soon as the client gives up its
 * current connection attempt. */
static void ensure_carrier_locked(zkl_session *s) {
  zkl_req *r;
  if (s->carrier_inflight || !s->zh || s->closed)
    return;
  r = zkl__req_new(s, ZKL_RQ_CARRIER, NULL);
  if (!r)
    return; /* retried by the next queued call or completion */
  if (zoo_aexists(s->zh, "/", 0, carrier_done, r) != ZOK) {
    /* A dead handle: the session-over event, or close, runs the queue. */
    zkl__req_abort_locked(r);
    return;
  }
  s->carrier_inflight = true;
}

void zkl__queue_call_locked(zkl_session *s, zkl_call *c) {
  c->next = NULL;
  c->l->refs++;
  *s->calls_tail = c;
  s->calls_tail = &c->next;
  if (tls_in_session != s)
    ensure_carrier_locked(s);
}

/* --------------------------------------------------------------- parking */

void zkl__park_locked(zkl_attempt *att, unsigned resume) {
  zkl_session *s = att->l->s;
  att->resume |= resume;
  if (!att->parked) {
    att->parked = true;
    att->refs++;
    zkl__list_push(&s->parked, &att->park_link);
  }
  /* A completion can report a lost connection after the client already
   * reconnected; then nothing would wake the attempt again. */
  if (s->connected && !s->dead)
    zkl__locks_resume_locked(s);
}

void zkl__unpark_locked(zkl_attempt *att) {
  if (!att->parked)
    return;
  att->parked = false;
  zkl__list_remove(&att->park_link);
  zkl__attempt_unref_locked(att);
}

/* ------------------------------------------------------ background cleanup */

/* zoo_aremove_watches() declares its completion as a pointer to a function
 * pointer but stores and calls the pointer's value as the function. */
static void_completion_t *as_completion_ptr(void_completion_t fn) {
  void_completion_t *p;
  memcpy(&p, &fn, sizeof p);
  return p;
}

static void tap_maybe_release_locked(zkl_session *s);


static void cleanup_free_locked(zkl_session *s, zkl_cleanup *job) {
  (void)s;
  zkl__list_remove(&job->link);
  free(job->path);
  free(job);
}

static void cleanup_run_locked(zkl_session *s, zkl_cleanup *job);

static void cleanup_finish_locked(zkl_session *s, zkl_cleanup *job, int rc) {
  job->inflight = false;
  if (zkl__is_connection_loss(rc) && !s->dead && !s->closed) {
    if (s->connected)
      cleanup_run_locked(s, job); /* the client already reconnected */
    return;                       /* else retried on the next reconnect */
  }
  if (rc != ZOK && rc != ZNONODE && rc != ZNOWATCHER && !zkl__is_session_over(rc))
    zkl__log("cleanup of %s failed: %s; giving up", job->path, zerror(rc));
  if (job->kind == ZKL_CLEAN_REMOVE_WATCH)
    zkl__watch_cleanup_done_locked(job->w, rc);
  cleanup_free_locked(s, job);
  tap_maybe_release_locked(s); /* a closed session may owe nothing more */
}

static void cleanup_void_done(int rc, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_cleanup *job = r->job;
  zkl__enter_req_locked(r, rc);
  if (job->kind == ZKL_CLEAN_REMOVE_WATCH)
    job->w->remove_inflight = false;
  cleanup_finish_locked(s, job, rc);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void cleanup_list_done(int rc, const struct String_vector *children,
                              const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_cleanup *job = r->job;
  int i;
  zkl__enter_req_locked(r, rc);
  if (rc == ZOK) {
    char path[ZKL_PATH_MAX];
    for (i = 0; i < children->count; i++) {
      if (strncmp(children->data[i], job->prefix, ZKL_PREFIX_LEN) != 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", job->path, children->data[i]);
      zkl__cleanup_delete_locked(s, path);
    }
  }
  cleanup_finish_locked(s, job, rc);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void cleanup_run_locked(zkl_session *s, zkl_cleanup *job) {
  zkl_req *r;
  int rc;
  if (job->inflight || !s->connected || s->dead || s->closed)
    return;
  r = zkl__req_new(s, ZKL_RQ_CLEANUP, NULL);
  if (!r)
    return;
  r->job = job;
  switch (job->kind) {
  case ZKL_CLEAN_DELETE:
    rc = zoo_adelete(s->zh, job->path, -1, cleanup_void_done, r);
    break;
  case ZKL_CLEAN_DELETE_PREFIX:
    rc = zoo_aget_children(s->zh, job->path, 0, cleanup_list_done, r);
    break;
  default:
    /* Never local=1 asynchronously: the client then treats data as a
     * synchronous completion record. */
    rc = zoo_aremove_watches(s->zh, job->w->path, ZWATCHTYPE_DATA,
                             zkl__pred_watcher, job->w, 0,
                             as_completion_ptr(cleanup_void_done), r);
    if (rc == ZOK)
      job->w->remove_inflight = true;
    break;
  }
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    /* Refused at once. ZNOWATCHER means the client no longer holds the
     * watcher because its event has come in; the event may still be
     * waiting in the completion queue and will then call us with this
     * record, so `registered` stays set: zkl__pred_watcher clears it and
     * frees the record when the event is delivered. */
    if (!zkl__is_connection_loss(rc))
      cleanup_finish_locked(s, job, rc);
    return;
  }
  job->inflight = true;
}

static zkl_cleanup *cleanup_new_locked(zkl_session *s, int kind,
                                       const char *path) {
  zkl_cleanup *job;
  if (s->dead || s->closed)
    return NULL; /* the session's end removes its ephemeral nodes */
  job = calloc(1, sizeof *job);
  if (!job)
    return NULL;
  job->kind = kind;
  if (path && !(job->path = strdup(path))) {
    free(job);
    return NULL;
  }
  zkl__list_push(&s->cleanups, &job->link);
  return job;
}

void zkl__cleanup_delete_locked(zkl_session *s, const char *path) {
  zkl_cleanup *job = cleanup_new_locked(s, ZKL_CLEAN_DELETE, path);
  if (job)
    cleanup_run_locked(s, job);
}

void zkl__cleanup_prefix_locked(zkl_session *s, const char *parent,
                                const char *prefix) {
  zkl_cleanup *job = cleanup_new_locked(s, ZKL_CLEAN_DELETE_PREFIX, parent);
  if (!job)
    return;
  memcpy(job->prefix, prefix, ZKL_PREFIX_LEN + 1);
  cleanup_run_locked(s, job);
}

void zkl__cleanup_watch_locked(zkl_session *s, zkl_watch *w) {
  zkl_cleanup *job;
  if (w->cleanup_queued)
    return;
  job = cleanup_new_locked(s, ZKL_CLEAN_REMOVE_WATCH, w->path);
  if (!job)
    return;
  job->w = w;
  w->cleanup_queued = true;
  cleanup_run_locked(s, job);
}

static void run_cleanups_locked(zkl_session *s) {
  zkl_link *n, *next;
  for (n = s->cleanups.next; n != &s->cleanups; n = next) {
    next = n->next;
    cleanup_run_locked(s, zkl__container_of(n, zkl_cleanup, link));
  }
}

/* Forgets the cleanups that wait for a reconnect. One whose request is in
 * flight stays: its completion comes (with ZSESSIONEXPIRED, say) and frees
 * it, seeing the session over. */
static void drop_cleanups_locked(zkl_session *s) {
  zkl_link *n, *next;
  for (n = s->cleanups.next; n != &s->cleanups; n = next) {
    zkl_cleanup *job = zkl__container_of(n, zkl_cleanup, link);
    next = n->next;
    if (job->inflight)
      continue;
    if (job->kind == ZKL_CLEAN_REMOVE_WATCH) {
      job->w->cleanup_queued = false;
      zkl__watch_maybe_free_locked(job->w);
    }
    cleanup_free_locked(s, job);
  }
}

/* -------------------------------------------------------- session events */

static void session_over_locked(zkl_session *s, int why) {
  if (s->dead)
    return;
  s->dead = why;
  s->connected = false;
  zkl__locks_session_over_locked(s);
  /* In-flight cleanups complete with ZSESSIONEXPIRED; queued ones are moot:
   * the server deleted the session's ephemeral nodes with it. */
  drop_cleanups_locked(s);
  pthread_cond_broadcast(&s->cond);
}

static void on_state_locked(zkl_session *s, zhandle_t *zh, int state) {
  if (state == ZOO_CONNECTED_STATE) {
    const clientid_t *id = zoo_client_id(zh);
    if (s->dead)
      return;
    s->session_id = id ? id->client_id : 0;
    s->negotiated_timeout_ms = zoo_recv_timeout(zh);
    s->connected = true;
    pthread_cond_broadcast(&s->cond);
    zkl__timer_kick_locked(s); /* a heartbeat may be due */
    zkl__locks_resume_locked(s);
    run_cleanups_locked(s);
  } else if (state == ZOO_EXPIRED_SESSION_STATE) {
    zkl__log("session 0x%llx expired", (unsigned long long)s->session_id);
    session_over_locked(s, ZKL_EEXPIRED);
  } else if (state == ZOO_AUTH_FAILED_STATE) {
    session_over_locked(s, ZAUTHFAILED);
  } else {
    /* CONNECTING, ASSOCIATING, NOTCONNECTED, or read-only (no writes, so no
     * locking): not connected. */
    s->connected = false;
    pthread_cond_broadcast(&s->cond);
  }
}

static void session_watcher(zhandle_t *zh, int type, int state,
                            const char *path, void *ctx) {
  zkl_session *s = ctx;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    return; /* the library sets no default-watcher watches */
  zkl__enter_locked(s);
  on_state_locked(s, zh, state);
  zkl__leave(s);
}

void zkl_session_forward_event(zkl_session *s, int type, int state) {
  if (!s || type != ZOO_SESSION_EVENT)
    return;
  zkl__enter_locked(s);
  if (!s->owns_handle && !s->closed)
    on_state_locked(s, s->zh, state);
  zkl__leave(s);
}

/* ------------------------------------------------------ open, wrap, close */

static int session_alloc(zkl_session **out, int timeout_ms) {
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
  if (zkl__cond_init(&s->timer_cond) != ZKL_OK) {
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return ZKL_ESYSTEM;
  }
  s->requested_timeout_ms = timeout_ms;
  s->refs = 1;
  zkl__list_init(&s->locks);
  zkl__list_init(&s->parked);
  zkl__list_init(&s->watches);
  zkl__list_init(&s->cleanups);
  s->calls_tail = &s->calls;
  s->owner_len = zkl__owner_data(s->owner_data, sizeof s->owner_data);
  *out = s;
  return ZKL_OK;
}

int zkl_session_open(zkl_session **out, const char *hosts,
                     int session_timeout_ms) {
  return zkl_session_open2(out, hosts, session_timeout_ms, session_timeout_ms);
}

/* zookeeper_init2() says why it refused a connect string only in errno:
 * EINVAL for one that does not parse, ENOENT when no host resolves. */
static int init_refusal(int err) {
  if (err == ENOMEM)
    return ZKL_ENOMEM;
  if (err == EINVAL)
    return ZKL_EINVAL;
  if (err == ENOENT)
    return ZKL_ERESOLVE;
  return ZKL_ECONNECT;
}

int zkl_session_open2(zkl_session **out, const char *hosts,
                      int session_timeout_ms, int connect_timeout_ms) {
  zkl_session *s;
  zhandle_t *zh;
  int64_t deadline;
  int rc;

  if (!out || !hosts || !*hosts || session_timeout_ms <= 0 ||
      connect_timeout_ms <= 0)
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  rc = session_alloc(&s, session_timeout_ms);
  if (rc != ZKL_OK)
    return rc;
  s->owns_handle = true;
  if (zkl__timer_start(s) != ZKL_OK) {
    session_free(s);
    return ZKL_ESYSTEM;
  }

  pthread_mutex_lock(&s->mu);
  errno = 0;
  zh = zookeeper_init2(hosts, session_watcher, session_timeout_ms, NULL, s, 0,
                       zkl__zk_log);
  if (!zh) {
    int err = errno;
    pthread_mutex_unlock(&s->mu);
    zkl__timer_stop(s);
    session_free(s);
    zkl__log("zookeeper_init2(\"%s\") failed: %s", hosts, strerror(err));
    return init_refusal(err);
  }
  s->zh = zh;
  deadline = zkl__now_ms() + connect_timeout_ms;
  while (!s->connected && !s->dead && zkl__now_ms() < deadline)
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  if (!s->connected) {
    zkl__log("no ZooKeeper server of \"%s\" answered within %d ms", hosts,
             connect_timeout_ms);
    s->closed = true;
    pthread_mutex_unlock(&s->mu);
    zkl__timer_stop(s);
    zookeeper_close(zh); /* joins the client's threads: no event after this */
    session_free(s);
    return ZKL_ECONNECT;
  }
  pthread_mutex_unlock(&s->mu);
  *out = s;
  return ZKL_OK;
}

/* ------------------------------------------------------------- the tap */

/* A wrapped handle's session events go to the application's default
 * watcher, which the library does not own. The client also delivers every
 * session event to every registered watch, so the library keeps one of its
 * own: an exists watch on "/" (a node that is never deleted; one watch on
 * the server). Through it the session hears connection changes and expiry
 * without the application's help, and a session closed while its handle is
 * cut off still hears the reconnect that lets it delete the nodes it owes
 * (issue 7, bug 3). The probe of zkl_session_wrap() sets it, so it also
 * proves the handle connected when its CONNECTED event went to the
 * application before there was a session to forward it to (bug 2).
 *
 * The record holds a session reference for as long as the client may call
 * it: until the client confirms a removal, delivers an event that ends the
 * watch (expiry, or a change of "/" that is not re-armed), or reports the
 * handle closing. */
struct zkl_tap {
  zkl_session *s;
  bool registered;      /* the client holds it */
  bool arm_inflight;    /* an exists that sets it has not completed */
  bool remove_inflight; /* a removal request is out */
  bool unwanted;        /* the session is done with it */
};

static void tap_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx);

static void tap_maybe_free_locked(zkl_tap *tap) {
  zkl_session *s = tap->s;
  if (tap->registered || tap->arm_inflight || tap->remove_inflight)
    return;
  if (s->tap == tap)
    s->tap = NULL;
  free(tap);
  zkl__session_unref_locked(s);
}

static void tap_armed(int rc, const struct Stat *stat, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_tap *tap = s->tap;
  (void)stat;
  zkl__enter_req_locked(r, rc);
  if (r->kind == ZKL_RQ_PROBE) {
    /* Any answer from the server proves the handle connected now. */
    if (zkl__is_session_over(rc)) {
      s->dead = ZKL_EEXPIRED;
    } else if (rc == ZOK && !s->connected && !s->dead) {
      const clientid_t *id = zoo_client_id(s->zh);
      s->connected = true;
      s->session_id = id ? id->client_id : 0;
      s->negotiated_timeout_ms = zoo_recv_timeout(s->zh);
    }
  }
  tap->arm_inflight = false;
  if (rc == ZOK) {
    tap->registered = true;
    if (tap->unwanted) /* wrap gave up meanwhile, or a close came */
      tap_maybe_release_locked(s);
  }
  tap_maybe_free_locked(tap);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

/* Sends the exists that sets the watch; kind says whether it is the wrap's
 * probe. Returns ZOK or the client's refusal. */
static int tap_arm_locked(zkl_session *s, int kind) {
  zkl_req *r = zkl__req_new(s, kind, NULL);
  int rc;
  if (!r)
    return ZKL_ENOMEM;
  rc = zoo_awexists(s->zh, "/", tap_watcher, s->tap, tap_armed, r);
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    return rc;
  }
  s->tap->arm_inflight = true;
  return ZOK;
}

static void tap_removed(int rc, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_tap *tap = s->tap;
  zkl__enter_req_locked(r, rc);
  tap->remove_inflight = false;
  /* ZOK: the client dropped it. ZCLOSING: the application is closing the
   * handle, which drops every watch without calling it. A lost connection
   * is retried at the reconnect, which the tap itself reports. ZNOWATCHER:
   * its event has come in and is on its way here. */
  if (rc == ZOK || rc == ZCLOSING)
    tap->registered = false;
  tap_maybe_free_locked(tap);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void tap_remove_locked(zkl_session *s) {
  zkl_tap *tap = s->tap;
  zkl_req *r;
  if (!tap || !tap->registered || tap->remove_inflight || !s->connected ||
      s->dead)
    return;
  r = zkl__req_new(s, ZKL_RQ_TAP, NULL);
  if (!r)
    return; /* tried again at the next reconnect */
  if (zoo_aremove_watches(s->zh, "/", ZWATCHTYPE_DATA, tap_watcher, tap, 0,
                          as_completion_ptr(tap_removed), r) != ZOK) {
    zkl__req_abort_locked(r);
    return;
  }
  tap->remove_inflight = true;
}

/* A closing wrapped session gives its watch back once it owes the server
 * nothing more: until then the watch is how it hears the reconnect. */
static void tap_maybe_release_locked(zkl_session *s) {
  if (!s->tap || !s->closing || !zkl__list_empty(&s->cleanups))
    return;
  s->tap->unwanted = true;
  tap_remove_locked(s);
}

static void tap_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx) {
  zkl_tap *tap = ctx;
  zkl_session *s = tap->s;
  (void)path;
  zkl__enter_locked(s);
  s->refs++; /* freeing the tap below must not free s under us */
  if (type == ZOO_SESSION_EVENT) {
    on_state_locked(s, zh, state);
    if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
      tap->registered = false; /* the client calls it no more */
    else if (state == ZOO_CONNECTED_STATE)
      tap_remove_locked(s); /* a removal the outage held up */
  } else {
    tap->registered = false; /* "/" changed: the watch fired, once */
    if (!tap->unwanted && !s->dead)
      tap_arm_locked(s, ZKL_RQ_TAP);
  }
  tap_maybe_free_locked(tap);
  s->refs--;
  zkl__leave(s);
}

/* ------------------------------------------------------------------ wrap */

int zkl_session_wrap(zkl_session **out, zhandle_t *zh) {
  zkl_session *s;
  int64_t deadline;
  int rc, timeout;

  if (!out || !zh)
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  if (is_unrecoverable(zh))
    return ZKL_EEXPIRED;
  timeout = zoo_recv_timeout(zh);
  if (timeout <= 0)
    timeout = 10000;
  rc = session_alloc(&s, timeout);
  if (rc != ZKL_OK)
    return rc;
  s->zh = zh;
  s->owns_handle = false;
  if (!(s->tap = calloc(1, sizeof *s->tap))) {
    session_free(s);
    return ZKL_ENOMEM;
  }
  s->tap->s = s;
  s->refs++;
  if (zkl__timer_start(s) != ZKL_OK) {
    free(s->tap);
    session_free(s);
    return ZKL_ESYSTEM;
  }
  pthread_mutex_lock(&s->mu);
  /* Whatever zoo_state() says, only an answer proves the handle connected
   * for us: the probe's. Until it comes, retry it when the connection
   * drops (paced: the client fails requests at once while no server
   * takes its connection). */
  deadline = zkl__now_ms() + timeout;
  rc = ZKL_ECONNECT;
  while (zkl__now_ms() < deadline) {
    int sent = tap_arm_locked(s, ZKL_RQ_PROBE);
    if (sent != ZOK) {
      rc = sent == ZKL_ENOMEM ? ZKL_ENOMEM : ZKL_EEXPIRED;
      break;
    }
    while (s->tap->arm_inflight && zkl__now_ms() < deadline)
      zkl__cond_wait_until(&s->cond, &s->mu, deadline);
    if (s->dead) {
      rc = ZKL_EEXPIRED;
      break;
    }
    if (s->tap->registered) {
      rc = ZKL_OK;
      break;
    }
    if (s->tap->arm_inflight)
      break; /* no answer within the bound */
    zkl__cond_wait_until(&s->cond, &s->mu, zkl__now_ms() + 50);
  }
  if (rc != ZKL_OK) {
    /* The probe's completion may still come and hold the last references:
     * the session is freed by whichever of us lets go last. */
    bool last;
    s->closing = s->closed = true;
    s->tap->unwanted = true;
    tap_maybe_free_locked(s->tap);
    s->refs--;
    last = s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    zkl__timer_stop(s);
    if (last)
      session_free(s);
    return rc;
  }
  pthread_mutex_unlock(&s->mu);
  *out = s;
  return ZKL_OK;
}

/* True when nothing of the session can still call back into the library
 * except watch records. */
static bool quiet_locked(const zkl_session *s) {
  return s->inflight == 0 && s->busy == 0 && !s->calls;
}

/* What a closing session must finish before it lets go: its callbacks
 * always; for a wrapped handle also the deletions it owes the server and
 * its watch, unless the session is over (the server deleted its nodes). */
static bool close_done_locked(const zkl_session *s) {
  if (!quiet_locked(s))
    return false;
  return s->owns_handle || s->dead ||
         (zkl__list_empty(&s->cleanups) && !s->tap);
}

static void *close_thread(void *arg);

void zkl_session_close(zkl_session *s) {
  int64_t deadline;
  if (!s)
    return;
  if (zkl__on_zk_thread()) {
    /* Waiting here would wait for the thread we are on. */
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&s->mu);
    s->closing = true; /* refuse new calls from now on */
    pthread_mutex_unlock(&s->mu);
    if (pthread_create(&t, &attr, close_thread, s) != 0)
      zkl__log("cannot start a thread to close the session; it leaks");
    pthread_attr_destroy(&attr);
    return;
  }

  pthread_mutex_lock(&s->mu);
  s->closing = true;
  zkl__locks_close_locked(s);
  tap_maybe_release_locked(s);
  /* Own handle: closing the session deletes its nodes in one step, so only
   * callbacks must be delivered. Wrapped handle: the nodes were deleted one
   * by one above; wait for that too, within a bound. */
  deadline = zkl__now_ms() + 2 * (int64_t)s->requested_timeout_ms + 2000;
  while (!close_done_locked(s)) {
    if (s->calls && !s->carrier_inflight && s->busy == 0 &&
        (s->dead || !s->zh || is_unrecoverable(s->zh))) {
      /* Dead handle: no completion will come to run them. */
      s->busy++;
      drain_calls_locked(s);
      s->busy--;
      continue;
    }
    if (zkl__now_ms() >= deadline)
      break;
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  }
  if (!s->owns_handle && !s->dead && s->tap) {
    /* Cut off from the server. The handle stays the application's and may
     * yet reconnect in this same session, whose nodes then still stand:
     * the deletions go on in the background, driven by the tap, until the
     * server confirms them or the session ends. Only callbacks of the
     * client run from now on: nothing calls the handle from another
     * thread, which the application may close at any time. */
    zkl__log("session close: %u deletion(s) left for the reconnect",
             zkl__list_length(&s->cleanups));
    s->orphaned = true;
    pthread_mutex_unlock(&s->mu);
    zkl__timer_stop(s);
    pthread_mutex_lock(&s->mu);
    s->refs--; /* the user's reference; the tap holds another */
    unlock_maybe_free(s);
    return;
  }
  s->closed = true;
  drop_cleanups_locked(s);
  pthread_mutex_unlock(&s->mu);

  zkl__timer_stop(s);
  if (s->owns_handle)
    zookeeper_close(s->zh); /* joins the client's threads */

  pthread_mutex_lock(&s->mu);
  if (s->owns_handle) {
    /* The client dropped its watchers without calling them. */
    while (!zkl__list_empty(&s->watches)) {
      zkl_watch *w = zkl__container_of(s->watches.next, zkl_watch, link);
      w->get_inflight = w->registered = w->remove_inflight = false;
      zkl__watch_maybe_free_locked(w);
    }
  }
  s->zh = NULL;
  s->refs--; /* the user's reference */
  unlock_maybe_free(s);
}

static void *close_thread(void *arg) {
  zkl_session_close(arg);
  return NULL;
}

void zkl__debug_counts(zkl_session *s, zkl_debug_counts *out) {
  const zkl_call *c;
  pthread_mutex_lock(&s->mu);
  out->watches = zkl__list_length(&s->watches);
  out->cleanups = zkl__list_length(&s->cleanups);
  out->inflight = s->inflight;
  out->parked = zkl__list_length(&s->parked);
  out->calls = 0;
  for (c = s->calls; c; c = c->next)
    out->calls++;
  memcpy(out->sent, s->sent, sizeof out->sent);
  pthread_mutex_unlock(&s->mu);
}

static int wait_still(zkl_session *s, bool watches_too, int timeout_ms) {
  int64_t deadline = zkl__now_ms() + timeout_ms;
  int rc = -1;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    if ((!watches_too || zkl__list_empty(&s->watches)) &&
        zkl__list_empty(&s->cleanups) && zkl__list_empty(&s->parked) &&
        s->inflight == 0 && !s->calls && s->busy == 0) {
      rc = 0;
      break;
    }
    if (zkl__now_ms() >= deadline)
      break;
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int zkl__debug_wait_quiet(zkl_session *s, int timeout_ms) {
  return wait_still(s, true, timeout_ms);
}

int zkl__debug_wait_settled(zkl_session *s, int timeout_ms) {
  return wait_still(s, false, timeout_ms);
}

int zkl__debug_wait_connected(zkl_session *s, bool want, int timeout_ms) {
  int64_t deadline = zkl__now_ms() + timeout_ms;
  bool now;
  pthread_mutex_lock(&s->mu);
  while (s->connected != want && !s->dead && zkl__now_ms() < deadline)
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  now = s->connected;
  pthread_mutex_unlock(&s->mu);
  return now == want ? 0 : -1;
}

int zkl__debug_wait_dead(zkl_session *s, int timeout_ms) {
  int64_t deadline = zkl__now_ms() + timeout_ms;
  int dead;
  pthread_mutex_lock(&s->mu);
  while (!s->dead && zkl__now_ms() < deadline)
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  dead = s->dead;
  pthread_mutex_unlock(&s->mu);
  return dead;
}

zhandle_t *zkl_session_handle(zkl_session *s) { return s ? s->zh : NULL; }

int zkl_session_timeout(zkl_session *s) {
  int t;
  if (!s)
    return 0;
  pthread_mutex_lock(&s->mu);
  t = s->negotiated_timeout_ms;
  pthread_mutex_unlock(&s->mu);
  return t;
}
