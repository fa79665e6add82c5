/* SPDX-License-Identifier: Apache-2.0 */
/*
 * open.c - opening a session, adding credentials to it, and closing it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "agent.h"

/* ------------------------------------------------------------- options */

/* A field of the caller's options, or its default when the caller's struct
 * (compiled against an older header) ends before it. */
#define ZKL_OPT(o, field, dflt)                                              \
  (offsetof(zkl_session_options, field) + sizeof((o)->field) <=             \
           (o)->struct_size                                                  \
       ? (o)->field                                                          \
       : (dflt))

/* The size of 1.0's struct: the smallest a caller may pass. Fields appended
 * later do not move it. */
#define ZKL_OPTIONS_SIZE_1_0                                                 \
  (offsetof(zkl_session_options, event_arg) + sizeof(void *))

/* Reads o into p and checks it (docs/api-1.0.md, section 3): ZKL_OK or
 * ZKL_EINVAL. A struct larger than this library knows is taken only when
 * every byte beyond what it knows is zero: a newer caller asking for an
 * option this library lacks is told so rather than ignored. */
static int read_options(const zkl_session_options *o, zkl_open_opts *p) {
  const unsigned char *tail = (const unsigned char *)o;
  size_t i;
  if (o->struct_size < ZKL_OPTIONS_SIZE_1_0)
    return ZKL_EINVAL;
  for (i = sizeof *o; i < o->struct_size; i++)
    if (tail[i] != 0)
      return ZKL_EINVAL;
  memset(p, 0, sizeof *p);
  p->hosts = ZKL_OPT(o, hosts, NULL);
  p->handle = ZKL_OPT(o, handle, NULL);
  p->session_timeout_ms = ZKL_OPT(o, session_timeout_ms, 0);
  p->connect_timeout_ms = ZKL_OPT(o, connect_timeout_ms, 0);
  p->flags = ZKL_OPT(o, flags, 0u);
  p->lease_margin_ms = ZKL_OPT(o, lease_margin_ms, 0);
  p->server_tick_ms = ZKL_OPT(o, server_tick_ms, 0);
  p->on_state = ZKL_OPT(o, on_state, NULL);
  p->state_arg = ZKL_OPT(o, state_arg, NULL);
  p->on_event = ZKL_OPT(o, on_event, NULL);
  p->event_arg = ZKL_OPT(o, event_arg, NULL);
  p->agent = ZKL_OPT(o, agent, NULL);
  if ((p->hosts != NULL) + (p->handle != NULL) + (p->agent != NULL) != 1)
    return ZKL_EINVAL; /* exactly one of them */
  /* Through the agent, the agent's session has the ZooKeeper settings. */
  if (p->agent && (p->session_timeout_ms || p->flags || p->lease_margin_ms ||
                   p->server_tick_ms))
    return ZKL_EINVAL;
  if (p->session_timeout_ms < 0 || p->connect_timeout_ms < 0 ||
      p->server_tick_ms < 0)
    return ZKL_EINVAL;
  if (p->handle && p->session_timeout_ms != 0)
    return ZKL_EINVAL; /* the handle's timeout is the handle's */
  if (p->flags & ~(unsigned)ZKL_OPEN_NO_FOLLOW_CONFIG)
    return ZKL_EINVAL;
  if (p->hosts && (!*p->hosts || strlen(p->hosts) >= ZKL_SERVERS_MAX))
    return ZKL_EINVAL;
  return ZKL_OK;
}

static int open_hosts(zkl_session **out, const zkl_open_opts *p);

