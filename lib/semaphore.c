/*
 * semaphore.c - a semaphore of N leases: the engine with a gate.
 *
 * The layout is Curator's InterProcessSemaphoreV2, so that Curator clients
 * with the same limit share it: under /locks/NAME, a mutex in locks/ (the
 * gate) and lease nodes _c_<uuid>-lease-<seq> in leases/. A contender takes
 * the gate, creates its lease node, and lists leases/ with a child watch:
 * fewer than N lease nodes ahead of its own, it holds a lease and gives the
 * gate back; else it waits for the listing to change, still holding the gate
 * (Curator counts every lease node: the same while only the gate's holder
 * makes them; our try-once makes one without the gate). So only the gate's
 * holder watches the leases: waiters queue on the gate, one watch each, and
 * no herd wakes when a lease is returned.
 *
 * At most N leases are held while every contender gives the same N (the
 * proof is at lease_decide). Nothing stores N (Curator lets each client pass
 * its own). A contender that counts more leases ahead than its own limit
 * knows some other contender admits more than it does: it goes on waiting,
 * as Curator's does, but if its wait times out it ends with ZKL_ELIMIT
 * instead of ZKL_ETIMEDOUT.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

static int limit_of(const void *arg) { return (int)(intptr_t)arg; }

static void lease_decide(const zkl_queue *q, const void *arg,
                         zkl_verdict *out) {
  int limit = limit_of(arg), ahead = q->own;
  out->node = -1;
  out->grant_on_delete = false;
  /* Only the nodes ahead of ours count. Take the lease node held with the
   * highest sequence: every other held node is ahead of it, so existed when
   * its owner listed (after making it), and was counted then; fewer than
   * `limit` were, so at most `limit` are held. A try-once's node, there for
   * the moment of one listing, is behind the gate's holder and so never
   * holds it up. */
  out->kind = ahead < limit ? ZKL_GRANT : ZKL_WAIT_CHILDREN;
  /* More leases held ahead than our limit: someone admits more than we do.
   * Not a reason to stop waiting; but a wait that times out now says so. */
  out->code = ahead > limit ? ZKL_ELIMIT : 0;
}

/* The limit, beside the owner description: whoever lists the leases can
 * then tell which of them hold (kinds.c). Curator ignores lease data. */
static int lease_owner_line(const void *arg, char *buf, size_t len) {
  int n = snprintf(buf, len, "limit=%d\n", limit_of(arg));
  return n < 0 || (size_t)n >= len ? 0 : n;
}

const zkl_recipe zkl__recipe_lease = {
    .name = "lease",
    .node = ZKL_NODE_LEASE,
    .list_with_watch = true,
    .decide = lease_decide,
    .owner_line = lease_owner_line,
};

/* The gate: a mutex in locks/, of the semaphore's family. */
static const zkl_recipe gate_recipe = {
    .name = "gate",
    .node = ZKL_NODE_GATE,
    .decide = zkl__first_goes,
};

int zkl_semaphore_new(zkl_lock **out, zkl_session *s, const char *name,
                      int limit) {
  char queue[ZKL_PATH_MAX];
  zkl_lock *gate, *l;
  int rc;
  if (!out || !s || limit <= 0 || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  snprintf(queue, sizeof queue, "%s/%s/locks", ZKL_ROOT, name);
  rc = zkl__lock_create(&gate, s, name, queue, &gate_recipe, NULL);
  if (rc != ZKL_OK)
    return rc;
  snprintf(queue, sizeof queue, "%s/%s/leases", ZKL_ROOT, name);
  rc = zkl__lock_create(&l, s, name, queue, &zkl__recipe_lease,
                        (const void *)(intptr_t)limit);
  if (rc != ZKL_OK) {
    zkl__lock_destroy(gate);
    return rc;
  }
  zkl__lock_own(gate, NULL); /* not the user's: freed with l */
  zkl__lock_gate(l, gate);
  *out = l;
  return ZKL_OK;
}
