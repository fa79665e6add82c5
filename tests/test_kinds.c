/* SPDX-License-Identifier: Apache-2.0 */
/* test_kinds.c - one name, one lock: every pair of kinds on one name
 * against a real ZooKeeper (the 25 ordered pairs of mutex, read, write,
 * semaphore of one lease and election; one holds, the other tries), a
 * waiter of each compatible kind granted when the holder leaves, two kinds
 * arriving at once on a free name, a semaphore's leftover places, and the
 * names that are a semaphore's places. Nothing left behind. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zktest.h"

#define T_SESSION 10000

enum { MUTEX, READ, WRITE, SEM, ELECT, KINDS };
static const char *const kind_names[KINDS] = {"mutex", "read", "write",
                                              "semaphore", "election"};
/* what zkl_lock_other_kind() says of a holder of each kind */
static const char *const other_kind[KINDS] = {
    "mutex", "read lock", "write lock", "semaphore", "election"};
static int family(int k) { return k <= WRITE ? 0 : k; }

typedef struct contender {
  int kind;
  zkl_session *s;
  zkl_rwlock *rw;
  zkl_lock *l;
} contender;

static void contender_open(contender *c, int kind, const char *name) {
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->s = zkt_session(T_SESSION);
  switch (kind) {
  case MUTEX:
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&c->l, c->s, name), ZKL_OK);
    break;
  case READ:
  case WRITE:
    CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&c->rw, c->s, name), ZKL_OK);
    c->l = kind == READ ? zkl_rwlock_read(c->rw) : zkl_rwlock_write(c->rw);
    break;
  case SEM:
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&c->l, c->s, name, 1), ZKL_OK);
    break;
  default:
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&c->l, c->s, name, "candidate"),
                          ZKL_OK);
    break;
  }
}

static void contender_close(contender *c) {
  zkt_assert_quiet(c->s);
  if (c->rw)
    zkl_rwlock_free(c->rw);
  else
    zkl_lock_free(c->l);
  zkl_session_close(c->s, NULL);
}

/* What the second gets when the first holds: the outcome table. */
static int expected(int first, int second) {
  if (family(first) != family(second))
    return ZKL_EKIND;
  if (first == READ && second == READ)
    return ZKL_OK;
  return ZKL_EBUSY;
}

static void one_pair(int first, int second, int timeout_ms) {
  char name[64];
  contender a, b;
  int want = expected(first, second), rc;
  int64_t ta = 0, tb = 0;
  zkt_name(name, sizeof name, "kinds");
  contender_open(&a, first, name);
  contender_open(&b, second, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a.l, 5000, &ta), ZKL_OK);
  rc = zkl_lock_acquire(b.l, want == ZKL_EBUSY ? 0 : timeout_ms, &tb);
  zkt_check(rc == want, "%s holds, %s tries: %s (want %s)", kind_names[first],
            kind_names[second], zkl_strerror(rc), zkl_strerror(want));
  if (want == ZKL_EKIND) {
    const char *k = zkl_lock_other_kind(b.l);
    zkt_check(k && strcmp(k, other_kind[first]) == 0,
              "%s holds, %s refused: other kind %s", kind_names[first],
              kind_names[second], k ? k : "(none)");
    CU_ASSERT_EQUAL(tb, 0);
  }
  /* the holder still holds, whatever the other got */
  CU_ASSERT(zkl_lock_token(a.l) == ta && ta > 0);
  if (rc == ZKL_OK) {
    CU_ASSERT(tb > ta);
    CU_ASSERT_EQUAL(zkl_lock_release(b.l), ZKL_OK);
  }
  CU_ASSERT_EQUAL(zkl_lock_release(a.l), ZKL_OK);
  contender_close(&a);
  contender_close(&b);
  zkt_assert_no_contender(name);
}

/* The 25 ordered pairs, the second trying once (a refusal of another
 * family is no "busy": it says so even to a try-once). */
static void test_pairs_try_once(void) {
  int first, second;
  for (first = 0; first < KINDS; first++)
    for (second = 0; second < KINDS; second++)
      one_pair(first, second, 0);
}

/* A refusal does not wait: a contender of another family is refused at
 * once even with a long timeout, and its node is gone. */
static void test_refused_without_waiting(void) {
  static const int pairs[][2] = {{MUTEX, ELECT}, {ELECT, WRITE}, {READ, SEM},
                                 {SEM, READ},    {SEM, ELECT},   {ELECT, SEM}};
  size_t i;
  for (i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    int64_t t0 = zkt_now_ms();
    one_pair(pairs[i][0], pairs[i][1], 60000);
    zkt_check(zkt_now_ms() - t0 < 30000, "%s then %s: waited for a refusal",
              kind_names[pairs[i][0]], kind_names[pairs[i][1]]);
  }
}

/* A waiter of the lock family is granted when a holder of another kind of
 * that family leaves, and not before. */
