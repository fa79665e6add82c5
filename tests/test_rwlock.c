/* SPDX-License-Identifier: Apache-2.0 */
/* test_rwlock.c - read/write locks against a real ZooKeeper: readers share,
 * writers exclude, only contenders ahead count (kazoo #649), readers behind
 * a writer are each granted by their own watch, downgrade and the refused
 * upgrade, tokens, Curator's node names, bad input, nothing left behind. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zktest.h"

#define T_SESSION 10000

typedef struct {
  zkl_session *s;
  zkl_rwlock *rw;
} side;

static void side_open(side *x, const char *name) {
  x->s = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&x->rw, x->s, name), ZKL_OK);
}

static void side_close(side *x) {
  zkt_assert_quiet(x->s);
  zkl_rwlock_free(x->rw);
  zkl_session_close(x->s, NULL);
}

static zkl_lock *R(side *x) { return zkl_rwlock_read(x->rw); }
static zkl_lock *W(side *x) { return zkl_rwlock_write(x->rw); }

static void test_readers_share(void) {
  char name[64];
  side a, b, c;
  int64_t t1 = 0, t2 = 0;
  zkt_name(name, sizeof name, "rw-share");
  side_open(&a, name);
  side_open(&b, name);
  side_open(&c, name);
  CU_ASSERT_EQUAL(zkl_lock_acquire(R(&a), 0, &t1), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(R(&b), 0, &t2), ZKL_OK);
  CU_ASSERT(t1 > 0 && t2 > t1);
  /* a writer cannot join them */
  CU_ASSERT_EQUAL(zkl_lock_acquire(W(&c), 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_release(R(&a)), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(R(&b)), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(W(&c), 0, NULL), ZKL_OK);
  /* and readers cannot join a writer */
  CU_ASSERT_EQUAL(zkl_lock_acquire(R(&a), 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_release(W(&c)), ZKL_OK);
  side_close(&a);
  side_close(&b);
  side_close(&c);
  zkt_assert_parent_empty(name);
}

/* Curator's names, so Java readers and writers share the lock. */
static void test_node_names(void) {
  char name[64], path[512];
  side a;
  zkt_name(name, sizeof name, "rw-names");
  side_open(&a, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(R(&a), 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(R(&a), path, sizeof path), ZKL_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "/_c_"));
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "-__READ__"));
  CU_ASSERT_EQUAL(zkl_lock_release(R(&a)), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(W(&a), 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(W(&a), path, sizeof path), ZKL_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "-__WRIT__"));
  CU_ASSERT_EQUAL(zkl_lock_release(W(&a)), ZKL_OK);
  side_close(&a);
  zkt_assert_parent_empty(name);
}

/* kazoo #649: a reader queued behind a writer that waits for an earlier
 * reader must wait for that writer (not be granted because a reader holds),
 * and nobody waits for anyone behind them: reader R1 holds, writer W waits
 * for R1, reader R2 waits for W; R1 leaves: W; W leaves: R2. */
