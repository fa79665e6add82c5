/* SPDX-License-Identifier: Apache-2.0 */
/* test_break.c - breaking a stuck lock (zkl_name_break()) against a real
 * ZooKeeper: with no grace, the holder loses with ZKL_LOST_BROKEN, its
 * release says ZKL_ELOST, and the next contender is granted with a higher
 * token; with a grace the holder uses to let go (told through its revoke
 * callback), nothing is broken and the call ends before its grace; a node
 * replaced meanwhile, by the holder's next node or at the same path, is
 * never hit; readers, a semaphore's leases and an election's leader are
 * broken too; a creator-only lock is refused with ZNOAUTH without its
 * credentials; bad input is refused. Every test checks that nothing is
 * left behind. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zktest.h"

#define T_SESSION 10000
#define LONG_GRACE 120000 /* the tests that use it never wait it out */

/* ------------------------------------------------------------- helpers */

/* What zkl_name_break() reported, node by node. */
typedef struct {
  int n;
  char node[8][ZKL_PATH_MAX];
  int rc[8];
} report;

static void on_report(zkl_session *s, int rc, const char *node, void *arg) {
  report *r = arg;
  (void)s;
  if (r->n < 8) {
    snprintf(r->node[r->n], sizeof r->node[0], "%s", node);
    r->rc[r->n++] = rc;
  }
}

/* Whether the report names path, with rc. */
static bool reported(const report *r, const char *path, int rc) {
  int i;
  for (i = 0; i < r->n; i++)
    if (strcmp(r->node[i], path) == 0 && r->rc[i] == rc)
      return true;
  return false;
}

/* A holder on a session of its own, with its lost callback recorded. */
typedef struct {
  zkl_session *s;
  zkl_lock *l;
  int64_t token;
  char path[ZKL_PATH_MAX];
  zkt_rec lost;
} holder;

static void hold_with(holder *h, zkl_lock *l, zkl_session *s) {
  h->s = s;
  h->l = l;
  zkt_rec_init(&h->lost);
  zkl_lock_on_lost(l, zkt_on_lost, &h->lost);
  /* watched from the grant: a break here meets a holder that sees it (a
   * younger hold's is test_break_young_hold) */
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(l, 0), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, &h->token), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, h->path, sizeof h->path),
                        ZKL_OK);
  /* The watch on its own node is armed: nothing of the grant is on its
   * way any more. */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
}

static void hold(holder *h, const char *name) {
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  hold_with(h, l, s);
}

/* The holder was broken: told so, and its release says so. */
static void assert_broken(holder *h) {
  CU_ASSERT_EQUAL(zkt_rec_wait(&h->lost, 1, ZKT_WAIT), ZKL_LOST_BROKEN);
  CU_ASSERT_EQUAL(zkl_lock_token(h->l), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(h->l), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkl_lock_release(h->l), ZKL_ENOTHELD);
}

static void close_holder(holder *h, bool free_lock) {
  if (free_lock)
    zkl_lock_free(h->l);
  zkt_assert_quiet(h->s);
  zkl_session_close(h->s, NULL);
}

static const char *child_of(const char *path) {
  return strrchr(path, '/') + 1;
}

/* --------------------------------------------------------------- tests */

/* Grace 0: the holder's node goes at once; the holder is told it was
 * broken, and a waiter is granted with a higher token. */
static void test_break_at_once(void) {
  char name[64];
  zkl_session *waiter = zkt_session(T_SESSION),
              *breaker = zkt_session(T_SESSION);
  zkl_lock *w;
  zkl_lock_stats st;
  holder h;
  zkt_rec granted;
  report rep = {0};
  zkt_name(name, sizeof name, "break-now");
  hold(&h, name);
  zkt_rec_init(&granted);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, waiter, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(w, -1, zkt_on_acquired, &granted), ZKL_OK);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  }

  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, NULL, 0, on_report, &rep), ZKL_OK);
  CU_ASSERT_EQUAL(rep.n, 1);
  CU_ASSERT(reported(&rep, h.path, ZKL_OK));
  assert_broken(&h);
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(granted.token > h.token);
  CU_ASSERT_EQUAL(zkl_lock_get_stats(h.l, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.losses, 1);
  /* the broken holder may take it again, behind the new holder */
  CU_ASSERT_EQUAL(zkl_lock_acquire(h.l, 0, NULL), ZKL_EBUSY);

  /* nobody left to break once the waiter let go */
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
  rep.n = 0;
  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, NULL, 0, on_report, &rep),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(rep.n, 0);
  zkl_lock_free(w);
  close_holder(&h, true);
  zkt_assert_quiet(waiter);
  zkt_assert_quiet(breaker);
  zkl_session_close(waiter, NULL);
  zkl_session_close(breaker, NULL);
  zkt_assert_parent_empty(name);
}

