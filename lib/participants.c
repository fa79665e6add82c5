/* SPDX-License-Identifier: Apache-2.0 */
/*
 * participants.c - who holds a lock and who waits for it, read without
 * taking part, through the registry (kinds.h): the name's own queue, a
 * semaphore's leases and its gate listed in one batch, then every
 * contender node found there read in a second (two round trips in all).
 * Who holds is the registry's rule (zkl__kinds_holders), told by the nodes'
 * data (a lease's limit) and Stat (its session), applied to the queue as
 * listed: a node gone by the time it was read still stands where it stood,
 * and is then left out. So a holder that lets go between the two batches
 * is not replaced by the next in line, which may have been granted only
 * after the listing: zkl_name_break() aims at what the listing showed (and
 * names each node by the czxid read), or at nothing. The result is a
 * snapshot in queue order; it may be stale by the time it is read.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ask.h"
#include "agent.h"

#ifdef ZKL_TEST_HOOKS /* lib/internal.h */
void (*zkl__hook_participants_listed)(const char *name);
#endif

typedef struct node_read {
  char *path;        /* the full path */
  const char *child; /* its last segment, in path */
  zkl_place place;
  int kind; /* its node kind: an index in zkl__node_kinds */
  bool present; /* its data was read */
  int64_t czxid, ctime;
  zkl_node_facts facts;
  zkl_owner owner;
} node_read;

typedef struct reading {
  zkl_ask ask; /* first: the answers come to it */
  bool reading_data; /* the second batch: the nodes' data */
  node_read *nodes;
  int count, cap;
} reading;

static int add_node(reading *r, zkl_place place, int kind,
                    const char *parent, const char *child) {
  size_t plen = strlen(parent), clen = strlen(child);
  node_read *n;
  if (r->count == r->cap) {
    int cap = r->cap ? 2 * r->cap : 16;
    node_read *more = realloc(r->nodes, sizeof *more * (size_t)cap);
    if (!more)
      return ZKL_ENOMEM;
    r->nodes = more;
    r->cap = cap;
  }
  n = &r->nodes[r->count];
  memset(n, 0, sizeof *n);
  if (!(n->path = malloc(plen + 1 + clen + 1)))
    return ZKL_ENOMEM;
  memcpy(n->path, parent, plen);
  n->path[plen] = '/';
  memcpy(n->path + plen + 1, child, clen + 1);
  n->child = n->path + plen + 1;
  n->place = place;
  n->kind = kind;
  /* what its name says (a lease node's limit, kinds.h): known even of a
   * node gone before its read */
  if (zkl__node_kinds[kind].name_fact)
    zkl__node_kinds[kind].name_fact(n->child, &n->facts);
  r->count++;
  return ZKL_OK;
}

/* The index of the sync sent before the listings (no place's). */
#define SYNC_INDEX ZKL_PLACE_COUNT

static void replied_locked(zkl_ask *a, int index, const zkl_reply *rp) {
  reading *r = (reading *)a;
  int i, rc = ZKL_OK;
  if (!r->reading_data && index == SYNC_INDEX) {
    if (rp->rc != ZOK && a->rc == ZKL_OK)
      a->rc = zkl__ask_code(rp->rc);
    return;
  }
  if (rp->rc == ZNONODE)
    return; /* a place that is not there, or a node gone since the listing */
  if (rp->rc != ZOK) {
    if (a->rc == ZKL_OK)
      a->rc = zkl__ask_code(rp->rc);
    return;
  }
  if (r->reading_data) {
    node_read *n = &r->nodes[index];
    n->present = true;
    n->czxid = rp->stat->czxid;
    n->ctime = rp->stat->ctime;
    n->facts.session = rp->stat->ephemeralOwner;
    zkl__parse_owner(rp->value, rp->len, n->kind, &n->owner, &n->facts);
    return;
  }
  for (i = 0; rc == ZKL_OK && i < rp->children->count; i++) {
    zkl_nodes which = {(zkl_place)index, ZKL_FAMILIES_ALL};
    int32_t seq;
    int kind = zkl__node_kind_of(rp->children->data[i], &which, &seq);
    if (kind >= 0)
      rc = add_node(r, which.place, kind, rp->path, rp->children->data[i]);
  }
  if (rc != ZKL_OK && a->rc == ZKL_OK)
    a->rc = rc;
}

