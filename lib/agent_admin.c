/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_admin.c - zkl_name_break, _revoke, _list, _find and _get_leader,
 * and the counters of zkl_session_get_stats, on a session through zklockd (agent.h; ZKL_MSG_BREAK .. ZKL_MSG_LEADER of
 * wire.h). The agent runs each on its own session, on a thread of its own;
 * here the caller waits for the reply (ZKL_EDEADLK on the session's
 * callback thread, as the direct calls on the completion thread), and the
 * answers are laid out as the direct calls lay them out, so that
 * zkl_name_list_free() and zkl_name_find_free() free them unchanged: a
 * participant list is one allocation (the array, then its strings), a find
 * is an array of strings each allocated on its own.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

typedef struct name_args {
  const char *name, *node;
  int32_t n; /* break's grace, find's max_nodes */
} name_args;

static void put_name(zkl_wbuf *b, const void *p) {
  zkl__wire_str(b, ((const name_args *)p)->name);
}

static void put_name_node(zkl_wbuf *b, const void *p) {
  const name_args *x = p;
  zkl__wire_str(b, x->name);
  zkl__wire_str(b, x->node);
}

static void put_break(zkl_wbuf *b, const void *p) {
  put_name_node(b, p);
  zkl__wire_i32(b, ((const name_args *)p)->n);
}

static void put_find(zkl_wbuf *b, const void *p) {
  put_name(b, p);
  zkl__wire_i32(b, ((const name_args *)p)->n);
}

/* A reply's count: within what is left of the frame (each entry takes at
 * least 4 bytes), so a hostile count cannot make us allocate much. */
static int get_count(zkl_rframe *f) {
  int32_t n = zkl__wire_get_i32(f);
  if (n < 0 || (size_t)n > (size_t)(f->end - f->p) / 4) {
    f->bad = true;
    return 0;
  }
  return n;
}

/* ------------------------------------------------------------- revoke */

static bool parse_rc(zkl_rframe *f, int rc, void *out) {
  (void)rc;
  (void)out;
  return zkl__wire_done(f);
}

