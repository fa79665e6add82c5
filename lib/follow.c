/* SPDX-License-Identifier: Apache-2.0 */
/*
 * follow.c - following the ensemble: a session the library opened reads the
 * ensemble's configuration (/zookeeper/config) with a watch, at every
 * connection and at every change, and when the client addresses it names
 * differ from the client's list, gives the client the new list
 * (zoo_set_servers), as Curator's EnsembleTracker does. A wrapped handle's
 * list is the application's: its session never follows.
 *
 * Why the move is a queued call, run without s->mu on the completion
 * thread: zoo_set_servers() resolves every host of the new list
 * (getaddrinfo, under the client's own reconfig lock, which its I/O thread
 * takes too); with a slow resolver that takes long, and no user thread may
 * wait for it on s->mu. It takes no lock of ours and calls none of our code
 * (except the log callback, which takes no lock of ours either), and it
 * waits for no completion or watcher, so calling it from the completion
 * thread cannot deadlock. Close waits for the call, as for every queued
 * call, before it closes the handle.
 *
 * What a move does to the connection (ZooKeeper 3.8's C client, read in
 * zookeeper.c, update_addrs()): when the server the client is connected to
 * is not in the new list, or with some probability when the list grew, it
 * closes its socket on the calling thread and reconnects from its I/O
 * thread to a server of the new list, in the same session. It tells nobody
 * (no session event), and requests already sent on the old socket stay in
 * its queue, unanswered: nothing times them out. Only an answer on the new
 * connection, which then does not match the oldest of them, makes the
 * client drop that connection too, failing every pending request with
 * ZRUNTIMEINCONSISTENCY after a CONNECTING session event. So after every
 * move the session sends one cheap read (ZKL_RQ_FLUSH) whose answer brings
 * that about: without it, a lock's create or listing lost that way waited
 * until some other request came along, forever if none did. And the
 * library takes ZRUNTIMEINCONSISTENCY for the ZCONNECTIONLOSS it is, where
 * every completion begins (zkl__enter_req_locked()), so that it resumes at
 * the reconnect, recovers a create whose outcome is unknown, and never
 * hands the application that code.
 *
 * The watch: its context is the session, which it does not reference. The
 * client calls it only from the completion thread and until the handle is
 * closed; an own handle is closed (and its threads joined) before the
 * user's reference is dropped. After close began it reads nothing more, so
 * that no request is left that the closing client might never complete.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "agent.h"

/* ------------------------------------------------------------- parsing */

static bool is_wildcard(const char *host, size_t n) {
  static const char *const any[] = {"0.0.0.0", "::", "0:0:0:0:0:0:0:0"};
  size_t i;
  if (n == 0)
    return true;
  for (i = 0; i < sizeof any / sizeof any[0]; i++)
    if (strlen(any[i]) == n && memcmp(host, any[i], n) == 0)
      return true;
  return false;
}

/* The host of "host:port" or "[v6]:port" at p (end e): *h, *n without
 * brackets; the rest after the host at *after. false when it does not
 * parse. */
static bool split_host(const char *p, const char *e, const char **h,
                       size_t *n, const char **after) {
  if (p < e && *p == '[') {
    const char *close = memchr(p, ']', (size_t)(e - p));
    if (!close)
      return false;
    *h = p + 1;
    *n = (size_t)(close - p - 1);
    *after = close + 1;
    return true;
  }
  *h = p;
  *after = memchr(p, ':', (size_t)(e - p));
  if (!*after)
    *after = e;
  *n = (size_t)(*after - p);
  return true;
}

static bool parse_port(const char *p, const char *e, long *port) {
  long v = 0;
  if (p == e || e - p > 5)
    return false;
  for (; p < e; p++) {
    if (!isdigit((unsigned char)*p))
      return false;
    v = v * 10 + (*p - '0');
  }
  *port = v;
  return v > 0 && v <= 65535;
}

/* One "server.N=quorum;client" line's client address, appended to out.
 * 1 appended, 0 no client address, -1 malformed or out of room. */
