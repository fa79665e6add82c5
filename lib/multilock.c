/* SPDX-License-Identifier: Apache-2.0 */
/*
 * multilock.c - several names held at once, enqueued by one transaction.
 *
 * A multi-lock is a whole with no node of its own and one part per name:
 * a mutex contender of that name (its nodes are mutex nodes,
 * _c_<id>-lock-<seq>, so every other contender of the name, ours or
 * Curator's or kazoo's, queues beside it). Its recipe says only that: its
 * nodes are one per part, made together (ZKL_MAKE_PARTS_TOGETHER). The
 * engine does the rest (engine.c, "parts made together"): one zoo_multi
 * creates every part's node under one prefix (the parents first when one
 * is missing; a refusal fails the acquire, and names the name refused:
 * zkl_lock_refused_name()), a lost reply is recovered with a write ahead
 * of the listings, the token is the first node's czxid, each part waits
 * in its queue by the mutex's rule, and the whole is granted while every
 * part holds (a part whose hold ends while the whole waits fails it with
 * ZKL_ELOST; a part lost while the whole holds is the whole's loss, one
 * lost notice with that part's reason). The release is one transaction of
 * deletes.
 *
 * Why no deadlock: all the nodes of one transaction share its zxid, and in
 * every parent sequence numbers follow zxids. So every queue orders the
 * contenders it has in common the same way, a contender only ever waits for
 * contenders created before it, and the wait-for graph has no cycle,
 * whatever order callers name their locks in.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes.h"
#include "agent.h"

static const zkl_recipe multi_recipe = {
    .name = "multi",
    .node = ZKL_NODE_MUTEX, /* its parts' */
    .decide_locked = zkl__first_goes, /* (never asked: it has no node) */
    .make = ZKL_MAKE_PARTS_TOGETHER,  /* the engine does the rest */
    .together = &zkl__together_ops,
    .part_ended_locked = zkl__attempt_part_ended_locked,
};

/* A part: a mutex contender of one name. */
static const zkl_recipe part_recipe = {
    .name = "multi-part",
    .node = ZKL_NODE_MUTEX,
    .decide_locked = zkl__first_goes,
};

int zkl_lock_new_multi(zkl_lock **out, zkl_session *s, const char *const *names,
                       int count) {
  if (out && s && names && count >= 1 && count <= ZKL_MULTI_NAMES_MAX &&
      ZKL_REMOTE_SESSION(s))
    return zkl__remote_new(out, s, ZKL_AGENT_MULTI, names, count, 0, NULL);
  char queue[ZKL_PATH_MAX], *joined;
  size_t len = 0;
  zkl_lock *l, *p;
  int i, j, rc;
  if (!out || !s || !names || count < 1 || count > ZKL_MULTI_NAMES_MAX)
    return ZKL_EINVAL;
  for (i = 0; i < count; i++) {
    if (zkl__validate_name(names[i]) != ZKL_OK)
      return ZKL_EINVAL;
    for (j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return ZKL_EINVAL;
    len += strlen(names[i]) + 1;
  }
  if (!(joined = malloc(len)))
    return ZKL_ENOMEM;
  joined[0] = '\0';
  for (i = 0; i < count; i++) {
    if (i)
      strcat(joined, " ");
    strcat(joined, names[i]);
  }
  zkl__name_path(queue, sizeof queue, names[0], NULL);
  rc = zkl__contender_new(&l, s, joined, queue, &multi_recipe, NULL);
  free(joined);
  if (rc != ZKL_OK)
    return rc;
  for (i = 0; i < count; i++) {
    zkl__name_path(queue, sizeof queue, names[i], NULL);
    rc = zkl__contender_new(&p, s, names[i], queue, &part_recipe, NULL);
    if (rc == ZKL_OK && (rc = zkl__lock_add_part(l, p)) != ZKL_OK)
      zkl__contender_free(p);
    if (rc != ZKL_OK) {
      zkl__contender_free(l); /* and the parts made so far */
      return rc;
    }
  }
  *out = l;
  return ZKL_OK;
}
