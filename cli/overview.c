/* SPDX-License-Identifier: Apache-2.0 */
/*
 * overview.c - every lock under a prefix at a glance (--list PREFIX/,
 * --format, --watch): which locks there are (zkl_name_find()), and for
 * each, from its contenders (queue_view_get(): zkl_name_list()), its
 * kind, its holders, how many wait, how long the holders have held and
 * the oldest waiter has waited, and its token; the most contended first.
 * format.c prints it.
 *
 * Durations are the local clock's now minus the nodes' ctime, which is
 * the server's clock: a skew between the two is in them (never below 0).
 * A holder's node was made when it began to wait, so in a one-shot
 * listing "held" counts its wait too: an upper bound. --watch counts a
 * holder from the first listing where it held (granted_at()).
 *
 * A view that lost its connection says so (reachable(), every STATE_MS):
 * a banner on a terminal, its durations stopped; a line on a pipe; and
 * lists nothing until it is back (a listing would wait for the
 * reconnect).
 *
 * --watch lists again when a child watch fires, never on a clock: on
 * every node under the prefix but the contenders' own (so a lock under a
 * new parent, or a semaphore's places, is seen at once), set again before
 * each listing (watches fire once); events are coalesced and the view
 * listed at most WATCH_RATE times a second. On a terminal the listing on
 * screen is drawn again every TICK_MS with its durations moved on by the
 * clock, without asking ZooKeeper.
 *
 * Through the agent (--agent) there is no handle to set watches with, and
 * the view asks nothing of ZooKeeper itself: it lists again through the
 * agent's own questions (zkl_name_find, zkl_name_list, each needing the
 * policy's "list", as --list does) every POLL_MS, or POLL_LOAD times as
 * long as the last listing took when that is longer, so that a view keeps
 * the agent's session busy at most a fifth of the time. Why a poll, not
 * the agent holding watches for it: the policy is then checked at every
 * listing by the calls --list makes, at one place in the agent; the agent
 * keeps nothing per view; and every refresh is an answer, so an agent or a
 * session that stopped answering shows as an error, never as a view that
 * merely does not change. One refresh costs 1 + N round trips to the agent
 * (N the locks shown; one for --list NAME) and, on the agent's session, a
 * getChildren per node under the prefix and, per lock, a getChildren per
 * queue and a getData per contender (docs/agent.md). On a pipe a new table
 * is printed only when the listing changed (a lock, a node, a holder), as a
 * watched view prints one only when a watch fired.
 * --leader --watch is the library's leader watch, which the agent serves
 * under the same rule (ZKL_MSG_WATCH_LEADER), direct or not.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

#define WALK_MAX_NODES 10000
#define WATCH_RATE 4 /* redraws a second, at most */
#define TICK_MS 1000 /* the durations move on, on a terminal */
#define POLL_MS 1000 /* through the agent: a listing a second, */
#define POLL_LOAD 5  /* or this many times the last one's time */
#define STATE_MS 200 /* how often a view looks at its connection */

static int64_t wall_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static int64_t since_ms(int64_t now, int64_t then) {
  return now > then ? now - then : 0;
}

/* Whether the view's session is connected to ZooKeeper now: the client's
 * own state, read locally (no request). Through the agent there is no
 * handle: every listing there is an answer of the agent, and one that
 * fails says so in place of the table (see the top). */
static bool reachable(zkl_session *s) {
  zhandle_t *zh = zkl_session_handle(s);
  return !zh || zoo_state(zh) == ZOO_CONNECTED_STATE;
}

/* Said on a pipe when the connection goes and comes back: one line each,
 * as "cannot list: ..." is, with the moments as ISO 8601. */
static void say_disconnected(int64_t at, int64_t listed) {
  char when[40], then[40];
  cli_iso_time(when, sizeof when, at, false);
  cli_iso_time(then, sizeof then, listed, false);
  printf("disconnected at %s: not live, the last listing is of %s\n", when,
         then);
  fflush(stdout);
}

static void say_reconnected(int64_t at, int64_t lost) {
  char when[40];
  cli_iso_time(when, sizeof when, at, false);
  printf("reconnected at %s, after %.1f s: live again\n", when,
         (double)since_ms(at, lost) / 1000.0);
  fflush(stdout);
}

/* The kind of lock its contenders take (the library's word for each,
 * zkl_participant.lock): the first's, or a read/write lock's when mutex
 * and read/write nodes share the name (the one family that may mix). */
