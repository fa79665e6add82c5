/* SPDX-License-Identifier: Apache-2.0 */
/* kinds.c - the registry of lock kinds: every node kind under /locks/NAME,
 * where it lives, its family, and who refuses whom. Pure logic; unit-tested
 * on its own and fuzzed. See kinds.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

/* ------------------------------------------------------------ hold rules */

bool zkl__holds_first(const zkl_queue *q, int i, const zkl_node_facts *f,
                      const zkl_hold_ctx *c) {
  (void)q;
  (void)f;
  (void)c;
  return i == 0;
}

static bool rides_on_holder(const zkl_queue *q, int i, const zkl_hold_ctx *c);

bool zkl__holds_reader(const zkl_queue *q, int i, const zkl_node_facts *f,
                       const zkl_hold_ctx *c) {
  int j;
  (void)f;
  for (j = 0; j < i; j++)
    if (!zkl__node_kinds[q->entries[j].kind].reader)
      return rides_on_holder(q, i, c);
  return true; /* only readers ahead (or none) */
}

bool zkl__holds_lease(const zkl_queue *q, int i, const zkl_node_facts *f,
                      const zkl_hold_ctx *c) {
  (void)q;
  /* i: the lease nodes ahead of this one */
  if (f && f->limit > 0)
    return i < f->limit;
  return !(c->gate_session && f && f->session == c->gate_session);
}

/* A lease node's limit, as its name says it (zkl__node_limit): known even
 * of a node gone before its data was read, and kept through a revoke's
 * write. */
static void lease_name_fact(const char *child, zkl_node_facts *f) {
  f->limit = zkl__node_limit(child);
}

/* "limit=N" in its data: an older libzklock's lease node (its name says
 * nothing). */
static void lease_data_fact(const char *value, size_t len,
                            zkl_node_facts *f) {
  char num[24];
  long limit;
  if (f->limit > 0)
    return; /* its name said it */
  if (len >= sizeof num)
    len = sizeof num - 1;
  memcpy(num, value, len);
  num[len] = '\0';
  limit = strtol(num, NULL, 10);
  f->limit = limit > 0 && limit <= INT32_MAX ? (int)limit : 0;
}

/* Markers are matched at their last occurrence, in this order. A marker
 * that ends another one would be ambiguous; none does. */
const zkl_node_kind zkl__node_kinds[ZKL_NODE_COUNT] = {
    [ZKL_NODE_MUTEX] = {.marker = "lock-",
                        .place = ZKL_PLACE_NAME,
                        .family = ZKL_FAMILY_LOCK,
                        .kind = "mutex",
                        .lock = "mutex",
                        .word = "lock",
                        .holds = zkl__holds_first},
    [ZKL_NODE_KAZOO_LOCK] = {.marker = "__lock__",
                             .place = ZKL_PLACE_NAME,
                             .family = ZKL_FAMILY_LOCK,
                             .kind = "mutex",
                             .lock = "mutex",
                             .word = "lock",
                             .holds = zkl__holds_first},
    [ZKL_NODE_WRITE] = {.marker = "__WRIT__",
                        .place = ZKL_PLACE_NAME,
                        .family = ZKL_FAMILY_LOCK,
                        .kind = "write lock",
                        .lock = "rwlock",
                        .word = "write",
                        .holds = zkl__holds_first},
    [ZKL_NODE_READ] = {.marker = "__READ__",
                       .place = ZKL_PLACE_NAME,
                       .family = ZKL_FAMILY_LOCK,
                       .reader = true,
                       .kind = "read lock",
                       .lock = "rwlock",
                       .word = "read",
                       .holds = zkl__holds_reader},
    [ZKL_NODE_KAZOO_READ] = {.marker = "__rlock__",
                             .place = ZKL_PLACE_NAME,
                             .family = ZKL_FAMILY_LOCK,
                             .reader = true,
                             .kind = "read lock",
                             .lock = "rwlock",
                             .word = "read",
                             .holds = zkl__holds_reader},
    [ZKL_NODE_LATCH] = {.marker = "latch-",
                        .place = ZKL_PLACE_NAME,
                        .family = ZKL_FAMILY_ELECTION,
                        .kind = "election",
                        .lock = "election",
                        .word = "latch",
                        .keeps_data = true,
                        .holds = zkl__holds_first},
    [ZKL_NODE_GATE] = {.marker = "lock-",
                       .place = ZKL_PLACE_GATE,
                       .family = ZKL_FAMILY_SEMAPHORE,
                       .kind = "semaphore",
                       .lock = "semaphore",
                       .word = "gate"},
    [ZKL_NODE_LEASE] = {.marker = "lease-",
                        .place = ZKL_PLACE_LEASES,
                        .family = ZKL_FAMILY_SEMAPHORE,
                        .kind = "semaphore",
                        .lock = "semaphore",
                        .word = "lease",
                        .holds = zkl__holds_lease,
                        .name_fact = lease_name_fact,
                        .data_key = "limit",
                        .data_fact = lease_data_fact},
};
const int zkl__node_kind_count = ZKL_NODE_COUNT;

