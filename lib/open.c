/* SPDX-License-Identifier: Apache-2.0 */
/*
 * open.c - opening a session, adding credentials to it, and closing it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

int zkl_session_open(zkl_session **out, const char *hosts,
                     int session_timeout_ms) {
  return zkl_session_open3(out, hosts, session_timeout_ms, session_timeout_ms,
                           0);
}

int zkl_session_open2(zkl_session **out, const char *hosts,
                      int session_timeout_ms, int connect_timeout_ms) {
  return zkl_session_open3(out, hosts, session_timeout_ms, connect_timeout_ms,
                           0);
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

int zkl_session_open3(zkl_session **out, const char *hosts,
                      int session_timeout_ms, int connect_timeout_ms,
                      int flags) {
  zkl_session *s;
  zhandle_t *zh;
  int64_t deadline;
  int rc;

  if (!out || !hosts || !*hosts || session_timeout_ms <= 0 ||
      connect_timeout_ms <= 0 || (flags & ~ZKL_OPEN_NO_FOLLOW_CONFIG) ||
      strlen(hosts) >= ZKL_SERVERS_MAX)
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  /* The client times the first connection out at 2/3 of the request, and
   * computes twice it in an int: outside these bounds it never connects.
   * The server negotiates the timeout anyway (up to its floor of two
   * ticks, down to its ceiling), so the floor changes nothing there. */
  if (session_timeout_ms < ZKL_SESSION_TIMEOUT_MIN ||
      session_timeout_ms > ZKL_SESSION_TIMEOUT_MAX) {
    int asked = session_timeout_ms;
    session_timeout_ms = asked < ZKL_SESSION_TIMEOUT_MIN
                             ? ZKL_SESSION_TIMEOUT_MIN
                             : ZKL_SESSION_TIMEOUT_MAX;
    zkl__log("session timeout %d ms asked for: %d ms requested instead", asked,
             session_timeout_ms);
  }
  rc = zkl__session_alloc(&s, session_timeout_ms, true);
  if (rc != ZKL_OK)
    return rc;
  rc = zkl__follow_init(s, hosts, !(flags & ZKL_OPEN_NO_FOLLOW_CONFIG));
  if (rc != ZKL_OK) {
    zkl__session_free(s);
    return rc;
  }
  if (zkl__timer_start(&s->timer, &s->mu, zkl__session_tick_locked, s) !=
      ZKL_OK) {
    zkl__session_free(s);
    return ZKL_ESYSTEM;
  }

  pthread_mutex_lock(&s->mu);
  errno = 0;
  s->lease.opened_ms = zkl__now_ms(); /* the new session's anchor */
  zh = zookeeper_init2(hosts, zkl__session_watcher, session_timeout_ms, NULL,
                       s, 0, zkl__zk_log);
  if (!zh) {
    int err = errno;
    pthread_mutex_unlock(&s->mu);
    zkl__timer_stop(&s->timer);
    zkl__session_free(s);
    zkl__log("zookeeper_init2(\"%s\") failed: %s", hosts, strerror(err));
    return init_refusal(err);
  }
  s->zh = zh;
  /* ZooKeeper 3.8's client resolves its host list again at every turn of
   * its I/O loop unless told otherwise: more than half of this library's
   * instructions per lock cycle, and most of its system calls, went there.
   * Once a second is plenty for host names that move. */
  zoo_set_servers_resolution_delay(zh, 1000);
  deadline = zkl__now_ms() + connect_timeout_ms;
  while (!s->connected && !s->dead && zkl__now_ms() < deadline)
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  if (!s->connected) {
    rc = s->dead ? s->dead : ZKL_ECONNECT;
    zkl__log("no ZooKeeper server of \"%s\" answered within %d ms", hosts,
             connect_timeout_ms);
    s->closed = true;
    pthread_mutex_unlock(&s->mu);
    zkl__timer_stop(&s->timer);
    zookeeper_close(zh); /* joins the client's threads: no event after this */
    zkl__session_free(s);
    return rc;
  }
  pthread_mutex_unlock(&s->mu);
  *out = s;
  return ZKL_OK;
}

