/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status.c - the waiting status: where zklock stands in the queue, and who
 * holds the lock.
 *
 * The status is refreshed when the queue changes, not on a clock: a child
 * watch on the lock's queue (set through the session's own handle; for a
 * semaphore, one on its leases and one on its gate) wakes the main loop,
 * which lists the contenders again (blocking calls, so never from the
 * watcher) and sets the watches again. They are set before the acquire
 * starts; ZooKeeper answers a session's requests in order, so the creation
 * of our own node fires one.
 *
 * Through the agent there is no handle to set watches with: the line is
 * redrawn at the agent's news of the waiter's place (ZKL_EVENT_QUEUED,
 * when the node it waits for changes), so its count of those ahead can
 * lag until then. The listing goes through the agent (its "list" rule).
 *
 * Several names (one multi-lock): every name's queue is watched, and the
 * line speaks of the first name, in the order given, where zklock is held
 * up: a multi-lock waits in that queue (the library's events say so too).
 *
 * The line is shown only while zklock is really held up: its node does not
 * hold, by the library's word (zkl_participant.holds: a mutex's or a
 * writer's contender behind anyone, a reader behind a writer, a candidate
 * behind the leader, a lease node behind as many as its limit), or it
 * queues behind others at a semaphore's gate. A lock that is free is taken
 * without a word.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

static struct {
  int mode; /* 0 none, 1 one line, 2 in place */
  bool done;
  zkl_session *s;
  zkl_lock *l;
  const options *o;
  /* the queues watched: a semaphore's leases and gate, or each name's */
  char watched[ZKL_MULTI_NAMES_MAX][ZKL_PATH_MAX + 16];
  int nwatched;
  char shown[1280];   /* the line on the terminal now ("" none) */
  bool plain_escapes; /* TERM=dumb: no "erase line", pad with spaces */
} st;

static void watcher(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  (void)zh;
  (void)state;
  (void)path;
  (void)ctx;
  if (type != ZOO_SESSION_EVENT) /* session events go to every watcher */
    ev_post_queue_changed();
}

static void exists_done(int rc, const struct Stat *stat, const void *data) {
  (void)stat;
  (void)data;
  if (rc == ZOK) /* the queue appeared meanwhile: list it */
    ev_post_queue_changed();
  ev_request_answered();
}

static void children_done(int rc, const struct String_vector *names,
                          const void *data) {
  (void)names;
  /* No queue yet (a fresh name): watch for it to appear. st.watched stays
   * as it is while the session lives, so the index is good. */
  if (rc == ZNONODE) {
    ev_request_sent();
    if (zoo_awexists(zkl_session_handle(st.s), st.watched[(intptr_t)data],
                     watcher, NULL, exists_done, NULL) != ZOK)
      ev_request_answered();
  }
  ev_request_answered();
}

void status_init(int mode, zkl_session *s, zkl_lock *l, const options *o) {
  const char *term = getenv("TERM");
  char copy[ZKL_MULTI_NAMES_MAX * ZKL_PATH_MAX];
  st.mode = mode;
  st.s = s;
  st.l = l;
  st.o = o;
  st.plain_escapes = !term || !*term || strcmp(term, "dumb") == 0;
  st.nwatched = 0;
  /* the queues the lock and its parts use (a semaphore's leases and gate,
   * a multi-lock's names), as the library says */
  if (l && zkl_lock_get_queues(l, copy, sizeof copy) == ZKL_OK) {
    char *q, *save = NULL;
    for (q = strtok_r(copy, " ", &save);
         q && st.nwatched < ZKL_MULTI_NAMES_MAX; q = strtok_r(NULL, " ", &save))
      snprintf(st.watched[st.nwatched++], sizeof st.watched[0], "%s", q);
  }
  if (st.nwatched == 0) {
    int i;
    for (i = 0; i < o->n_names && i < ZKL_MULTI_NAMES_MAX; i++)
      names_parent(st.watched[i], sizeof st.watched[i], o->names[i]);
    st.nwatched = i;
  }
}

void status_arm(void) {
  intptr_t i;
  if (st.mode == 0 || st.done || !zkl_session_handle(st.s))
    return; /* through the agent: its QUEUED news redraw the line */
  for (i = 0; i < st.nwatched; i++) {
    ev_request_sent();
    if (zoo_awget_children(zkl_session_handle(st.s), st.watched[i], watcher,
                           NULL, children_done, (const void *)i) != ZOK)
      ev_request_answered();
  }
}

static void show(const char *line) {
  char buf[1400];
  size_t len = strlen(line), old = strlen(st.shown), n, width = 0;
  struct winsize ws;
  if (st.mode == 1) {
    fprintf(stderr, "zklock: %s\n", line);
    st.done = true; /* one line, and no more watching */
    return;
  }
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
    width = ws.ws_col - 1; /* the last column would wrap on some terminals */
  if (width && len + 8 > width)
    len = width > 8 ? width - 8 : 0;
  if (len == old && strncmp(line, st.shown, len) == 0)
    return;
  n = (size_t)snprintf(buf, sizeof buf, "\rzklock: %.*s%s", (int)len, line,
                       st.plain_escapes ? "" : "\033[K");
  if (st.plain_escapes)
    while (old > len && n + 1 < sizeof buf) {
      buf[n++] = ' ';
      old--;
    }
  buf[n] = '\0';
  fputs(buf, stderr);
  snprintf(st.shown, sizeof st.shown, "%.*s", (int)len, line);
}

