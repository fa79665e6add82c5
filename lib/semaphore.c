/* SPDX-License-Identifier: Apache-2.0 */
/*
 * semaphore.c - a semaphore of N leases: a lease queue behind a gate.
 *
 * The layout is Curator's InterProcessSemaphoreV2, so that Curator clients
 * with the same limit share it: under /locks/NAME, a mutex in locks/ (the
 * gate) and lease nodes _c_<id>-lease-<seq> in leases/. A contender takes
 * the gate, creates its lease node, and lists leases/ with a child watch:
 * fewer than N lease nodes ahead of its own, it holds a lease and gives the
 * gate back; else it waits for the listing to change, still holding the gate
 * (Curator counts every lease node: the same while only the gate's holder
 * makes them; our try-once makes one without the gate). So only the gate's
 * holder watches the leases: waiters queue on the gate, one watch each, and
 * no herd wakes when a lease is returned.
 *
 * The gate costs a second round trip and two writes, so the first try of
 * every acquire skips it (zkl_recipe.try_before_prepare): it makes its
 * lease node tagged as a try-once's, and lists the leases and the gate
 * (and the name, as every contender in a semaphore's places does). With
 * fewer than N leases ahead of it and nobody at the gate (who came first),
 * it holds. Otherwise it deletes its node before anything else, and takes
 * the gate as above. It never waits with a gate-free node in place: a
 * Curator contender holding the gate counts every lease node, its own and
 * those behind it, and one that waited there would wait for ours while we
 * waited for it (the deadlock in ZOOKEEPER-NOTES). Two gate-free tries at
 * once: the later listing sees both nodes, so at most N are granted.
 *
 * At most N leases are held while every contender gives the same N (the
 * proof is at lease_decide). Our lease nodes store N in their name
 * (_c_<id>-limit<N>-lease-<seq>, kinds.h), and a contender that finds a
 * node ahead of its own with another N is refused at once with ZKL_ELIMIT,
 * as `consul lock` refuses a contender whose limit disagrees with the one
 * stored: the first N in use wins while its nodes are there. Curator's
 * nodes store nothing (Curator lets each client pass its own N), nor do
 * older libzklock's names: such nodes are counted, not compared. A
 * contender that counts more leases ahead than its own limit waits on, as
 * Curator's does. If the nodes ahead that came through the gate alone are
 * more than its limit, it knows some other contender admits more than it
 * does, and if its wait times out it ends with ZKL_ELIMIT instead of
 * ZKL_ETIMEDOUT. A try-once's node (named _c_<id>-try-lease-,
 * see TRY_ONCE_TAG) proves nothing: it may be held, or about to go.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes.h"
#include "agent.h"

static int limit_of(const void *arg) { return (int)(intptr_t)arg; }

/* A lease node made without the gate (a try-once's, or a first try's)
 * says so before its marker: "_c_<id>-limit<N>-try-lease-<seq>", so that a
 * contender counting the queue can tell a node that may only be passing
 * through from one whose owner came through the gate. Still a node of the
 * marker. */
#define TRY_ONCE_TAG "try-"

/* A try-once's node, made without the gate. */
static bool ungated(const char *node) {
  const char *tag = strstr(node, "-" TRY_ONCE_TAG), *marker;
  if (!tag)
    return false;
  marker = zkl__node_kinds[ZKL_NODE_LEASE].marker;
  return strncmp(tag + 1 + strlen(TRY_ONCE_TAG), marker, strlen(marker)) == 0;
}

