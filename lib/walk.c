/* SPDX-License-Identifier: Apache-2.0 */
/*
 * walk.c - the lock names under a prefix (zkl_name_find()): the tree
 * under /locks/PREFIX listed level by level, each level's listings sent
 * back to back (one round trip per level). A node is a lock when, by the
 * registry (kinds.h), one of its children is a contender node of its own
 * queue (any kind) or a semaphore's place. Contender nodes are ephemeral
 * and have no children; a semaphore's places are not walked into; every
 * other child is, since a name may have several segments and a lock's name
 * may be the prefix of another's.
 *
 * A place is a "locks" or "leases" child of a lock's node, never of
 * /locks itself: the name rules (names.c) refuse those segments anywhere
 * but first in a name, so under /locks/NAME they can only be a semaphore's
 * places, and under /locks, where no lock has its node (no name is
 * empty), they are the first segment of a name: the locks "locks",
 * "leases", "locks/x" (which the walk used to hide as places of /locks).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ask.h"
#include "agent.h"

#define WALK_MAX_DEPTH 64

typedef struct walk {
  zkl_ask ask; /* first: the answers come to it */
  char **level, **next; /* full paths listed now, and to list next */
  int nlevel, nnext, capnext;
  char **names;
  int count, cap;
  int seen, max_nodes;
  bool truncated;
  size_t root_len; /* where a name starts in a path: after "/locks/", or 0
                     for a walk under a full path (its names are paths) */
} walk;

static int push(char ***v, int *n, int *cap, char *item) {
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 16;
    char **more = realloc(*v, sizeof *more * (size_t)c);
    if (!more)
      return ZKL_ENOMEM;
    *v = more;
    *cap = c;
  }
  (*v)[(*n)++] = item;
  return ZKL_OK;
}

static bool is_place(const char *child) {
  int p;
  for (p = 0; p < ZKL_PLACE_COUNT; p++) {
    const char *dir = zkl__place_dir((zkl_place)p);
    if (dir && strcmp(child, dir) == 0)
      return true;
  }
  return false;
}

static bool is_contender(const char *child) {
  zkl_nodes which = {ZKL_PLACE_NAME, ZKL_FAMILIES_ALL};
  int32_t seq;
  return zkl__node_kind_of(child, &which, &seq) >= 0;
}

static void replied_locked(zkl_ask *a, int index, const zkl_reply *rp) {
  walk *w = (walk *)a;
  const struct String_vector *c = rp->children;
  size_t plen = strlen(rp->path);
  bool lock = false, places;
  int i, rc = ZKL_OK;
  (void)index;
  if (rp->rc == ZNONODE)
    return; /* gone since its parent's listing */
  if (rp->rc != ZOK) {
    if (a->rc == ZKL_OK)
      a->rc = zkl__ask_code(rp->rc);
    return;
  }
  places = plen >= w->root_len; /* under a name, not /locks itself */
  for (i = 0; i < c->count && !lock; i++)
    lock = is_contender(c->data[i]) || (places && is_place(c->data[i]));
  if (lock && plen > w->root_len) {
    char *name = strdup(rp->path + w->root_len);
    if (!name || push(&w->names, &w->count, &w->cap, name) != ZKL_OK) {
      free(name);
      rc = ZKL_ENOMEM;
    }
  }
  for (i = 0; rc == ZKL_OK && i < c->count; i++) {
    const char *child = c->data[i];
    size_t clen = strlen(child);
    char *path;
    if (is_contender(child) || (lock && is_place(child)))
      continue;
    if (w->seen >= w->max_nodes || plen + 1 + clen + 1 > ZKL_PATH_MAX) {
      w->truncated = true;
      continue;
    }
    if (!(path = malloc(plen + 1 + clen + 1))) {
      rc = ZKL_ENOMEM;
      break;
    }
    memcpy(path, rp->path, plen);
    path[plen] = '/';
    memcpy(path + plen + 1, child, clen + 1);
    if ((rc = push(&w->next, &w->nnext, &w->capnext, path)) != ZKL_OK)
      free(path);
    else
      w->seen++;
  }
  if (rc != ZKL_OK && a->rc == ZKL_OK)
    a->rc = rc;
}

static void free_paths(char **v, int n) {
  int i;
  for (i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

static int cmp_str(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* One walk from start, with s->mu held: w's names on ZKL_OK, nothing
 * left allocated otherwise. */
static int walk_locked(walk *w, zkl_session *s, const char *start,
                       size_t root_len, int max_nodes) {
  int rc, depth, i;
  memset(w, 0, sizeof *w);
  w->max_nodes = max_nodes;
  w->root_len = root_len;
  if ((rc = zkl__ask_init(&w->ask, s, replied_locked)) != ZKL_OK)
    return rc;
  w->level = malloc(sizeof *w->level);
  if (!w->level || !(w->level[0] = strdup(start)))
    rc = ZKL_ENOMEM;
  else
    w->nlevel = 1;
  for (depth = 0; rc == ZKL_OK && w->nlevel > 0; depth++) {
    if (depth == WALK_MAX_DEPTH) {
      w->truncated = true;
      break;
    }
    for (i = 0; i < w->nlevel; i++)
      if (zkl__ask_send_locked(&w->ask, ZKL_ASK_LIST, w->level[i], NULL, 0,
                               i) != ZKL_OK)
        break;
    rc = zkl__ask_wait_locked(&w->ask);
    free_paths(w->level, w->nlevel);
    w->level = w->next;
    w->nlevel = w->nnext;
    w->next = NULL;
    w->nnext = w->capnext = 0;
  }
  free_paths(w->level, w->nlevel);
  free_paths(w->next, w->nnext);
  zkl__ask_destroy(&w->ask);
  if (rc != ZKL_OK) {
    free_paths(w->names, w->count);
    w->names = NULL;
    w->count = 0;
  }
  return rc;
}

int zkl_name_find(zkl_session *s, const char *prefix, int max_nodes,
                  char ***names, int *count, bool *truncated) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_find(s, prefix, max_nodes, names, count, truncated);
  walk w;
  zkl_ask_retry t;
  char start[ZKL_PATH_MAX];
  int rc;
  if (!s || !prefix || !names || !count || max_nodes < 1 ||
      (*prefix && zkl__validate_name(prefix) != ZKL_OK))
    return ZKL_EINVAL;
  if (*prefix)
    zkl__name_path(start, sizeof start, prefix, NULL);
  else
    snprintf(start, sizeof start, "%s", ZKL_ROOT);
  if ((rc = zkl__ask_enter(s)) != ZKL_OK)
    return rc;
  zkl__ask_retry_init_locked(s, &t);
  do /* a lost walk is walked again from the start */
    rc = walk_locked(&w, s, start, *prefix == '/' ? 0 : strlen(ZKL_ROOT) + 1,
                     max_nodes);
  while (zkl__ask_again_locked(s, &t, &rc));
  zkl__ask_leave(s);
  if (rc != ZKL_OK)
    return rc;
  if (w.count > 1)
    qsort(w.names, (size_t)w.count, sizeof *w.names, cmp_str);
  if (!w.names && !(w.names = malloc(sizeof *w.names)))
    return ZKL_ENOMEM;
  *names = w.names;
  *count = w.count;
  if (truncated)
    *truncated = w.truncated;
  return ZKL_OK;
}

void zkl_name_find_free(char **names, int count) { free_paths(names, count); }