/* A holder and a waiter in kazoo's layout (zkl_lock_set_layout): listed as
 * a mutex's nodes, the first holding; broken as any holder, the waiter then
 * granted. Their nodes carry our id in kazoo's names, and every reader of
 * the queue finds them as it finds Curator's. */
static void test_kazoo_layout(void) {
  char name[64], parent[512];
  zkl_session *waiter = zkt_session(T_SESSION),
              *breaker = zkt_session(T_SESSION);
  zkl_session *hs = zkt_session(T_SESSION);
  zkl_lock *hl, *w;
  zkl_participant *list = NULL;
  int count = 0;
  holder h;
  zkt_rec granted;
  report rep = {0};
  zkt_name(name, sizeof name, "break-kazoo-layout");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&hl, hs, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_set_layout(hl, ZKL_LAYOUT_KAZOO), ZKL_OK);
  hold_with(&h, hl, hs);
  CU_ASSERT(strncmp(child_of(h.path), "_c_", 3) == 0 &&
            strstr(child_of(h.path), "-__lock__") != NULL);
  zkt_rec_init(&granted);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, waiter, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_set_layout(w, ZKL_LAYOUT_KAZOO), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(w, -1, zkt_on_acquired, &granted), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_name_list(breaker, name, &list, &count), ZKL_OK);
  CU_ASSERT_EQUAL(count, 2);
  if (count == 2) {
    CU_ASSERT_STRING_EQUAL(list[0].node, h.path);
    CU_ASSERT(list[0].holds && !list[1].holds);
    CU_ASSERT_STRING_EQUAL(list[0].kind, "lock");
    CU_ASSERT_STRING_EQUAL(list[1].lock, "mutex");
  }
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, NULL, 0, on_report, &rep),
                  ZKL_OK);
  CU_ASSERT_EQUAL(rep.n, 1);
  CU_ASSERT(reported(&rep, h.path, ZKL_OK));
  assert_broken(&h);
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(granted.token > h.token);
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
  zkl_lock_free(w);
  close_holder(&h, true);
  zkt_assert_quiet(waiter);
  zkt_assert_quiet(breaker);
  zkl_session_close(waiter, NULL);
  zkl_session_close(breaker, NULL);
  zkt_assert_parent_empty(name);
}

/* The holder's revoke callback hears of the break and lets go (an async
 * release: a callback must not block); the break then finds nothing to
 * delete, and returns without waiting out its grace. */
static void on_revoke_let_go(zkl_lock *l, void *arg) {
  zkt_counter_add(arg, 1);
  zkl_lock_release_async(l, NULL, NULL);
}