static const char *lock_kind(const queue_view *v) {
  const char *kind = "-";
  int i;
  for (i = 0; i < v->count; i++) {
    const char *l = v->e[i].p->lock;
    if (i == 0 || strcmp(l, "rwlock") == 0)
      kind = l;
  }
  return kind;
}

/* --watch: when the view saw each holder's node hold. ZooKeeper keeps no
 * grant moment: a node's ctime is when its contender began to wait, the
 * deletion of the node it waited for is recorded nowhere, and the owner
 * description is written before the wait. So a view that lists again at
 * every change counts a holder from the first listing where it held: a
 * lower bound of its hold, late by the time a watch takes to fire, never
 * including the wait. A node that held at the view's first listing was
 * granted before the view looked: it counts from its ctime (an upper
 * bound, as a one-shot --list does). */
typedef struct {
  char *node;
  int64_t at; /* wall ms */
} seen_grant;
static seen_grant *grants, *grants_next;
static int ngrants, ngrants_next, grants_cap;
static bool grants_tracked, grants_first = true;

static int64_t granted_at(const zkl_participant *p, int64_t now) {
  int i;
  int64_t at = p->queued_ms;
  if (!grants_tracked)
    return at;
  for (i = 0; i < ngrants; i++)
    if (strcmp(grants[i].node, p->node) == 0)
      break;
  if (i < ngrants)
    at = grants[i].at;
  else if (!grants_first)
    at = now; /* it held since the last listing: the grant just seen */
  if (ngrants_next == grants_cap) {
    int cap = grants_cap ? 2 * grants_cap : 64;
    seen_grant *g = realloc(grants_next, (size_t)cap * sizeof *g);
    if (!g)
      return at;
    grants_next = g;
    grants_cap = cap;
  }
  if ((grants_next[ngrants_next].node = strdup(p->node)))
    grants_next[ngrants_next++].at = at;
  return at;
}

/* After a listing: what it saw holding is what the next one compares
 * with. */
static void grants_turn(void) {
  int i;
  if (!grants_tracked)
    return;
  for (i = 0; i < ngrants; i++)
    free(grants[i].node);
  free(grants);
  grants = grants_next;
  ngrants = ngrants_next;
  grants_next = NULL;
  ngrants_next = grants_cap = 0;
  grants_first = false;
}

/* Fills one lock's summary from its contenders (v is kept in ov). */
static void summarise(ov_lock *k, int64_t now) {
  const queue_view *v = &k->view;
  int i;
  k->kind = lock_kind(v);
  for (i = 0; i < v->count; i++) {
    const zkl_participant *p = v->e[i].p;
    if (p->holds) {
      int64_t from = granted_at(p, now);
      k->holders++;
      if (p->token > k->token)
        k->token = p->token;
      if (since_ms(now, from) > k->held_ms)
        k->held_ms = since_ms(now, from);
      continue;
    }
    /* a contender listed twice (a semaphore's waiter: its lease node and
     * the gate's first node) is one waiter */
    if (!p->repeated)
      k->waiters++;
    if (since_ms(now, p->queued_ms) > k->wait_ms)
      k->wait_ms = since_ms(now, p->queued_ms);
  }
}

static int by_contention(const void *x, const void *y) {
  const ov_lock *a = x, *b = y;
  if (a->waiters != b->waiters)
    return a->waiters > b->waiters ? -1 : 1;
  if (a->wait_ms != b->wait_ms)
    return a->wait_ms > b->wait_ms ? -1 : 1;
  return strcmp(a->name, b->name);
}

void overview_free(overview *ov) {
  int i;
  for (i = 0; i < ov->count; i++) {
    queue_view_free(&ov->locks[i].view);
    free(ov->locks[i].name);
  }
  free(ov->locks);
  memset(ov, 0, sizeof *ov);
}