/* Whether two nodes are in one queue: the same parent. */
static bool same_queue(const char *a, const char *b) {
  const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
  return sa && sb && sa - a == sb - b && strncmp(a, b, (size_t)(sa - a)) == 0;
}

/* How many are ahead of us, and whether that holds us up; -1: none of our
 * nodes is in the listing (not made yet, or the listing is older). ours:
 * our nodes in this name's queues, the one that counts first (a
 * semaphore's lease node, then its gate node). Ahead: the nodes before
 * ours in the queue ours is in (the name's own, or a semaphore's gate, or
 * past the gate its leases), as the library's queued event counts them
 * (zklock(1)). Held up: our node does not hold, by the library's word; at
 * the gate, where nobody holds, someone is ahead. */
static int ahead_of_us(const queue_view *v, char (*ours)[ZKL_PATH_MAX],
                       int n, bool *blocked) {
  int i, k, mine = -1, ahead = 0;
  *blocked = false;
  for (k = 0; k < n && mine < 0; k++)
    for (i = 0; i < v->count && mine < 0; i++)
      if (strcmp(v->e[i].p->node, ours[k]) == 0)
        mine = i;
  if (mine < 0)
    return -1;
  for (i = 0; i < mine; i++)
    ahead += same_queue(v->e[i].p->node, v->e[mine].p->node);
  *blocked = !v->e[mine].p->holds &&
             (strcmp(v->e[mine].p->kind, "gate") != 0 || ahead > 0);
  return ahead;
}

/* Our nodes in the queues of name i, into ours (at most max): a
 * multi-lock's node for that name, or every node of any other contender
 * (a semaphore's lease and gate nodes, as it has them). Returns how many
 * (0: none yet). */
static int our_nodes(int i, char (*ours)[ZKL_PATH_MAX], int max) {
  static char all[ZKL_MULTI_NAMES_MAX * ZKL_PATH_MAX];
  char *p, *save = NULL;
  int n = 0, k = 0;
  if (zkl_lock_get_node_paths(st.l, all, sizeof all) != ZKL_OK)
    return 0;
  for (p = strtok_r(all, " ", &save); p && n < max;
       p = strtok_r(NULL, " ", &save), k++)
    if (st.o->n_names == 1 || k == i)
      snprintf(ours[n++], ZKL_PATH_MAX, "%s", p);
  return n;
}

/* Shows where we stand in the queue of name i, when it holds us up.
 * Returns false when it does not (or the listing failed, or does not
 * show our node yet): the caller may look at the next name. */
static bool show_if_held_up(int i) {
  char ours[2][ZKL_PATH_MAX], path[ZKL_PATH_MAX], line[1280], holders[600];
  const char *what, *name = st.o->names[i];
  queue_view v;
  bool blocked, shown = false;
  int ahead, n;
  /* It is only the status: the next change tries again. Disconnected, the
   * listing would wait for the reconnect (zkl_name_list() asks again
   * after a lost connection), holding up the main loop. */
  if ((zkl_session_handle(st.s) &&
       zoo_state(zkl_session_handle(st.s)) != ZOO_CONNECTED_STATE) ||
      queue_view_get(st.s, name, &v) != ZKL_OK)
    return false;
  /* Only now: the server tells the watch of our node's creation before it
   * answers the create, but answers the listing after it; so once the
   * listing is back, the library knows its node if it was created. */
  n = our_nodes(i, ours, 2);
  ahead = ahead_of_us(&v, ours, n, &blocked);
  if (ahead >= 0 && blocked &&
      queue_describe_holders(&v, holders, sizeof holders)) {
    switch (st.o->kind) {
    case KIND_READ:
      what = "waiting to read";
      break;
    case KIND_WRITE:
      what = "waiting to write";
      break;
    case KIND_SEMAPHORE:
      what = "waiting for a lease of";
      break;
    case KIND_ELECT:
      what = "waiting to lead";
      break;
    default:
      what = "waiting for";
    }
    names_parent(path, sizeof path, name);
    snprintf(line, sizeof line, "%s %s: %d ahead, %s by %s", what, path, ahead,
             st.o->kind == KIND_ELECT ? "led" : "held", holders);
    show(line);
    shown = true;
  }
  queue_view_free(&v);
  return shown;
}

void status_refresh(void) {
  int i;
  if (st.mode == 0 || st.done)
    return;
  status_arm(); /* first, so that no change after the listing is missed */
  for (i = 0; i < st.o->n_names; i++)
    if (show_if_held_up(i))
      return;
}

void status_clear(void) {
  size_t old = strlen(st.shown);
  st.done = true;
  if (st.mode != 2 || old == 0)
    return;
  if (st.plain_escapes) {
    fputc('\r', stderr);
    old += sizeof "zklock: " - 1;
    while (old-- > 0)
      fputc(' ', stderr);
    fputc('\r', stderr);
  } else {
    fputs("\r\033[K", stderr);
  }
  st.shown[0] = '\0';
}