static int add_server(const char *p, const char *e, char *out, size_t outlen,
                      size_t *used) {
  const char *eq = memchr(p, '=', (size_t)(e - p));
  const char *semi, *colon, *qhost, *chost, *after;
  size_t qn, cn;
  long port;
  int w;
  if (!eq)
    return -1;
  p = eq + 1;
  while (p < e && isspace((unsigned char)*p))
    p++;
  semi = memchr(p, ';', (size_t)(e - p));
  if (!semi)
    return 0; /* the client port is in the server's static file */
  /* the quorum part: "host:peer:election[:role]", the first of several
   * "|"-separated addresses */
  if (!split_host(p, semi, &qhost, &qn, &after) || qn == 0)
    return -1;
  /* the client part: "[host:]port" */
  p = semi + 1;
  while (p < e && isspace((unsigned char)*p))
    p++;
  colon = NULL;
  for (after = p; after < e; after++)
    if (*after == ':')
      colon = after;
  if (p < e && *p == '[') {
    if (!split_host(p, e, &chost, &cn, &after) || after >= e ||
        *after != ':')
      return -1;
    colon = after;
  } else if (colon) {
    chost = p;
    cn = (size_t)(colon - p);
  } else {
    chost = p;
    cn = 0;
  }
  if (!parse_port(colon ? colon + 1 : p, e, &port))
    return -1;
  if (is_wildcard(chost, cn)) {
    chost = qhost;
    cn = qn;
  }
  w = snprintf(out + *used, outlen - *used, "%s%.*s:%ld", *used ? "," : "",
               (int)cn, chost, port);
  if (w < 0 || (size_t)w >= outlen - *used)
    return -1;
  *used += (size_t)w;
  return 1;
}