static void test_grace_used_to_let_go(void) {
  char name[64];
  zkl_session *breaker = zkt_session(T_SESSION);
  zkt_counter asked;
  holder h;
  report rep = {0};
  zkt_name(name, sizeof name, "break-grace");
  zkt_counter_init(&asked);
  hold(&h, name);
  zkl_lock_on_revoke(h.l, on_revoke_let_go, &asked);
  CU_ASSERT_EQUAL(
      zkl_name_break(breaker, name, NULL, LONG_GRACE, on_report, &rep),
      ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(rep.n, 1);
  CU_ASSERT(reported(&rep, h.path, ZKL_ENOTHELD));
  CU_ASSERT_EQUAL(zkt_counter_get(&asked), 1);
  /* it let go: no loss */
  CU_ASSERT_EQUAL(zkl__debug_wait_quiet(h.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.lost.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_ENOTHELD);
  close_holder(&h, true);
  zkt_assert_quiet(breaker);
  zkl_session_close(breaker, NULL);
  zkt_assert_parent_empty(name);
}

/* A holder tells a break's mark from a plain request
 * (zkl_lock_break_mark()), and stops (lets go) only for the break: a
 * request is the holder's to ignore, a break's grace is not. */
typedef struct {
  zkt_counter asked, marks;
} marks_seen;

static void on_revoke_break_only(zkl_lock *l, void *arg) {
  marks_seen *m = arg;
  bool marked = zkl_lock_break_mark(l);
  zkt_counter_add(&m->asked, 1);
  if (marked) {
    zkt_counter_add(&m->marks, 1);
    zkl_lock_release_async(l, NULL, NULL);
  }
}

static void test_break_mark_told(void) {
  char name[64];
  zkl_session *breaker = zkt_session(T_SESSION);
  marks_seen m;
  holder h;
  report rep = {0};
  zkt_name(name, sizeof name, "break-mark");
  zkt_counter_init(&m.asked);
  zkt_counter_init(&m.marks);
  hold(&h, name);
  zkl_lock_on_revoke(h.l, on_revoke_break_only, &m);
  CU_ASSERT(!zkl_lock_break_mark(h.l));
  CU_ASSERT(!zkl_lock_break_mark(NULL));
  CU_ASSERT_EQUAL(zkl_name_revoke(breaker, name, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&m.asked, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zkt_counter_get(&m.marks), 0); /* a request: kept */
  CU_ASSERT(!zkl_lock_break_mark(h.l));
  CU_ASSERT(zkl_lock_token(h.l) > 0);
  CU_ASSERT_EQUAL(
      zkl_name_break(breaker, name, NULL, LONG_GRACE, on_report, &rep),
      ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkt_counter_get(&m.marks), 1); /* a break: let go */
  CU_ASSERT(reported(&rep, h.path, ZKL_ENOTHELD));
  CU_ASSERT_EQUAL(zkl__debug_wait_quiet(h.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.lost.calls), 0);
  CU_ASSERT(!zkl_lock_break_mark(h.l)); /* no hold any more */
  close_holder(&h, true);
  zkt_assert_quiet(breaker);
  zkl_session_close(breaker, NULL);
  zkt_assert_parent_empty(name);
}

/* The holder lets go in its grace and takes the lock again: its new node
 * is not the node marked, and is not hit. */
typedef struct {
  zkt_counter asked;
  zkt_rec again;
} retake;

static void on_released_retake(zkl_lock *l, int rc, void *arg) {
  retake *t = arg;
  if (rc == ZKL_OK)
    zkl_lock_acquire_async(l, -1, zkt_on_acquired, &t->again);
}

static void on_revoke_retake(zkl_lock *l, void *arg) {
  retake *t = arg;
  zkt_counter_add(&t->asked, 1);
  zkl_lock_release_async(l, on_released_retake, t);
}

static void test_new_node_not_hit(void) {
  char name[64], path[ZKL_PATH_MAX];
  zkl_session *breaker = zkt_session(T_SESSION);
  retake t;
  holder h;
  report rep = {0};
  zkt_name(name, sizeof name, "break-retake");
  zkt_counter_init(&t.asked);
  zkt_rec_init(&t.again);
  hold(&h, name);
  zkl_lock_on_revoke(h.l, on_revoke_retake, &t);
  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, child_of(h.path), LONG_GRACE,
                                 on_report, &rep),
                  ZKL_ENOTHELD);
  CU_ASSERT(reported(&rep, h.path, ZKL_ENOTHELD));
  CU_ASSERT_EQUAL(zkt_rec_wait(&t.again, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(t.again.token > h.token);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(h.l, path, sizeof path), ZKL_OK);
  CU_ASSERT_STRING_NOT_EQUAL(path, h.path);
  CU_ASSERT_EQUAL(zkl_lock_token(h.l), t.again.token);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.lost.calls), 0);
  /* the old node, named again: gone, nothing to break */
  CU_ASSERT_EQUAL(
      zkl_name_break(breaker, name, child_of(h.path), 0, NULL, NULL),
      ZKL_ENOTHELD);
  zkl_lock_on_revoke(h.l, NULL, NULL);
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  close_holder(&h, true);
  zkt_assert_quiet(breaker);
  zkl_session_close(breaker, NULL);
  zkt_assert_parent_empty(name);
}

/* A node replaced at the very path marked (as a reaped and re-created
 * parent could make it) during the grace: the new node is not hit. */
typedef struct {
  zkl_session *s;
  const char *name, *node;
  int rc;
  report rep;
} break_call;

static void on_revoke_count(zkl_lock *l, void *arg) {
  (void)l;
  zkt_counter_add(arg, 1);
}

static void *break_thread(void *arg) {
  break_call *c = arg;
  c->rc = zkl_name_break(c->s, c->name, c->node, LONG_GRACE, on_report, &c->rep);
  return NULL;
}

static void test_same_path_not_hit(void) {
  char name[64];
  pthread_t th;
  zkt_counter asked;
  holder h;
  break_call c;
  struct Stat st;
  zkt_name(name, sizeof name, "break-replaced");
  zkt_counter_init(&asked);
  hold(&h, name);
  zkl_lock_on_revoke(h.l, on_revoke_count, &asked);
  memset(&c, 0, sizeof c);
  c.s = zkt_session(T_SESSION);
  c.name = name;
  c.node = child_of(h.path);
  CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, break_thread, &c), 0);
  /* marked: the holder was asked; now someone else takes its path */
  CU_ASSERT_EQUAL(zkt_counter_wait(&asked, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), h.path, -1), ZOK);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), h.path, "new", 3,
                             &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0),
                  ZOK);
  pthread_join(th, NULL);
  CU_ASSERT_EQUAL(c.rc, ZKL_ENOTHELD);
  CU_ASSERT(reported(&c.rep, h.path, ZKL_ENOTHELD));
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), h.path, 0, &st), ZOK);
  /* deleted after the mark: the holder counts it as broken */
  assert_broken(&h);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), h.path, -1), ZOK);
  close_holder(&h, true);
  zkt_assert_quiet(c.s);
  zkl_session_close(c.s, NULL);
  zkt_assert_parent_empty(name);
}