int overview_get(zkl_session *s, const options *o, overview *ov) {
  char **names = NULL;
  int n = 0, i, rc;
  memset(ov, 0, sizeof *ov);
  if (o->prefix) {
    rc =
        zkl_name_find(s, o->prefix, WALK_MAX_NODES, &names, &n, &ov->truncated);
    if (rc != ZKL_OK)
      return rc;
  }
  ov->locks = calloc((size_t)(n ? n : 1), sizeof *ov->locks);
  if (!ov->locks) {
    zkl_name_find_free(names, n);
    return ZKL_ENOMEM;
  }
  ov->now_ms = wall_ms();
  /* through the agent, the servers are the agent's, not -s */
  if (!zkl_session_handle(s) &&
      zkl_session_get_servers(s, ov->servers, sizeof ov->servers) != ZKL_OK)
    ov->servers[0] = '\0';
  for (i = 0, rc = ZKL_OK; rc == ZKL_OK && i < (o->prefix ? n : 1); i++) {
    ov_lock *k = &ov->locks[ov->count];
    const char *name = o->prefix ? names[i] : o->target;
    rc = queue_view_get(s, name, &k->view);
    if (rc != ZKL_OK)
      break;
    /* gone since the walk, or idle: not listed; but a lock named for
     * Prometheus has its series, zero, so that an alert on it sees 0, not
     * an absent series */
    if (k->view.count == 0 &&
        (o->prefix || o->format != FORMAT_PROMETHEUS)) {
      queue_view_free(&k->view);
      continue;
    }
    if (!(k->name = strdup(name))) {
      queue_view_free(&k->view);
      rc = ZKL_ENOMEM;
      break;
    }
    summarise(k, ov->now_ms);
    ov->count++;
  }
  zkl_name_find_free(names, n);
  if (rc != ZKL_OK) {
    overview_free(ov);
    for (i = 0; i < ngrants_next; i++) /* the last listing's stay */
      free(grants_next[i].node);
    ngrants_next = 0;
    return rc;
  }
  grants_turn();
  qsort(ov->locks, (size_t)ov->count, sizeof *ov->locks, by_contention);
  return ZKL_OK;
}

static void say_truncated(const overview *ov, const options *o) {
  char path[ZKL_PATH_MAX];
  if (!ov->truncated)
    return;
  names_prefix_parent(path, sizeof path, o->prefix);
  cli_error("more than %d nodes under %s: the listing stops there",
            WALK_MAX_NODES, path);
}

/* --list NAME --format json: the one lock's contenders, not an overview
 * of one lock. */
static int contenders_json(zkl_session *s, const char *name) {
  queue_view v;
  int rc = queue_view_get(s, name, &v);
  if (rc != ZKL_OK)
    return rc;
  queue_view_sessions(s, &v);
  format_contenders_json(stdout, name, &v, wall_ms());
  queue_view_free(&v);
  return fflush(stdout) == 0 ? ZKL_OK : ZKL_ESYSTEM;
}

int overview_list(zkl_session *s, const options *o) {
  overview ov;
  int rc;
  if (!o->prefix && o->format == FORMAT_JSON)
    return contenders_json(s, o->target);
  rc = overview_get(s, o, &ov);
  if (rc != ZKL_OK)
    return rc;
  format_print(stdout, &ov, o);
  say_truncated(&ov, o);
  overview_free(&ov);
  return fflush(stdout) == 0 ? ZKL_OK : ZKL_ESYSTEM;
}

/* `--list deploy` while only deploy/web is held lists nobody, which is
 * true of the lock deploy, and exits 0 as for any idle lock: scripts that
 * read the list keep working. But a person who meant the subtree would
 * read "nothing is locked", so the locks under the name are looked for
 * (only when the name itself has no contender: a walk costs a round trip
 * a level) and the form that lists them is given on stderr. */
void overview_say_under(zkl_session *s, const options *o) {
  queue_view v;
  char **names = NULL;
  int n = 0, idle;
  bool truncated = false;
  if (o->quiet || o->prefix || queue_view_get(s, o->target, &v) != ZKL_OK)
    return;
  idle = v.count == 0;
  queue_view_free(&v);
  if (!idle || zkl_name_find(s, o->target, WALK_MAX_NODES, &names, &n,
                             &truncated) != ZKL_OK)
    return;
  if (n > 0) {
    char under[ZKL_NAME_MAX + 2];
    snprintf(under, sizeof under, "%s/", o->target);
    cli_error("nobody holds or waits for %s itself; under it %s %s%d "
              "lock%s (%s%s): --list %s lists them",
              cli_quote(o->target), n == 1 && !truncated ? "is" : "are",
              truncated ? "more than " : "", n, n == 1 ? "" : "s",
              cli_quote(names[0]), n > 1 ? ", ..." : "", cli_quote(under));
  }
  zkl_name_find_free(names, n);
}

/* ---------------------------------------------------------------- --watch */

static zkl_session *watch_s;