/* The list gives the name's own queue, then the leases, then the gate: a
 * semaphore's holders before its waiters. */
const zkl_place_info zkl__places[ZKL_PLACE_COUNT] = {
    [ZKL_PLACE_NAME] = {.dir = NULL, .list_order = 0, .word = "lock"},
    [ZKL_PLACE_GATE] = {.dir = "locks",
                        .list_order = 2,
                        .word = "semaphore's gate",
                        .is_gate = true},
    [ZKL_PLACE_LEASES] = {.dir = "leases",
                          .list_order = 1,
                          .word = "semaphore's lease queue"},
};

const char *zkl__place_dir(zkl_place place) { return zkl__places[place].dir; }

zkl_place zkl__place_listed(int k) {
  int p;
  for (p = 0; p < ZKL_PLACE_COUNT; p++)
    if (zkl__places[p].list_order == k)
      return (zkl_place)p;
  return ZKL_PLACE_NAME;
}

/* The sequence suffix exactly as the server writes it, Java's "%010d" of a
 * signed 32-bit counter: ten digits, or after the wrap a minus sign and nine
 * or ten digits ("-000000005", "-2147483648"). Anything else (fewer digits,
 * more, a plus sign, trailing bytes) is not a sequence node: a container
 * named "lock-0" under a lock's parent must not pass for a contender. */
static int parse_suffix(const char *s, size_t n, int32_t *out) {
  int64_t v = 0;
  size_t i;
  bool neg = n > 0 && s[0] == '-';
  if (!(n == 10 || (neg && n == 11)))
    return 0;
  for (i = neg ? 1 : 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return 0;
    v = v * 10 + (s[i] - '0');
  }
  if (neg)
    v = -v;
  if (v < INT32_MIN || v > INT32_MAX)
    return 0;
  *out = (int32_t)v;
  return 1;
}

/* 1 when name[0..n) ends in marker and a sequence suffix. */
static int ends_with_node(const char *name, size_t n, const char *marker,
                          int32_t *seq) {
  size_t mlen = strlen(marker), tail;
  for (tail = 10; tail <= 11; tail++)
    if (n >= mlen + tail && memcmp(name + n - tail - mlen, marker, mlen) == 0 &&
        parse_suffix(name + n - tail, tail, seq))
      return 1;
  return 0;
}

static bool wanted(const zkl_node_kind *k, const zkl_nodes *which) {
  return k->place == which->place && (which->families & (1u << k->family));
}

int zkl__node_kind_of(const char *child, const zkl_nodes *which, int32_t *seq) {
  size_t n = strlen(child);
  int i;
  for (i = 0; i < zkl__node_kind_count; i++)
    if (wanted(&zkl__node_kinds[i], which) &&
        ends_with_node(child, n, zkl__node_kinds[i].marker, seq))
      return i;
  return -1;
}

bool zkl__node_keeps_data(const char *child) {
  /* Only the name's own queue has such nodes: a node of a semaphore's
   * places read as one of it is a mutex's or nothing, which keep nothing. */
  zkl_nodes name = {ZKL_PLACE_NAME, ZKL_FAMILIES_ALL};
  int32_t seq;
  int k = zkl__node_kind_of(child, &name, &seq);
  return k >= 0 && zkl__node_kinds[k].keeps_data;
}

int zkl__is_sequence_node(const char *name, size_t n) {
  int32_t seq;
  int i;
  for (i = 0; i < zkl__node_kind_count; i++)
    if (ends_with_node(name, n, zkl__node_kinds[i].marker, &seq))
      return 1;
  return 0;
}

int zkl__parse_seq(const char *child, int32_t *seq) {
  zkl_nodes name = {ZKL_PLACE_NAME, ZKL_FAMILIES_ALL};
  return zkl__node_kind_of(child, &name, seq) >= 0;
}