/* The holder lets go between the break's listing and its reads of the
 * nodes (participants.c's test hook runs there), and the next contender is
 * granted in that window: the break aims at what it listed, the holder,
 * gone now, and hits nothing; the new holder, granted after the break
 * began, holds on. */
static struct {
  zkl_lock *holder;
  zkt_rec *granted;
  bool ran;
  int release_rc, granted_rc;
} between;

static void let_go_between(const char *name) {
  (void)name;
  if (between.ran)
    return;
  between.ran = true;
  between.release_rc = zkl_lock_release(between.holder);
  between.granted_rc = zkt_rec_wait(between.granted, 1, ZKT_WAIT);
}

static void test_next_holder_not_hit(void) {
  char name[64], parent[512];
  zkl_session *ws = zkt_session(T_SESSION), *breaker = zkt_session(T_SESSION);
  zkl_lock *w;
  holder h;
  zkt_rec granted, w_lost;
  report rep = {0};
  zkt_name(name, sizeof name, "break-next");
  zkt_parent(parent, sizeof parent, name);
  hold(&h, name);
  zkt_rec_init(&granted);
  zkt_rec_init(&w_lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, ws, name), ZKL_OK);
  zkl_lock_on_lost(w, zkt_on_lost, &w_lost);
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(w, 0), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(w, -1, zkt_on_acquired, &granted), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);

  memset(&between, 0, sizeof between);
  between.holder = h.l;
  between.granted = &granted;
  zkl__hook_participants_listed = let_go_between;
  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, NULL, 0, on_report, &rep),
                  ZKL_ENOTHELD);
  zkl__hook_participants_listed = NULL;
  CU_ASSERT(between.ran);
  CU_ASSERT_EQUAL(between.release_rc, ZKL_OK);
  CU_ASSERT_EQUAL(between.granted_rc, ZKL_OK);
  CU_ASSERT_EQUAL(rep.n, 0); /* the holder listed was gone when read */
  /* the new holder was not hit: its release finds its node */
  CU_ASSERT_EQUAL(zkl_lock_token(w), granted.token);
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_get(&w_lost.calls), 0);
  zkl_lock_free(w);
  close_holder(&h, true);
  zkt_assert_quiet(ws);
  zkt_assert_quiet(breaker);
  zkl_session_close(ws, NULL);
  zkl_session_close(breaker, NULL);
  zkt_assert_parent_empty(name);
}

/* A multi-lock is one contender: a revoke, or a break's mark, on its node
 * in any one of its names reaches the multi-lock's own revoke callback (as
 * the whole, not a part), and letting go there lets go of every name
 * within the grace. */
typedef struct {
  zkt_counter asked;
  zkl_lock *seen; /* written before asked counts */
} revoke_seen;

static void on_revoke_seen(zkl_lock *l, void *arg) {
  revoke_seen *r = arg;
  r->seen = l;
  zkt_counter_add(&r->asked, 1);
}

