/* SPDX-License-Identifier: Apache-2.0 */
/* test_names.c - unit tests of the pure logic: lock names, node names,
 * sequence numbers and queue order. No server. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "zktest.h"

static void test_valid_names(void) {
  static const char *ok[] = {"a", "db", "app/db", "a/b/c", "x.y", "..a",
                             "a..", ".a", "a b", "caf\xc3\xa9",
                             "\xe2\x82\xac",
                             /* not a node as the server names them */
                             "lock-1", "nest/lock-0", "a/lock-00000000001",
                             "a/lock-+000000001", "a/lock-000000000x",
                             "a/lock-0000000001.bak",
                             /* full paths: their own znodes */
                             "/a", "/app/jobs/nightly", "/locks/a",
                             "/zookeeperx", "/locksmith", "/locks/x/y",
                             NULL};
  const char **p;
  char max[ZKL_NAME_MAX + 1];
  for (p = ok; *p; p++)
    CU_ASSERT_EQUAL(zkl__validate_name(*p), ZKL_OK);
  memset(max, 'n', ZKL_NAME_MAX);
  max[ZKL_NAME_MAX] = '\0';
  CU_ASSERT_EQUAL(zkl__validate_name(max), ZKL_OK);
}

static void test_invalid_names(void) {
  static const char *bad[] = {
      "", "/", "//a", "/a/", "/zookeeper", "/zookeeper/quota", "/locks",
      "/a/locks", "/lock-0000000001", "a/", "a//b", ".", "..", "a/./b", "a/../b", "a/.",
      "a/..", "../a", "a\tb", "a\nb", "\x01", "a\x7f", "\xc2\x80", /* C1 */
      "\xc3", "\xc3\x28", "\xe2\x82", "\xc0\xaf", /* overlong '/' */
      "\xed\xa0\x80",                           /* surrogate */
      "\xee\x80\x80",                           /* private use */
      "\xef\xbf\xbf",                           /* U+FFFF */
      "\xf0\x9f\x98\x80",                       /* beyond the BMP */
      "\xff",
      /* a segment that would pass for a contender's node under the parent
       * of the lock the segments before it name */
      "lock-0000000001", "nest/lock-0000000000", "a/_c_x-lock--000000005",
      "a/b/c__lock__2147483647", "a/x__rlock__0000000003",
      "a/x__READ__0000000009", "a/x__WRIT__0000000009", "a/lease-0000000002/b",
      "a/latch--2147483648", NULL};
  const char **p;
  char over[ZKL_NAME_MAX + 2];
  for (p = bad; *p; p++) {
    int rc = zkl__validate_name(*p);
    if (rc != ZKL_EINVAL)
      fprintf(stderr, "accepted bad name index %d\n", (int)(p - bad));
    CU_ASSERT_EQUAL(rc, ZKL_EINVAL);
  }
  CU_ASSERT_EQUAL(zkl__validate_name(NULL), ZKL_EINVAL);
  memset(over, 'n', ZKL_NAME_MAX + 1);
  over[ZKL_NAME_MAX + 1] = '\0';
  CU_ASSERT_EQUAL(zkl__validate_name(over), ZKL_EINVAL);
}

static void test_prefix(void) {
  char a[ZKL_PREFIX_LEN + 1], b[ZKL_PREFIX_LEN + 1];
  CU_ASSERT_EQUAL(zkl__make_prefix(a), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__make_prefix(b), ZKL_OK);
  CU_ASSERT_EQUAL(strlen(a), ZKL_PREFIX_LEN);
  CU_ASSERT_NSTRING_EQUAL(a, "_c_", 3);
  /* an id of 16 hex digits, no dash in it; then the marker */
  CU_ASSERT_EQUAL(strspn(a + 3, "0123456789abcdef"), 16);
  CU_ASSERT_STRING_EQUAL(a + 19, "-lock-");
  CU_ASSERT_STRING_NOT_EQUAL(a, b);
}