int zkl__remote_revoke(zkl_session *s, const char *name, const char *node) {
  name_args x = {name, node, 0};
  if (zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  return zkl__agent_ask(s, ZKL_MSG_REVOKE, put_name_node, &x, parse_rc, NULL);
}

/* -------------------------------------------------------------- break */

typedef struct break_out {
  int n;
  int32_t *rc;
  char **node;
} break_out;

static void break_out_free(break_out *o) {
  int i;
  for (i = 0; i < o->n; i++)
    free(o->node[i]);
  free(o->rc);
  free(o->node);
  memset(o, 0, sizeof *o);
}

static bool parse_break(zkl_rframe *f, int rc, void *p) {
  break_out *o = p;
  int n, i;
  (void)rc;
  if (zkl__wire_done(f))
    return true; /* rc alone: the agent's report did not fit */
  n = get_count(f);
  if (n > 0 && (!(o->rc = calloc((size_t)n, sizeof *o->rc)) ||
                !(o->node = calloc((size_t)n, sizeof *o->node)))) {
    free(o->rc);
    o->rc = NULL;
    return false;
  }
  for (i = 0; i < n && !f->bad; i++) {
    o->rc[i] = zkl__wire_get_i32(f);
    if (!(o->node[i] = strdup(zkl__wire_get_str(f))))
      f->bad = true;
    o->n = i + 1;
  }
  if (!zkl__wire_done(f)) {
    break_out_free(o);
    return false;
  }
  return true;
}

int zkl__remote_break(zkl_session *s, const char *name, const char *node,
                      int grace_ms, zkl_break_cb cb, void *arg) {
  name_args x = {name, node, grace_ms};
  break_out o = {0};
  int rc, i;
  if (grace_ms < 0 || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  rc = zkl__agent_ask(s, ZKL_MSG_BREAK, put_break, &x, parse_break, &o);
  /* The report on the calling thread, as the direct call gives it. */
  for (i = 0; cb && i < o.n; i++)
    cb(s, o.rc[i], o.node[i], arg);
  break_out_free(&o);
  return rc;
}

/* --------------------------------------------------------------- list */

typedef struct list_out {
  zkl_participant *list;
  int count;
} list_out;

static char *put_string(char **at, const char *s) {
  char *d = strcpy(*at, s);
  *at += strlen(s) + 1;
  return d;
}

static bool parse_list(zkl_rframe *f, int rc, void *p) {
  list_out *o = p;
  zkl_participant *tmp = NULL, *list;
  size_t size;
  char *strings;
  int n, i;
  if (rc != ZKL_OK)
    return zkl__wire_done(f);
  n = get_count(f);
  if (n > 0 && !(tmp = calloc((size_t)n, sizeof *tmp)))
    return false;
  for (i = 0; i < n && !f->bad; i++) {
    tmp[i].node = zkl__wire_get_str(f);
    tmp[i].token = zkl__wire_get_i64(f);
    tmp[i].queued_ms = zkl__wire_get_i64(f);
    tmp[i].host = zkl__wire_get_str(f);
    tmp[i].pid = (long)zkl__wire_get_i64(f);
    tmp[i].started_ms = zkl__wire_get_i64(f);
    tmp[i].info = zkl__wire_get_str(f);
    tmp[i].kind = zkl__wire_get_str(f);
    tmp[i].holds = zkl__wire_get_i32(f) != 0;
    tmp[i].limit = zkl__wire_get_i32(f);
    tmp[i].lock = zkl__wire_get_str(f);
    tmp[i].repeated = zkl__wire_get_i32(f) != 0;
  }
  if (!zkl__wire_done(f)) {
    free(tmp);
    return false;
  }
  /* One allocation, as participants.c lays it out. */
  size = sizeof *list * (size_t)(n ? n : 1);
  for (i = 0; i < n; i++)
    size += strlen(tmp[i].node) + strlen(tmp[i].host) + strlen(tmp[i].info) +
            strlen(tmp[i].kind) + strlen(tmp[i].lock) + 5;
  if (!(list = malloc(size))) { /* strings: the frame's until it closes */
    free(tmp);
    return false;
  }
  strings = (char *)(list + (n ? n : 1));
  for (i = 0; i < n; i++) {
    list[i] = tmp[i];
    list[i].node = put_string(&strings, tmp[i].node);
    list[i].host = put_string(&strings, tmp[i].host);
    list[i].info = put_string(&strings, tmp[i].info);
    list[i].kind = put_string(&strings, tmp[i].kind);
    list[i].lock = put_string(&strings, tmp[i].lock);
  }
  free(tmp);
  o->list = list;
  o->count = n;
  return true;
}

int zkl__remote_list(zkl_session *s, const char *name, zkl_participant **out,
                     int *count) {
  name_args x = {name, NULL, 0};
  list_out o = {NULL, 0};
  int rc;
  if (!out || !count || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  rc = zkl__agent_ask(s, ZKL_MSG_LIST, put_name, &x, parse_list, &o);
  if (rc == ZKL_OK && !o.list)
    rc = ZKL_ENOMEM; /* the agent's answer did not fit in a frame */
  if (rc != ZKL_OK) {
    free(o.list);
    return rc;
  }
  *out = o.list;
  *count = o.count;
  return ZKL_OK;
}

/* --------------------------------------------------------------- find */

typedef struct find_out {
  char **names;
  int count;
  bool truncated, got;
} find_out;

/* A find's names, each and the array (as zkl_name_find_free() does; its
 * own, so that this file names nothing of walk.c's, which calls it). */
static void free_names(char **names, int count) {
  int i;
  for (i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

static bool parse_find(zkl_rframe *f, int rc, void *p) {
  find_out *o = p;
  int n, i;
  if (rc != ZKL_OK)
    return zkl__wire_done(f);
  o->truncated = zkl__wire_get_i32(f) != 0;
  n = get_count(f);
  /* At least one slot, as walk.c gives even for no names. */
  if (!(o->names = calloc((size_t)(n ? n : 1), sizeof *o->names)))
    return false;
  for (i = 0; i < n && !f->bad; i++) {
    if (!(o->names[i] = strdup(zkl__wire_get_str(f))))
      f->bad = true;
    o->count = i + 1;
  }
  if (!zkl__wire_done(f)) {
    free_names(o->names, o->count);
    o->names = NULL;
    o->count = 0;
    return false;
  }
  o->got = true;
  return true;
}

int zkl__remote_find(zkl_session *s, const char *prefix, int max_nodes,
                     char ***names, int *count, bool *truncated) {
  name_args x = {prefix, NULL, max_nodes};
  find_out o = {NULL, 0, false, false};
  int rc;
  if (!prefix || !names || !count || max_nodes < 1 ||
      (*prefix && zkl__validate_name(prefix) != ZKL_OK))
    return ZKL_EINVAL;
  rc = zkl__agent_ask(s, ZKL_MSG_FIND, put_find, &x, parse_find, &o);
  if (rc == ZKL_OK && !o.got)
    rc = ZKL_ENOMEM;
  if (rc != ZKL_OK) {
    if (o.names)
      free_names(o.names, o.count);
    return rc;
  }
  *names = o.names;
  *count = o.count;
  if (truncated)
    *truncated = o.truncated;
  return ZKL_OK;
}

/* ------------------------------------------------------------- leader */

typedef struct leader_out {
  char id[ZKL_ID_MAX + 1];
  int64_t token;
} leader_out;

static bool parse_leader(zkl_rframe *f, int rc, void *p) {
  leader_out *o = p;
  if (rc != ZKL_OK)
    return zkl__wire_done(f);
  snprintf(o->id, sizeof o->id, "%s", zkl__wire_get_str(f));
  o->token = zkl__wire_get_i64(f);
  return zkl__wire_done(f);
}

int zkl__remote_get_leader(zkl_session *s, const char *name, char *id,
                           size_t len, int64_t *token) {
  name_args x = {name, NULL, 0};
  leader_out o;
  int rc;
  if ((id && len == 0) || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  memset(&o, 0, sizeof o);
  rc = zkl__agent_ask(s, ZKL_MSG_LEADER, put_name, &x, parse_leader, &o);
  if (rc != ZKL_OK)
    return rc;
  if (id)
    snprintf(id, len, "%s", o.id);
  if (token)
    *token = o.token;
  return ZKL_OK;
}

/* ------------------------------------------------------------ counters */

static void put_nothing(zkl_wbuf *b, const void *p) {
  (void)b;
  (void)p;
}

static bool parse_stats(zkl_rframe *f, int rc, void *out) {
  zkl_session_stats *st = out;
  if (rc == ZKL_OK) {
    st->requests = (uint64_t)zkl__wire_get_i64(f);
    st->queries = (uint64_t)zkl__wire_get_i64(f);
    st->heartbeats = (uint64_t)zkl__wire_get_i64(f);
    st->watch_events = (uint64_t)zkl__wire_get_i64(f);
    st->disconnects = (uint64_t)zkl__wire_get_i64(f);
    st->reconnects = (uint64_t)zkl__wire_get_i64(f);
    st->expiries = (uint64_t)zkl__wire_get_i64(f);
    (void)zkl__wire_get_i32(f); /* every client's locks: ours are below */
    (void)zkl__wire_get_i32(f);
  }
  return zkl__wire_done(f);
}

/* The session's counters are the agent's (one session for every process
 * of the host: its requests, its reconnections); the locks held and
 * waited for are this process's own, counted here. */
int zkl__remote_get_stats(const zkl_session *cs, zkl_session_stats *out) {
  zkl_session_stats st;
  int rc;
  memset(&st, 0, sizeof st);
  if (zkl__remote_revision(cs) < 2) {
    zkl__log("zkl_session_get_stats: the agent speaks protocol revision %d, "
             "older than its counters: upgrade zklockd(8)",
             zkl__remote_revision(cs));
    return ZKL_EINVAL;
  }
  rc = zkl__agent_ask((zkl_session *)cs, ZKL_MSG_STATS, put_nothing, NULL,
                      parse_stats, &st);
  if (rc != ZKL_OK)
    return rc;
  zkl__remote_count_locks(cs, &st.locks_held, &st.locks_waiting);
  *out = st;
  return ZKL_OK;
}