static void test_multilock(void) {
  char a[64], b[64];
  const char *names[2] = {a, b};
  zkl_session *asker = zkt_session(T_SESSION), *s = zkt_session(T_SESSION);
  zkl_lock *l;
  revoke_seen r;
  holder h;
  report rep = {0};
  zkt_name(a, sizeof a, "break-multi-a");
  zkt_name(b, sizeof b, "break-multi-b");
  memset(&r, 0, sizeof r);
  zkt_counter_init(&r.asked);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_multi(&l, s, names, 2), ZKL_OK);
  hold_with(&h, l, s); /* h.path: its node in a */
  zkl_lock_on_revoke(l, on_revoke_seen, &r);
  /* revoked on its second name: the multi-lock is asked, once */
  CU_ASSERT_EQUAL(zkl_name_revoke(asker, b, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&r.asked, 1, ZKT_WAIT), 1);
  CU_ASSERT(r.seen == l);
  /* broken on its first name: asked, it lets go of both in the grace */
  zkl_lock_on_revoke(l, on_revoke_let_go, &r.asked);
  CU_ASSERT_EQUAL(zkl_name_break(asker, a, NULL, LONG_GRACE, on_report, &rep),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(rep.n, 1);
  CU_ASSERT(reported(&rep, h.path, ZKL_ENOTHELD));
  CU_ASSERT_EQUAL(zkt_counter_get(&r.asked), 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_quiet(h.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.lost.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD);
  close_holder(&h, true);
  zkt_assert_quiet(asker);
  zkl_session_close(asker, NULL);
  zkt_assert_parent_empty(a);
  zkt_assert_parent_empty(b);
}

/* Readers sharing a read/write lock are all broken (the writer behind
 * them is granted above both); a semaphore's lease named by its node is
 * broken (the waiter for a lease is granted), then, with nobody waiting,
 * every lease; an election's leader is broken and the next leads. */
static void test_kinds(void) {
  char name[64], leases[128];
  zkl_session *breaker = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_rwlock *rw[2], *wrw;
  zkl_lock *w, *sem[2], *cand[2];
  holder r[2], l[2], lead;
  zkt_rec granted, w_lost;
  report rep = {0};
  int i;

  /* two readers, a writer waiting behind them */
  zkt_name(name, sizeof name, "break-readers");
  for (i = 0; i < 2; i++) {
    zkl_session *s = zkt_session(T_SESSION);
    CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw[i], s, name), ZKL_OK);
    hold_with(&r[i], zkl_rwlock_read(rw[i]), s);
  }
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&wrw, ws, name), ZKL_OK);
  zkt_rec_init(&granted);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(zkl_rwlock_write(wrw), -1,
                                               zkt_on_acquired, &granted),
                        ZKL_OK);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 3, ZKT_WAIT), 3);
  }
  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, NULL, 0, on_report, &rep), ZKL_OK);
  CU_ASSERT_EQUAL(rep.n, 2);
  for (i = 0; i < 2; i++) {
    CU_ASSERT(reported(&rep, r[i].path, ZKL_OK));
    assert_broken(&r[i]);
  }
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(granted.token > r[0].token && granted.token > r[1].token);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(wrw)), ZKL_OK);
  zkl_rwlock_free(wrw);
  for (i = 0; i < 2; i++) {
    zkl_rwlock_free(rw[i]);
    close_holder(&r[i], false);
  }
  zkt_assert_no_contender(name);

  /* a semaphore of 2: one lease broken by its node, a waiter granted */
  zkt_name(name, sizeof name, "break-leases");
  snprintf(leases, sizeof leases, "%s/leases", name);
  for (i = 0; i < 2; i++) {
    zkl_session *s = zkt_session(T_SESSION);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&sem[i], s, name, 2), ZKL_OK);
    hold_with(&l[i], sem[i], s);
  }
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&w, ws, name, 2), ZKL_OK);
  zkt_rec_init(&w_lost);
  zkl_lock_on_lost(w, zkt_on_lost, &w_lost);
  /* granted below, and broken young: watched from its grant */
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(w, 0), ZKL_OK);
  zkt_rec_init(&granted);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(w, -1, zkt_on_acquired,
                                               &granted),
                        ZKL_OK);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, leases);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 3, ZKT_WAIT), 3);
  }
  /* waiting for a lease, behind the gate (its first try's node, which
   * the count above may have seen, is gone) */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(ws, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&granted.calls), 0);
  /* a semaphore's place is no name of its own */
  CU_ASSERT_EQUAL(
      zkl_name_break(breaker, leases, child_of(l[0].path), 0, NULL, NULL),
      ZKL_EINVAL);
  /* a lease node is found among the name's places */
  rep.n = 0;
  CU_ASSERT_EQUAL(
      zkl_name_break(breaker, name, child_of(l[0].path), 0, on_report, &rep),
      ZKL_OK);
  CU_ASSERT_EQUAL(rep.n, 1);
  CU_ASSERT(reported(&rep, l[0].path, ZKL_OK));
  assert_broken(&l[0]);
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(granted.token > l[0].token);
  /* nobody waits now: every lease is broken */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(ws, ZKT_WAIT), 0);
  rep.n = 0;
  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, NULL, 0, on_report, &rep), ZKL_OK);
  CU_ASSERT_EQUAL(rep.n, 2);
  CU_ASSERT(reported(&rep, l[1].path, ZKL_OK));
  assert_broken(&l[1]);
  CU_ASSERT_EQUAL(zkt_rec_wait(&w_lost, 1, ZKT_WAIT), ZKL_LOST_BROKEN);
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_ELOST);
  zkl_lock_free(w);
  for (i = 0; i < 2; i++)
    close_holder(&l[i], true);
  zkt_assert_no_contender(name);

  /* an election: the leader broken, the next candidate leads */
  zkt_name(name, sizeof name, "break-leader");
  {
    zkl_session *s = zkt_session(T_SESSION);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&cand[0], s, name, "first"),
                          ZKL_OK);
    hold_with(&lead, cand[0], s);
  }
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&cand[1], ws, name, "second"),
                        ZKL_OK);
  zkt_rec_init(&granted);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(cand[1], -1, zkt_on_acquired,
                                               &granted),
                        ZKL_OK);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  }
  rep.n = 0;
  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, NULL, 0, on_report, &rep), ZKL_OK);
  CU_ASSERT_EQUAL(rep.n, 1);
  CU_ASSERT(reported(&rep, lead.path, ZKL_OK));
  assert_broken(&lead);
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(granted.token > lead.token);
  CU_ASSERT_EQUAL(zkl_lock_release(cand[1]), ZKL_OK);
  zkl_lock_free(cand[1]);
  close_holder(&lead, true);
  zkt_assert_no_contender(name);

  zkt_assert_quiet(ws);
  zkt_assert_quiet(breaker);
  zkl_session_close(ws, NULL);
  zkl_session_close(breaker, NULL);
}