static void test_parse_seq(void) {
  int32_t v = 0;
  CU_ASSERT(zkl__parse_seq("_c_x-lock-0000000012", &v) && v == 12);
  CU_ASSERT(zkl__parse_seq("lock-2147483647", &v) && v == INT32_MAX);
  CU_ASSERT(zkl__parse_seq("_c_x-lock--2147483648", &v) && v == INT32_MIN);
  CU_ASSERT(zkl__parse_seq("_c_x-lock--000000005", &v) && v == -5);
  CU_ASSERT(zkl__parse_seq("_c_x-lock--099999999", &v) && v == -99999999);
  CU_ASSERT(zkl__parse_seq("_c_x-lock--1000000000", &v) &&
            v == -1000000000);
  /* kazoo's form */
  CU_ASSERT(zkl__parse_seq("abc__lock__0000000007", &v) && v == 7);
  /* the last marker counts */
  CU_ASSERT(zkl__parse_seq("lock-lock-0000000003", &v) && v == 3);
  CU_ASSERT(!zkl__parse_seq("readme", &v));
  CU_ASSERT(!zkl__parse_seq("_c_x-lock-", &v));
  CU_ASSERT(!zkl__parse_seq("_c_x-lock-12a", &v));
  CU_ASSERT(!zkl__parse_seq("_c_x-lock-2147483648", &v));
  CU_ASSERT(!zkl__parse_seq("_c_x-lock-00000000001", &v)); /* 11 digits */
  CU_ASSERT(!zkl__parse_seq("_c_x-lock--", &v));
  /* Only the server's exact form: ten characters, or eleven with a minus
   * (a container "lock-0" once passed for a contender). */
  CU_ASSERT(!zkl__parse_seq("lock-0", &v));
  CU_ASSERT(!zkl__parse_seq("_c_x-lock-12", &v));
  CU_ASSERT(!zkl__parse_seq("_c_x-lock-+000000012", &v));
  CU_ASSERT(!zkl__parse_seq("_c_x-lock--00000000005", &v));
  CU_ASSERT(!zkl__parse_seq("_c_x-lock--5", &v));
}

/* Builds the mutex queue of names as contender own (NULL: none). */
static zkl_queue queue_of(char **names, int n, const char *own,
                          const char *prefix) {
  zkl_queue q;
  zkl_nodes nodes = {ZKL_PLACE_NAME, ZKL_FAMILIES_ALL};
  CU_ASSERT_EQUAL_FATAL(zkl__queue_build(names, n, &nodes, own, prefix, &q),
                        ZKL_OK);
  return q;
}

/* The name of the entry the mutex rule waits for, or NULL on a grant. */
static const char *mutex_waits_for(const zkl_queue *q) {
  zkl_verdict v;
  zkl__recipe_mutex.decide_locked(q, NULL, &v);
  if (v.kind == ZKL_GRANT)
    return NULL;
  CU_ASSERT_EQUAL(v.kind, ZKL_WAIT_NODE);
  return q->entries[v.node].name;
}

/* The same, for a string comparison: a grant where a wait was due fails
 * the comparison instead of crashing it (strcmp of NULL). */
static const char *waits_for_name(const zkl_queue *q) {
  const char *name = mutex_waits_for(q);
  return name ? name : "(granted: waits for nobody)";
}

static void test_standing_basic(void) {
  char *names[] = {"_c_b-lock-0000000003", "other", "_c_a-lock-0000000001",
                   "_c_me-lock-0000000004", "_c_c-lock-0000000010",
                   "_c_d-lock-0000000002"};
  zkl_queue q = queue_of(names, 6, "_c_me-lock-0000000004", "_c_me-lock-");
  CU_ASSERT_EQUAL(q.count, 5); /* "other" is not a lock node */
  CU_ASSERT_EQUAL(q.own, 3);   /* three before it */
  CU_ASSERT_STRING_EQUAL(waits_for_name(&q), names[0]); /* 3 comes last */
  CU_ASSERT_EQUAL(q.n_duplicates, 0);
  zkl__queue_free(&q);

  q = queue_of(names, 6, "_c_a-lock-0000000001", "_c_a-lock-");
  CU_ASSERT_EQUAL(q.own, 0);
  CU_ASSERT_PTR_NULL(mutex_waits_for(&q)); /* granted */
  zkl__queue_free(&q);

  q = queue_of(names, 6, "_c_zz-lock-0000000005", "_c_zz-lock-");
  CU_ASSERT_EQUAL(q.own, -1);
  zkl__queue_free(&q);
}