static void test_waiters_across_lock_kinds(void) {
  static const int pairs[][2] = {{MUTEX, WRITE}, {WRITE, MUTEX}, {MUTEX, READ},
                                 {READ, MUTEX},  {WRITE, READ},  {READ, WRITE}};
  size_t i;
  for (i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    char name[64];
    contender a, b;
    zkt_rec got;
    int64_t ta = 0;
    zkt_name(name, sizeof name, "kinds-wait");
    contender_open(&a, pairs[i][0], name);
    contender_open(&b, pairs[i][1], name);
    zkt_rec_init(&got);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a.l, 5000, &ta), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire_async(b.l, 20000, zkt_on_acquired, &got),
                    ZKL_OK);
    /* b is queued (two nodes), and not granted while a holds */
    {
      char parent[512];
      zkt_parent(parent, sizeof parent, name);
      CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
    }
    CU_ASSERT_EQUAL(zkt_counter_get(&got.calls), 0);
    CU_ASSERT_EQUAL(zkl_lock_release(a.l), ZKL_OK);
    zkt_check(zkt_rec_wait(&got, 1, ZKT_WAIT) == ZKL_OK,
              "%s waiting behind %s: not granted when it left",
              kind_names[pairs[i][1]], kind_names[pairs[i][0]]);
    CU_ASSERT(got.token > ta);
    CU_ASSERT_EQUAL(zkl_lock_release(b.l), ZKL_OK);
    contender_close(&a);
    contender_close(&b);
    zkt_assert_no_contender(name);
  }
}

/* Two families arriving at once on a free name, many times: never both
 * granted; in one queue exactly one is. */
static void test_arriving_at_once(void) {
  static const int pairs[][2] = {
      {MUTEX, ELECT}, {READ, ELECT}, {WRITE, SEM}, {SEM, ELECT}, {MUTEX, SEM}};
  size_t i;
  int round;
  for (i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    int granted_one = 0;
    for (round = 0; round < 8; round++) {
      char name[64];
      contender a, b;
      zkt_rec ra, rb;
      int both;
      zkt_name(name, sizeof name, "kinds-race");
      contender_open(&a, pairs[i][0], name);
      contender_open(&b, pairs[i][1], name);
      zkt_rec_init(&ra);
      zkt_rec_init(&rb);
      CU_ASSERT_EQUAL(zkl_lock_acquire_async(a.l, 5000, zkt_on_acquired, &ra),
                      ZKL_OK);
      CU_ASSERT_EQUAL(zkl_lock_acquire_async(b.l, 5000, zkt_on_acquired, &rb),
                      ZKL_OK);
      zkt_rec_wait(&ra, 1, ZKT_WAIT);
      zkt_rec_wait(&rb, 1, ZKT_WAIT);
      both = (ra.rc == ZKL_OK) + (rb.rc == ZKL_OK);
      zkt_check(both <= 1, "%s and %s at once: both granted",
                kind_names[pairs[i][0]], kind_names[pairs[i][1]]);
      /* whoever was not granted was refused for the kind, not timed out */
      zkt_check((ra.rc == ZKL_OK || ra.rc == ZKL_EKIND) &&
                    (rb.rc == ZKL_OK || rb.rc == ZKL_EKIND),
                "%s and %s at once: %s, %s", kind_names[pairs[i][0]],
                kind_names[pairs[i][1]], zkl_strerror(ra.rc),
                zkl_strerror(rb.rc));
      if (family(pairs[i][0]) != SEM && family(pairs[i][1]) != SEM)
        zkt_check(both == 1, "%s and %s in one queue: %d granted",
                  kind_names[pairs[i][0]], kind_names[pairs[i][1]], both);
      granted_one += both == 1;
      if (ra.rc == ZKL_OK)
        CU_ASSERT_EQUAL(zkl_lock_release(a.l), ZKL_OK);
      if (rb.rc == ZKL_OK)
        CU_ASSERT_EQUAL(zkl_lock_release(b.l), ZKL_OK);
      contender_close(&a);
      contender_close(&b);
      zkt_assert_no_contender(name);
    }
    (void)granted_one;
  }
}

/* A semaphore used and left: its places stay until the server reaps them,
 * and a mutex, a read/write lock or an election on the name looks in them,
 * finds nobody and is granted. */
static void test_leftover_semaphore_places(void) {
  int k;
  for (k = 0; k < KINDS; k++) {
    char name[64], parent[512];
    contender sem, c;
    int64_t t = 0;
    zkl_debug_counts c0, c1;
    if (k == SEM)
      continue;
    zkt_name(name, sizeof name, "kinds-left");
    contender_open(&sem, SEM, name);
    /* through the gate, which leaves both places (a first try that is
     * granted leaves leases/ alone) */
    __atomic_store_n(&zkl__test_no_first_try, 1, __ATOMIC_RELAXED);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(sem.l, 5000, NULL), ZKL_OK);
    __atomic_store_n(&zkl__test_no_first_try, 0, __ATOMIC_RELAXED);
    CU_ASSERT_EQUAL(zkl_lock_release(sem.l), ZKL_OK);
    contender_close(&sem);
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_children(parent), 2); /* locks, leases */
    contender_open(&c, k, name);
    zkl__debug_counts(c.s, &c0);
    CU_ASSERT_EQUAL(zkl_lock_acquire(c.l, 5000, &t), ZKL_OK);
    zkl__debug_counts(c.s, &c1);
    /* it looked in both places */
    CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_KIND_CHECK] - c0.sent[ZKL_RQ_KIND_CHECK], 2);
    CU_ASSERT(t > 0);
    CU_ASSERT_EQUAL(zkl_lock_release(c.l), ZKL_OK);
    contender_close(&c);
    zkt_assert_no_contender(name);
  }
}