/* A downgrade: the holder of a write side takes the read side, then
 * releases the write side, which keeps its node until the read side lets
 * go. A writer that queued behind the write node while it held stands
 * between that node and the read node. zkl_name_list() says both hold;
 * a revoke reaches the read side; a break, of every holder or of the write
 * node named, breaks the read side too (ZKL_LOST_BROKEN), and the writer
 * is granted once both are gone. */
static void test_downgraded_reader(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION),
              *breaker = zkt_session(T_SESSION);
  zkl_rwlock *rw, *wrw;
  zkl_participant *list;
  zkt_counter asked;
  zkt_rec granted;
  holder h;
  report rep = {0};
  int count = 0, i, holding = 0, round;
  zkt_name(name, sizeof name, "break-downgrade");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&wrw, ws, name), ZKL_OK);
  /* round 0: every holder broken; round 1: the write node named */
  for (round = 0; round < 2; round++) {
    char write_node[ZKL_PATH_MAX];
    int64_t wtoken = 0;
    zkt_rec_init(&granted);
    zkt_counter_init(&asked);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire(zkl_rwlock_write(rw), ZKT_WAIT, &wtoken), ZKL_OK);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(zkl_rwlock_write(rw),
                                                 write_node, sizeof write_node),
                          ZKL_OK);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(zkl_rwlock_write(wrw), -1,
                                                 zkt_on_acquired, &granted),
                          ZKL_OK);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
    hold_with(&h, zkl_rwlock_read(rw), s);
    CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(rw)), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_children(parent), 3); /* the write node stays */

    /* Who holds: the write node and the reader, not the writer between */
    CU_ASSERT_EQUAL_FATAL(zkl_name_list(breaker, name, &list, &count), ZKL_OK);
    CU_ASSERT_EQUAL(count, 3);
    for (i = 0, holding = 0; i < count; i++) {
      bool ours = strcmp(list[i].node, h.path) == 0 ||
                  strcmp(list[i].node, write_node) == 0;
      CU_ASSERT_EQUAL(list[i].holds, ours);
      holding += list[i].holds;
    }
    CU_ASSERT_EQUAL(holding, 2);
    zkl_name_list_free(list);

    /* A revoke reaches the read side, which watches its node */
    zkl_lock_on_revoke(h.l, on_revoke_count, &asked);
    CU_ASSERT_EQUAL(
        zkl_name_revoke(breaker, name, round ? child_of(write_node) : NULL), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_counter_wait(&asked, 1, ZKT_WAIT), 1);

    /* A break takes the reader with the write node */
    rep.n = 0;
    CU_ASSERT_EQUAL(zkl_name_break(breaker, name,
                                   round ? child_of(write_node) : NULL, 0,
                                   on_report, &rep),
                    ZKL_OK);
    CU_ASSERT_EQUAL(rep.n, 2);
    CU_ASSERT(reported(&rep, h.path, ZKL_OK));
    /* the write node too, even when the reader's end deleted it first */
    CU_ASSERT(reported(&rep, write_node, ZKL_OK));
    assert_broken(&h);
    /* (above the write node's token; below the reader's, whose node came
     * after it: see zkl_rwlock_new()) */
    CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
    CU_ASSERT(granted.token > wtoken);
    CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(wrw)), ZKL_OK);
    zkl_lock_on_revoke(h.l, NULL, NULL);
    zkt_assert_no_contender(name);
  }
  zkl_rwlock_free(wrw);
  zkl_rwlock_free(rw);
  zkt_assert_quiet(ws);
  zkt_assert_quiet(breaker);
  zkl_session_close(ws, NULL);
  zkl_session_close(breaker, NULL);
  close_holder(&h, false);
  zkt_assert_parent_empty(name);
}

/* An election's leader keeps its id through a revoke and a break (issue 24
 * item 6: a revoke wrote __REVOKE__ over it, a break's mark prefixed
 * __BREAK__, and zkl_name_get_leader(), zklock --leader and Curator's
 * LeaderLatch, which read the node's data as the id, said so): the node's
 * data stays the id, byte for byte, while the leader still hears both
 * requests (its revoke callback), lets go in a break's grace unharmed, and
 * a leader broken with no grace is told ZKL_LOST_BROKEN. */