static void test_standing_numeric_not_string(void) {
  /* "lock-0000000010" sorts before "lock-0000000009" by prefix string, not
   * by number, when the uuids differ: order must be numeric. */
  char *names[] = {"_c_zzz-lock-0000000009", "_c_aaa-lock-0000000010"};
  zkl_queue q = queue_of(names, 2, "_c_aaa-lock-0000000010", "_c_aaa-lock-");
  CU_ASSERT_EQUAL(q.own, 1);
  CU_ASSERT_STRING_EQUAL(waits_for_name(&q), names[0]);
  zkl__queue_free(&q);
}

static void test_standing_wrap(void) {
  /* The parent's cversion wrapped: -2147483648 came after 2147483647. */
  char *names[] = {"_c_a-lock-2147483646", "_c_b-lock-2147483647",
                   "_c_c-lock--2147483648", "_c_d-lock--2147483647"};
  zkl_queue q = queue_of(names, 4, "_c_c-lock--2147483648", "_c_c-lock-");
  CU_ASSERT_EQUAL(q.own, 2);
  CU_ASSERT_STRING_EQUAL(waits_for_name(&q), names[1]);
  zkl__queue_free(&q);
  q = queue_of(names, 4, "_c_a-lock-2147483646", "_c_a-lock-");
  CU_ASSERT_EQUAL(q.own, 0);
  zkl__queue_free(&q);
}

static void test_standing_duplicates(void) {
  char *names[] = {"_c_me-lock-0000000004", "_c_x-lock-0000000001",
                   "_c_me-lock-0000000006"};
  zkl_queue q = queue_of(names, 3, "_c_me-lock-0000000004", "_c_me-lock-");
  CU_ASSERT_EQUAL(q.n_duplicates, 1);
  CU_ASSERT_EQUAL(q.duplicates[0], 2);
  CU_ASSERT_EQUAL(q.count, 2); /* duplicates do not queue */
  CU_ASSERT_EQUAL(q.own, 1);
  zkl__queue_free(&q);
}

static void test_queue_order(void) {
  char *names[] = {"_c_c-lock-0000000012", "junk", "_c_a-lock-0000000002",
                   "x__lock__0000000007"};
  zkl_queue q = queue_of(names, 4, NULL, NULL);
  CU_ASSERT_EQUAL(q.count, 3);
  CU_ASSERT_STRING_EQUAL(q.entries[0].name, "_c_a-lock-0000000002");
  CU_ASSERT_STRING_EQUAL(q.entries[1].name, "x__lock__0000000007");
  CU_ASSERT_EQUAL(q.entries[1].kind, 1); /* kazoo's marker */
  CU_ASSERT_STRING_EQUAL(q.entries[2].name, "_c_c-lock-0000000012");
  CU_ASSERT_EQUAL(q.own, -1);
  zkl__queue_free(&q);
}