/* The node a queue entry names: entries point at the nodes' child names. */
static int cmp_child(const void *x, const void *y) {
  uintptr_t a = (uintptr_t)(*(node_read *const *)x)->child;
  uintptr_t b = (uintptr_t)(*(node_read *const *)y)->child;
  return a < b ? -1 : a > b;
}

static node_read *node_of(node_read **by_child, int n, const char *child) {
  node_read key, *k = &key, **found;
  key.child = child;
  found = bsearch(&k, by_child, (size_t)n, sizeof *by_child, cmp_child);
  return found ? *found : NULL;
}

/* Whether the contender of the gate's first node g was listed before it:
 * the owner of a node of its family in a place listed earlier (a lease
 * node of the same session: the contender waiting for a lease, or just
 * granted one, holds the gate meanwhile; the rule zkl__holds_lease reads
 * the same way). */
static bool listed_before(const reading *r, int at, const node_read *g) {
  int i;
  if (g->facts.session == 0)
    return false;
  for (i = 0; i < r->count; i++) {
    const node_read *n = &r->nodes[i];
    if (n != g && n->present && n->facts.session == g->facts.session &&
        zkl__places[n->place].list_order < at &&
        zkl__node_kinds[n->kind].family == zkl__node_kinds[g->kind].family)
      return true;
  }
  return false;
}

/* Lays the answer out in one allocation: the array, then the strings. */
static int build_result(reading *r, zkl_participant **out, int *count) {
  zkl_queue q[ZKL_PLACE_COUNT];
  node_read **by_child;
  char **names;
  zkl_node_facts *facts;
  bool *holds;
  int64_t gate_session = 0;
  int total = 0, n = r->count, i, j, k, at, rc = ZKL_OK;
  size_t size, slots = (size_t)(r->count ? r->count : 1);
  zkl_participant *list = NULL;
  char *strings;

  memset(q, 0, sizeof q);
  names = malloc(sizeof *names * slots);
  by_child = malloc(sizeof *by_child * slots);
  facts = malloc(sizeof *facts * slots);
  holds = malloc(sizeof *holds * slots);
  if (!names || !by_child || !facts || !holds)
    rc = ZKL_ENOMEM;
  /* Every node listed, read or not: the rule runs on the listing. */
  for (j = 0; rc == ZKL_OK && j < n; j++) {
    by_child[j] = &r->nodes[j];
    total += r->nodes[j].present;
  }
  if (rc == ZKL_OK)
    qsort(by_child, (size_t)n, sizeof *by_child, cmp_child);
  /* q[place]: each place's queue */
  for (k = 0; rc == ZKL_OK && k < ZKL_PLACE_COUNT; k++) {
    zkl_nodes which = {(zkl_place)k, ZKL_FAMILIES_ALL};
    int m = 0;
    for (j = 0; j < n; j++)
      if (by_child[j]->place == (zkl_place)k)
        names[m++] = (char *)by_child[j]->child;
    rc = zkl__queue_build(names, m, &which, NULL, NULL, &q[k]);
  }
  /* (a gate node gone before its read: its session is unknown, 0) */
  for (k = 0; rc == ZKL_OK && k < ZKL_PLACE_COUNT; k++)
    if (zkl__places[k].is_gate && q[k].count > 0)
      gate_session =
          node_of(by_child, n, q[k].entries[0].name)->facts.session;
  size = sizeof *list * (size_t)(total ? total : 1);
  for (j = 0; rc == ZKL_OK && j < n; j++)
    if (by_child[j]->present)
      size += strlen(by_child[j]->path) + 1 + strlen(by_child[j]->owner.host) +
              1 + strlen(by_child[j]->owner.info) + 1;
  if (rc == ZKL_OK && !(list = malloc(size)))
    rc = ZKL_ENOMEM;
  strings = list ? (char *)(list + (total ? total : 1)) : NULL;
  /* the places in the list's order */
  for (at = 0, i = 0; rc == ZKL_OK && at < ZKL_PLACE_COUNT; at++) {
    k = zkl__place_listed(at);
    for (j = 0; j < q[k].count; j++)
      facts[j] = node_of(by_child, n, q[k].entries[j].name)->facts;
    zkl__kinds_holders(&q[k], facts, gate_session, holds);
    for (j = 0; j < q[k].count; j++) {
      node_read *nr = node_of(by_child, n, q[k].entries[j].name);
      zkl_participant *p;
      if (!nr->present)
        continue; /* gone since the listing: it let go */
      p = &list[i++];
      p->node = strcpy(strings, nr->path);
      strings += strlen(strings) + 1;
      p->token = nr->czxid;
      p->queued_ms = nr->ctime;
      p->host = strcpy(strings, nr->owner.host);
      strings += strlen(strings) + 1;
      p->pid = nr->owner.pid;
      p->started_ms = nr->owner.start_ms;
      p->info = strcpy(strings, nr->owner.info);
      strings += strlen(strings) + 1;
      p->kind = zkl__node_kinds[q[k].entries[j].kind].word;
      p->holds = holds[j];
      p->limit = nr->facts.limit;
      p->lock = zkl__node_kinds[q[k].entries[j].kind].lock;
      p->repeated = zkl__places[k].is_gate && j == 0 &&
                    listed_before(r, at, nr);
    }
  }
  for (k = 0; k < ZKL_PLACE_COUNT; k++)
    zkl__queue_free(&q[k]);
  free(names);
  free(by_child);
  free(facts);
  free(holds);
  if (rc != ZKL_OK) {
    free(list);
    return rc;
  }
  *out = list;
  *count = total;
  return ZKL_OK;
}