int zkl_session_open(zkl_session **out, const zkl_session_options *o) {
  zkl_open_opts p;
  zkl_session *s;
  int rc;
  if (!out || !o)
    return ZKL_EINVAL;
  if ((rc = read_options(o, &p)) != ZKL_OK)
    return rc;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  if (p.agent)
    return zkl__remote_open(out, p.agent, p.connect_timeout_ms, p.on_state,
                            p.state_arg, p.on_event, p.event_arg);
  rc = p.handle ? zkl__session_wrap(&s, &p) : open_hosts(&s, &p);
  if (rc != ZKL_OK)
    return rc;
  /* The margin is checkable only against the timeout the server granted. */
  pthread_mutex_lock(&s->mu);
  rc = zkl__lease_fits_locked(s);
  zkl__session_opened_locked(s, rc == ZKL_OK);
  pthread_mutex_unlock(&s->mu);
  if (rc != ZKL_OK) {
    zkl__log("lease margin %d ms with tick %d ms leaves no lease of a %d ms "
             "session: closing it",
             p.lease_margin_ms, p.server_tick_ms, zkl_session_timeout(s));
    zkl_session_close(s, NULL);
    return rc;
  }
  *out = s;
  return ZKL_OK;
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

/* When every server refuses, the open gives up early (refused.c): asked
 * after the client's own first try had its chance (a healthy server opens
 * a session well within it), then once a second, each answer awaited for
 * a round trip at most. */
#define REFUSAL_FIRST_MS 100
#define REFUSAL_EVERY_MS 1000
#define REFUSAL_WAIT_MS 200

static int open_hosts(zkl_session **out, const zkl_open_opts *p) {
  const char *hosts = p->hosts;
  int session_timeout_ms = p->session_timeout_ms
                               ? p->session_timeout_ms
                               : ZKL_SESSION_TIMEOUT_DEFAULT_MS;
  int connect_timeout_ms =
      p->connect_timeout_ms ? p->connect_timeout_ms : session_timeout_ms;
  zkl_session *s;
  zhandle_t *zh;
  int64_t deadline, next_probe;
  bool refused = false;
  int rc;

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
  zkl__lease_attach(s);
  rc = zkl__follow_init(s, hosts, !(p->flags & ZKL_OPEN_NO_FOLLOW_CONFIG));
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
  zkl__session_apply_opts_locked(s, p);
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
  next_probe = zkl__now_ms() + REFUSAL_FIRST_MS;
  while (!s->connected && !s->dead && zkl__now_ms() < deadline) {
    if (zkl__now_ms() >= next_probe) {
      /* Nobody to wait for when every server refuses (refused.c): asked
       * with the mutex dropped, since it blocks a moment. */
      pthread_mutex_unlock(&s->mu);
      refused = zkl__every_server_refuses(hosts, REFUSAL_WAIT_MS);
      pthread_mutex_lock(&s->mu);
      if (refused && !s->connected)
        break;
      next_probe = zkl__now_ms() + REFUSAL_EVERY_MS;
    }
    zkl__cond_wait_until(&s->cond, &s->mu,
                         next_probe < deadline ? next_probe : deadline);
  }
  if (!s->connected) {
    rc = s->dead ? s->dead : ZKL_ECONNECT;
    if (refused && !s->dead)
      zkl__log("every ZooKeeper server of \"%s\" refused the connection: "
               "giving up before the connect timeout (%d ms)",
               hosts, connect_timeout_ms);
    else
      zkl__log("no ZooKeeper server of \"%s\" answered within %d ms", hosts,
               connect_timeout_ms);
    s->closed = true;
    zkl__session_opened_locked(s, false);
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
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_unsupported("zkl_session_add_auth");
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

int zkl_session_close(zkl_session *s, zkl_close_outcome *how) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_close(s, how);
  zkl_close_outcome outcome;
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
    if (how)
      *how = ZKL_CLOSE_BACKGROUND;
    return ZKL_OK;
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
    if (how)
      *how = ZKL_CLOSE_BACKGROUND;
    return ZKL_OK;
  }
  s->closed = true;
  zkl__cleanups_drop_locked(s);
  /* A session whose server cannot be told lives on the server until it
   * expires: its nodes with it. */
  outcome = s->dead                          ? ZKL_CLOSE_EXPIRED
            : s->connected || !s->owns_handle ? ZKL_CLOSE_DONE
                                              : ZKL_CLOSE_UNREACHED;
  pthread_mutex_unlock(&s->mu);

  rc = s->owns_handle ? zookeeper_close(s->zh) : ZOK;
  if (rc != ZOK && outcome == ZKL_CLOSE_DONE)
    outcome = ZKL_CLOSE_UNREACHED; /* the close request did not get through */

  pthread_mutex_lock(&s->mu);
  if (s->owns_handle && s->hooks)
    s->hooks->closed_locked(s->hooks_ctx, true);
  s->zh = NULL;
  zkl__report_closed_locked(s);
  s->refs--; /* the user's reference */
  zkl__unlock(s);
  if (how)
    *how = outcome;
  return ZKL_OK;
}

static void *close_thread(void *arg) {
  zkl_session_close(arg, NULL);
  return NULL;
}