static void test_only_ahead_counts(void) {
  char name[64], parent[512];
  side r1, w, r2;
  zkt_rec wr, rr;
  zkt_name(name, sizeof name, "rw-649");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&wr);
  zkt_rec_init(&rr);
  side_open(&r1, name);
  side_open(&w, name);
  side_open(&r2, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(R(&r1), 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(W(&w), -1, zkt_on_acquired, &wr), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(R(&r2), -1, zkt_on_acquired, &rr), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 3, ZKT_WAIT), 3);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(r2.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&rr.calls), 0); /* waits for W */
  CU_ASSERT_EQUAL(zkt_counter_get(&wr.calls), 0); /* waits for R1 */
  CU_ASSERT_EQUAL(zkl_lock_release(R(&r1)), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&wr, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_get(&rr.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(W(&w)), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rr, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(rr.token > wr.token); /* a reader's token exceeds the writer's */
  CU_ASSERT_EQUAL(zkl_lock_release(R(&r2)), ZKL_OK);
  side_close(&r1);
  side_close(&w);
  side_close(&r2);
  zkt_assert_parent_empty(name);
}

/* Readers queued behind one writer are all granted when it leaves, each
 * by its own watch on that writer and with no listing more: no herd. */
#define N_READERS 4
static void test_readers_behind_writer(void) {
  char name[64], parent[512];
  side w, r[N_READERS];
  zkt_rec rec[N_READERS];
  zkl_debug_counts before[N_READERS], after;
  int i;
  zkt_name(name, sizeof name, "rw-herd");
  zkt_parent(parent, sizeof parent, name);
  side_open(&w, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(W(&w), 0, NULL), ZKL_OK);
  for (i = 0; i < N_READERS; i++) {
    zkt_rec_init(&rec[i]);
    side_open(&r[i], name);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(R(&r[i]), -1, zkt_on_acquired, &rec[i]),
        ZKL_OK);
  }
  CU_ASSERT_EQUAL(zkt_wait_children(parent, N_READERS + 1, ZKT_WAIT),
                  N_READERS + 1);
  for (i = 0; i < N_READERS; i++) {
    CU_ASSERT_EQUAL(zkl__debug_wait_settled(r[i].s, ZKT_WAIT), 0);
    zkl__debug_counts(r[i].s, &before[i]);
    CU_ASSERT_EQUAL(before[i].sent[ZKL_RQ_PRED_GET], 1); /* the writer */
  }
  CU_ASSERT_EQUAL(zkl_lock_release(W(&w)), ZKL_OK);
  for (i = 0; i < N_READERS; i++) {
    CU_ASSERT_EQUAL(zkt_rec_wait(&rec[i], 1, ZKT_WAIT), ZKL_OK);
    zkl__debug_counts(r[i].s, &after);
    CU_ASSERT_EQUAL(after.sent[ZKL_RQ_LIST], before[i].sent[ZKL_RQ_LIST]);
  }
  for (i = 0; i < N_READERS; i++) {
    CU_ASSERT_EQUAL(zkl_lock_release(R(&r[i])), ZKL_OK);
    side_close(&r[i]);
  }
  side_close(&w);
  zkt_assert_parent_empty(name);
}

/* A writer waits for its immediate predecessor, a reader too. */
static void test_writer_waits_for_readers(void) {
  char name[64], parent[512];
  side a, b;
  zkt_rec wr;
  zkt_name(name, sizeof name, "rw-writer-waits");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&wr);
  side_open(&a, name);
  side_open(&b, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(R(&a), 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(W(&b), -1, zkt_on_acquired, &wr), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(b.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&wr.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(R(&a)), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&wr, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(W(&b)), ZKL_OK);
  side_close(&a);
  side_close(&b);
  zkt_assert_parent_empty(name);
}

/* Downgrade: the write holder takes the read side at once, ahead of a
 * writer queued behind it; the refused upgrade does not wait for itself. */
static void test_downgrade_and_upgrade(void) {
  char name[64], parent[512];
  side a, b;
  zkt_rec wr;
  int64_t wt = 0, rt = 0;
  zkt_name(name, sizeof name, "rw-downgrade");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&wr);
  side_open(&a, name);
  side_open(&b, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(W(&a), 0, &wt), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(W(&b), -1, zkt_on_acquired, &wr), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_lock_acquire(R(&a), ZKT_WAIT, &rt), ZKL_OK);
  CU_ASSERT(rt > wt);
  CU_ASSERT_EQUAL(zkl_lock_release(W(&a)), ZKL_OK); /* still reading */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(b.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&wr.calls), 0);   /* b waits for it */
  /* The write node stays while the downgraded read holds: b queued behind
   * it (before a's read node) must keep waiting. */
  CU_ASSERT_EQUAL(zkt_children(parent), 3);
  /* Upgrade: refused, nothing sent. */
  CU_ASSERT_EQUAL(zkl_lock_acquire(W(&a), ZKT_WAIT, NULL), ZKL_EUPGRADE);
  CU_ASSERT_EQUAL(zkl_lock_acquire(W(&a), 0, NULL), ZKL_EUPGRADE);
  CU_ASSERT_EQUAL(zkt_children(parent), 3);
  CU_ASSERT_EQUAL(zkl_lock_release(R(&a)), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&wr, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(wr.token > wt); /* write tokens increase */
  CU_ASSERT_EQUAL(zkl_lock_release(W(&b)), ZKL_OK);
  side_close(&a);
  side_close(&b);
  zkt_assert_parent_empty(name);
}

/* Write tokens strictly increase from writer to writer. */
static void test_write_tokens(void) {
  char name[64];
  side a, b;
  int64_t t1 = 0, t2 = 0, t3 = 0;
  zkt_name(name, sizeof name, "rw-tokens");
  side_open(&a, name);
  side_open(&b, name);
  CU_ASSERT_EQUAL(zkl_lock_acquire(W(&a), 0, &t1), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(W(&a)), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(W(&b), 0, &t2), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(W(&b)), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(W(&a), 0, &t3), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(W(&a)), ZKL_OK);
  CU_ASSERT(t1 < t2 && t2 < t3);
  side_close(&a);
  side_close(&b);
  zkt_assert_parent_empty(name);
}