/* ----------------------------------------------------------- credentials */

typedef struct auth_wait {
  zkl_session *s;
  pthread_cond_t cond;
  bool done;
  int rc;
} auth_wait;

/* The client calls this from its I/O thread, not the completion thread:
 * only hand the verdict over, never run queued callbacks from here. */
static void auth_done(int rc, const void *data) {
  auth_wait *w = (auth_wait *)data;
  zkl_session *s = w->s;
  pthread_mutex_lock(&s->mu);
  w->rc = rc;
  w->done = true;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&s->mu);
}

/* The verdict after the connection was lost under zoo_add_auth: a server
 * that refuses a scheme answers and closes the connection at once, and the
 * answer is lost with it when the close reaches the client first (a reset
 * drops what it had not read yet). The client shows the credentials again
 * at every reconnect, ahead of anything queued: a refusal then ends the
 * session (ZAUTHFAILED), and a read answered after the reconnect means
 * they were taken. Waits at most the session timeout, s->mu held (dropped
 * for the read). `seen`: the disconnects counted before the lost call. */
static int auth_after_loss_locked(zkl_session *s, unsigned long seen) {
  int64_t deadline = zkl__now_ms() + s->requested_timeout_ms;
  int rc = ZCONNECTIONLOSS, probe;
  while (rc == ZCONNECTIONLOSS && zkl__now_ms() < deadline) {
    while (!s->dead && !s->closing && !(s->connected && s->disconnects > seen) &&
           zkl__now_ms() < deadline)
      zkl__cond_wait_until(&s->cond, &s->mu, deadline);
    if (s->dead)
      return s->dead;
    if (s->closing)
      return ZKL_ECLOSED;
    if (!s->connected || s->disconnects <= seen)
      break; /* the bound passed */
    seen = s->disconnects;
    pthread_mutex_unlock(&s->mu);
    probe = zoo_exists(s->zh, "/", 0, NULL);
    pthread_mutex_lock(&s->mu);
    if (probe == ZOK || probe == ZNONODE)
      rc = ZOK;
    else if (probe == ZAUTHFAILED || is_unrecoverable(s->zh))
      rc = s->dead ? s->dead : ZAUTHFAILED;
  }
  return rc;
}

int zkl_session_add_auth(zkl_session *s, const char *scheme,
                         const char *credentials, int len) {
  auth_wait w;
  unsigned long seen;
  int rc;
  if (!s || !scheme || !*scheme || !credentials || len < 0)
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  memset(&w, 0, sizeof w);
  w.s = s;
  if (pthread_cond_init(&w.cond, NULL) != 0)
    return ZKL_ESYSTEM;
  pthread_mutex_lock(&s->mu);
  seen = s->disconnects;
  rc = zkl__session_usable_locked(s);
  if (rc == ZKL_OK) {
    /* The client keeps the credentials and shows them again on every
     * reconnect; the completion reports the server's first verdict. It
     * always runs (the server answers, or the connection is lost). */
    rc = zoo_add_auth(s->zh, scheme, credentials, len, auth_done, &w);
    if (rc == ZOK) {
      while (!w.done)
        pthread_cond_wait(&w.cond, &s->mu);
      rc = w.rc;
      if (zkl__is_connection_loss(rc))
        rc = auth_after_loss_locked(s, seen);
    } else if (rc == ZINVALIDSTATE) {
      /* The client refuses while between connections (state 0) too. */
      rc = is_unrecoverable(s->zh) ? ZKL_EEXPIRED : ZCONNECTIONLOSS;
    } else if (rc == ZMARSHALLINGERROR || rc == ZSYSTEMERROR) {
      rc = ZKL_ENOMEM;
    }
  }
  pthread_mutex_unlock(&s->mu);
  pthread_cond_destroy(&w.cond);
  return rc;
}

/* --------------------------------------------------------------- closing */