static void watcher(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  (void)zh;
  (void)state;
  (void)path;
  (void)ctx;
  if (type != ZOO_SESSION_EVENT)
    ev_post_queue_changed();
}

static void exists_done(int rc, const struct Stat *stat, const void *data) {
  (void)stat;
  (void)data;
  if (rc == ZOK)
    ev_post_queue_changed();
  ev_request_answered();
}

static void arm(const char *path);

/* Whether a child can lead to a lock: whether it is a valid name. A
 * contender's node (ours, Curator's, kazoo's: a recipe's marker and a
 * sequence number) is not, by the name rules, and has no children to
 * watch; a name that merely ends in digits ("build-2026112800") is one. */
static bool may_lead_to_lock(const char *child) {
  return zkl_name_check(child) == ZKL_OK;
}

/* Nodes armed since the last drawing: a bound, as the walk has one. */
static atomic_int armed;

static void children_done(int rc, const struct String_vector *names,
                          const void *data) {
  /* Every node under the prefix is watched, down to the contenders'
   * parents: a lock that appears under a node that leads to no lock yet
   * (a new parent, a semaphore's places) is seen at once. */
  if (rc == ZOK && names) {
    int i;
    for (i = 0; i < names->count; i++) {
      char child[ZKL_PATH_MAX + 16];
      if (!may_lead_to_lock(names->data[i]) || armed >= WALK_MAX_NODES)
        continue;
      snprintf(child, sizeof child, "%s/%s", (const char *)data,
               names->data[i]);
      armed++;
      arm(child);
    }
  }
  /* Not there (yet): watch for it to appear. data is the path, strdup'ed
   * for this request. */
  if (rc == ZNONODE) {
    ev_request_sent();
    if (zoo_awexists(zkl_session_handle(watch_s), data, watcher, NULL,
                     exists_done, NULL) != ZOK)
      ev_request_answered();
  }
  free((void *)data);
  ev_request_answered();
}

static void arm(const char *path) {
  char *copy = strdup(path);
  if (!copy)
    return;
  ev_request_sent();
  if (zoo_awget_children(zkl_session_handle(watch_s), copy, watcher, NULL,
                         children_done, copy) != ZOK) {
    ev_request_answered();
    free(copy);
  }
}

/* Arms every queue of name (zkl_name_get_queues) but skip, already
 * armed (NULL: none). */
static void arm_queues(const char *name, const char *skip) {
  char queues[3 * ZKL_PATH_MAX], *q, *save = NULL;
  if (zkl_name_get_queues(name, queues, sizeof queues) != ZKL_OK)
    return;
  for (q = strtok_r(queues, " ", &save); q; q = strtok_r(NULL, " ", &save))
    if (!skip || strcmp(q, skip) != 0)
      arm(q);
}

/* Watches the prefix, every node from it down to each lock, each lock's
 * queue and a semaphore's places. */
static void arm_all(const options *o, const overview *ov) {
  char path[ZKL_PATH_MAX + 16];
  size_t base;
  int i;
  if (!o->prefix) {
    arm_queues(o->target, NULL);
    return;
  }
  names_prefix_parent(path, sizeof path, o->prefix);
  arm(path);
  base = strlen(path) + 1;
  for (i = 0; i < ov->count; i++) {
    const ov_lock *k = &ov->locks[i];
    char *slash;
    names_parent(path, sizeof path, k->name);
    for (slash = base < strlen(path) ? strchr(path + base, '/') : NULL; slash;
         slash = strchr(slash + 1, '/')) {
      *slash = '\0';
      arm(path);
      *slash = '/';
    }
    arm(path);
    /* a semaphore's places too (a lock of another kind has none: its
     * contenders' nodes are all in path) */
    if (strcmp(k->kind, "semaphore") == 0)
      arm_queues(k->name, path);
  }
}

static struct termios saved_tty;
static bool tty_raw, screen_on;

static void restore_terminal(void) {
  if (screen_on) {
    fputs("\033[?1049l\033[?25h", stdout);
    fflush(stdout);
    screen_on = false;
  }
  if (tty_raw) {
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
    tty_raw = false;
  }
}

/* Keys one at a time, unechoed; Ctrl-C still a signal. */
static void keys_raw(void) {
  struct termios t;
  if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tty) != 0)
    return;
  t = saved_tty;
  t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == 0)
    tty_raw = true;
}

