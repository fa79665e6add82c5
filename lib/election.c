/* SPDX-License-Identifier: Apache-2.0 */
/*
 * election.c - leader election: a queue whose first candidate leads.
 *
 * The layout is Curator's LeaderLatch, so that C candidates take part in
 * the same election as Java ones: under /locks/NAME each candidate writes
 * _c_<id>-latch-<seq> with its id as the node's data; the lowest node
 * leads; every other candidate watches its predecessor. A candidate is a
 * zkl_lock: acquiring it is standing for election (granted: leading, with
 * the node's czxid as the epoch a resource can check), releasing or
 * cancelling it is resigning, and its lost callback says it stopped leading
 * for any other reason (session expired, node deleted, the lease's early
 * notice). Who leads, for anyone, is leader.c.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes.h"
#include "agent.h"

/* The node's data is the candidate's id, as LeaderLatch writes it. */
static int latch_data(const void *arg, char *buf, size_t len) {
  size_t n = strlen(arg);
  if (n > len)
    n = len;
  memcpy(buf, arg, n);
  return (int)n;
}

const zkl_recipe zkl__recipe_latch = {
    .name = "latch",
    .node = ZKL_NODE_LATCH,
    .decide_locked = zkl__first_goes,
    .node_data = latch_data,
};

int zkl_lock_new_election(zkl_lock **out, zkl_session *s, const char *name,
                          const char *id) {
  if (out && s && name && ZKL_REMOTE_SESSION(s)) {
    if (!id || !*id || strlen(id) > ZKL_ID_MAX)
      return ZKL_EINVAL;
    return zkl__remote_new(out, s, ZKL_AGENT_ELECTION, &name, 1, 0, id);
  }
  char queue[ZKL_PATH_MAX], *copy;
  int rc;
  if (!out || !s || !id || !*id || strlen(id) > ZKL_ID_MAX ||
      zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  if (!(copy = strdup(id)))
    return ZKL_ENOMEM;
  zkl__name_path(queue, sizeof queue, name, NULL);
  rc = zkl__contender_new(out, s, name, queue, &zkl__recipe_latch, copy);
  if (rc != ZKL_OK) {
    free(copy);
    return rc;
  }
  zkl__lock_set_free_arg(*out, free);
  return ZKL_OK;
}