/* A name of one family sends nothing more than before: a mutex, once its
 * listing shows no semaphore's place, looks nowhere else. */
static void test_no_check_on_plain_names(void) {
  char name[64];
  contender c;
  zkl_debug_counts c0, c1;
  zkt_name(name, sizeof name, "kinds-plain");
  contender_open(&c, MUTEX, name);
  zkl__debug_counts(c.s, &c0);
  CU_ASSERT_EQUAL(zkl_lock_acquire(c.l, 5000, NULL), ZKL_OK);
  zkl__debug_counts(c.s, &c1);
  CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_KIND_CHECK], c0.sent[ZKL_RQ_KIND_CHECK]);
  CU_ASSERT_EQUAL(zkl_lock_release(c.l), ZKL_OK);
  contender_close(&c);
  zkt_assert_parent_empty(name);
}

/* A semaphore looks at the name itself once per acquire: its first try
 * (and a try-once), which skips the gate, looks itself; through the gate,
 * the gate's attempt does, with its first create, and the lease behind the
 * gate needs no second look. */
static void test_semaphore_checks_once(void) {
  char name[64];
  contender c, d;
  zkl_debug_counts c0, c1;
  int i;
  zkt_name(name, sizeof name, "kinds-sem-once");
  contender_open(&c, SEM, name);
  contender_open(&d, SEM, name);
  /* the name's first use creates its places and sends everything again */
  CU_ASSERT_EQUAL(zkl_lock_acquire(c.l, 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(c.l), ZKL_OK);
  for (i = 0; i < 2; i++) {
    zkl__debug_counts(c.s, &c0);
    CU_ASSERT_EQUAL(zkl_lock_acquire(c.l, i ? 0 : 5000, NULL), ZKL_OK);
    zkl__debug_counts(c.s, &c1);
    CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_KIND_CHECK] - c0.sent[ZKL_RQ_KIND_CHECK], 1);
    CU_ASSERT_EQUAL(zkl_lock_release(c.l), ZKL_OK);
  }
  /* through the gate: one look too (after the gate's first use, which
   * makes its place and sends everything again) */
  __atomic_store_n(&zkl__test_no_first_try, 1, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL(zkl_lock_acquire(c.l, 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(c.l), ZKL_OK);
  zkl__debug_counts(c.s, &c0);
  CU_ASSERT_EQUAL(zkl_lock_acquire(c.l, 5000, NULL), ZKL_OK);
  zkl__debug_counts(c.s, &c1);
  __atomic_store_n(&zkl__test_no_first_try, 0, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_KIND_CHECK] - c0.sent[ZKL_RQ_KIND_CHECK], 1);
  CU_ASSERT_EQUAL(zkl_lock_release(c.l), ZKL_OK);
  /* and the check still refuses through the gate */
  {
    contender m;
    contender_open(&m, MUTEX, name);
    CU_ASSERT_EQUAL(zkl_lock_acquire(m.l, 5000, NULL), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire(d.l, 5000, NULL), ZKL_EKIND);
    CU_ASSERT_EQUAL(zkl_lock_release(m.l), ZKL_OK);
    contender_close(&m);
  }
  contender_close(&c);
  contender_close(&d);
  zkt_assert_no_contender(name);
}

/* A semaphore's gate and leases are no lock names of their own. */
static void test_semaphore_places_are_no_names(void) {
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l = NULL;
  char why[256];
  CU_ASSERT_EQUAL(zkl_lock_new(&l, s, "orders/locks"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new(&l, s, "orders/leases"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_semaphore(&l, s, "a/leases/b", 2), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_explain("a/locks", why, sizeof why), ZKL_EINVAL);
  CU_ASSERT(strstr(why, "semaphore") != NULL);
  /* the first segment is a name of its own: /locks/locks is no place */
  CU_ASSERT_EQUAL(zkl_name_check("locks"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_check("leases/x"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_check("a/lockss"), ZKL_OK);
  zkl_session_close(s, NULL);
}

int main(void) {
  static const zkt_test tests[] = {
      {"the 25 pairs of kinds, trying once", test_pairs_try_once},
      {"another family is refused without waiting",
       test_refused_without_waiting},
      {"waiters across the lock family", test_waiters_across_lock_kinds},
      {"two families arriving at once", test_arriving_at_once},
      {"a semaphore's leftover places", test_leftover_semaphore_places},
      {"no check on a name of one family", test_no_check_on_plain_names},
      {"a semaphore looks at its name once", test_semaphore_checks_once},
      {"a semaphore's places are no names", test_semaphore_places_are_no_names},
      {NULL, NULL}};
  return zkt_main("kinds", tests);
}