/* The listing on screen, kept between drawings: a tick moves its
 * durations on by the clock, without asking ZooKeeper again. */
static overview shown;
static int shown_rc = -1;
/* Through the agent: no watches, a listing every POLL_MS (see the top). */
static bool polled;
static int64_t listed_ms; /* how long the last listing took */
/* What the last table printed on a pipe showed: a polled view prints a
 * new one only when the locks changed, as a watched one does. */
static uint64_t printed_sig;
static int printed_rc;
/* The connection: lost_at is the wall clock when the view saw it go (0:
 * connected); ok_at when the last listing succeeded. While it is gone the
 * table on screen is not moved on by the clock and a banner says so. */
static int64_t lost_at, ok_at;

/* s and its NUL into an FNV-1a hash. */
static uint64_t fnv(uint64_t h, const char *s) {
  do
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  while (*s++);
  return h;
}

/* What a listing shows but its durations (which move with the clock):
 * each lock's name, and each of its contenders' node and whether it
 * holds. */
static uint64_t signature(const overview *ov) {
  uint64_t h = 14695981039346656037ULL;
  int i, j;
  for (i = 0; i < ov->count; i++) {
    const ov_lock *k = &ov->locks[i];
    h = fnv(h, k->name);
    for (j = 0; j < k->view.count; j++)
      h = fnv(fnv(h, k->view.e[j].p->node),
              k->view.e[j].p->holds ? "holds" : "waits");
  }
  return h;
}

/* The durations of the listing on screen, moved on to now. */
static void move_on(overview *ov, int64_t now) {
  int64_t d = now > ov->now_ms ? now - ov->now_ms : 0;
  int i;
  for (i = 0; i < ov->count; i++) {
    if (ov->locks[i].holders > 0)
      ov->locks[i].held_ms += d;
    if (ov->locks[i].waiters > 0)
      ov->locks[i].wait_ms += d;
  }
  ov->now_ms += d;
}

/* Prints a line cut to width bytes (0: no cut), at a UTF-8 character's
 * start. */
static void put_cut(const char *line, size_t n, size_t width) {
  if (width && n > width) {
    n = width;
    while (n > 0 && ((unsigned char)line[n] & 0xc0) == 0x80)
      n--;
  }
  fwrite(line, 1, n, stdout);
  fputc('\n', stdout);
}

/* The table as the terminal shows it: columns aligned by their widths
 * (two spaces apart, not tabs), each line cut to the terminal's width, and
 * as many lines as fit in rows, the last then "... N more". */
/* Whether column col of the table holds numbers (HOLDERS, WAITERS,
 * HELD_S, WAITED_S, TOKEN): never cut, dropped whole when it does not
 * fit. */
static bool numeric_column(int col) { return col >= 2 && col <= 6; }

static void put_fitted(char *table, size_t width, int rows) {
  size_t colw[16] = {0}, i, at;
  char *line, *next, *f;
  int nlines = 0, drawn = 0, col, ncols = 16;
  for (line = table; *line; line = next, nlines++) {
    next = line + strcspn(line, "\n");
    for (f = line, col = 0; f < next && col < 16; col++) {
      size_t n = strcspn(f, "\t\n");
      if (n > colw[col])
        colw[col] = n;
      f += n + (f[n] == '\t');
    }
    if (*next)
      next++;
  }
  /* The columns shown: as many as fit whole; then one more if it is
   * text (a name, the holder, the description), cut at the edge. A
   * number is never cut: its column goes, and those after it. */
  if (width) {
    for (col = 0, at = 0; col < 16 && colw[col] > 0; col++) {
      if (at + colw[col] > width) {
        ncols = numeric_column(col) ? col : col + 1;
        break;
      }
      at += colw[col] + 2;
    }
    if (ncols == 0)
      ncols = 1; /* the name, cut: nothing else would show */
  }
  for (line = table; *line; line = next) {
    char out[4096];
    size_t used = 0;
    next = line + strcspn(line, "\n");
    if (rows > 0 && drawn == rows - 1 && nlines - drawn > 1) {
      snprintf(out, sizeof out, "\xe2\x80\xa6 %d more", nlines - drawn);
      put_cut(out, strlen(out), width);
      return;
    }
    for (f = line, col = 0; f < next && col < ncols; col++) {
      size_t n = strcspn(f, "\t\n");
      bool last = f[n] != '\t' || col + 1 == ncols;
      used += (size_t)snprintf(out + used, sizeof out - used, "%.*s", (int)n,
                               f);
      for (i = n; !last && col < 16 && i < colw[col] + 2 &&
                  used + 1 < sizeof out;
           i++)
        out[used++] = ' ';
      if (used >= sizeof out)
        used = sizeof out - 1;
      f += n + !last;
      if (last)
        break;
    }
    out[used] = '\0';
    put_cut(out, used, width);
    drawn++;
    if (*next)
      next++;
  }
}