int zkl__participants_locked(zkl_session *s, const char *name,
                             zkl_participant **out, int *count, bool synced) {
  reading r;
  int rc, p, i;
  memset(&r, 0, sizeof r);
  if ((rc = zkl__ask_init(&r.ask, s, replied_locked)) != ZKL_OK)
    return rc;
  /* The sync first: ZooKeeper serves a session's reads after its sync. */
  if (synced)
    zkl__ask_send_locked(&r.ask, ZKL_ASK_SYNC, "/", NULL, 0, SYNC_INDEX);
  /* The name and its places, back to back: one round trip. */
  for (p = 0; p < ZKL_PLACE_COUNT; p++) {
    const char *dir = zkl__place_dir((zkl_place)p);
    char parent[ZKL_PATH_MAX];
    zkl__name_path(parent, sizeof parent, name, dir);
    if (zkl__ask_send_locked(&r.ask, ZKL_ASK_LIST, parent, NULL, 0, p) !=
        ZKL_OK)
      break;
  }
  rc = zkl__ask_wait_locked(&r.ask);
#ifdef ZKL_TEST_HOOKS
  if (zkl__hook_participants_listed) {
    pthread_mutex_unlock(&s->mu);
    zkl__hook_participants_listed(name);
    pthread_mutex_lock(&s->mu);
  }
#endif
  /* Every contender node found: a second. */
  r.reading_data = true;
  for (i = 0; rc == ZKL_OK && i < r.count; i++)
    if (zkl__ask_send_locked(&r.ask, ZKL_ASK_GET, r.nodes[i].path, NULL, 0,
                             i) != ZKL_OK)
      break;
  if (rc == ZKL_OK)
    rc = zkl__ask_wait_locked(&r.ask);
  if (rc == ZKL_OK)
    rc = build_result(&r, out, count);
  for (i = 0; i < r.count; i++)
    free(r.nodes[i].path);
  free(r.nodes);
  zkl__ask_destroy(&r.ask);
  return rc;
}

int zkl__participants_ask(zkl_session *s, const char *name,
                          zkl_participant **out, int *count, bool synced) {
  zkl_ask_retry t;
  int rc;
  if (!s || !out || !count || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  if ((rc = zkl__ask_enter(s)) != ZKL_OK)
    return rc;
  zkl__ask_retry_init_locked(s, &t);
  do /* *out is set only on success: a lost try leaves nothing */
    rc = zkl__participants_locked(s, name, out, count, synced);
  while (zkl__ask_again_locked(s, &t, &rc));
  zkl__ask_leave(s);
  return rc;
}

int zkl_name_list(zkl_session *s, const char *name, zkl_participant **out,
                  int *count) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_list(s, name, out, count);
  return zkl__participants_ask(s, name, out, count, false);
}

void zkl_name_list_free(zkl_participant *list) { free(list); }