static void assert_leader_id(zkl_session *s, const char *name, const char *path,
                             const char *id, int64_t token) {
  char data[64], got[64];
  int len = sizeof data;
  int64_t t = 0;
  CU_ASSERT_EQUAL(zoo_get(zkt_observer(), path, 0, data, &len, NULL), ZOK);
  zkt_check(len == (int)strlen(id) && memcmp(data, id, (size_t)len) == 0,
            "the node's data is '%.*s', not '%s'", len > 0 ? len : 0, data, id);
  CU_ASSERT_EQUAL(zkl_name_get_leader(s, name, got, sizeof got, &t), ZKL_OK);
  zkt_check(strcmp(got, id) == 0, "zkl_name_get_leader: '%s', not '%s'", got, id);
  CU_ASSERT_EQUAL(t, token);
}

static void test_leader_keeps_id(void) {
  char name[64];
  zkl_session *asker = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_lock *first, *second;
  zkt_counter asked, asked2;
  zkt_rec granted, lost2;
  holder lead;
  break_call c;
  pthread_t th;
  report rep = {0};
  struct Stat st;
  zkt_name(name, sizeof name, "break-leader-id");
  zkt_counter_init(&asked);
  zkt_counter_init(&asked2);
  zkt_rec_init(&granted);
  zkt_rec_init(&lost2);
  {
    zkl_session *s = zkt_session(T_SESSION);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&first, s, name, "alpha"), ZKL_OK);
    zkl_lock_on_revoke(first, on_revoke_count, &asked);
    hold_with(&lead, first, s);
  }
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&second, ws, name, "beta"), ZKL_OK);
  zkl_lock_on_revoke(second, on_revoke_count, &asked2);
  zkl_lock_on_lost(second, zkt_on_lost, &lost2);
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(second, 0), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(second, -1, zkt_on_acquired, &granted), ZKL_OK);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  }
  /* a revoke: heard, and the id stays */
  CU_ASSERT_EQUAL(zkl_name_revoke(asker, name, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&asked, 1, ZKT_WAIT), 1);
  assert_leader_id(asker, name, lead.path, "alpha", lead.token);
  /* a break's grace: heard, the id stays; the leader lets go in it */
  memset(&c, 0, sizeof c);
  c.s = asker;
  c.name = name;
  CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, break_thread, &c), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&asked, 2, ZKT_WAIT), 2);
  assert_leader_id(ws, name, lead.path, "alpha", lead.token);
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), lead.path, 0, &st), ZOK);
  CU_ASSERT_EQUAL(st.version, 2); /* written twice, the same each time */
  CU_ASSERT_EQUAL(zkl_lock_release(first), ZKL_OK);
  pthread_join(th, NULL);
  CU_ASSERT_EQUAL(c.rc, ZKL_ENOTHELD); /* it let go */
  CU_ASSERT_EQUAL(zkt_counter_get(&lead.lost.calls), 0);
  /* the next leads; broken with no grace, it is told so */
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(ws, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_name_break(asker, name, NULL, 0, on_report, &rep), ZKL_OK);
  CU_ASSERT_EQUAL(rep.n, 1);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost2, 1, ZKT_WAIT), ZKL_LOST_BROKEN);
  /* With no grace the mark and the deletion come back to back: its revoke
   * callback runs if its read of the marked node came before the
   * deletion, and not if it came after (the node is gone: a change it
   * could not read, then the deletion, is a break all the same). A
   * valgrind run of the fresh-clone CI read it after. Either way it is
   * asked once at most, and told ZKL_LOST_BROKEN. */
  CU_ASSERT(zkt_counter_get(&asked2) <= 1);
  CU_ASSERT_EQUAL(zkl_lock_release(second), ZKL_ELOST);
  zkl_lock_free(second);
  close_holder(&lead, true);
  zkt_assert_quiet(ws);
  zkt_assert_quiet(asker);
  zkl_session_close(ws, NULL);
  zkl_session_close(asker, NULL);
  zkt_assert_no_contender(name);
}

/* A creator-only lock: refused with ZNOAUTH without its credentials,
 * nothing written; broken with them. */