const char *zkl__kinds_clash_first(zkl_family family, const zkl_queue *q) {
  const zkl_node_kind *first;
  if (q->count == 0)
    return NULL;
  first = &zkl__node_kinds[q->entries[0].kind];
  return first->family == family ? NULL : first->kind;
}

const char *zkl__kinds_clash_any(zkl_family family, zkl_place place,
                                 char *const *children, int count) {
  zkl_nodes there = {place, ZKL_FAMILIES_ALL & ~(1u << family)};
  int32_t seq;
  int i, k;
  for (i = 0; i < count; i++)
    if ((k = zkl__node_kind_of(children[i], &there, &seq)) >= 0)
      return zkl__node_kinds[k].kind;
  return NULL;
}

bool zkl__kinds_has_places(char *const *children, int count) {
  int i, p;
  for (i = 0; i < count; i++)
    for (p = 0; p < ZKL_PLACE_COUNT; p++)
      if (zkl__places[p].dir && strcmp(children[i], zkl__places[p].dir) == 0)
        return true;
  return false;
}

/* The id of one of our nodes, "_c_<id>-...": its start, and its length in
 * *n; NULL when node is not shaped so. */
static const char *our_id(const char *node, size_t *n) {
  size_t i;
  if (strncmp(node, "_c_", 3) != 0)
    return NULL;
  for (i = 0; i < ZKL_ID_HEX; i++) {
    char c = node[3 + i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return NULL;
  }
  if (node[3 + ZKL_ID_HEX] != '-')
    return NULL;
  *n = ZKL_ID_HEX;
  return node + 3;
}

int zkl__rider_tag(const char *node, char *buf, size_t len) {
  size_t n;
  const char *id = our_id(node, &n);
  int w;
  if (!id)
    return 0;
  w = snprintf(buf, len, "%s%.*s-", ZKL_RIDER_TAG, (int)n, id);
  return w > 0 && (size_t)w < len ? w : 0;
}

bool zkl__rides_on(const char *child, const char *node) {
  const char *tag = strstr(child, "-" ZKL_RIDER_TAG), *id;
  size_t n;
  if (!tag || !(id = our_id(node, &n)))
    return false;
  tag += 1 + strlen(ZKL_RIDER_TAG);
  return strncmp(tag, id, n) == 0 && tag[n] == '-';
}

int zkl__node_limit(const char *child) {
  size_t n, tlen = strlen(ZKL_LIMIT_TAG);
  const char *id = our_id(child, &n), *p;
  int64_t v = 0;
  if (!id)
    return 0;
  p = id + n + 1; /* after "_c_<id>-" */
  if (strncmp(p, ZKL_LIMIT_TAG, tlen) != 0)
    return 0;
  for (p += tlen; *p >= '0' && *p <= '9' && v <= INT32_MAX; p++)
    v = v * 10 + (*p - '0');
  return *p == '-' && v > 0 && v <= INT32_MAX ? (int)v : 0;
}

/* Whether entry j holds by its own kind's rule. */
static bool entry_holds(const zkl_queue *q, int j, const zkl_hold_ctx *c) {
  zkl_hold_rule rule = zkl__node_kinds[q->entries[j].kind].holds;
  if (c->holds)
    return c->holds[j];
  return rule && rule(q, j, c->facts ? &c->facts[j] : NULL, c);
}

/* Whether the reader at i rides on a node ahead of it that holds. */
static bool rides_on_holder(const zkl_queue *q, int i, const zkl_hold_ctx *c) {
  int j;
  if (!strstr(q->entries[i].name, "-" ZKL_RIDER_TAG))
    return false; /* most readers: no tag, nothing to compare */
  for (j = 0; j < i; j++)
    if (zkl__rides_on(q->entries[i].name, q->entries[j].name) &&
        entry_holds(q, j, c))
      return true;
  return false;
}

void zkl__kinds_holders(const zkl_queue *q, const zkl_node_facts *facts,
                        int64_t gate_session, bool *holds) {
  zkl_hold_ctx c = {facts, holds, gate_session};
  int i;
  for (i = 0; i < q->count; i++) {
    zkl_hold_rule rule = zkl__node_kinds[q->entries[i].kind].holds;
    holds[i] = rule && rule(q, i, facts ? &facts[i] : NULL, &c);
  }
}