/* relist: list again (a watch fired); else only the clock moved. */
static void draw(zkl_session *s, const options *o, bool screen, bool first,
                 bool relist, int *fatal) {
  char when[40];
  int rc;
  if (relist) {
    int64_t t0 = cli_now_ms();
    if (shown_rc == ZKL_OK)
      overview_free(&shown);
    armed = 0; /* (the completions run on the client's thread; a bound
                  only, not exact) */
    if (!polled)
      arm_all(o, &(overview){0}); /* the prefix at least, before the walk */
    rc = shown_rc = overview_get(s, o, &shown);
    if (rc == ZKL_OK && !polled)
      arm_all(o, &shown); /* before anything below can change unseen: the
                             listing that follows the next event sees it */
    if (rc == ZKL_OK)
      ok_at = shown.now_ms;
    listed_ms = cli_now_ms() - t0;
  } else {
    rc = shown_rc;
    if (rc == ZKL_OK && !lost_at) /* stale: the durations stay as listed */
      move_on(&shown, wall_ms());
  }
  if (polled && !screen) { /* a pipe: a table at a change only */
    uint64_t sig = rc == ZKL_OK ? signature(&shown) : 0;
    if (!first && rc == printed_rc && sig == printed_sig)
      return;
    printed_rc = rc;
    printed_sig = sig;
  }
  cli_iso_time(when, sizeof when, wall_ms(), false);
  if (screen)
    fputs("\033[H\033[2J", stdout);
  else if (!first)
    fputc('\n', stdout);
  if (screen) {
    char title[ZKL_NAME_MAX + 128];
    struct winsize ws;
    size_t width = 0;
    int rows = 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
      width = ws.ws_col;
      rows = ws.ws_row > 3 ? ws.ws_row - 3 : 1; /* the title, a blank
                                                   line, and the last line
                                                   left empty: no scroll */
    }
    snprintf(title, sizeof title, "zklock --list %s%s   %s   (q: quit)",
             o->prefix ? o->prefix : o->target, o->prefix ? "/" : "", when);
    /* too wide: the hint goes, then the time (never cut mid-number); the
     * name is cut last */
    if (width && strlen(title) > width)
      snprintf(title, sizeof title, "zklock --list %s%s   %s",
               o->prefix ? o->prefix : o->target, o->prefix ? "/" : "", when);
    if (width && strlen(title) > width)
      snprintf(title, sizeof title, "zklock --list %s%s",
               o->prefix ? o->prefix : o->target, o->prefix ? "/" : "");
    put_cut(title, strlen(title), width);
    if (lost_at) { /* in place of the blank line: the layout stays */
      char banner[200], then[40], at[40];
      cli_iso_time(at, sizeof at, lost_at, false);
      cli_iso_time(then, sizeof then, ok_at, false);
      snprintf(banner, sizeof banner,
               "*** DISCONNECTED from ZooKeeper since %s (%.0f s): NOT LIVE, "
               "as listed at %s ***",
               at, (double)since_ms(wall_ms(), lost_at) / 1000.0, then);
      put_cut(banner, strlen(banner), width);
    } else {
      fputc('\n', stdout);
    }
    if (rc == ZKL_OK) {
      char *table = NULL;
      size_t len = 0;
      FILE *m = open_memstream(&table, &len);
      if (m) {
        format_print(m, &shown, o);
        if (shown.truncated)
          fprintf(m, "(more than %d nodes: the listing stops there)\n",
                  WALK_MAX_NODES);
        if (fclose(m) == 0 && table)
          put_fitted(table, width, rows);
      }
      free(table);
      fflush(stdout);
      return;
    }
  }
  if (rc != ZKL_OK) {
    printf("cannot list: %s\n", zkl_strerror(rc));
    /* the session is over (direct, or the agent gone), or the agent's
     * policy refuses: the view ends as --list would */
    if (rc == ZKL_EEXPIRED || rc == ZKL_ECLOSED || rc == ZKL_EAGENT ||
        rc == ZKL_EDENIED)
      *fatal = rc;
  } else {
    format_print(stdout, &shown, o);
    if (shown.truncated)
      printf("(more than %d nodes: the listing stops there)\n",
             WALK_MAX_NODES);
  }
  fflush(stdout);
}