int zkl__config_servers(const char *data, int len, char *out, size_t outlen,
                        int64_t *version) {
  const char *p = data, *end = data + (len > 0 ? len : 0);
  size_t used = 0;
  bool complete = true;
  int servers = 0;
  *version = -1;
  if (outlen == 0)
    return -1;
  out[0] = '\0';
  while (p < end) {
    const char *e = memchr(p, '\n', (size_t)(end - p));
    const char *next = e ? e + 1 : end;
    if (!e)
      e = end;
    while (p < e && isspace((unsigned char)*p))
      p++;
    while (e > p && isspace((unsigned char)e[-1]))
      e--;
    if (e - p > 7 && memcmp(p, "server.", 7) == 0) {
      int rc = add_server(p, e, out, outlen, &used);
      if (rc < 0)
        return -1;
      if (rc == 0)
        complete = false;
      servers++;
    } else if (e - p > 8 && memcmp(p, "version=", 8) == 0) {
      char buf[24];
      char *stop;
      size_t n = (size_t)(e - p - 8);
      if (n >= sizeof buf)
        return -1;
      memcpy(buf, p + 8, n);
      buf[n] = '\0';
      *version = (int64_t)strtoull(buf, &stop, 16);
      if (*stop)
        return -1;
    }
    p = next;
  }
  return servers > 0 && complete ? 1 : 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Splits a copy of list at commas, trims blanks, sorts. NULL on ENOMEM. */
static char **sorted_hosts(char *copy, int *count) {
  char **v;
  char *p, *save = NULL;
  int n = 1, i = 0;
  for (p = copy; *p; p++)
    n += *p == ',';
  if (!(v = calloc((size_t)n, sizeof *v)))
    return NULL;
  for (p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
    char *e = p + strlen(p);
    while (isspace((unsigned char)*p))
      p++;
    while (e > p && isspace((unsigned char)e[-1]))
      *--e = '\0';
    if (*p)
      v[i++] = p;
  }
  qsort(v, (size_t)i, sizeof *v, cmp_str);
  *count = i;
  return v;
}

bool zkl__servers_same(const char *a, const char *b) {
  char *ca = strdup(a), *cb = strdup(b);
  char **va = NULL, **vb = NULL;
  int na = 0, nb = 0, i;
  bool same = false;
  if (ca && cb && (va = sorted_hosts(ca, &na)) && (vb = sorted_hosts(cb, &nb))
      && na == nb) {
    same = true;
    for (i = 0; i < na && same; i++)
      same = strcmp(va[i], vb[i]) == 0;
  }
  free(va);
  free(vb);
  free(ca);
  free(cb);
  return same;
}

/* --------------------------------------------------------- the session */

static void connected_locked(zkl_session *s);

int zkl__follow_init(zkl_session *s, const char *hosts, bool on) {
  const char *slash = strchr(hosts, '/');
  size_t n = slash ? (size_t)(slash - hosts) : strlen(hosts);
  s->follow.servers = strndup(hosts, n);
  s->follow.chroot = strdup(slash ? slash : "");
  if (!s->follow.servers || !s->follow.chroot)
    return ZKL_ENOMEM; /* the session's free frees what was made */
  s->follow.on = on;
  s->follow.version = -1;
  s->follow.connected_locked = connected_locked;
  return ZKL_OK;
}

static bool following_locked(const zkl_session *s) {
  return s->follow.on && !s->closing && !s->dead;
}

typedef struct move_call {
  zkl_call base;
  zkl_session *s; /* reference */
} move_call;

/* Its answer is all it is for. */
static void flush_done_locked(zkl_req *r, const zkl_answer *a) {
  (void)r;
  (void)a;
}

/* After a move: a read whose answer makes the client give up requests the
 * old connection took with it (see the top). */
static void flush_locked(zkl_session *s) {
  zkl_req *r = zkl__req_new_locked(s, ZKL_RQ_FLUSH);
  if (!r)
    return; /* the next request of the session does it */
  r->answered_locked = flush_done_locked;
  if (zoo_aexists(s->zh, "/", 0, zkl__on_stat, r) != ZOK)
    zkl__req_abort_locked(r); /* a dead handle: nothing to bring out */
}

/* Gives the client the wanted list; without s->mu (see the top). */
static void move(zkl_session *s) {
  char *to = NULL, *from = NULL;
  int rc = ZOK;
  pthread_mutex_lock(&s->mu);
  if (following_locked(s) && s->follow.wanted) {
    to = s->follow.wanted;
    s->follow.wanted = NULL;
    from = strdup(s->follow.servers);
    if (!from) {
      free(to);
      to = NULL;
    }
  }
  /* The client may change its connection under us, without a session
   * event: nothing sent meanwhile proves anything of the lease. */
  if (to)
    zkl__lease_moving_locked(s, true);
  pthread_mutex_unlock(&s->mu);
  if (!to)
    return;

  rc = zoo_set_servers(s->zh, to);
  /* The client has taken the new list whatever the outcome: when none of
   * its hosts resolves it would connect nowhere, so it gets the old one
   * back. */
  if (rc != ZOK)
    zoo_set_servers(s->zh, from);

  pthread_mutex_lock(&s->mu);
  zkl__lease_moving_locked(s, false);
  if (rc == ZOK && !s->closing && !s->dead)
    flush_locked(s);
  if (rc == ZOK) {
    size_t n = strlen(to) + strlen(s->follow.chroot) + 1;
    char *full = malloc(n);
    zkl_event ev = {0};
    free(s->follow.servers);
    s->follow.servers = to;
    to = NULL;
    if (full) {
      snprintf(full, n, "%s%s", s->follow.servers, s->follow.chroot);
      zkl__log("session 0x%llx follows the ensemble to %s",
               (unsigned long long)s->session_id, full);
      ev.type = ZKL_EVENT_SERVERS;
      ev.servers = full;
      zkl__emit_locked(s, &ev, NULL);
      free(full);
    }
  } else {
    zkl__log("the client refused the ensemble's servers %s (%s); it keeps %s",
             to, zerror(rc), from);
  }
  pthread_mutex_unlock(&s->mu);
  free(to);
  free(from);
}

static void move_run(zkl_call *c) {
  zkl_session *s = ((move_call *)c)->s;
  pthread_mutex_lock(&s->mu);
  s->follow.move_queued = false;
  pthread_mutex_unlock(&s->mu);
  move(s);
}

int zkl__follow_move_now(zkl_session *s, const char *servers) {
  char *copy = strdup(servers);
  if (!copy)
    return ZKL_ENOMEM;
  pthread_mutex_lock(&s->mu);
  free(s->follow.wanted);
  s->follow.wanted = copy;
  pthread_mutex_unlock(&s->mu);
  move(s);
  return ZKL_OK;
}

static void move_release_locked(zkl_call *c) {
  move_call *mc = (move_call *)c;
  zkl__session_unref_locked(mc->s);
  free(mc);
}

/* A configuration was read: move if it names other servers. */
static void consider_locked(zkl_session *s, const char *data, int len) {
  char list[ZKL_SERVERS_MAX];
  const char *now;
  int64_t version;
  int rc;
  move_call *mc;
  if (!following_locked(s))
    return;
  rc = zkl__config_servers(data, len, list, sizeof list, &version);
  if (rc <= 0 ||
      strlen(list) + strlen(s->follow.chroot) >= ZKL_SERVERS_MAX) {
    if (!s->follow.told_unfollowable)
      zkl__log("%s: the session keeps its servers",
               rc < 0 ? "the ensemble's configuration does not parse, or "
                        "its list is too long"
                      : "nothing to follow in the ensemble's configuration "
                        "(no server in it, or one without its client "
                        "address)");
    s->follow.told_unfollowable = true;
    return;
  }
  /* A server may answer with an older configuration than one already
   * read (a follower that lags): never go back. */
  if (version >= 0 && version < s->follow.version)
    return;
  if (version >= 0)
    s->follow.version = version;
  now = s->follow.wanted ? s->follow.wanted : s->follow.servers;
  if (zkl__servers_same(now, list))
    return;
  free(s->follow.wanted);
  if (!(s->follow.wanted = strdup(list))) {
    zkl__log("out of memory: the ensemble's servers %s not followed", list);
    return;
  }
  if (s->follow.move_queued)
    return; /* the queued call takes the newest list */
  if (!(mc = calloc(1, sizeof *mc))) {
    zkl__log("out of memory: the ensemble's servers %s not followed", list);
    return;
  }
  mc->base.run = move_run;
  mc->base.release_locked = move_release_locked;
  mc->s = s;
  zkl__session_ref_locked(s);
  s->follow.move_queued = true;
  zkl__queue_call_locked(s, &mc->base);
}

static void read_locked(zkl_session *s);

static void config_watcher(zhandle_t *zh, int type, int state,
                           const char *path, void *ctx) {
  zkl_session *s = ctx;
  (void)zh;
  (void)state;
  (void)path;
  zkl__mark_zk_thread();
  if (type == ZOO_SESSION_EVENT)
    return; /* the session hears those; the watch stays */
  zkl__enter_locked(s);
  read_locked(s); /* changed (or deleted): read again, and watch again */
  zkl__leave(s);
}

static void config_read_locked(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  int rc = a->rc;
  if (rc == ZOK) {
    consider_locked(s, a->value, a->len);
  } else if (rc == ZNONODE) {
    /* A server before 3.5: nothing to follow, and no watch was set (a
     * getData on a missing node sets none), so nothing more is read until
     * the next connection. */
    if (!s->follow.told_unfollowable)
      zkl__log("the servers have no %s: the session keeps its servers",
               ZOO_CONFIG_NODE);
    s->follow.told_unfollowable = true;
  } else if (!zkl__is_connection_loss(rc) && !zkl__is_session_over(rc)) {
    zkl__log("reading %s failed: %s", ZOO_CONFIG_NODE, zerror(rc));
  }
  /* A lost connection: the reconnect reads again. */
}

/* Reads the configuration and sets the watch (the client keeps one watch
 * for the same watcher and context however often it is set). */
static void read_locked(zkl_session *s) {
  zkl_req *r;
  int rc;
  if (!following_locked(s) || !s->connected)
    return; /* not connected: the reconnect reads */
  if (!(r = zkl__req_new_locked(s, ZKL_RQ_CONFIG))) {
    zkl__log("out of memory: %s not read", ZOO_CONFIG_NODE);
    return;
  }
  r->answered_locked = config_read_locked;
  rc = zoo_awgetconfig(s->zh, config_watcher, s, zkl__on_data, r);
  if (rc != ZOK)
    zkl__req_abort_locked(r); /* a dead handle: the session is over */
}

static void connected_locked(zkl_session *s) { read_locked(s); }

/* ------------------------------------------------------------ accessor */

int zkl_session_get_servers(const zkl_session *cs, char *buf, size_t len) {
  if (cs && ZKL_REMOTE_SESSION(cs))
    return buf && len > 0 ? zkl__remote_get_servers(cs, buf, len) : ZKL_EINVAL;
  zkl_session *s = (zkl_session *)cs; /* for s->mu only */
  int rc = ZKL_EINVAL;
  if (!s || !buf || len == 0)
    return ZKL_EINVAL;
  pthread_mutex_lock(&s->mu);
  if (s->follow.servers) {
    int w = snprintf(buf, len, "%s%s", s->follow.servers, s->follow.chroot);
    if (w >= 0 && (size_t)w < len)
      rc = ZKL_OK;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}