/* What a closing session must finish before it lets go: its callbacks
 * always; for a wrapped handle also the deletions it owes the server and
 * its watch, unless the session is over (the server deleted its nodes). */
static bool close_done_locked(const zkl_session *s) {
  if (!zkl__session_quiet_locked(s))
    return false;
  return s->owns_handle || s->dead ||
         (zkl__cleanups_count_locked(s) == 0 && !zkl__tap_held_locked(s));
}

/* Waits for close_done_locked within the bound: a session that cannot
 * reach a server for that long is expiring, or (wrapped) orphaned. */
static void close_wait_locked(zkl_session *s) {
  int64_t deadline =
      zkl__now_ms() + 2 * (int64_t)s->requested_timeout_ms + 2000;
  while (!close_done_locked(s)) {
    if (s->calls && !s->carrier_inflight && s->busy == 0 &&
        (s->dead || !s->zh || is_unrecoverable(s->zh))) {
      /* Dead handle: no completion will come to run them. */
      s->busy++;
      zkl__drain_calls_locked(s);
      s->busy--;
      continue;
    }
    if (zkl__now_ms() >= deadline)
      break;
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  }
}

/* Lost notices that the timer thread had not run yet: every callback runs
 * before close ends. */
static void run_leftover_notices_locked(zkl_session *s) {
  zkl_call *notices = zkl__lease_take_notices_locked(s);
  if (notices)
    zkl__run_calls_locked(s, notices);
}

static void *close_thread(void *arg);

int zkl_session_close(zkl_session *s) {
  int rc;
  if (!s)
    return ZKL_EINVAL;
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
    return ZKL_EBACKGROUND;
  }

  pthread_mutex_lock(&s->mu);
  s->closing = true;
  if (s->hooks)
    s->hooks->closing_locked(s->hooks_ctx);
  zkl__tap_release_locked(s);
  close_wait_locked(s);
  pthread_mutex_unlock(&s->mu);
  zkl__timer_stop(&s->timer);
  pthread_mutex_lock(&s->mu);
  run_leftover_notices_locked(s);
  /* A watch the client of a wrapped handle still holds is freed only when
   * it fires, and the application's zookeeper_close() drops it silently. */
  if (!s->owns_handle && s->hooks)
    s->hooks->closed_locked(s->hooks_ctx, false);

  if (!s->owns_handle && !s->dead && zkl__tap_held_locked(s)) {
    /* Cut off from the server. The handle stays the application's and may
     * yet reconnect in this same session, whose nodes then still stand:
     * the deletions go on in the background, driven by the tap, until the
     * server confirms them or the session ends. Only callbacks of the
     * client run from now on: nothing calls the handle from another
     * thread, which the application may close at any time. */
    zkl__log("session close: %u deletion(s) left for the reconnect",
             zkl__cleanups_count_locked(s));
    s->orphaned = true;
    zkl__report_closed_locked(s);
    s->refs--; /* the user's reference; the tap holds another */
    zkl__unlock(s);
    return ZKL_EBACKGROUND;
  }
  s->closed = true;
  zkl__cleanups_drop_locked(s);
  /* A session whose server cannot be told lives on the server until it
   * expires: its nodes with it. */
  rc = s->dead                          ? ZKL_EEXPIRED
       : s->connected || !s->owns_handle ? ZKL_OK
                                         : ZKL_ECONNECT;
  pthread_mutex_unlock(&s->mu);

  if (s->owns_handle && zookeeper_close(s->zh) != ZOK && rc == ZKL_OK)
    rc = ZKL_ECONNECT; /* the close request did not get through */

  pthread_mutex_lock(&s->mu);
  if (s->owns_handle && s->hooks)
    s->hooks->closed_locked(s->hooks_ctx, true);
  s->zh = NULL;
  zkl__report_closed_locked(s);
  s->refs--; /* the user's reference */
  zkl__unlock(s);
  return rc;
}

static void *close_thread(void *arg) {
  zkl_session_close(arg);
  return NULL;
}