/* Timeouts and cancels of either side leave nothing behind. */
static void test_timeout_cancel(void) {
  char name[64], parent[512];
  side a, b;
  zkt_rec rr;
  zkt_name(name, sizeof name, "rw-timeout");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&rr);
  side_open(&a, name);
  side_open(&b, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(W(&a), 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(R(&b), 300, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkl_lock_acquire(W(&b), 300, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(R(&b), -1, zkt_on_acquired, &rr), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_lock_cancel(R(&b)), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rr, 1, ZKT_WAIT), ZKL_ECANCELED);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(W(&a)), ZKL_OK);
  side_close(&a);
  side_close(&b);
  zkt_assert_parent_empty(name);
}

/* Freeing a read/write lock that holds: its nodes go and the writer queued
 * behind is granted, whether the write side holds alone (the read side,
 * never used, goes first: the write side's release must not ask it
 * whether it holds once it is gone; ASan and valgrind saw that read) or
 * after a downgrade, with both nodes held. */
static void test_free_while_holding(void) {
  char name[64], parent[512];
  side a, b;
  zkt_rec wr;
  int round;
  zkt_name(name, sizeof name, "rw-free-held");
  zkt_parent(parent, sizeof parent, name);
  side_open(&b, name);
  for (round = 0; round < 2; round++) {
    zkt_rec_init(&wr);
    side_open(&a, name);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(W(&a), 0, NULL), ZKL_OK);
    if (round == 1) /* downgraded: both of a's nodes are held */
      CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(R(&a), ZKT_WAIT, NULL), ZKL_OK);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(W(&b), -1, zkt_on_acquired, &wr), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, round + 2, ZKT_WAIT),
                    round + 2);
    CU_ASSERT_EQUAL(zkl__debug_wait_settled(b.s, ZKT_WAIT), 0);
    CU_ASSERT_EQUAL(zkt_counter_get(&wr.calls), 0);
    zkl_rwlock_free(a.rw); /* holding */
    CU_ASSERT_EQUAL(zkt_rec_wait(&wr, 1, ZKT_WAIT), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 1, ZKT_WAIT), 1);
    CU_ASSERT_EQUAL(zkl_lock_release(W(&b)), ZKL_OK);
    zkt_assert_quiet(a.s);
    zkl_session_close(a.s, NULL);
  }
  side_close(&b);
  zkt_assert_parent_empty(name);
}

static void test_bad_input(void) {
  zkl_session *s = zkt_session(T_SESSION);
  zkl_rwlock *rw = NULL;
  char name[64];
  CU_ASSERT_EQUAL(zkl_rwlock_new(&rw, s, ""), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_rwlock_new(&rw, s, "a/__WRIT__0000000001"),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_rwlock_new(NULL, s, "x"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_rwlock_new(&rw, NULL, "x"), ZKL_EINVAL);
  CU_ASSERT_PTR_NULL(rw);
  CU_ASSERT_PTR_NULL(zkl_rwlock_read(NULL));
  zkl_rwlock_free(NULL);
  /* a side handed to zkl_lock_free is left alone */
  zkt_name(name, sizeof name, "rw-bad");
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw, s, name), ZKL_OK);
  zkl_lock_free(zkl_rwlock_read(rw));
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_read(rw), 0, NULL), ZKL_OK);
  zkl_rwlock_free(rw); /* releases it */
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

int main(void) {
  static const zkt_test tests[] = {
      {"readers share, writers exclude", test_readers_share},
      {"read and write nodes carry Curator's names, so Java contenders share the lock", test_node_names},
      {"only contenders ahead count (kazoo #649)", test_only_ahead_counts},
      {"readers behind a writer, no herd", test_readers_behind_writer},
      {"a writer waits for readers ahead", test_writer_waits_for_readers},
      {"downgrade, and the refused upgrade", test_downgrade_and_upgrade},
      {"write tokens increase", test_write_tokens},
      {"timeouts and cancels leave nothing", test_timeout_cancel},
      {"freed while holding, downgraded or not", test_free_while_holding},
      {"bad names are refused; a side given to zkl_lock_free is left alone",
       test_bad_input},
      {NULL, NULL}};
  return zkt_main("rwlock", tests);
}
