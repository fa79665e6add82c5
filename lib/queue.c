/* SPDX-License-Identifier: Apache-2.0 */
/* queue.c - a listing of one parent as a queue: the nodes of a recipe's
 * node kinds in order, first holder first, and where a contender stands in it.
 * Pure logic; unit-tested on its own and fuzzed. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"

typedef struct {
  zkl_queue_entry e;
  int32_t rel; /* distance from the reference number */
} sortable;

static int cmp_sortable(const void *a, const void *b) {
  const sortable *x = a, *y = b;
  if (x->rel != y->rel)
    return x->rel < y->rel ? -1 : 1;
  return strcmp(x->e.name, y->e.name);
}

/* ahead_only: with own, keep only the nodes up to it (the rest are never
 * sorted). */
static int build(char *const *names, int count, const zkl_nodes *which,
                 const char *own, const char *prefix, bool ahead_only,
                 zkl_queue *q) {
  sortable *tmp;
  size_t plen = prefix ? strlen(prefix) : 0;
  int32_t ref = 0, seq;
  bool have_ref = false;
  int i, kept = 0, kind;
  memset(q, 0, sizeof *q);
  q->own = -1;
  if (own && zkl__node_kind_of(own, which, &seq) >= 0) {
    ref = seq; /* order relative to our own number: right across the wrap */
    have_ref = true;
  } else {
    ahead_only = false;
  }
  if (count <= 0)
    return ZKL_OK;
  tmp = malloc(sizeof *tmp * (size_t)count);
  q->duplicates = malloc(sizeof *q->duplicates * (size_t)count);
  if (!tmp || !q->duplicates) {
    free(tmp);
    free(q->duplicates);
    q->duplicates = NULL;
    return ZKL_ENOMEM;
  }
  for (i = 0; i < count; i++) {
    const char *name = names[i];
    bool is_own = own && strcmp(name, own) == 0;
    if (!is_own && plen && strncmp(name, prefix, plen) == 0) {
      /* a second node of ours: a retried create's, to be deleted */
      q->duplicates[q->n_duplicates++] = i;
      continue;
    }
    if ((kind = zkl__node_kind_of(name, which, &seq)) < 0)
      continue; /* not a node of this queue */
    if (!have_ref) {
      ref = seq; /* any member works as the origin inside a 2^31 window */
      have_ref = true;
    }
    tmp[kept].rel = zkl__seq_distance(ref, seq);
    /* behind our own node (a number equal to ours, which only a node
     * named by hand can have, sorts by name as below) */
    if (ahead_only && (tmp[kept].rel > 0 ||
                       (tmp[kept].rel == 0 && strcmp(name, own) > 0)))
      continue;
    tmp[kept].e.name = name;
    tmp[kept].e.seq = seq;
    tmp[kept].e.kind = kind;
    kept++;
  }
  qsort(tmp, (size_t)kept, sizeof *tmp, cmp_sortable);
  q->entries = malloc(sizeof *q->entries * (size_t)(kept ? kept : 1));
  if (!q->entries) {
    free(tmp);
    zkl__queue_free(q);
    return ZKL_ENOMEM;
  }
  for (i = 0; i < kept; i++) {
    q->entries[i] = tmp[i].e;
    if (own && strcmp(tmp[i].e.name, own) == 0)
      q->own = i;
  }
  q->count = kept;
  free(tmp);
  return ZKL_OK;
}

int zkl__queue_build(char *const *names, int count, const zkl_nodes *which,
                     const char *own, const char *prefix, zkl_queue *q) {
  return build(names, count, which, own, prefix, false, q);
}

int zkl__queue_build_ahead(char *const *names, int count,
                           const zkl_nodes *which, const char *own,
                           const char *prefix, zkl_queue *q) {
  return build(names, count, which, own, prefix, true, q);
}

void zkl__queue_free(zkl_queue *q) {
  free(q->entries);
  free(q->duplicates);
  memset(q, 0, sizeof *q);
  q->own = -1;
}