static void lease_decide(const zkl_queue *q, const void *arg,
                         zkl_verdict *out) {
  int limit = limit_of(arg), ahead = q->own, gated = 0, i, theirs;
  zkl_node_facts own = {.limit = limit};
  zkl_hold_ctx none = {0};
  out->node = -1;
  out->grant_on_delete = false;
  /* A node ahead that says another limit (kinds.h: ours say theirs in
   * their name): the semaphore is in use with that limit, and we may not
   * take part. Only nodes ahead count: no node can appear ahead of ours
   * later, so a contender not refused by its first verdict never is, and
   * of two that disagree the one that came later yields. So every node
   * held says the same limit as the last one granted, which counted fewer
   * nodes ahead than that limit: at most that many hold (with the proof
   * below). Nodes that say nothing (Curator's, older libzklock's) are
   * counted, not compared. */
  for (i = 0; i < ahead; i++) {
    theirs = zkl__node_limit(q->entries[i].name);
    if (theirs > 0 && theirs != limit) {
      out->kind = ZKL_REFUSE;
      out->code = ZKL_ELIMIT;
      return;
    }
  }
  /* Only the nodes ahead of ours count. Take the lease node held with the
   * highest sequence: every other held node is ahead of it, so existed when
   * its owner listed (after making it), and was counted then; fewer than
   * `limit` were, so at most `limit` are held. A try-once's node, there for
   * the moment of one listing, is behind the gate's holder and so never
   * holds it up. (The registry's lease rule, kinds.h: fewer nodes ahead
   * than its own limit.) */
  out->kind =
      zkl__holds_lease(q, q->own, &own, &none) ? ZKL_GRANT : ZKL_WAIT_CHILDREN;
  /* A node ahead whose owner came through the gate is a held lease: the
   * gate is ours now, and its owners let it go only once granted, or after
   * deleting their node (ENDING sends that delete first; a session applies
   * its requests in order). A try-once's node ahead may be held too, or
   * be on its way out (its try found the leases full; or its connection
   * dropped, and it goes at the reconnect): it keeps us waiting, but
   * proves nothing. More held leases than our limit: someone admits more
   * than we do. Not a reason to stop waiting; but a wait that times out
   * now says so. */
  for (i = 0; i < ahead; i++)
    gated += !ungated(q->entries[i].name);
  out->code = gated > limit ? ZKL_ELIMIT : 0;
}

/* ---------------------------------------------------------------- the gate
 *
 * The gate is the semaphore contender's only part (zkl_lock.parts): a
 * contender of its own in locks/, whose attempts come and go. One may still
 * be ending (a release in flight) when the contender's next attempt needs
 * the gate again, so an attempt that prepares asks for the gate whenever the
 * gate is free: when it starts preparing, and when a gate attempt ends. */

static void gate_ask_locked(zkl_lock *l);

static void gate_done_locked(void *ctx, int rc, int64_t token) {
  zkl_attempt *att = ctx;
  zkl_lock *l = zkl__attempt_lock(att), *gate = l->parts[0];
  zkl_target none = {0};
  (void)token;
  if (zkl__attempt_state(att) == ZKL_AS_PREPARING && l->att == att) {
    if (rc == ZKL_EKIND)
      l->other_kind = gate->other_kind;
    zkl__attempt_prepared_locked(att, rc);
  } else if (rc == ZKL_OK && gate->att) {
    /* granted to an attempt that is over: give it back */
    zkl__attempt_event_locked(gate->att, ZKL_EV_RELEASE, 0, &none);
  } else {
    gate_ask_locked(l); /* the gate is free for the next one */
  }
  zkl__attempt_unref_locked(att); /* the hook's */
}

static void gate_released_locked(void *ctx, int rc, int64_t token) {
  zkl_lock *l = ctx;
  (void)rc;
  (void)token;
  gate_ask_locked(l);
  zkl__lock_unref_locked(l); /* the hook's */
}

static void gate_ask_locked(zkl_lock *l) {
  zkl_attempt *att = l->att;
  zkl_target t = {0};
  int rc;
  if (!att || zkl__attempt_state(att) != ZKL_AS_PREPARING || l->parts[0]->att)
    return; /* not wanted, or not free yet */
  t.hook_locked = gate_done_locked;
  t.hook_ctx = att;
  zkl__attempt_ref_locked(att); /* the hook's, until it runs */
  rc = zkl__attempt_start_locked(l->parts[0], -1, &t);
  if (rc != ZKL_OK) {
    zkl__attempt_unref_locked(att);
    zkl__attempt_prepared_locked(att, rc);
  }
}

static void gate_take_locked(zkl_attempt *att) {
  gate_ask_locked(zkl__attempt_lock(att));
}

/* Lets go of the gate: the attempt holds a lease, or has ended. */
static void gate_let_go_locked(zkl_attempt *att) {
  zkl_lock *l = zkl__attempt_lock(att), *gate = l->parts[0];
  zkl_target released = {0};
  if (!gate->att)
    return;
  if (zkl__attempt_state(gate->att) == ZKL_AS_HELD) {
    released.hook_locked = gate_released_locked;
    released.hook_ctx = l;
    zkl__lock_ref_locked(l); /* the hook's */
    zkl__attempt_event_locked(gate->att, ZKL_EV_RELEASE, 0, &released);
  } else if (zkl__attempt_acquiring(gate->att)) {
    zkl__attempt_event_locked(gate->att, ZKL_EV_CANCEL, ZKL_ECANCELED, NULL);
  }
}