int overview_watch(zkl_session *s, const options *o) {
  bool screen = isatty(STDOUT_FILENO), first = true, due = true, quit = false;
  int64_t last = 0, ticked = 0, gap = 1000 / WATCH_RATE, next_poll = 0;
  int fatal = ZKL_OK;
  watch_s = s;
  grants_tracked = true; /* HELD_S from the grant the view saw */
  polled = zkl_session_handle(s) == NULL;
  if (polled)
    cli_verbose_msg("--watch lists through the agent every %d ms (its "
                    "policy's list rule), with no ZooKeeper watch",
                    POLL_MS);
  if (ev_init() != 0) {
    cli_error("cannot make a pipe: %s", strerror(errno));
    return ZKL_ESYSTEM;
  }
  ev_catch_signals(false);
  if (screen) {
    keys_raw();
    fputs("\033[?1049h\033[?25l", stdout); /* the alternate screen */
    screen_on = true;
    atexit(restore_terminal);
  }
  while (!quit && fatal == ZKL_OK) {
    struct pollfd fds[2];
    int64_t now = cli_now_ms(), timeout = -1;
    ev_batch b;
    int nfds = 1;
    bool up = reachable(s);
    if (!up && !lost_at) { /* it went: say so, and stop the clock */
      lost_at = wall_ms();
      if (screen)
        draw(s, o, screen, first, false, &fatal);
      else
        say_disconnected(lost_at, ok_at);
      continue;
    }
    if (up && lost_at) { /* back: say so, and list again at once */
      if (!screen)
        say_reconnected(wall_ms(), lost_at);
      lost_at = 0;
      due = true;
      last = 0;
    }
    if (polled && now >= next_poll)
      due = true;
    if (up && due && now - last >= gap) {
      draw(s, o, screen, first, true, &fatal);
      first = false;
      due = false;
      last = ticked = now;
      /* from the end of this listing, so that a slow one is never asked
       * again at once */
      next_poll = cli_now_ms() +
                  (listed_ms * POLL_LOAD > POLL_MS ? listed_ms * POLL_LOAD
                                                   : POLL_MS);
      continue;
    }
    /* on a terminal, the durations move on every second (HELD_S,
     * WAITED_S) without a change in ZooKeeper */
    if (screen && (!due || !up) && now - ticked >= TICK_MS) {
      draw(s, o, screen, first, false, &fatal);
      ticked = now;
      continue;
    }
    if (due && up)
      timeout = gap - (now - last);
    else if (screen)
      timeout = TICK_MS - (now - ticked);
    if (polled && !due && (timeout < 0 || next_poll - now < timeout))
      timeout = next_poll - now;
    /* the connection is looked at locally every STATE_MS: a listing that
     * is due waits for it to come back (it would block until then) */
    if (timeout < 0 || timeout > STATE_MS)
      timeout = STATE_MS;
    fds[0].fd = ev_fd();
    fds[0].events = POLLIN;
    if (tty_raw) {
      fds[1].fd = STDIN_FILENO;
      fds[1].events = POLLIN;
      nfds = 2;
    }
    if (poll(fds, (nfds_t)nfds, (int)timeout) < 0 && errno != EINTR)
      break;
    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP))) {
      char c;
      ssize_t r = read(STDIN_FILENO, &c, 1);
      if (r <= 0 || c == 'q' || c == 'Q' || c == 3)
        quit = true;
      else if (c == ' ' || c == 'r')
        due = true; /* redraw now (the durations move) */
    }
    if (fds[0].revents & POLLIN) {
      ev_drain();
      ev_take(&b);
      if (b.nsignals > 0)
        quit = true;
      if (b.queue_changed)
        due = true;
    }
  }
  restore_terminal();
  if (shown_rc == ZKL_OK)
    overview_free(&shown);
  shown_rc = -1;
  grants_turn(); /* the last listing's, taken over */
  grants_turn(); /* and let go */
  grants_tracked = false;
  /* a lost connection or an ended session answers them too */
  ev_wait_answered(zkl_session_timeout(s));
  return fatal;
}

/* ------------------------------------------------------- --leader --watch */