static void test_acl(void) {
  char name[64], data[512];
  zkl_session *alice = zkt_session(T_SESSION), *alice2 = zkt_session(T_SESSION);
  zkl_session *nobody = zkt_session(T_SESSION);
  zkl_lock *l;
  holder h;
  report rep = {0};
  int len = sizeof data;
  zkt_name(name, sizeof name, "break-acl");
  CU_ASSERT_EQUAL(zkl_session_add_auth(alice, "digest", "alice:secret", 12),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_add_auth(alice2, "digest", "alice:secret", 12),
                  ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, alice, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_acl(l, ZKL_ACL_CREATOR), ZKL_OK);
  hold_with(&h, l, alice);

  CU_ASSERT_EQUAL(zkl_name_break(nobody, name, NULL, 0, on_report, &rep), ZNOAUTH);
  CU_ASSERT(reported(&rep, h.path, ZNOAUTH));
  CU_ASSERT_EQUAL(zoo_get(zkt_observer(), h.path, 0, data, &len, NULL), ZOK);
  CU_ASSERT(len > 0 && !zkl__is_break_mark(data, len)); /* not written */
  CU_ASSERT_EQUAL(zkl_lock_token(h.l), h.token);

  rep.n = 0;
  CU_ASSERT_EQUAL(zkl_name_break(alice2, name, NULL, 0, on_report, &rep), ZKL_OK);
  CU_ASSERT(reported(&rep, h.path, ZKL_OK));
  assert_broken(&h);
  close_holder(&h, true);
  zkt_assert_quiet(alice2);
  zkt_assert_quiet(nobody);
  zkl_session_close(alice2, NULL);
  zkl_session_close(nobody, NULL);
  zkt_assert_parent_empty(name);
}

/* From a callback, a blocking call is refused. */
static void on_acquired_break(zkl_lock *l, int rc, int64_t token, void *arg) {
  (void)rc;
  (void)token;
  zkt_on_acquired(
      l, zkl_name_break(zkl__lock_session(l), "x", NULL, 0, NULL, NULL), 0,
      arg);
}

static void test_bad_input(void) {
  char name[64], node[ZKL_PATH_MAX], prefix[ZKL_PREFIX_LEN + 1];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_rec rec;
  zkt_name(name, sizeof name, "break-bad");
  CU_ASSERT_EQUAL(zkl_name_break(NULL, name, NULL, 0, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_break(s, NULL, NULL, 0, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_break(s, "/zookeeper/abs", NULL, 0, NULL, NULL),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_break(s, "a//b", NULL, 0, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, NULL, -1, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, "", 0, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, "foo", 0, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, "../x", 0, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(
      zkl_name_break(s, name, "a/_c_x-lock-0000000001", 0, NULL, NULL),
      ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl__make_prefix(prefix), ZKL_OK);
  /* a lease node's name is looked for in the name's places: not there */
  snprintf(node, sizeof node, "_c_%.16s-lease-0000000001", prefix + 3);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, node, 0, NULL, NULL), ZKL_ENOTHELD);
  /* a contender's name that is not there: nothing to break */
  snprintf(node, sizeof node, "%s0000000001", prefix);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, node, 0, NULL, NULL), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, NULL, 0, NULL, NULL), ZKL_ENOTHELD);

  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(l, -1, on_acquired_break, &rec), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_EDEADLK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkl_name_break(NULL, name, NULL, 0, NULL, NULL), ZKL_EINVAL);
  zkt_assert_parent_empty(name);
}

/* A hold younger than its watch_after_ms has no watch on its own node yet:
 * a break with no grace deletes the node before the holder could see the
 * mark, and the holder learns of it when its watch is armed, as a node
 * deleted (the mark went with the node). Kept so on purpose (issue 24,
 * smaller d; the header, zkl_name_break()): learning it was a break would hold
 * the loss notice back by a round trip. */
static void test_break_young_hold(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION), *breaker = zkt_session(T_SESSION);
  zkl_lock *l;
  int64_t token = 0;
  char path[ZKL_PATH_MAX];
  zkt_rec lost;
  report rep = {0};
  zkt_name(name, sizeof name, "break-young");
  zkt_rec_init(&lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, &token), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_break(breaker, name, NULL, 0, on_report, &rep), ZKL_OK);
  CU_ASSERT(reported(&rep, path, ZKL_OK));
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_NODE_DELETED);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkl_session_close(breaker, NULL);
  zkt_assert_no_contender(name);
}

int main(void) {
  static const zkt_test tests[] = {
      {"grace 0: broken at once", test_break_at_once},
      {"a holder in kazoo's layout, listed and broken", test_kazoo_layout},
      {"a hold too young to watch its node", test_break_young_hold},
      {"a grace the holder uses to let go", test_grace_used_to_let_go},
      {"a break's mark told apart from a request", test_break_mark_told},
      {"the holder's next node is not hit", test_new_node_not_hit},
      {"a node at the same path is not hit", test_same_path_not_hit},
      {"a holder gone before the reads: the next is not hit",
       test_next_holder_not_hit},
      {"a multi-lock is asked as one, on any of its names", test_multilock},
      {"readers, leases and a leader", test_kinds},
      {"a downgraded reader under break and revoke", test_downgraded_reader},
      {"a leader's id survives a revoke and a break", test_leader_keeps_id},
      {"a creator-only lock", test_acl},
      {"break refuses bad nodes, finds absent ones not held, is EDEADLK in callbacks",
       test_bad_input},
      {NULL, NULL}};
  return zkt_main("break", tests);
}