/* Who holds a queue of one place, by the registry's rule. */
static void holders_of(char **names, int n, zkl_place place,
                       const zkl_node_facts *facts, int64_t gate_session,
                       bool *holds) {
  zkl_queue q;
  zkl_nodes nodes = {place, ZKL_FAMILIES_ALL};
  CU_ASSERT_EQUAL_FATAL(zkl__queue_build(names, n, &nodes, NULL, NULL, &q),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(q.count, n); /* names given in queue order */
  zkl__kinds_holders(&q, facts, gate_session, holds);
  zkl__queue_free(&q);
}

static void test_holders(void) {
  bool h[5];
  zkl_node_facts none[5] = {{0, 0}};
  /* readers share until the first node that is no reader: a writer, a
   * mutex (Curator's or kazoo's), whatever reads after it waits */
  char *rw[] = {"_c_a-__READ__0000000001", "k__rlock__0000000002",
                "_c_b-__WRIT__0000000003", "_c_c-__READ__0000000004"};
  char *mx[] = {"_c_a-lock-0000000001", "_c_b-__READ__0000000002",
                "k__lock__0000000003"};
  char *latch[] = {"_c_a-latch-0000000001", "_c_b-latch-0000000002"};
  char *gate[] = {"_c_a-lock-0000000001", "_c_b-lock-0000000002"};
  char *leases[] = {"_c_a-lease-0000000001", "_c_b-lease-0000000002",
                    "_c_c-lease-0000000003", "_c_d-lease-0000000004",
                    "_c_e-lease-0000000005"};
  zkl_node_facts lf[5] = {{4, 11}, {4, 12}, {0, 13}, {2, 14}, {0, 15}};
  holders_of(rw, 4, ZKL_PLACE_NAME, none, 0, h);
  CU_ASSERT(h[0] && h[1] && !h[2] && !h[3]);
  holders_of(mx, 3, ZKL_PLACE_NAME, none, 0, h);
  CU_ASSERT(h[0] && !h[1] && !h[2]);
  holders_of(latch, 2, ZKL_PLACE_NAME, none, 0, h);
  CU_ASSERT(h[0] && !h[1]);
  holders_of(gate, 2, ZKL_PLACE_GATE, none, 0, h);
  CU_ASSERT(!h[0] && !h[1]);
  /* leases: each by its own limit (4: held with 0 and 1 ahead; 2: not,
   * with 3 ahead); with none known, held unless its session holds the
   * gate's first node */
  holders_of(leases, 5, ZKL_PLACE_LEASES, lf, 15, h);
  CU_ASSERT(h[0] && h[1] && h[2] && !h[3] && !h[4]);
  holders_of(leases, 5, ZKL_PLACE_LEASES, lf, 0, h);
  CU_ASSERT(h[0] && h[1] && h[2] && !h[3] && h[4]);
}

/* A downgrade's read node names the write node it rides on (kinds.h): it
 * holds while that node holds, whoever stands between them; a tag that
 * names no node ahead, or one that does not hold, is no reason to hold. */
static void test_riders(void) {
  bool h[5];
  zkl_node_facts none[5] = {{0, 0}};
  char tag[ZKL_TAG_MAX];
  char *down[] = {
      "_c_00112233445566aa-__WRIT__0000000001",
      "_c_77112233445566bb-__WRIT__0000000002",
      "_c_99112233445566cc-with-00112233445566aa-__READ__0000000003",
      "_c_88112233445566dd-__READ__0000000004",
      "_c_66112233445566ee-with-77112233445566bb-__READ__0000000005"};
  char *gone[] = {
      "_c_77112233445566bb-__WRIT__0000000002",
      "_c_99112233445566cc-with-00112233445566aa-__READ__0000000003"};
  CU_ASSERT_EQUAL(zkl__rider_tag(down[0], tag, sizeof tag), 22);
  CU_ASSERT_STRING_EQUAL(tag, "with-00112233445566aa-");
  CU_ASSERT_EQUAL(zkl__rider_tag("x__lock__0000000001", tag, sizeof tag), 0);
  CU_ASSERT_EQUAL(zkl__rider_tag("_c_0011-__WRIT__0000000001", tag, sizeof tag),
                  0);
  CU_ASSERT(zkl__rides_on(down[2], down[0]));
  CU_ASSERT(!zkl__rides_on(down[2], down[1]));
  CU_ASSERT(!zkl__rides_on(down[3], down[0]));
  /* the first writer holds, and the reader riding on it; the writer
   * between waits, and so do the readers behind it, a rider on a writer
   * that does not hold included */
  holders_of(down, 5, ZKL_PLACE_NAME, none, 0, h);
  CU_ASSERT(h[0] && !h[1] && h[2] && !h[3] && !h[4]);
  /* the node it names is gone: it holds only by the plain rule */
  holders_of(gone, 2, ZKL_PLACE_NAME, none, 0, h);
  CU_ASSERT(h[0] && !h[1]);
  /* the read node's name is still a read node's, of every recipe's
   * parsing */
  {
    int32_t seq;
    zkl_nodes name = {ZKL_PLACE_NAME, ZKL_FAMILIES_ALL};
    CU_ASSERT_EQUAL(zkl__node_kind_of(down[2], &name, &seq), ZKL_NODE_READ);
    CU_ASSERT_EQUAL(seq, 3);
  }
}

/* A lease node's limit, read back beside the owner description through
 * the lease's registry entry (its data_key); Curator's lease nodes carry no
 * data at all; the name's limit comes first; no other kind reads the key. */
static void test_owner_limit(void) {
  static const char data[] = "host=db1\npid=42\nstart=7\ninfo=x\nlimit=3\n";
  zkl_owner o;
  zkl_node_facts f = {0};
#define LEASE_LIMIT(d, n)                                                      \
  (memset(&f, 0, sizeof f), zkl__parse_owner(d, n, ZKL_NODE_LEASE, &o, &f),  \
   f.limit)
  CU_ASSERT_EQUAL(LEASE_LIMIT(data, (int)strlen(data)), 3);
  CU_ASSERT_STRING_EQUAL(o.host, "db1");
  CU_ASSERT_EQUAL(o.pid, 42);
  CU_ASSERT_STRING_EQUAL(o.info, "x");
  CU_ASSERT_EQUAL(LEASE_LIMIT("", 0), 0);
  CU_ASSERT_EQUAL(LEASE_LIMIT(NULL, -1), 0);
  CU_ASSERT_EQUAL(LEASE_LIMIT("limit=-2\n", 9), 0);
  CU_ASSERT_EQUAL(LEASE_LIMIT("__REVOKE__", 10), 0);
#undef LEASE_LIMIT
  /* the name says it first */
  f.limit = 0;
  zkl__node_kinds[ZKL_NODE_LEASE].name_fact(
      "_c_00112233445566aa-limit5-lease-0000000001", &f);
  CU_ASSERT_EQUAL(f.limit, 5);
  zkl__parse_owner(data, (int)strlen(data), ZKL_NODE_LEASE, &o, &f);
  CU_ASSERT_EQUAL(f.limit, 5);
  /* another kind's node: the key is nothing to it */
  memset(&f, 0, sizeof f);
  zkl__parse_owner(data, (int)strlen(data), ZKL_NODE_MUTEX, &o, &f);
  CU_ASSERT_EQUAL(f.limit, 0);
  CU_ASSERT_EQUAL(o.pid, 42);
  zkl__parse_owner(data, (int)strlen(data), -1, &o, NULL);
  CU_ASSERT_STRING_EQUAL(o.host, "db1");
}

/* The place table: each place's directory, the list's order, and the
 * gate. */
static void test_places(void) {
  CU_ASSERT_PTR_NULL(zkl__place_dir(ZKL_PLACE_NAME));
  CU_ASSERT_STRING_EQUAL(zkl__place_dir(ZKL_PLACE_GATE), "locks");
  CU_ASSERT_STRING_EQUAL(zkl__place_dir(ZKL_PLACE_LEASES), "leases");
  CU_ASSERT_EQUAL(zkl__place_listed(0), ZKL_PLACE_NAME);
  CU_ASSERT_EQUAL(zkl__place_listed(1), ZKL_PLACE_LEASES);
  CU_ASSERT_EQUAL(zkl__place_listed(2), ZKL_PLACE_GATE);
  CU_ASSERT(zkl__places[ZKL_PLACE_GATE].is_gate);
  CU_ASSERT(!zkl__places[ZKL_PLACE_LEASES].is_gate);
  CU_ASSERT(!zkl__places[ZKL_PLACE_NAME].is_gate);
  /* the refusal of a name that is a place says which, from the table */
  {
    char why[256];
    CU_ASSERT_EQUAL(zkl_name_explain("db/locks", why, sizeof why),
                    ZKL_EINVAL);
    CU_ASSERT_STRING_EQUAL(why, "its segment 'locks' at byte 3 is a "
                                "semaphore's gate under the lock before it");
    CU_ASSERT_EQUAL(zkl_name_explain("db/leases", why, sizeof why),
                    ZKL_EINVAL);
    CU_ASSERT_STRING_EQUAL(why, "its segment 'leases' at byte 3 is a "
                                "semaphore's lease queue under the lock "
                                "before it");
  }
}

/* ------------------------------------------- the recipes against the registry
 *
 * Each recipe's grant is the registry's hold rule asked of its own node
 * (kinds.h): on many random queues (a fixed seed, so every run sees the
 * same ones), every contender's verdict is a grant exactly when
 * zkl__kinds_holders() says its node holds. */

static uint32_t rnd_state;
static uint32_t rnd(uint32_t n) { /* xorshift32: the same on every libc */
  rnd_state ^= rnd_state << 13;
  rnd_state ^= rnd_state >> 17;
  rnd_state ^= rnd_state << 5;
  return rnd_state % n;
}

#define RQ_MAX 8

/* A random queue of the name itself: names[0..n) in queue order, of every
 * kind there; some readers ride on a writer ahead (a downgrade's tag). */
static int random_name_queue(char names[RQ_MAX][96]) {
  static const int kinds[] = {ZKL_NODE_MUTEX, ZKL_NODE_KAZOO_LOCK,
                              ZKL_NODE_WRITE, ZKL_NODE_READ,
                              ZKL_NODE_KAZOO_READ, ZKL_NODE_LATCH};
  int n = 1 + (int)rnd(RQ_MAX), i, j;
  for (i = 0; i < n; i++) {
    int k = kinds[rnd(sizeof kinds / sizeof kinds[0])];
    const char *marker = zkl__node_kinds[k].marker;
    char tag[ZKL_TAG_MAX] = "";
    if (k == ZKL_NODE_KAZOO_LOCK || k == ZKL_NODE_KAZOO_READ) {
      snprintf(names[i], 96, "k%08x%s%010d", rnd(1u << 30), marker, i + 1);
      continue;
    }
    if (k == ZKL_NODE_READ && i > 0 && rnd(2)) {
      j = (int)rnd((uint32_t)i); /* a node ahead: a writer, or not */
      if (zkl__rider_tag(names[j], tag, sizeof tag) <= 0)
        tag[0] = '\0';
    }
    snprintf(names[i], 96, "_c_%08x%08x-%s%s%010d", rnd(1u << 30),
             rnd(1u << 30), tag, marker, i + 1);
  }
  return n;
}

static const zkl_recipe *recipe_of_kind(int kind) {
  switch (kind) {
  case ZKL_NODE_MUTEX:
  case ZKL_NODE_KAZOO_LOCK:
    return &zkl__recipe_mutex;
  case ZKL_NODE_WRITE:
    return &zkl__recipe_write;
  case ZKL_NODE_READ:
  case ZKL_NODE_KAZOO_READ:
    return &zkl__recipe_read;
  case ZKL_NODE_LATCH:
    return &zkl__recipe_latch;
  default:
    return &zkl__recipe_lease;
  }
}

/* Every node of names[0..n) (a queue of place) judged by its kind's
 * recipe as its own, against the registry; limits[i] the limit each
 * contender gives (a lease's). Returns how many verdicts were compared. */
static int compare_verdicts(char *const *names, int n, zkl_place place,
                            const zkl_node_facts *facts, const int *limits) {
  zkl_nodes nodes = {place, ZKL_FAMILIES_ALL};
  bool holds[RQ_MAX];
  zkl_queue all, q;
  int own, compared = 0;
  CU_ASSERT_EQUAL_FATAL(zkl__queue_build(names, n, &nodes, NULL, NULL, &all),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(all.count, n);
  zkl__kinds_holders(&all, facts, 0, holds);
  for (own = 0; own < n; own++) {
    zkl_verdict v = {0};
    const zkl_recipe *r = recipe_of_kind(all.entries[own].kind);
    const char *name = all.entries[own].name;
    CU_ASSERT_EQUAL_FATAL(
        zkl__queue_build(names, n, &nodes, name, NULL, &q), ZKL_OK);
    CU_ASSERT_EQUAL_FATAL(q.own, own);
    r->decide_locked(&q, (const void *)(intptr_t)limits[own], &v);
    if (v.kind != ZKL_REFUSE) {
      if ((v.kind == ZKL_GRANT) != holds[own])
        fprintf(stderr, "%s at %d: the %s rule says %s, the registry %s\n",
                name, own, r->name, v.kind == ZKL_GRANT ? "grant" : "wait",
                holds[own] ? "holds" : "does not hold");
      CU_ASSERT_EQUAL(v.kind == ZKL_GRANT, holds[own]);
      compared++;
    }
    zkl__queue_free(&q);
  }
  zkl__queue_free(&all);
  return compared;
}

static void test_recipes_by_registry(void) {
  char names[RQ_MAX][96], *ptrs[RQ_MAX];
  zkl_node_facts facts[RQ_MAX];
  int limits[RQ_MAX], round, i, n, compared = 0, riders_on_first = 0;
  rnd_state = 0x25u;
  for (i = 0; i < RQ_MAX; i++)
    ptrs[i] = names[i];
  /* the name itself: mutexes, writers, readers, riders, candidates */
  for (round = 0; round < 2000; round++) {
    n = random_name_queue(names);
    memset(facts, 0, sizeof facts);
    memset(limits, 0, sizeof limits);
    compared += compare_verdicts(ptrs, n, ZKL_PLACE_NAME, facts, limits);
    for (i = 1; i < n; i++)
      riders_on_first += strstr(names[i], "-" ZKL_RIDER_TAG) &&
                        strstr(names[0], "__WRIT__") &&
                        zkl__rides_on(names[i], names[0]);
  }
  /* leases: each of ours says its limit in its name (one of two, so that
   * some contenders are refused and the rest agree), some are try-onces'
   * passing through, others say nothing (Curator's) and are never judged
   * as anyone's own */
  for (round = 0; round < 2000; round++) {
    int limit = 1 + (int)rnd(4);
    n = 1 + (int)rnd(RQ_MAX);
    for (i = 0; i < n; i++) {
      uint32_t shape = rnd(8);
      int l = shape == 0 ? limit + 1 : limit;
      if (shape == 7)
        snprintf(names[i], 96, "_c_%08x-lease-%010d", rnd(1u << 30), i + 1);
      else
        snprintf(names[i], 96, "_c_%08x%08x-%s%d-%slease-%010d",
                 rnd(1u << 30), rnd(1u << 30), ZKL_LIMIT_TAG, l,
                 shape == 1 ? "try-" : "", i + 1);
      facts[i].limit = zkl__node_limit(names[i]); /* as participants.c */
      facts[i].session = 100 + i;
      /* a contender's own limit is what its name says; a Curator node's
       * owner gives some limit, in its head */
      limits[i] = facts[i].limit ? facts[i].limit : limit;
    }
    /* Curator's nodes are not ours to judge: compare ours only */
    for (i = 0; i < n; i++)
      if (!facts[i].limit)
        facts[i].limit = limits[i];
    compared += compare_verdicts(ptrs, n, ZKL_PLACE_LEASES, facts, limits);
  }
  CU_ASSERT(compared > 10000);
  CU_ASSERT(riders_on_first > 0);
}

/* zkl_name_get_queues: the name's own queue (a mutex's, an election's, a
 * read/write lock's) first, then a semaphore's leases and gate; a bad name
 * or a buffer too small is refused and leaves buf empty. */
static void test_name_queues_mutex_then_semaphore_places(void) {
  char buf[3 * ZKL_PATH_MAX];
  CU_ASSERT_EQUAL(zkl_name_get_queues("a/b", buf, sizeof buf), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(buf, "/locks/a/b /locks/a/b/leases /locks/a/b/locks");
  /* "/locks/a/b" (what a mutex uses) exactly fits, not the rest */
  CU_ASSERT_EQUAL(zkl_name_get_queues("a/b", buf, 11), ZKL_EINVAL);
  CU_ASSERT_STRING_EQUAL(buf, "");
  CU_ASSERT_EQUAL(zkl_name_get_queues("a/b", buf, 46), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_get_queues("a/b", buf, 45), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_get_queues("a//b", buf, sizeof buf), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_get_queues("", buf, sizeof buf), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_get_queues(NULL, buf, sizeof buf), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_get_queues("a", NULL, 10), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_get_queues("a", buf, 0), ZKL_EINVAL);
}

static void test_strerror(void) {
  CU_ASSERT_STRING_EQUAL(zkl_strerror(ZKL_OK), "success");
  CU_ASSERT_STRING_EQUAL(zkl_strerror(ZKL_ETIMEDOUT),
                         "timed out waiting for the lock");
  /* ZooKeeper's own codes pass through to zerror(). */
  CU_ASSERT_STRING_EQUAL(zkl_strerror(ZNOAUTH), zerror(ZNOAUTH));
  CU_ASSERT_STRING_EQUAL(zkl_strerror(-5000), "unknown error code");
  CU_ASSERT(ZKL_EINVAL <= -1000);
  /* every code of ours has its own sentence */
#define CHECK_(name, value, text) \
  CU_ASSERT_STRING_EQUAL(zkl_strerror(ZKL_##name), text);
  ZKL_ERRNO_MAP(CHECK_)
#undef CHECK_
  CU_ASSERT_STRING_EQUAL(zkl_version_string(), PACKAGE_VERSION); /* configure.ac */
  CU_ASSERT_EQUAL(zkl_version(), ZKL_VERSION_HEX);
  CU_ASSERT(ZKL_VERSION_HEX >= 0x010100); /* 1.1 names what grew */
}

/* zkl_errname(): each code of ours by its own name, ZooKeeper's by theirs,
 * and "" (never NULL) for anything else. */
static void test_errname(void) {
  int rc;
  CU_ASSERT_STRING_EQUAL(zkl_errname(ZKL_OK), "ZKL_OK");
  CU_ASSERT_STRING_EQUAL(zkl_errname(ZKL_ETIMEDOUT), "ZKL_ETIMEDOUT");
  CU_ASSERT_STRING_EQUAL(zkl_errname(ZKL_EAGENT), "ZKL_EAGENT");
#define CHECK_(name, value, text) \
  CU_ASSERT_STRING_EQUAL(zkl_errname(value), "ZKL_" #name);
  ZKL_ERRNO_MAP(CHECK_)
#undef CHECK_
  CU_ASSERT_STRING_EQUAL(zkl_errname(ZNONODE), "ZNONODE");
  CU_ASSERT_STRING_EQUAL(zkl_errname(ZCONNECTIONLOSS), "ZCONNECTIONLOSS");
  CU_ASSERT_STRING_EQUAL(zkl_errname(ZAUTHFAILED), "ZAUTHFAILED");
  CU_ASSERT_STRING_EQUAL(zkl_errname(ZTHROTTLEDOP), "ZTHROTTLEDOP");
  CU_ASSERT_STRING_EQUAL(zkl_errname(-1019), ""); /* removed in 1.0 */
  CU_ASSERT_STRING_EQUAL(zkl_errname(-5000), "");
  CU_ASSERT_STRING_EQUAL(zkl_errname(1), "");
  /* every code ZooKeeper's zerror() knows has a name here */
  for (rc = -1; rc > -1000; rc--)
    if (strcmp(zerror(rc), "unknown error") != 0)
      zkt_check(zkl_errname(rc)[0] == 'Z', "ZooKeeper's %d (%s) has no name",
                rc, zerror(rc));
}

int main(void) {
  static const zkt_test tests[] = {
      {"names up to the longest valid one are accepted", test_valid_names},
      {"empty, dotted, control-character and bad UTF-8 names are refused", test_invalid_names},
      {"a node prefix is _c_, 16 hex digits and a marker, new each time", test_prefix},
      {"sequence numbers parse across the signed 32-bit range", test_parse_seq},
      {"standing: non-lock nodes skipped, own place and the node ahead found", test_standing_basic},
      {"standing orders by sequence number, not by string", test_standing_numeric_not_string},
      {"standing orders across the 32-bit sequence wrap", test_standing_wrap},
      {"duplicate sequence numbers are set apart and do not queue", test_standing_duplicates},
      {"ours, kazoo's and Curator's nodes queue by sequence number", test_queue_order},
      {"who holds, by the registry", test_holders},
      {"a downgrade's reader rides on its write node", test_riders},
      {"a lease node's limit", test_owner_limit},
      {"the place table", test_places},
      {"each recipe grants as the registry says", test_recipes_by_registry},
      {"zkl_name_get_queues: the name's queue, then a semaphore's leases "
       "and gate; bad names and short buffers refused",
       test_name_queues_mutex_then_semaphore_places},
      {"zkl_strerror names every code and passes ZooKeeper's through", test_strerror},
      {"zkl_errname: every code's own name, ours and ZooKeeper's", test_errname},
      {NULL, NULL}};
  return zkt_main("names", tests);
}