/* The leader watch's news, from the library's callback thread to the main
 * loop: the latest only (a listing read at a wake-up shows the latest too,
 * and a new leader always has a new token). */
static pthread_mutex_t leader_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  bool news;
  int rc; /* ZKL_OK: id and token; ZKL_ENOTHELD: nobody; else the end */
  char id[ZKL_ID_MAX + 1];
  int64_t token;
} leader_now;

static void on_leader(zkl_leader_watch *w, int rc, const char *id,
                      int64_t token, void *arg) {
  (void)w;
  (void)arg;
  pthread_mutex_lock(&leader_mu);
  leader_now.news = true;
  leader_now.rc = rc;
  snprintf(leader_now.id, sizeof leader_now.id, "%s",
           rc == ZKL_OK && id ? id : "");
  leader_now.token = token;
  pthread_mutex_unlock(&leader_mu);
  ev_post_queue_changed();
}

/* The library's leader watch (leader.c: one ZooKeeper watch at a time,
 * candidates queued behind the leader wake nothing), the same direct and
 * through the agent, which serves it under its policy's "list". */
int overview_leader_watch(zkl_session *s, const options *o) {
  char was[ZKL_ID_MAX + 1] = "", shown_id[ZKL_ID_MAX + 1];
  int64_t was_token = -1, lost = 0;
  zkl_leader_watch *w;
  int rc;
  if (ev_init() != 0) {
    cli_error("cannot make a pipe: %s", strerror(errno));
    return ZKL_ESYSTEM;
  }
  ev_catch_signals(false);
  if ((rc = zkl_leader_watch_new(&w, s, o->target, on_leader, NULL)) !=
      ZKL_OK)
    return rc;
  for (;;) { /* until the watch ends, or a signal */
    struct pollfd pfd = {ev_fd(), POLLIN, 0};
    ev_batch b;
    bool up;
    if (poll(&pfd, 1, zkl_session_handle(s) ? STATE_MS : -1) < 0 &&
        errno != EINTR)
      break;
    ev_drain();
    ev_take(&b);
    if (b.nsignals > 0)
      break;
    /* The connection, looked at locally: a line when it goes (the last
     * leader printed is then not known to lead any more) and when it comes
     * back, then the leader's line again, even the same one. */
    up = reachable(s);
    if (!up && !lost) {
      char when[40];
      lost = wall_ms();
      cli_iso_time(when, sizeof when, lost, false);
      printf("-\t-\tdisconnected\t%s\n", when);
    } else if (up && lost) {
      char when[40];
      int64_t now = wall_ms();
      cli_iso_time(when, sizeof when, now, false);
      printf("-\t-\treconnected\t%s\n", when);
      lost = 0;
      /* who leads now, asked at once: the library's news of its listing
       * again may have come before the reconnection was seen here */
      if (zkl_name_get_leader(s, o->target, was, sizeof was, &was_token) ==
          ZKL_OK) {
        cli_printable(shown_id, sizeof shown_id, was);
        printf("%s\t%" PRId64 "\n", shown_id, was_token);
      } else {
        was[0] = '\0';
        was_token = -1;
      }
    }
    if (fflush(stdout) != 0) {
      rc = ZKL_ESYSTEM;
      break;
    }
    if (!b.queue_changed)
      continue;
    pthread_mutex_lock(&leader_mu);
    rc = leader_now.news ? leader_now.rc : ZKL_ENOTHELD;
    leader_now.news = false;
    if (rc == ZKL_OK && (leader_now.token != was_token ||
                         strcmp(leader_now.id, was) != 0)) {
      snprintf(was, sizeof was, "%s", leader_now.id);
      was_token = leader_now.token;
      cli_printable(shown_id, sizeof shown_id, was);
      printf("%s\t%" PRId64 "\n", shown_id, was_token);
    } else if (rc == ZKL_ENOTHELD) {
      was[0] = '\0'; /* the next leader is told, even the same again */
      was_token = -1;
    }
    pthread_mutex_unlock(&leader_mu);
    if (rc != ZKL_OK && rc != ZKL_ENOTHELD)
      break; /* the watch ended: the session, a refusal, an error */
    if (fflush(stdout) != 0) {
      rc = ZKL_ESYSTEM;
      break;
    }
  }
  zkl_leader_watch_free(w); /* never blocks; no callback after it */
  return rc == ZKL_ENOTHELD ? ZKL_OK : rc;
}