/* The gate's hold can end while the attempt waits past it, its lease node
 * made: lost (the lease ran out in a blip, say, or someone deleted the gate
 * node), or let go. The attempt waits on without it: its lease node keeps
 * its place, and the lease rule alone keeps at most N (lease_decide); the
 * gate only orders those yet to make a lease node, all of whom come after
 * ours and count it. So no part_ended_locked hook: a waiter fails only as
 * a mutex waiter does (its own node deleted, its session over). */

/* ------------------------------------------------------------- the recipes */

/* Our lease nodes say their contender's limit in their name (kinds.h), so
 * that every contender's listing shows it (lease_decide), and in their
 * data, as older versions did, so that a reader of those can tell who
 * holds one (zkl__kinds_holders); and, made without the gate, say that
 * too (TRY_ONCE_TAG). */
static int lease_tag_locked(const void *arg, bool skips_prepare, char *buf,
                            size_t len) {
  int n = snprintf(buf, len, "%s%d-%s", ZKL_LIMIT_TAG, limit_of(arg),
                   skips_prepare ? TRY_ONCE_TAG : "");
  return n < 0 || (size_t)n >= len ? 0 : n;
}

/* The first try, made without the gate, holds when the lease rule grants
 * it and nobody is at the gate: whoever is there came first, and the try
 * gives way to it (strict FIFO); so does a try that cannot tell (a
 * listing of the gate that failed; ZNONODE: no gate yet, nobody). */
static bool lease_try_verdict_locked(const void *arg, const zkl_verdict *own,
                                     const zkl_part_listing *parts,
                                     int n_parts) {
  int i;
  (void)arg;
  if (own->kind != ZKL_GRANT)
    return false;
  for (i = 0; i < n_parts; i++)
    if (parts[i].rc == ZOK ? parts[i].count > 0 : parts[i].rc != ZNONODE)
      return false;
  return true;
}

static int lease_owner_line(const void *arg, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s=%d\n",
                   zkl__node_kinds[ZKL_NODE_LEASE].data_key, limit_of(arg));
  return n < 0 || (size_t)n >= len ? 0 : n;
}

const zkl_recipe zkl__recipe_lease = {
    .name = "lease",
    .node = ZKL_NODE_LEASE,
    .list_with_watch = true,
    .decide_locked = lease_decide,
    .node_tag_locked = lease_tag_locked,
    .owner_line = lease_owner_line,
    /* A try-once skips the gate (see zkl_recipe.prepare_locked): it
     * cannot wait there, and a gate held for a moment by a contender
     * leaving it would make it fail (the gate's node is deleted after the
     * lease is granted, and another session's request can reach the
     * server first). The lease rule keeps it safe without the gate. */
    .prepare_locked = gate_take_locked,
    .unprepare_locked = gate_let_go_locked,
    /* The gate-free first try: see the top of this file. */
    .try_before_prepare = true,
    .try_verdict_locked = lease_try_verdict_locked,
};

/* The gate: a mutex in locks/, of the semaphore's family. */
static const zkl_recipe gate_recipe = {
    .name = "gate",
    .node = ZKL_NODE_GATE,
    .decide_locked = zkl__first_goes,
};

int zkl_lock_new_semaphore(zkl_lock **out, zkl_session *s, const char *name,
                           int limit) {
  if (out && s && name && ZKL_REMOTE_SESSION(s)) {
    if (limit < 1)
      return ZKL_EINVAL;
    return zkl__remote_new(out, s, ZKL_AGENT_SEMAPHORE, &name, 1, limit,
                           NULL);
  }
  char queue[ZKL_PATH_MAX];
  zkl_lock *gate, *l;
  int rc;
  if (!out || !s || limit <= 0 || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  zkl__name_path(queue, sizeof queue, name, "locks");
  rc = zkl__contender_new(&gate, s, name, queue, &gate_recipe, NULL);
  if (rc != ZKL_OK)
    return rc;
  zkl__name_path(queue, sizeof queue, name, "leases");
  rc = zkl__contender_new(&l, s, name, queue, &zkl__recipe_lease,
                          (const void *)(intptr_t)limit);
  if (rc != ZKL_OK) {
    zkl__contender_free(gate);
    return rc;
  }
  rc = zkl__lock_add_part(l, gate); /* not the user's: freed with l */
  if (rc != ZKL_OK) {
    zkl__contender_free(gate);
    zkl__contender_free(l);
    return rc;
  }
  *out = l;
  return ZKL_OK;
}
