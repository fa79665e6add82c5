/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.c - the attempt state machine, the same for every recipe.
 *
 * An attempt is one acquisition of one zkl_lock, from its first request to
 * the end of its hold. It has one state; GO (zkl__att_go_locked) makes
 * every transition (it bumps the round, so that replies of requests a
 * state sent are stale once it is left, and checks the edge against the
 * diagram), leaves the old state (leave_locked: it releases what that
 * state owned) and enters the new one (enter_locked: one case per state). end_locked() ends an attempt,
 * whatever the reason. States send requests and arm watches; their replies
 * and events make the next transition: that is one cycle by nature, so it
 * stays in one file, each function short, but for one job: what a recipe's
 * nodes made together, one per part, do in each state (a multi-lock's)
 * is together.c's, called from the states here through the table the
 * recipe names (zkl_recipe.together: the engine names no file above it,
 * and the two are no circle; attempt.h is the attempt they share).
 * entries.c posts what the outside says
 * (zkl__attempt_event_locked); io.c and watch.c carry the requests.
 *
 *   NEW -> [PREPARING ->] CREATING -> LISTING <-> WATCHING | WAITING -> HELD
 *          -> RELEASING -> ENDED, with SUSPENDED (resumed at the reconnect)
 *          and RECOVERING (a lost create) on the side, ENDING (clean up,
 *          then ENDED) for every acquire that fails, and STOPPING for a
 *          hold past its maximum or its lease (told first, its node let go
 *          after the holder did, or at a deadline).
 *   Two general abilities take short cuts: an attempt whose node another
 *   made (a multi-lock's part: one transaction made the nodes of every
 *   part) starts at LISTING (NEW -> LISTING); and an attempt of a recipe
 *   whose nodes are one per part, made together (ZKL_MAKE_PARTS_TOGETHER:
 *   a multi-lock's whole) makes them in one transaction (CREATING, or
 *   RECOVERING after a lost reply), hands them to its parts and waits in
 *   PARTS until every part holds (-> HELD); its release deletes them in
 *   one transaction (RELEASING). See together.c.
 *
 * The edges exactly (zkl__edge_allowed, the table below, is the diagram the
 * code checks; a test drives every edge):
 *   NEW        -> PREPARING | CREATING | SUSPENDED | LISTING (adopted: its
 *                 node was made for it)
 *   PREPARING  -> CREATING | ENDING
 *   CREATING   -> CREATING (the parents were missing) | CONFIRMING
 *                 (granted, but with less than half a lease ahead) |
 *                 WATCHING | WAITING | HELD | SUSPENDED | ENDING | PARTS
 *                 (made together: the nodes made)
 *   RECOVERING -> CREATING (our node is not there) | LISTING (adopted) |
 *                 PARTS (made together: adopted) | SUSPENDED | ENDING
 *   PARTS      -> HELD (every part holds) | ENDING
 *   LISTING    -> CONFIRMING (as above) | WATCHING | WAITING | HELD |
 *                 SUSPENDED | ENDING
 *   WATCHING   -> LISTING | CONFIRMING | HELD | SUSPENDED | ENDING
 *   WAITING    -> LISTING | ENDING (its watch is armed: a lost connection
 *                 does not undo it)
 *   CONFIRMING -> LISTING (the lease is fresh again: a listing confirms the
 *                 grant still stands) | ENDING
 *   SUSPENDED  -> CREATING | RECOVERING | LISTING | ENDING
 *   HELD       -> RELEASING | ENDED (lost, or closed with the session) |
 *                 STOPPING (its maximum hold or its lease ran out)
 *   RELEASING  -> HELD (the server refused the delete) | ENDED
 *   STOPPING   -> ENDED (the holder let go, its grace ran out, the node
 *                 went, the session ended or closes)
 *   ENDING     -> ENDED (once its requests settled)
 *
 * What each state owns (and leaving it releases):
 *   PREPARING   what its recipe's prepare hook started (a semaphore's
 *               gate) until the recipe says it is done; the recipe lets go
 *               of it (unprepare hook) when the attempt is granted or ends
 *   CREATING    the create, the parents' creates, the listing (made
 *               together: the parents' creates and the transaction)
 *   RECOVERING  the listing, then the getData of the node found (made
 *               together: the ordering write, a listing per queue, then
 *               the getData of the first node found)
 *   PARTS       the token's getData; the parts' attempts (each counted as
 *               a request until its acquire ends); the nodes not yet
 *               handed to a part (ENDING deletes them, and lets go of the
 *               parts)
 *   LISTING     the listing (with a child watch for list_with_watch
 *               recipes, handed to WAITING or dropped)
 *   WATCHING    the data watch on the node waited for (dropped on leaving)
 *   WAITING     the child watch (dropped on leaving)
 *   CONFIRMING  its count among the grants the lease's beats hurry for
 *   SUSPENDED   nothing: the reconnect resumes it (the node is known: list;
 *               a create's outcome is unknown: recover; else create)
 *   HELD        the hold: the hold count, the token, the lease's count,
 *               and the maximum hold's deadline (zkl_lock_set_max_hold():
 *               the clock's tick ends the hold, HELD -> STOPPING)
 *   RELEASING   the delete (made together: the transaction of deletes)
 *   STOPPING    the node of a hold that ran past its maximum, and its
 *               grace's deadline (zkl_lock_set_max_hold_grace()), or of a
 *               hold whose lease ran out, until the leader may expire the
 *               session (the lease's deadline plus its margin): the
 *               hold ended as a loss on entering (the lost notice and
 *               event go to the timer thread, which runs them before its
 *               next tick), and the node stays, keeping the next
 *               contender out, until the holder lets go (a release, a
 *               free), the grace runs out (a later tick, after those
 *               notices ran: a grace of 0 too), the node goes, or the
 *               session ends; on leaving, the node goes as a released
 *               one would (its recipe may keep it: a downgrade's)
 *   ENDING      the cleanup it launched (the node's delete, or a deletion
 *               by prefix), until its requests settle
 * The watch on our own node is armed at the start of a wait, or once a
 * hold has lasted its lock's watch_after_ms (zkl_lock_set_watch_after():
 * most holds are shorter, and it is one read more per cycle), and kept to
 * the end of the hold (wants_own_watch): it tells a waiter or holder when
 * someone deletes its node, and what was written into it first: a revoke
 * request, or a break's mark (break.c), after which the deletion is a break
 * (ZKL_LOST_BROKEN). Its last event is our own delete's. A younger hold
 * learns of a deletion at the arming, or from its release (ZNONODE: lost).
 *
 * Round trips, counted by the tests:
 *   acquire, lock free:    1 (create and listing sent back to back; the
 *                            token is the create's own czxid): 3 requests
 *                            a cycle with the release's delete
 *   first use of a name:   +1 (the parents are created as containers,
 *                            pipelined with a second create and listing)
 *   handoff:               0: a waiter watches its predecessor and the node
 *                            before it (ahead); when that one goes, the
 *                            waiter lists again while its predecessor holds
 *                            (none when it was the first: ahead_grants), so
 *                            the predecessor's deletion grants it with no
 *                            listing on the way, however long the queue
 *   release:               1 (delete)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attempt.h"

/* The test hooks (lib/internal.h): only in the library the tests link. */
#ifdef ZKL_TEST_HOOKS
void (*zkl__hook_before_watch)(const char *pred_path);
int zkl__test_stale_grants;
int zkl__test_hold_confirming;
int zkl__test_no_first_try;

static bool test_stale_grant(void) {
  return __atomic_load_n(&zkl__test_stale_grants, __ATOMIC_RELAXED) > 0 &&
         __atomic_sub_fetch(&zkl__test_stale_grants, 1, __ATOMIC_RELAXED) >= 0;
}
static bool test_hold_confirming(void) {
  return __atomic_load_n(&zkl__test_hold_confirming, __ATOMIC_RELAXED);
}
static bool test_no_first_try(void) {
  return __atomic_load_n(&zkl__test_no_first_try, __ATOMIC_RELAXED);
}
static void test_before_watch(const char *path) {
  if (zkl__hook_before_watch)
    zkl__hook_before_watch(path);
}
#else
static bool test_stale_grant(void) { return false; }
static bool test_hold_confirming(void) { return false; }
static bool test_no_first_try(void) { return false; }
static void test_before_watch(const char *path) { (void)path; }
#endif


static void end_locked(zkl_attempt *att, int why, int code);
static void evaluate_locked(zkl_attempt *att,
                            const struct String_vector *children);
static void on_listing_locked(zkl_attempt *att, int rc,
                              const struct String_vector *children);
static void arm_own_watch_locked(zkl_attempt *att);
static void want_own_watch_locked(zkl_attempt *att);
static void on_refresh_listing_locked(zkl_attempt *att, int rc,
                                      const struct String_vector *children);
static const zkl_io_ops io_ops;

/* ------------------------------------------------------------ the diagram */

#define E(from, to) [ZKL_AS_##from][ZKL_AS_##to] = true
static const bool edges[ZKL_AS_COUNT][ZKL_AS_COUNT] = {
    E(NEW, PREPARING),        E(NEW, CREATING),        E(NEW, SUSPENDED),
    E(NEW, LISTING),          E(CREATING, PARTS),      E(RECOVERING, PARTS),
    E(PARTS, HELD),           E(PARTS, ENDING),
    E(CREATING, PREPARING),   E(LISTING, PREPARING),
    E(PREPARING, CREATING),   E(PREPARING, ENDING),
    E(CREATING, CREATING), E(CREATING, LISTING),    E(CREATING, WATCHING),
    E(CREATING, WAITING),  E(CREATING, HELD),       E(CREATING, SUSPENDED),
    E(CREATING, ENDING),   E(RECOVERING, CREATING), E(RECOVERING, LISTING),
    E(RECOVERING, SUSPENDED), E(RECOVERING, ENDING), E(LISTING, LISTING),
    E(LISTING, WATCHING),  E(LISTING, WAITING),     E(LISTING, HELD),
    E(CREATING, CONFIRMING), E(LISTING, CONFIRMING), E(WATCHING, CONFIRMING),
    E(CONFIRMING, LISTING), E(CONFIRMING, ENDING),
    E(LISTING, SUSPENDED), E(LISTING, ENDING),      E(WATCHING, LISTING),
    E(WATCHING, HELD),     E(WATCHING, SUSPENDED),  E(WATCHING, ENDING),
    E(WAITING, LISTING),   E(WAITING, ENDING),
    E(SUSPENDED, CREATING), E(SUSPENDED, RECOVERING), E(SUSPENDED, LISTING),
    E(SUSPENDED, ENDING),  E(HELD, RELEASING),      E(HELD, ENDED),
    E(HELD, STOPPING),     E(STOPPING, ENDED),
    E(RELEASING, HELD),    E(RELEASING, ENDED),     E(ENDING, ENDED),
};
#undef E

static const char *const state_names[ZKL_AS_COUNT] = {
    "NEW",        "PREPARING", "CREATING", "RECOVERING", "PARTS",
    "LISTING",    "WATCHING",  "WAITING",  "CONFIRMING",
    "SUSPENDED",  "HELD",      "RELEASING", "STOPPING",
    "ENDING",     "ENDED"};

static unsigned long edge_counts[ZKL_AS_COUNT][ZKL_AS_COUNT];
static unsigned long edge_violations;

bool zkl__edge_allowed(int from, int to) {
  return from >= 0 && from < ZKL_AS_COUNT && to >= 0 && to < ZKL_AS_COUNT &&
         edges[from][to];
}

const char *zkl__state_name(int state) {
  return state >= 0 && state < ZKL_AS_COUNT ? state_names[state] : "?";
}

unsigned long zkl__edge_count(int from, int to) {
  return __atomic_load_n(&edge_counts[from][to], __ATOMIC_RELAXED);
}

unsigned long zkl__edge_violations(void) {
  return __atomic_load_n(&edge_violations, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------- the basics */


static void own_path(const zkl_attempt *att, char *buf) {
  snprintf(buf, ZKL_PATH_MAX, "%s/%s", att->l->queue, att->node);
}

static const zkl_node_kind *own_kind(const zkl_attempt *att) {
  return &zkl__node_kinds[att->l->recipe->node];
}

/* The nodes of our queue: every family's in our place (kinds.h). */
static zkl_nodes queue_nodes(const zkl_attempt *att) {
  zkl_nodes n = {own_kind(att)->place, ZKL_FAMILIES_ALL};
  return n;
}

/* Where the watch on our own node is wanted: once asked for (a wait, or a
 * hold past its lock's watch_after_ms), while the node is ours. */
static bool wants_own_watch(const zkl_attempt *att) {
  return att->own == OWN_KNOWN && att->own_watch_wanted &&
         ((att->state >= ZKL_AS_CREATING && att->state <= ZKL_AS_SUSPENDED) ||
          att->state == ZKL_AS_HELD);
}

static void attempt_unref_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  int i;
  if (--att->refs > 0)
    return;
  /* A target never told keeps its record. */
  zkl__notice_free(att->acq.notice);
  zkl__notice_free(att->rel.notice);
  free(att->node);
  free(att->wait_for);
  free(att->ahead_of);
  free(att->part_lists);
  if (att->nodes) {
    for (i = 0; i < l->n_parts; i++)
      free(att->nodes[i]);
    free(att->nodes);
  }
  free(att);
  zkl__lock_unref_locked(l);
}

/* Requests of the attempt: each holds a reference and counts as pending
 * until its reply. */
static void req_begin(zkl_attempt *att) {
  att->refs++;
  att->pending++;
}

/* A fresh unique prefix for the attempt's node, with its recipe's tag, if
 * any (zkl_recipe.node_tag_locked), told whether the node skips its
 * recipe's preparation (a try-once's, or a first try's before preparing:
 * a semaphore's lease node made without the gate says so). */
static int make_prefix(zkl_attempt *att) {
  const zkl_recipe *r = att->l->recipe;
  char marker[ZKL_PREFIX_MAX], tag[ZKL_TAG_MAX] = "";
  bool skips = r->prepare_locked && (att->try_once || att->unprepared_try);
  if (r->node_tag_locked &&
      r->node_tag_locked(att->l->arg, skips, tag, sizeof tag) <= 0)
    tag[0] = '\0';
  snprintf(marker, sizeof marker, "%s%s", tag, own_kind(att)->marker);
  return zkl__make_prefix_with(att->prefix, marker);
}

/* Undoes req_begin for a request the client refused; returns rc. */
static int req_refused_locked(zkl_attempt *att, int rc) {
  att->pending--;
  attempt_unref_locked(att);
  return rc;
}

/* -------------------------------------------------------- the transitions */

/* ZKLOCK_TRACE=1 logs every transition with the line that made it. Read
 * once, by whichever session's thread gets here first: the flag is atomic
 * (two threads may both read the environment; they store the same). */
static bool tracing(void) {
  static int on = -1;
  int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *env = getenv("ZKLOCK_TRACE");
    v = env && *env && strcmp(env, "0") != 0;
    __atomic_store_n(&on, v, __ATOMIC_RELAXED);
  }
  return v;
}

static void count_edge(zkl_attempt *att, zkl_att_state to, const char *file,
                       int line) {
  const char *slash = strrchr(file, '/');
  file = slash ? slash + 1 : file;
  if (tracing())
    zkl__log("%s %s %p: %s -> %s (%s:%d)", att->l->recipe->name,
             att->l->queue, (void *)att, state_names[att->state],
             state_names[to], file, line);
  if (edges[att->state][to]) {
    __atomic_fetch_add(&edge_counts[att->state][to], 1, __ATOMIC_RELAXED);
    return;
  }
  __atomic_fetch_add(&edge_violations, 1, __ATOMIC_RELAXED);
  zkl__log("lock %s: %s -> %s is not in the diagram (%s:%d)", att->l->name,
           state_names[att->state], state_names[to], file, line);
}

/* Releases what the state left owned. */
static void leave_locked(zkl_attempt *att, zkl_att_state from,
                         zkl_att_state to) {
  zkl_lock *l = att->l;
  if (att->wait && to != ZKL_AS_WAITING) {
    zkl__watch_drop_locked(att->wait); /* its events are stale from now */
    att->wait = NULL;
  }
  if (att->ahead) {
    zkl__watch_drop_locked(att->ahead);
    att->ahead = NULL;
  }
  if (from == ZKL_AS_CONFIRMING)
    zkl__lease_confirming_locked(sess(att), -1);
  if (from == ZKL_AS_HELD) {
    zkl__lease_hold_locked(sess(att), -1);
    l->hold_count = 0;
    l->token = 0;
  }
  if (to == ZKL_AS_HELD || to == ZKL_AS_ENDING)
    att->deadline_ms = 0;
}

static void enter_preparing_locked(zkl_attempt *att);
static void enter_creating_locked(zkl_attempt *att);
static void enter_listing_locked(zkl_attempt *att);
static void enter_watching_locked(zkl_attempt *att);
static void enter_suspended_locked(zkl_attempt *att);
static void enter_held_locked(zkl_attempt *att);
static void enter_releasing_locked(zkl_attempt *att);
static void enter_stopping_locked(zkl_attempt *att);
static void enter_ending_locked(zkl_attempt *att);
static void enter_ended_locked(zkl_attempt *att, zkl_att_state from);
static void enter_recovering_locked(zkl_attempt *att);

static void enter_locked(zkl_attempt *att, zkl_att_state from) {
  switch (att->state) {
  case ZKL_AS_PREPARING:
    enter_preparing_locked(att);
    break;
  case ZKL_AS_CREATING:
    if (zkl__together(att))
      zkl__together_of(att)->create_locked(att);
    else
      enter_creating_locked(att);
    break;
  case ZKL_AS_RECOVERING:
    if (zkl__together(att))
      zkl__together_of(att)->recover_locked(att);
    else
      enter_recovering_locked(att);
    break;
  case ZKL_AS_PARTS:
    zkl__together_of(att)->parts_locked(att);
    break;
  case ZKL_AS_LISTING:
    enter_listing_locked(att);
    break;
  case ZKL_AS_WATCHING:
    enter_watching_locked(att);
    break;
  case ZKL_AS_WAITING:
    /* the listing armed the child watch; it is att->wait now */
    want_own_watch_locked(att);
    break;
  case ZKL_AS_CONFIRMING:
    zkl__lease_confirming_locked(sess(att), +1);
    break;
  case ZKL_AS_SUSPENDED:
    enter_suspended_locked(att);
    break;
  case ZKL_AS_HELD:
    enter_held_locked(att);
    break;
  case ZKL_AS_RELEASING:
    enter_releasing_locked(att);
    break;
  case ZKL_AS_STOPPING:
    enter_stopping_locked(att);
    break;
  case ZKL_AS_ENDING:
    enter_ending_locked(att);
    break;
  case ZKL_AS_ENDED:
    enter_ended_locked(att, from);
    break;
  default:
    break;
  }
}

void zkl__att_go_locked(zkl_attempt *att, zkl_att_state to, const char *file,
                        int line) {
  zkl_att_state from = att->state;
  att->refs++; /* an entry action may drop the last other reference */
  count_edge(att, to, file, line);
  leave_locked(att, from, to);
  att->state = to;
  att->round++;
  enter_locked(att, from);
  attempt_unref_locked(att);
}

/* Ends an attempt, whatever the reason: an acquire that fails (END_FAIL,
 * code: its status) cleans up first (ENDING); a hold that is lost (END_LOST,
 * code: the reason), released (END_RELEASED, code: the release's status) or
 * taken by the session's close (END_CLOSED) ends at once. */
static void end_locked(zkl_attempt *att, int why, int code) {
  att->why = why;
  att->code = code;
  GO(att, why == END_FAIL ? ZKL_AS_ENDING : ZKL_AS_ENDED);
}

/* The connection dropped before the server answered. A try-once acquire is
 * one exchange with the server: it fails now rather than wait for a
 * reconnect that may take as long as the outage. */
static void suspend_locked(zkl_attempt *att) {
  if (att->try_once)
    end_locked(att, END_FAIL, ZKL_ECONNECT);
  else
    GO(att, ZKL_AS_SUSPENDED);
}

/* The one triage of a failed reply, for every handler, once it has looked
 * for the codes it expects (ZNONODE, ZNODEEXISTS, ...): a lost connection
 * suspends the attempt (the reconnect resumes it); a session that is over
 * leaves it to the session's hook (ZKL_EV_OVER ends it); anything else
 * ends it with that code. */
static void triage_locked(zkl_attempt *att, int rc) {
  if (zkl__is_connection_loss(rc))
    suspend_locked(att);
  else if (!zkl__is_session_over(rc))
    end_locked(att, END_FAIL, rc);
}

/* Granted by the rule: held, if at least half a lease is ahead. One rule
 * for every grant, on an answer or on a watch event: an answer proves
 * nothing of the lease by itself (a follower's is not the leader's,
 * lease.c), and an event may come after a pause of the process or a
 * stalled connection, when the lease is almost over; the holder would
 * then be told ZKL_LOST_LEASE_EXPIRED a moment after it began its work.
 * With less ahead, the grant waits (CONFIRMING) for the lease's next
 * proof, which the beats hurry (a write at once when a sync is at hand),
 * then lists once more: the node may have gone meanwhile. */
static void grant_locked(zkl_attempt *att, bool on_event) {
  zkl_session *s = sess(att);
  int64_t now = zkl__now_ms();
  if (test_stale_grant() || !zkl__lease_fresh_locked(s, now)) {
    zkl__log("lock %s: granted (on %s) with %lld ms of the lease left: "
             "waiting for a fresher lease",
             att->l->name, on_event ? "an event" : "an answer",
             (long long)zkl__lease_left_locked(s, now));
    GO(att, ZKL_AS_CONFIRMING);
  } else {
    GO(att, ZKL_AS_HELD);
  }
}

/* Deliver a failed acquire once the attempt's requests (its cleanup among
 * them) have settled; at once when disconnected, since they then settle
 * only when the client gives up a connection attempt. */
static void maybe_deliver_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  if (att->state != ZKL_AS_ENDING)
    return;
  if (att->pending > 0 && s->connected && !s->dead)
    return;
  GO(att, ZKL_AS_ENDED);
}

/* ---------------------------------------------------- what happened */

/* Tells the session's event hook, if any. A part of another contender (a
 * semaphore's gate) tells nothing of its own, but its queueing while the
 * whole prepares is the whole's queueing: that is told as the whole's
 * QUEUED (the part's node waited for, the contenders ahead there). */
static void emit_locked(zkl_attempt *att, int type, int reason,
                        const char *waiting_for, int position) {
  zkl_lock *l = att->l;
  zkl_event ev = {0};
  int64_t now;
  if (!l->s->event_cb)
    return;
  if (l->whole) {
    zkl_lock *whole = l->whole;
    if (type == ZKL_EVENT_QUEUED && whole->att &&
        (whole->att->state == ZKL_AS_PREPARING ||
         whole->att->state == ZKL_AS_PARTS))
      emit_locked(whole->att, type, reason, waiting_for, position);
    return;
  }
  now = zkl__now_ms();
  ev.type = type;
  ev.lock = l;
  ev.name = l->name;
  ev.node = att->own == OWN_KNOWN ? att->node : NULL;
  ev.waiting_for = waiting_for;
  ev.position = position;
  ev.reason = reason;
  ev.token = type == ZKL_EVENT_GRANTED ? att->czxid : 0;
  if (type == ZKL_EVENT_RELEASED || type == ZKL_EVENT_LOST)
    ev.hold_ms = now - att->granted_ms;
  else
    ev.wait_ms = now - att->started_ms;
  zkl__emit_locked(l->s, &ev, type == ZKL_EVENT_LOST ? att->direct : NULL);
}

static void count_wait(zkl_lock_stats *st, int64_t ms, bool hold) {
  int64_t *total = hold ? &st->hold_total_ms : &st->wait_total_ms;
  int64_t *most = hold ? &st->hold_max_ms : &st->wait_max_ms;
  *total += ms;
  if (ms > *most)
    *most = ms;
}

/* The lock's counters and the event hook, when an attempt ends. */
static void record_end_locked(zkl_attempt *att) {
  zkl_lock_stats *st = &att->l->stats;
  int64_t now = zkl__now_ms();
  switch (att->why) {
  case END_FAIL:
    if (att->code == ZKL_ETIMEDOUT) {
      st->timeouts++;
      emit_locked(att, ZKL_EVENT_TIMED_OUT, 0, NULL, 0);
    } else if (att->code == ZKL_ECANCELED || att->code == ZKL_ECLOSED) {
      st->cancels++;
      emit_locked(att, ZKL_EVENT_CANCELED, att->code, NULL, 0);
    } else {
      st->failures++;
      emit_locked(att, ZKL_EVENT_FAILED, att->code, NULL, 0);
    }
    break;
  case END_LOST:
    st->losses++;
    count_wait(st, now - att->granted_ms, true);
    emit_locked(att, ZKL_EVENT_LOST, att->code, NULL, 0);
    break;
  default: /* released, or by the session's close */
    st->releases++;
    count_wait(st, now - att->granted_ms, true);
    emit_locked(att, ZKL_EVENT_RELEASED, 0, NULL, 0);
    break;
  }
}

/* ----------------------------------------------------------- preparing */

static void enter_preparing_locked(zkl_attempt *att) {
  att->l->recipe->prepare_locked(att);
}

/* Lets go of what the preparation got, when the attempt needs it no more. */
static void unprepare_locked(zkl_attempt *att) {
  if (att->l->recipe->unprepare_locked)
    att->l->recipe->unprepare_locked(att);
}

void zkl__attempt_prepared_locked(zkl_attempt *att, int rc) {
  int i;
  if (att->state != ZKL_AS_PREPARING)
    return;
  if (rc != ZKL_OK) {
    end_locked(att, END_FAIL, rc);
    return;
  }
  /* A part in the name's places (a semaphore's gate) made its node and
   * looked at the name itself first, and keeps that node until this
   * attempt's own node exists (it lets go at the grant or the end): the
   * kinds check is done for both (kinds.h). */
  for (i = 0; att->check == CHECK_WANTED && i < att->l->n_parts; i++)
    if (zkl__node_kinds[att->l->parts[i]->recipe->node].place !=
        ZKL_PLACE_NAME)
      att->check = CHECK_DONE;
  GO(att, ZKL_AS_CREATING); /* a lost connection suspends it there */
}

/* The release found the hold's node gone: someone deleted it (zkl_name_break(),
 * by hand) while no watch was on it yet (see zkl_lock_set_watch_after()),
 * or just before. The hold ends as lost; the release says ZKL_ELOST. */
static void lost_at_release_locked(zkl_attempt *att) {
  end_locked(att, END_LOST,
             att->break_marked || att->changed_unread ? ZKL_LOST_BROKEN
                                                      : ZKL_LOST_NODE_DELETED);
}

void zkl__attempt_req_begin_locked(zkl_attempt *att) { req_begin(att); }

void zkl__attempt_req_end_locked(zkl_attempt *att) {
  att->pending--;
  maybe_deliver_locked(att);
  attempt_unref_locked(att);
}

zkl_lock *zkl__attempt_lock(const zkl_attempt *att) { return att->l; }
void zkl__attempt_ref_locked(zkl_attempt *att) { att->refs++; }
void zkl__attempt_unref_locked(zkl_attempt *att) { attempt_unref_locked(att); }
bool zkl__attempt_acquiring(const zkl_attempt *att) {
  return acquiring(att->state);
}
bool zkl__attempt_try_once(const zkl_attempt *att) { return att->try_once; }

/* ----------------------------------------------------------- own watch */

static void own_node_gone_locked(zkl_attempt *att) {
  if (att->state == ZKL_AS_HELD) {
    /* A change we could not read before the node went: only a break
     * writes and then deletes (a revoke never deletes). */
    end_locked(att, END_LOST,
               att->break_marked || att->changed_unread
                   ? ZKL_LOST_BROKEN
                   : ZKL_LOST_NODE_DELETED);
  } else if (acquiring(att->state)) {
    /* Nothing left to delete: forget the node before ending. */
    att->own = OWN_NONE;
    end_locked(att, END_FAIL, ZKL_ELOST);
  } else if (att->state == ZKL_AS_STOPPING) {
    /* Deleted in its grace (a break): nothing left to keep. */
    att->own = OWN_NONE;
    GO(att, ZKL_AS_ENDED);
  }
  /* RELEASING, ENDING, ENDED: we deleted it ourselves. */
}

static void own_armed_locked(zkl_watch *w, int rc, const char *data, int len,
                             const struct Stat *stat, const void *children) {
  zkl_attempt *att = zkl__watch_owner(w);
  (void)children;
  att->pending--;
  if (att->own_watch != w) {
    maybe_deliver_locked(att); /* stale: dropped meanwhile */
    return;
  }
  if (rc != ZOK) {
    att->own_watch = NULL;
    zkl__watch_drop_locked(w);
  }
  if (rc == ZOK) {
    bool breaking = zkl__is_break_mark(data, len); /* break.c */
    /* A node whose data others read as it is (an election's id) is
     * written again unchanged by a revoke or a break (kinds.h keeps_data),
     * which only its version tells: we never write our own node. Which of
     * the two it was does not show: its deletion, should one come, is
     * taken for a break (a revoke never deletes). */
    bool asked = own_kind(att)->keeps_data && stat && stat->version > 0;
    att->changed_unread = false;
    if (breaking || asked)
      att->break_marked = true; /* its deletion, to come, is a break */
    if (breaking)
      att->break_seen = true;
    if (breaking || asked || (len == 10 && memcmp(data, "__REVOKE__", 10) == 0))
      zkl__notify_revoke_locked(att->l); /* someone asks us to let go */
  } else if (rc == ZNONODE)
    own_node_gone_locked(att);
  /* A lost connection: re-armed at the reconnect if still wanted. */
  else if (rc != ZOK && !zkl__is_connection_loss(rc) &&
           !zkl__is_session_over(rc))
    zkl__log("watch on own node of %s failed: %s", att->l->name, zerror(rc));
  maybe_deliver_locked(att);
}

static void own_fired_locked(zkl_watch *w, int type) {
  zkl_attempt *att = zkl__watch_owner(w);
  att->own_watch = NULL;
  zkl__watch_drop_locked(w);
  if (type == ZOO_DELETED_EVENT) {
    own_node_gone_locked(att);
  } else if (wants_own_watch(att)) {
    att->changed_unread = type == ZOO_CHANGED_EVENT;
    arm_own_watch_locked(att); /* data changed: read and watch again */
  }
}

static void watch_released_locked(zkl_watch *w) {
  zkl_attempt *att = zkl__watch_owner(w);
  if (att->own_watch == w)
    att->own_watch = NULL;
  if (att->wait == w)
    att->wait = NULL;
  if (att->ahead == w)
    att->ahead = NULL;
  attempt_unref_locked(att);
}

static const zkl_watch_ops own_watch_ops = {own_armed_locked, own_fired_locked,
                                            watch_released_locked};

/* Not waited for: it only ever reports bad news (or a revoke request). */
static void arm_own_watch_locked(zkl_attempt *att) {
  char path[ZKL_PATH_MAX];
  int rc;
  if (att->own_watch || !wants_own_watch(att))
    return;
  own_path(att, path);
  req_begin(att);
  att->own_watch = zkl__watch_arm_locked(sess(att), ZKL_WATCH_DATA,
                                         ZKL_RQ_OWN_GET, path, &own_watch_ops,
                                         att, &rc);
  if (!att->own_watch) {
    req_refused_locked(att, rc);
    zkl__log("no watch on own node of %s: %s", att->l->name, zkl_strerror(rc));
  }
}

/* From now on the watch on our own node is wanted: sent at once (a waiter
 * sends it beside the watch it waits on, so it costs no round trip). */
static void want_own_watch_locked(zkl_attempt *att) {
  att->own_watch_wanted = true;
  att->own_watch_at_ms = 0;
  arm_own_watch_locked(att);
}

/* ------------------------------------------------------- waiting watches */

static void wait_armed_locked(zkl_watch *w, int rc, const char *data, int len,
                              const struct Stat *stat, const void *children) {
  zkl_attempt *att = zkl__watch_owner(w);
  (void)data;
  (void)len;
  (void)stat;
  att->pending--;
  if (att->wait != w) {
    /* stale: dropped meanwhile */
  } else if (att->state == ZKL_AS_WATCHING) {
    if (rc == ZNONODE) {
      /* Gone between our listing and the watch; getData set no watch. */
      if (att->grant_on_delete)
        grant_locked(att, false);
      else
        GO(att, ZKL_AS_LISTING);
    } else if (rc != ZOK) {
      triage_locked(att, rc);
    }
  } else {
    /* a listing with a child watch (CREATING, LISTING) */
    on_listing_locked(att, rc, children);
  }
  maybe_deliver_locked(att);
}

static void wait_fired_locked(zkl_watch *w, int type) {
  zkl_attempt *att = zkl__watch_owner(w);
  if (att->wait != w)
    return;
  if (att->state == ZKL_AS_WATCHING && type == ZOO_DELETED_EVENT &&
      att->grant_on_delete)
    grant_locked(att, true);
  else if (att->state == ZKL_AS_WATCHING || att->state == ZKL_AS_WAITING)
    GO(att, ZKL_AS_LISTING); /* a waiter that gave up, or the queue moved */
}

static const zkl_watch_ops wait_watch_ops = {
    wait_armed_locked, wait_fired_locked, watch_released_locked};

/* The node ahead of the one waited for is gone: the node waited for is
 * the first now (ahead_grants), or the queue is listed again. The watch on
 * the node waited for does the rest (a lost connection, an error: nothing
 * here). Its deletion event comes before the one of the node waited for
 * (events come in the order of the changes). */
static void ahead_gone_locked(zkl_attempt *att) {
  int rc;
  if (att->ahead_grants) {
    att->grant_on_delete = true;
    return;
  }
  req_begin(att); /* answered in on_refresh_listing_locked */
  rc = zkl__io_list_locked(sess(att), ZKL_RQ_LIST, att->l->queue, &io_ops,
                           att, att->round);
  if (rc != ZKL_OK) {
    req_refused_locked(att, rc);
    GO(att, ZKL_AS_LISTING);
  }
}

static void ahead_armed_locked(zkl_watch *w, int rc, const char *data,
                               int len, const struct Stat *stat,
                               const void *children) {
  zkl_attempt *att = zkl__watch_owner(w);
  (void)data;
  (void)len;
  (void)stat;
  (void)children;
  att->pending--;
  if (att->ahead == w && att->state == ZKL_AS_WATCHING && rc == ZNONODE)
    ahead_gone_locked(att);
  maybe_deliver_locked(att);
}

static void ahead_fired_locked(zkl_watch *w, int type) {
  zkl_attempt *att = zkl__watch_owner(w);
  if (att->ahead == w && att->state == ZKL_AS_WATCHING &&
      type == ZOO_DELETED_EVENT)
    ahead_gone_locked(att);
}

static const zkl_watch_ops ahead_watch_ops = {
    ahead_armed_locked, ahead_fired_locked, watch_released_locked};

/* Watches the node before the one waited for (att->ahead_of), if any. */
static void arm_ahead_locked(zkl_attempt *att) {
  char path[ZKL_PATH_MAX];
  int rc;
  if (att->ahead) {
    zkl__watch_drop_locked(att->ahead);
    att->ahead = NULL;
  }
  if (!att->ahead_of || att->state != ZKL_AS_WATCHING)
    return;
  snprintf(path, sizeof path, "%s/%s", att->l->queue, att->ahead_of);
  req_begin(att);
  att->ahead = zkl__watch_arm_locked(sess(att), ZKL_WATCH_DATA,
                                     ZKL_RQ_AHEAD_GET, path, &ahead_watch_ops,
                                     att, &rc);
  if (!att->ahead)
    req_refused_locked(att, rc); /* a hint only: wait without it */
}

/* ---------------------------------------------------------------- replies */

static void on_parent_reply_locked(zkl_attempt *att, const zkl_reply *rp) {
  int rc = rp->rc;
  /* ZNODEEXISTS is the usual answer. A refusal of its own (ZINVALIDACL for
   * a creator-only ACL without credentials, ZNOAUTH...) is kept: the create
   * behind it then fails with ZNONODE, which would hide the cause. */
  if (rp->round == att->round && rc != ZOK && rc != ZNODEEXISTS &&
      rc != ZNONODE && !zkl__is_connection_loss(rc) &&
      !zkl__is_session_over(rc)) {
    if (zkl__together(att) && !att->parent_rc)
      att->l->refused = zkl__together_of(att)->name_under(att, rp->path);
    att->parent_rc = rc;
  }
}

/* Deletes our node, now or at the reconnect. */
static void delete_own_locked(zkl_attempt *att, int kind);

static void on_create_reply_locked(zkl_attempt *att, const zkl_reply *rp) {
  zkl_session *s = sess(att);
  bool current = att->state == ZKL_AS_CREATING && rp->round == att->round;
  int rc = rp->rc;
  if (current)
    att->create_rc = rc;
  if (rc == ZOK) {
    const char *slash = strrchr(rp->value, '/');
    free(att->node);
    att->node = strdup(slash ? slash + 1 : rp->value);
    att->czxid = rp->stat->czxid;
    att->own = att->node ? OWN_KNOWN : OWN_UNKNOWN;
    if (att->own == OWN_UNKNOWN) {
      /* We cannot name our own node: the cleanup finds it by prefix. */
      if (current)
        att->create_rc = ZKL_ENOMEM;
      else
        zkl__cleanup_prefix_locked(s, att->l->queue, att->prefix);
    } else if (!current && !s->dead && !(s->closing && s->owns_handle)) {
      delete_own_locked(att, ZKL_RQ_DELETE); /* the attempt moved on */
    }
  } else if (zkl__is_connection_loss(rc)) {
    att->own = OWN_UNKNOWN;
    if (!current && !acquiring(att->state) && !s->dead)
      zkl__cleanup_prefix_locked(s, att->l->queue, att->prefix);
  } else {
    att->own = OWN_NONE;
  }
}

static void on_created_listing_locked(zkl_attempt *att, int rc,
                                      const struct String_vector *children) {
  if (att->create_rc == ZNONODE) {
    /* No parent (first use, or a container reaped since): create the
     * parents and try again, a few times in case they keep vanishing. */
    if (att->parent_rc)
      end_locked(att, END_FAIL, att->parent_rc);
    else if (att->parent_rounds++ < 3) {
      att->with_parents = true;
      GO(att, ZKL_AS_CREATING);
    } else
      end_locked(att, END_FAIL, ZNONODE);
  } else if (att->create_rc != ZOK &&
             !zkl__is_connection_loss(att->create_rc)) {
    triage_locked(att, att->create_rc);
  } else if (att->own == OWN_UNKNOWN) {
    suspend_locked(att); /* recovered at the reconnect */
  } else if (rc == ZOK) {
    evaluate_locked(att, children);
  } else {
    triage_locked(att, rc);
  }
}

static void on_recover_listing_locked(zkl_attempt *att, int rc,
                                      const struct String_vector *children);

static void on_listing_locked(zkl_attempt *att, int rc,
                              const struct String_vector *children) {
  switch (att->state) {
  case ZKL_AS_CREATING:
    on_created_listing_locked(att, rc, children);
    break;
  case ZKL_AS_RECOVERING:
    on_recover_listing_locked(att, rc, children);
    break;
  case ZKL_AS_LISTING:
    if (rc == ZOK)
      evaluate_locked(att, children);
    else
      triage_locked(att, rc);
    break;
  case ZKL_AS_WATCHING:
    on_refresh_listing_locked(att, rc, children);
    break;
  default:
    break;
  }
}

static void on_recover_get_locked(zkl_attempt *att, const zkl_reply *rp) {
  zkl_session *s = sess(att);
  int rc = rp->rc;
  if (att->state != ZKL_AS_RECOVERING)
    return;
  if (rc == ZOK && rp->stat->ephemeralOwner == s->session_id) {
    /* The lost reply's node: adopt it. Its czxid is the token. */
    const char *slash = strrchr(rp->path, '/');
    free(att->node);
    att->node = strdup(slash + 1);
    att->czxid = rp->stat->czxid;
    if (!att->node) {
      end_locked(att, END_FAIL, ZKL_ENOMEM); /* still OWN_UNKNOWN */
      return;
    }
    att->own = OWN_KNOWN;
    arm_own_watch_locked(att);
    GO(att, ZKL_AS_LISTING);
  } else if (rc == ZOK || rc == ZNONODE) {
    /* Not ours after all (another session's node, as in CURATOR-498), or
     * gone: start over under a fresh id, leaving it alone. */
    if (rc == ZOK)
      make_prefix(att);
    att->own = OWN_NONE;
    att->with_parents = false;
    GO(att, ZKL_AS_CREATING);
  } else {
    triage_locked(att, rc);
  }
}

/* RECOVERING: a create's reply was lost. Look for a node with our prefix
 * (the lowest, should a retried create have made two) and read it. */
static void on_recover_listing_locked(zkl_attempt *att, int rc,
                                      const struct String_vector *children) {
  zkl_lock *l = att->l;
  zkl_nodes nodes = queue_nodes(att);
  const char *best = NULL;
  int32_t best_seq = 0, seq;
  size_t plen = strlen(att->prefix);
  char path[ZKL_PATH_MAX];
  int i;
  if (rc == ZNONODE) {
    att->own = OWN_NONE; /* no parent, so no node */
    att->with_parents = true;
    GO(att, ZKL_AS_CREATING);
    return;
  }
  if (rc != ZOK) {
    triage_locked(att, rc);
    return;
  }
  for (i = 0; i < children->count; i++) {
    const char *c = children->data[i];
    if (strncmp(c, att->prefix, plen) != 0 ||
        zkl__node_kind_of(c, &nodes, &seq) < 0)
      continue;
    if (!best || zkl__seq_distance(best_seq, seq) < 0) {
      best = c;
      best_seq = seq;
    }
  }
  if (!best) {
    att->own = OWN_NONE; /* the create never happened */
    att->with_parents = false;
    GO(att, ZKL_AS_CREATING);
    return;
  }
  /* Adopt it only if this session owns it: a lagging server can still list
   * a just-expired session's node. The listing that follows the adoption
   * deletes any duplicate. */
  snprintf(path, sizeof path, "%s/%s", l->queue, best);
  req_begin(att);
  rc = zkl__io_get_locked(l->s, ZKL_RQ_RECOVER_GET, path, &io_ops, att,
                          att->round);
  if (rc != ZKL_OK)
    end_locked(att, END_FAIL, req_refused_locked(att, rc));
}

static void on_delete_reply_locked(zkl_attempt *att, const zkl_reply *rp) {
  zkl_session *s = sess(att);
  if (zkl__is_connection_loss(rp->rc))
    zkl__cleanup_delete_locked(s, rp->path);
  else if (rp->rc != ZOK && rp->rc != ZNONODE &&
           !zkl__is_session_over(rp->rc))
    zkl__log("cannot delete %s: %s", rp->path, zerror(rp->rc));
}

static void on_release_reply_locked(zkl_attempt *att, const zkl_reply *rp) {
  int rc = rp->rc;
  if (att->state != ZKL_AS_RELEASING || rp->round != att->round)
    return;
  if (rc == ZNONODE) {
    lost_at_release_locked(att);
  } else if (rc == ZOK || zkl__is_session_over(rc)) {
    end_locked(att, END_RELEASED, ZKL_OK);
  } else if (zkl__is_connection_loss(rc)) {
    zkl__cleanup_delete_locked(sess(att), rp->path);
    end_locked(att, END_RELEASED, ZKL_OK);
  } else {
    /* Refused (ZNOAUTH...): the node is still there, so still held. */
    GO(att, ZKL_AS_HELD);
    zkl__notify_locked(att->l, &att->rel, rc, 0);
  }
}

/* A listing of another family's place came back (kinds.h). Anything but a
 * listing leaves the verdict to the queue's listing sent right behind it,
 * which fails the same way (a lost connection) or finds the place gone
 * with nothing in it. */
static void on_kind_check_locked(zkl_attempt *att, const zkl_reply *rp) {
  const zkl_node_kind *k = own_kind(att);
  const char *clash;
  zkl_place place = ZKL_PLACE_NAME;
  const char *slash = strrchr(rp->path, '/');
  int p;
  if (rp->rc != ZOK || att->clash)
    return;
  for (p = 0; p < ZKL_PLACE_COUNT; p++)
    if (zkl__place_dir(p) && k->place == ZKL_PLACE_NAME &&
        strcmp(slash + 1, zkl__place_dir(p)) == 0)
      place = (zkl_place)p;
  clash = zkl__kinds_clash_any(k->family, place, rp->children->data,
                               rp->children->count);
  if (clash)
    att->clash = clash;
}

/* A first try's listing of a part's queue came back: kept for the
 * recipe's verdict (try_verdict_locked). */
static void on_part_check_locked(zkl_attempt *att, const zkl_reply *rp) {
  zkl_lock *l = att->l;
  int i;
  for (i = 0; att->part_lists && i < l->n_parts; i++)
    if (strcmp(rp->path, l->parts[i]->queue) == 0) {
      att->part_lists[i].rc = rp->rc;
      att->part_lists[i].count = rp->rc == ZOK ? rp->children->count : 0;
    }
}

static void replied_locked(void *owner, const zkl_reply *rp) {
  zkl_attempt *att = owner;
  att->pending--;
  switch (rp->kind) {
  case ZKL_RQ_KIND_CHECK:
    if (rp->round == att->round)
      on_kind_check_locked(att, rp);
    break;
  case ZKL_RQ_PART_CHECK:
    if (rp->round == att->round)
      on_part_check_locked(att, rp);
    break;
  case ZKL_RQ_PARENT:
    on_parent_reply_locked(att, rp);
    break;
  case ZKL_RQ_CREATE:
    on_create_reply_locked(att, rp);
    break;
  case ZKL_RQ_LIST:
    if (rp->round != att->round)
      break;
    if (zkl__together(att) && att->state == ZKL_AS_RECOVERING)
      zkl__together_of(att)->on_listing_locked(att, rp);
    else
      on_listing_locked(att, rp->rc, rp->children);
    break;
  case ZKL_RQ_RECOVER_GET:
    if (rp->round != att->round || att->state != ZKL_AS_RECOVERING)
      break;
    if (zkl__together(att))
      zkl__together_of(att)->on_found_locked(att, rp);
    else
      on_recover_get_locked(att, rp);
    break;
  case ZKL_RQ_OWN_GET: /* the token of parts made together */
    if (rp->round == att->round && att->state == ZKL_AS_PARTS)
      zkl__together_of(att)->on_token_locked(att, rp);
    break;
  case ZKL_RQ_ORDER: /* any answer will do: the listing behind it decides */
    break;
  case ZKL_RQ_DELETE:
    on_delete_reply_locked(att, rp);
    break;
  case ZKL_RQ_RELEASE:
    on_release_reply_locked(att, rp);
    break;
  default:
    break;
  }
  maybe_deliver_locked(att);
  attempt_unref_locked(att); /* the request's */
}

static const zkl_io_ops io_ops = {replied_locked};
const zkl_io_ops *const zkl__att_io_ops = &io_ops;

/* ---------------------------------------------------------------- entries */

static void delete_own_locked(zkl_attempt *att, int kind) {
  zkl_session *s = sess(att);
  char path[ZKL_PATH_MAX];
  own_path(att, path);
  if (s->connected) {
    req_begin(att);
    if (zkl__io_delete_locked(s, kind, path, &io_ops, att, att->round) ==
        ZKL_OK)
      return;
    req_refused_locked(att, 0);
  }
  zkl__cleanup_delete_locked(s, path);
}

/* Sends the kinds check's listings (kinds.h), to be answered before the
 * queue's listing that follows them: the name itself for a contender in a
 * semaphore's places; the semaphore's places for a contender in the name
 * whose listing showed them. */
static int send_kind_check_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  char path[ZKL_PATH_MAX];
  int rc = ZKL_OK, p;
  if (att->check != CHECK_WANTED && att->check != CHECK_SENT)
    return ZKL_OK;
  att->check = CHECK_SENT;
  for (p = 0; p < ZKL_PLACE_COUNT && rc == ZKL_OK; p++) {
    const char *dir = zkl__place_dir(p);
    if (own_kind(att)->place == ZKL_PLACE_NAME) {
      if (!dir)
        continue;
      zkl__name_path(path, sizeof path, att->l->name, dir);
    } else {
      if (dir)
        continue;
      zkl__name_path(path, sizeof path, att->l->name, NULL);
    }
    req_begin(att);
    rc = zkl__io_list_locked(s, ZKL_RQ_KIND_CHECK, path, &io_ops, att,
                             att->round);
    if (rc != ZKL_OK)
      rc = req_refused_locked(att, rc);
  }
  return rc;
}

/* A first try before preparing lists its parts' queues (a semaphore's
 * gate) after its create, for its recipe's verdict (try_verdict_locked):
 * what was found there before it came. */
static int send_part_check_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  int rc = ZKL_OK, i;
  if (!att->part_lists && l->n_parts > 0 &&
      !(att->part_lists = calloc((size_t)l->n_parts, sizeof *att->part_lists)))
    return ZKL_ENOMEM;
  for (i = 0; i < l->n_parts; i++) {
    att->part_lists[i].rc = ZOK; /* nobody, until told otherwise */
    att->part_lists[i].count = 0;
  }
  for (i = 0; i < l->n_parts && rc == ZKL_OK; i++) {
    req_begin(att);
    rc = zkl__io_list_locked(l->s, ZKL_RQ_PART_CHECK, l->parts[i]->queue,
                             &io_ops, att, att->round);
    if (rc != ZKL_OK)
      rc = req_refused_locked(att, rc);
  }
  return rc;
}

/* Sends a listing of the queue: a plain one, or one that arms a child
 * watch (held in att->wait) for recipes that may wait for the queue. The
 * kinds check, when wanted, goes first. */
static int send_listing_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  int rc;
  if (att->state != ZKL_AS_RECOVERING &&
      (rc = send_kind_check_locked(att)) != ZKL_OK)
    return rc;
  if (att->state == ZKL_AS_CREATING && att->unprepared_try &&
      (rc = send_part_check_locked(att)) != ZKL_OK)
    return rc;
  req_begin(att);
  /* (a first try before preparing never waits: no watch) */
  if (att->l->recipe->list_with_watch && att->state != ZKL_AS_RECOVERING &&
      !att->unprepared_try) {
    att->wait = zkl__watch_arm_locked(s, ZKL_WATCH_CHILDREN,
                                      ZKL_RQ_CHILD_WATCH, att->l->queue,
                                      &wait_watch_ops, att, &rc);
    return att->wait ? ZKL_OK : req_refused_locked(att, rc);
  }
  rc = zkl__io_list_locked(s, ZKL_RQ_LIST, att->l->queue, &io_ops, att,
                           att->round);
  return rc == ZKL_OK ? rc : req_refused_locked(att, rc);
}

/* Sends the parents (when asked), the create of our node, and right behind
 * it the listing: ZooKeeper answers one session's requests in order, so the
 * listing already contains our node, and both answers come in one round
 * trip. */
static void enter_creating_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  zkl_session *s = l->s;
  char path[ZKL_PATH_MAX], data[sizeof s->owner_data + ZKL_INFO_MAX + 40];
  int rc = ZKL_OK, len;
  size_t qlen = strlen(l->queue), i;
  att->create_rc = 1;
  att->parent_rc = 0;
  for (i = zkl__first_parent(l->queue);
       att->with_parents && rc == ZKL_OK && i <= qlen; i++) {
    /* /locks, /locks/a, /locks/a/b (or /app, /app/a of a full path):
     * containers, which the server removes once their last child is gone.
     * /locks is shared: always open. */
    if (i < qlen && l->queue[i] != '/')
      continue;
    memcpy(path, l->queue, i);
    path[i] = '\0';
    req_begin(att);
    rc = zkl__io_create_locked(
        s, ZKL_RQ_PARENT, path, NULL, -1,
        strcmp(path, ZKL_ROOT) == 0 ? &ZOO_OPEN_ACL_UNSAFE : zkl__acl(l->acl),
        ZOO_CONTAINER, &io_ops, att, att->round);
    if (rc != ZKL_OK)
      req_refused_locked(att, rc);
  }
  if (rc == ZKL_OK) {
    if (l->recipe->node_data)
      len = l->recipe->node_data(l->arg, data, sizeof data);
    else /* who we are, for zkl_name_list() and zklock --list */
      len = snprintf(data, sizeof data, "%s%s%s%s", s->owner_data,
                     l->info ? "info=" : "", l->info ? l->info : "",
                     l->info ? "\n" : "");
    if (!l->recipe->node_data && l->recipe->owner_line)
      len += l->recipe->owner_line(l->arg, data + len, sizeof data - len);
    snprintf(path, sizeof path, "%s/%s", l->queue, att->prefix);
    req_begin(att);
    rc = zkl__io_create_locked(s, ZKL_RQ_CREATE, path, data, len,
                               zkl__acl(l->acl), ZOO_EPHEMERAL_SEQUENTIAL,
                               &io_ops, att, att->round);
    if (rc != ZKL_OK)
      req_refused_locked(att, rc);
    else
      att->own = OWN_CREATING;
  }
  if (rc == ZKL_OK)
    rc = send_listing_locked(att); /* on failure the create's reply cleans */
  if (rc != ZKL_OK)
    end_locked(att, END_FAIL, rc);
}

/* RECOVERING: a create's reply was lost. The listing that looks for our
 * node goes behind a write that changes nothing (zkl__io_order_locked), as
 * a multi-lock's do (together.c, together_recover_locked, says why): the
 * lost create, if it is ever applied, is then in the listing. Without it,
 * a server that had the create only as the leader's proposal listed the
 * queue without it, the create went again under the same prefix, and the
 * lost node, applied a moment later, was a duplicate (deleted by the next
 * listing) or, when the attempt ended meanwhile, nobody's until the
 * session ended. One write more, and only after a lost reply. */
static void enter_recovering_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  int rc;
  req_begin(att);
  rc = zkl__io_order_locked(s, ZKL_RQ_ORDER, &io_ops, att, att->round);
  if (rc != ZKL_OK) {
    end_locked(att, END_FAIL, req_refused_locked(att, rc));
    return;
  }
  enter_listing_locked(att);
}

/* LISTING, and RECOVERING (which looks for our node in the listing). */
static void enter_listing_locked(zkl_attempt *att) {
  int rc = send_listing_locked(att);
  if (rc != ZKL_OK)
    end_locked(att, END_FAIL, rc);
}

static void enter_watching_locked(zkl_attempt *att) {
  char path[ZKL_PATH_MAX];
  int rc;
  snprintf(path, sizeof path, "%s/%s", att->l->queue, att->wait_for);
  test_before_watch(path);
  /* getData, not exists: exists would leave a watch behind on a node that
   * is already gone. */
  req_begin(att);
  att->wait = zkl__watch_arm_locked(sess(att), ZKL_WATCH_DATA,
                                    ZKL_RQ_PRED_GET, path, &wait_watch_ops,
                                    att, &rc);
  if (!att->wait) {
    end_locked(att, END_FAIL, req_refused_locked(att, rc));
    return;
  }
  want_own_watch_locked(att);
  arm_ahead_locked(att);
}

/* Where a suspended attempt picks up. */
static void resume_locked(zkl_attempt *att) {
  att->with_parents = false;
  if (att->own == OWN_KNOWN)
    GO(att, ZKL_AS_LISTING);
  else if (att->own == OWN_UNKNOWN)
    GO(att, ZKL_AS_RECOVERING);
  else
    GO(att, ZKL_AS_CREATING);
}

static void enter_suspended_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  /* A completion can report a lost connection after the client already
   * reconnected: then no reconnect is coming to resume it. */
  if (s->connected && !s->dead)
    resume_locked(att);
}

static void enter_held_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  att->granted_ms = zkl__now_ms();
  l->stats.grants++;
  count_wait(&l->stats, att->granted_ms - att->started_ms, false);
  emit_locked(att, ZKL_EVENT_GRANTED, 0, NULL, 0);
  zkl__lease_hold_locked(l->s, +1);
  l->hold_count = 1;
  l->token = att->czxid;
  l->lost = false;
  /* Once per attempt: a release the server refused holds on under the
   * bound it was granted with. */
  if (l->max_hold_ms > 0 && att->hold_deadline_ms == 0) {
    att->hold_deadline_ms = att->granted_ms + l->max_hold_ms;
    att->hold_grace_ms = l->max_hold_grace_ms;
    zkl__timer_kick_at_locked(&l->s->timer, att->hold_deadline_ms);
  }
  /* The watch on our own node, for a hold that lasts (a short one learns
   * of a deletion at its release): see zkl_lock_set_watch_after(). */
  if (att->own == OWN_KNOWN && !att->own_watch_wanted) {
    if (l->watch_after_ms == 0) {
      want_own_watch_locked(att);
    } else if (att->own_watch_at_ms == 0) {
      att->own_watch_at_ms = att->granted_ms + l->watch_after_ms;
      zkl__timer_kick_at_locked(&l->s->timer, att->own_watch_at_ms);
    }
  }
  unprepare_locked(att); /* a holder needs its preparation no more */
  zkl__notify_locked(l, &att->acq, ZKL_OK, att->czxid);
}

static void enter_releasing_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  zkl_session *s = sess(att);
  char path[ZKL_PATH_MAX];
  if (zkl__together(att)) {
    zkl__together_of(att)->release_locked(att);
    return;
  }
  own_path(att, path);
  if (zkl__together_kept(l)) {
    end_locked(att, END_RELEASED, ZKL_OK); /* its whole deletes it */
    return;
  }
  if (l->recipe->keep_on_release_locked &&
      l->recipe->keep_on_release_locked(l->arg, l, path)) {
    end_locked(att, END_RELEASED, ZKL_OK); /* the recipe deletes it later */
    return;
  }
  if (s->connected) {
    req_begin(att);
    if (zkl__io_delete_locked(s, ZKL_RQ_RELEASE, path, &io_ops, att,
                              att->round) == ZKL_OK)
      return;
    req_refused_locked(att, 0);
  }
  /* Disconnected: the lock is ours no longer; the node goes at the
   * reconnect, or with the session. */
  zkl__cleanup_delete_locked(s, path);
  end_locked(att, END_RELEASED, ZKL_OK);
}

/* A hold that ends as a loss the library decides while its node is still
 * ours, on the timer thread: past its maximum (zkl_lock_set_max_hold(),
 * att->code ZKL_LOST_MAX_HOLD), or at the lease's deadline
 * (ZKL_LOST_LEASE_EXPIRED). It ends now for the holder, and its node stays
 * until att->stop_deadline_ms (set by whoever goes here: the grace,
 * zkl_lock_set_max_hold_grace(); or the moment the leader may expire the
 * session, the lease's deadline plus its margin), so that the holder can
 * stop what it does before anyone else is granted: a lock passes on only
 * once its holder was told and its work stopped (docs/correctness.md).
 * zklock's keeper kills its command by the deadline plus half the margin.
 * The notices (the lost callback, the LOST event) go to the timer thread's
 * list (att->direct), which it runs before its next tick; the earliest tick
 * that lets the node go is that one, so a grace of 0 too lets it go only
 * after the lost callback has returned. zkl_lock_release() (ZKL_ELOST) and
 * zkl_lock_free() let it go at once. */
static void enter_stopping_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  att->why = END_LOST;
  record_end_locked(att);
  if (!l->freed) {
    l->lost = true;
    l->lost_token = att->czxid;
    zkl__notify_lost_locked(l, att->code, att->direct);
  }
  zkl__log("lock %s lost (%s): its node goes when the holder lets go, or "
           "in %lld ms",
           l->name,
           att->code == ZKL_LOST_MAX_HOLD ? "maximum hold reached"
                                          : "lease expired",
           (long long)(att->stop_deadline_ms - zkl__now_ms()));
}

/* The node of a hold that ended in STOPPING goes now, as a released one
 * would: its recipe may keep it (a downgrade's write node, while the read
 * side holds). */
static void stopped_node_goes_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  zkl_session *s = l->s;
  char path[ZKL_PATH_MAX];
  if (att->own != OWN_KNOWN || s->dead || (s->closing && s->owns_handle))
    return; /* none, or it goes with the session */
  own_path(att, path);
  if (l->recipe->keep_on_release_locked &&
      l->recipe->keep_on_release_locked(l->arg, l, path))
    return;
  zkl__cleanup_delete_locked(s, path);
}

/* Removes what an abandoned attempt put in ZooKeeper, then tells it once
 * that has settled. */
static void enter_ending_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  if (zkl__together(att)) {
    zkl__together_of(att)->end_locked(att);
  } else if (!s->dead && !s->closed && !(s->closing && s->owns_handle)) {
    /* (else the session's end takes the node and the watches) */
    if (att->own == OWN_KNOWN)
      delete_own_locked(att, ZKL_RQ_DELETE);
    else if (att->own == OWN_UNKNOWN)
      zkl__cleanup_prefix_locked(s, att->l->queue, att->prefix);
    /* OWN_CREATING: the create's reply deletes what it made */
  }
  /* What the preparation got goes after our node's delete was sent: the
   * server applies a session's requests in order, so whoever gets it next
   * never counts the node of a contender that has left (a semaphore's
   * next contender at the gate). */
  unprepare_locked(att);
  maybe_deliver_locked(att);
}

static const char *lost_reason_text(int reason) {
  switch (reason) {
  case ZKL_LOST_NODE_DELETED:
    return "node deleted";
  case ZKL_LOST_LEASE_EXPIRED:
    return "lease expired";
  case ZKL_LOST_BROKEN:
    return "broken";
  case ZKL_LOST_MAX_HOLD:
    return "maximum hold reached";
  default:
    return "session expired";
  }
}

static void enter_ended_locked(zkl_attempt *att, zkl_att_state from) {
  zkl_lock *l = att->l;
  /* Detached first: whoever is told finds the lock idle, free for the
   * next acquire (zkl__att_go_locked holds the attempt meanwhile). */
  if (l->att == att) {
    l->att = NULL;
    attempt_unref_locked(att); /* the lock's */
  }
  if (from == ZKL_AS_STOPPING) {
    /* told on entering STOPPING: only its node is left to go */
    stopped_node_goes_locked(att);
    if (zkl__together(att))
      zkl__together_of(att)->ended_locked(att);
    if (l->recipe->ended_locked)
      l->recipe->ended_locked(l->arg, l);
    return;
  }
  record_end_locked(att);
  switch (att->why) {
  case END_FAIL:
    zkl__notify_locked(l, &att->acq, att->code, 0);
    break;
  case END_RELEASED:
    zkl__notify_locked(l, &att->rel, att->code, 0);
    break;
  case END_LOST:
    if (att->code == ZKL_LOST_LEASE_EXPIRED && att->own == OWN_KNOWN) {
      /* A part of a whole that holds nothing yet (the holds whose holder
       * was told go from STOPPING, once it let go): the session may yet
       * survive, and the node must not stay at the head of its queue as
       * if it were still held. */
      char path[ZKL_PATH_MAX];
      own_path(att, path);
      zkl__cleanup_delete_locked(l->s, path);
    }
    if (!l->freed) {
      /* A loss found by the release is told by the release itself. */
      if (from != ZKL_AS_RELEASING) {
        l->lost = true;
        l->lost_token = att->czxid;
      }
      zkl__notify_lost_locked(l, att->code, att->direct);
    }
    if (from == ZKL_AS_RELEASING)
      zkl__notify_locked(l, &att->rel, ZKL_ELOST, 0);
    zkl__log("lock %s lost (%s)", l->name, lost_reason_text(att->code));
    break;
  case END_CLOSED:
    break; /* closing the session deletes the node */
  }
  /* A part's hold ended, for whatever reason: what that means for its
   * whole is the whole's recipe's to say (a multi-lock waiting for its
   * other parts cannot be granted with this one gone). */
  if (l->whole && (from == ZKL_AS_HELD || from == ZKL_AS_RELEASING))
    zkl__notify_part_ended_locked(l, att->why == END_LOST ? att->code : 0);
  if (zkl__together(att))
    zkl__together_of(att)->ended_locked(att);
  if (l->recipe->ended_locked)
    l->recipe->ended_locked(l->arg, l);
}

/* -------------------------------------------------------------- the rule */

/* A wait for q's node v->node: whether to watch the node before it too
 * (ahead_of), and whether that one's deletion grants us when the node
 * waited for goes (ahead_grants). */
static void plan_ahead_locked(zkl_attempt *att, const zkl_queue *q,
                              const zkl_verdict *v) {
  zkl_lock *l = att->l;
  att->grant_on_delete = v->grant_on_delete;
  free(att->ahead_of);
  att->ahead_of = !v->grant_on_delete && v->node > 0
                      ? strdup(q->entries[v->node - 1].name)
                      : NULL;
  att->ahead_grants = false;
  if (att->ahead_of && v->node == 1) {
    /* the queue as it will be once the first goes: the rule again */
    zkl_queue rest = *q;
    zkl_verdict after = {0};
    rest.entries++;
    rest.count--;
    rest.own--;
    l->recipe->decide_locked(&rest, l->arg, &after);
    att->ahead_grants = after.kind == ZKL_WAIT_NODE &&
                        after.node == v->node - 1 && after.grant_on_delete;
  }
}

/* WATCHING: the listing ahead_gone_locked() sent, the node waited for
 * still watched. Waiting for that same node, only what is known of the
 * nodes ahead changes (grant_on_delete, the node before it), and its watch
 * is kept: no second read of it. Anything else looks afresh (LISTING). */
static void on_refresh_listing_locked(zkl_attempt *att, int rc,
                                      const struct String_vector *children) {
  zkl_lock *l = att->l;
  zkl_nodes nodes = queue_nodes(att);
  zkl_queue q;
  zkl_verdict v = {0};
  bool same = false;
  if (rc != ZOK) {
    if (zkl__is_connection_loss(rc))
      suspend_locked(att);
    else if (!zkl__is_session_over(rc))
      GO(att, ZKL_AS_LISTING);
    return;
  }
  if (zkl__queue_build_ahead(children->data, children->count, &nodes,
                             att->node, att->prefix, &q) != ZKL_OK) {
    GO(att, ZKL_AS_LISTING);
    return;
  }
  if (q.own >= 0 && q.n_duplicates == 0 &&
      !(att->check == CHECK_NONE &&
        zkl__kinds_has_places(children->data, children->count))) {
    l->recipe->decide_locked(&q, l->arg, &v);
    same = v.kind == ZKL_WAIT_NODE &&
           strcmp(q.entries[v.node].name, att->wait_for) == 0;
  }
  if (same) {
    plan_ahead_locked(att, &q, &v);
    arm_ahead_locked(att);
  } else {
    GO(att, ZKL_AS_LISTING);
  }
  zkl__queue_free(&q);
}

/* A first try before preparing that is not granted at once: its node's
 * delete goes first (a Curator semaphore counts every lease node, and
 * would wait for it: ZOOKEEPER-NOTES' deadlock), then it prepares under a
 * fresh prefix, as any acquire of its recipe. */
static void back_off_locked(zkl_attempt *att) {
  delete_own_locked(att, ZKL_RQ_DELETE);
  att->own = OWN_NONE;
  att->unprepared_try = false;
  if (make_prefix(att) != ZKL_OK)
    end_locked(att, END_FAIL, ZKL_ESYSTEM);
  else
    GO(att, ZKL_AS_PREPARING);
}

/* Whether a first try before preparing holds on its verdict v: its
 * recipe's say, given what its listings of the parts' queues found. */
static bool try_holds_locked(zkl_attempt *att, const zkl_verdict *v) {
  const zkl_recipe *r = att->l->recipe;
  if (!r->try_verdict_locked)
    return v->kind == ZKL_GRANT;
  return r->try_verdict_locked(att->l->arg, v, att->part_lists,
                               att->part_lists ? att->l->n_parts : 0);
}

static void evaluate_locked(zkl_attempt *att,
                            const struct String_vector *children) {
  zkl_lock *l = att->l;
  zkl_nodes nodes = queue_nodes(att);
  zkl_queue q;
  zkl_verdict v = {0};
  int i;
  if (zkl__queue_build_ahead(children->data, children->count, &nodes,
                             att->node, att->prefix, &q) != ZKL_OK) {
    end_locked(att, END_FAIL, ZKL_ENOMEM);
    return;
  }
  /* A create that was retried after a lost reply can leave a second node
   * with our prefix: it must not stay in the queue. */
  for (i = 0; i < q.n_duplicates; i++) {
    char path[ZKL_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", l->queue,
             children->data[q.duplicates[i]]);
    zkl__cleanup_delete_locked(l->s, path);
  }
  if (att->check == CHECK_SENT && q.own >= 0)
    att->check = CHECK_DONE; /* its answers came before this one */
  if (q.own < 0) {
    /* Our node is gone (deleted by someone, or the session ended): never
     * win without a node. */
    att->own = OWN_NONE;
    end_locked(att, END_FAIL, ZKL_ELOST);
  } else if (att->clash ||
             (own_kind(att)->place == ZKL_PLACE_NAME &&
              (att->clash = zkl__kinds_clash_first(own_kind(att)->family,
                                                   &q)) != NULL)) {
    /* The name is a lock of another family (kinds.h). */
    zkl__log("lock %s: refused, the name is a %s", l->name, att->clash);
    l->other_kind = att->clash;
    end_locked(att, END_FAIL, ZKL_EKIND);
  } else if (att->check == CHECK_NONE &&
             zkl__kinds_has_places(children->data, children->count)) {
    /* A semaphore's places are there: look in them before any verdict
     * (one more round trip, only on such a name). */
    att->check = CHECK_WANTED;
    GO(att, ZKL_AS_LISTING);
  } else {
    l->recipe->decide_locked(&q, l->arg, &v);
    if (v.kind == ZKL_REFUSE) {
      /* Not a wait, and not one a preparation would change (a semaphore
       * of another limit): it fails now, its node deleted first. */
      zkl__log("lock %s: refused by the %s rule: %s", l->name, l->recipe->name,
               zkl_strerror(v.code));
      end_locked(att, END_FAIL, v.code);
    } else if (att->unprepared_try && !try_holds_locked(att, &v)) {
      back_off_locked(att);
    } else if (v.kind == ZKL_GRANT) {
      att->unprepared_try = false;
      grant_locked(att, false);
    } else if (att->try_once) {
      end_locked(att, END_FAIL, ZKL_EBUSY);
    } else if (v.kind == ZKL_WAIT_CHILDREN) {
      att->wait_code = v.code;
      emit_locked(att, ZKL_EVENT_QUEUED, 0, NULL, q.own);
      GO(att, ZKL_AS_WAITING);
    } else {
      bool moved = !att->wait_for ||
                   strcmp(att->wait_for, q.entries[v.node].name) != 0;
      free(att->wait_for);
      att->wait_for = strdup(q.entries[v.node].name);
      plan_ahead_locked(att, &q, &v);
      if (att->wait_for && moved)
        emit_locked(att, ZKL_EVENT_QUEUED, 0, att->wait_for, q.own);
      if (att->wait_for)
        GO(att, ZKL_AS_WATCHING);
      else
        end_locked(att, END_FAIL, ZKL_ENOMEM);
    }
  }
  zkl__queue_free(&q);
}

/* ------------------------------------------------ what the outside says */

int zkl__attempt_start_locked(zkl_lock *l, int timeout_ms, zkl_target *t) {
  zkl_session *s = l->s;
  zkl_attempt *att = calloc(1, sizeof *att);
  if (!att)
    return ZKL_ENOMEM;
  att->l = l;
  att->try_once = timeout_ms == 0;
  att->unprepared_try =
      l->recipe->try_before_prepare && !att->try_once && s->connected &&
      !test_no_first_try();
  if (l->recipe->make == ZKL_MAKE_PARTS_TOGETHER &&
      !(att->nodes = calloc((size_t)l->n_parts, sizeof *att->nodes))) {
    free(att);
    return ZKL_ENOMEM;
  }
  if (make_prefix(att) != ZKL_OK) {
    free(att->nodes);
    free(att);
    return ZKL_ESYSTEM;
  }
  att->check = zkl__node_kinds[l->recipe->node].place == ZKL_PLACE_NAME
                   ? CHECK_NONE
                   : CHECK_WANTED;
  l->refs++;
  att->refs = 1; /* l->att */
  l->att = att;
  l->lost = false;
  l->other_kind = NULL;
  l->refused = NULL;
  att->acq = *t;
  t->notice = NULL; /* the attempt's now */
  att->started_ms = zkl__now_ms();
  l->stats.acquires++;
  if (timeout_ms > 0) {
    att->deadline_ms = att->started_ms + timeout_ms;
    zkl__timer_kick_at_locked(&s->timer, att->deadline_ms);
  }
  /* A try-once does not prepare: preparing may wait (see zkl_recipe). */
  if (l->recipe->prepare_locked && !att->unprepared_try && !att->try_once)
    GO(att, ZKL_AS_PREPARING);
  else
    GO(att, s->connected ? ZKL_AS_CREATING : ZKL_AS_SUSPENDED);
  return ZKL_OK;
}

int zkl__attempt_adopt_locked(zkl_lock *l, const char *prefix,
                              const char *node, int timeout_ms,
                              zkl_target *t) {
  zkl_session *s = l->s;
  zkl_attempt *att = calloc(1, sizeof *att);
  if (!att || strlen(prefix) >= sizeof att->prefix ||
      !(att->node = strdup(node))) {
    free(att);
    return ZKL_ENOMEM;
  }
  att->l = l;
  att->try_once = timeout_ms == 0;
  strcpy(att->prefix, prefix);
  att->own = OWN_KNOWN; /* its czxid is its maker's to tell */
  att->check = zkl__node_kinds[l->recipe->node].place == ZKL_PLACE_NAME
                   ? CHECK_NONE
                   : CHECK_WANTED;
  l->refs++;
  att->refs = 1; /* l->att */
  l->att = att;
  l->lost = false;
  l->other_kind = NULL;
  att->acq = *t;
  t->notice = NULL;
  att->started_ms = zkl__now_ms();
  l->stats.acquires++;
  if (timeout_ms > 0) {
    att->deadline_ms = att->started_ms + timeout_ms;
    zkl__timer_kick_at_locked(&s->timer, att->deadline_ms);
  }
  att->refs++; /* across the transition, which may end it */
  GO(att, s->connected ? ZKL_AS_LISTING : ZKL_AS_SUSPENDED);
  attempt_unref_locked(att);
  return ZKL_OK;
}

/* Whether att is a part of a whole (a multi-lock) that holds nothing yet:
 * its acquire still waits for its other parts. */
static bool part_of_unheld(const zkl_attempt *att) {
  const zkl_lock *whole = att->l->whole;
  return whole && !(whole->att && (whole->att->state == ZKL_AS_HELD ||
                                   whole->att->state == ZKL_AS_STOPPING));
}

void zkl__attempt_event_locked(zkl_attempt *att, zkl_att_event ev, int code,
                               void *arg) {
  zkl_session *s = sess(att);
  int rc;
  att->refs++;
  switch (ev) {
  case ZKL_EV_CANCEL: /* code: the status the acquire ends with */
    if (acquiring(att->state))
      end_locked(att, END_FAIL, code);
    break;
  case ZKL_EV_RELEASE: /* arg: the target */
    if (att->state == ZKL_AS_HELD) {
      if (arg)
        att->rel = *(zkl_target *)arg;
      GO(att, ZKL_AS_RELEASING);
    } else if (att->state == ZKL_AS_STOPPING) {
      GO(att, ZKL_AS_ENDED); /* the holder lets go: told ZKL_ELOST already */
    }
    break;
  case ZKL_EV_CLOSE:
    if (acquiring(att->state))
      end_locked(att, END_FAIL, ZKL_ECLOSED);
    else if (att->state == ZKL_AS_STOPPING)
      GO(att, ZKL_AS_ENDED); /* the node goes, with the session or now */
    else if (att->state == ZKL_AS_HELD && s->owns_handle)
      end_locked(att, END_CLOSED, 0); /* closing the session deletes it */
    else if (att->state == ZKL_AS_HELD)
      GO(att, ZKL_AS_RELEASING); /* a wrapped handle lives on */
    break;
  case ZKL_EV_OVER: /* code: why the session is over */
    if (att->state == ZKL_AS_HELD)
      end_locked(att, END_LOST, ZKL_LOST_SESSION_EXPIRED);
    else if (att->state == ZKL_AS_STOPPING)
      GO(att, ZKL_AS_ENDED); /* its node went with the session */
    else if (att->state == ZKL_AS_RELEASING)
      end_locked(att, END_RELEASED, ZKL_OK); /* the node went with it */
    else if (att->state == ZKL_AS_ENDING)
      maybe_deliver_locked(att);
    else if (acquiring(att->state))
      end_locked(att, END_FAIL, code);
    break;
  case ZKL_EV_LEASE_LOST: /* arg: where the notices go */
    if (att->state == ZKL_AS_HELD && part_of_unheld(att)) {
      /* A part of a whole still waiting for its other parts: nobody was
       * granted anything, so nothing waits for its node (and its end
       * fails the whole's acquire, together.c). */
      att->direct = arg;
      end_locked(att, END_LOST, ZKL_LOST_LEASE_EXPIRED);
    } else if (att->state == ZKL_AS_HELD) {
      /* Told now; the node stays until the holder lets go, or until the
       * leader may have expired the session anyway (then it went with
       * the session, or it goes now): not at the next reconnect, while
       * the holder's work may still be stopping. A part of a held whole
       * keeps its node until the whole lets it go. */
      int64_t expiry = zkl__lease_expiry_locked(s);
      att->direct = arg;
      att->code = ZKL_LOST_LEASE_EXPIRED;
      att->stop_deadline_ms = expiry > 0 ? expiry : zkl__now_ms();
      GO(att, ZKL_AS_STOPPING);
      if (att->state == ZKL_AS_STOPPING)
        zkl__timer_kick_at_locked(&s->timer, att->stop_deadline_ms);
    }
    break;
  case ZKL_EV_CONNECTED:
    if (att->state == ZKL_AS_SUSPENDED)
      resume_locked(att);
    else if (att->state == ZKL_AS_PARTS && att->czxid_lost &&
             (rc = zkl__together_of(att)->send_token_locked(att)) != ZKL_OK)
      end_locked(att, END_FAIL, rc); /* its reply was lost */
    arm_own_watch_locked(att); /* a watch lost with the connection */
    break;
  case ZKL_EV_TICK: { /* arg: a zkl_tick */
    zkl_tick *tick = arg;
    if (att->state == ZKL_AS_CONFIRMING &&
        zkl__lease_fresh_locked(s, tick->now) &&
        !test_hold_confirming())
      GO(att, ZKL_AS_LISTING); /* the lease moved (it kicks the clock) */
    int64_t due = att->state == ZKL_AS_HELD       ? att->hold_deadline_ms
                  : att->state == ZKL_AS_STOPPING ? att->stop_deadline_ms
                  : acquiring(att->state)         ? att->deadline_ms
                                                  : 0;
    if (att->state == ZKL_AS_HELD && att->own_watch_at_ms > 0) {
      if (att->own_watch_at_ms <= tick->now)
        want_own_watch_locked(att); /* the hold outlived watch_after_ms */
      else if (tick->next == 0 || att->own_watch_at_ms < tick->next)
        tick->next = att->own_watch_at_ms;
    }
    if (due == 0)
      break;
    if (due > tick->now) {
      if (tick->next == 0 || due < tick->next)
        tick->next = due;
    } else if (att->state == ZKL_AS_HELD) {
      /* The maximum hold: ended here, on the timer thread, whatever the
       * holder's own thread is doing; its node stays for the grace, to
       * be let go by a later tick (after the notices ran) or the holder. */
      zkl__log("lock %s held for its maximum of %lld ms: ending the hold",
               att->l->name,
               (long long)(att->hold_deadline_ms - att->granted_ms));
      att->direct = tick->direct;
      att->code = ZKL_LOST_MAX_HOLD;
      att->stop_deadline_ms = tick->now + att->hold_grace_ms;
      GO(att, ZKL_AS_STOPPING);
      if (att->state == ZKL_AS_STOPPING &&
          (tick->next == 0 || att->stop_deadline_ms < tick->next))
        tick->next = att->stop_deadline_ms;
    } else if (att->state == ZKL_AS_STOPPING) {
      GO(att, ZKL_AS_ENDED); /* its grace ran out */
    } else {
      end_locked(att, END_FAIL,
                 att->wait_code ? att->wait_code : ZKL_ETIMEDOUT);
    }
    break;
  }
  case ZKL_EV_PART_LOST: /* code: the part's reason */
    if (att->state == ZKL_AS_HELD)
      end_locked(att, END_LOST, code);
    break;
  }
  attempt_unref_locked(att);
}

zkl_att_state zkl__attempt_state(const zkl_attempt *att) { return att->state; }

bool zkl__lock_break_mark_locked(const zkl_lock *l) {
  int i;
  if (l->att && (l->att->state == ZKL_AS_HELD ||
                 l->att->state == ZKL_AS_STOPPING) &&
      l->att->break_seen)
    return true;
  for (i = 0; i < l->n_parts; i++) /* a multi-lock's: any of its nodes */
    if (zkl__lock_break_mark_locked(l->parts[i]))
      return true;
  return false;
}

const char *zkl__attempt_node(const zkl_attempt *att) {
  return att->own == OWN_KNOWN ? att->node : NULL;
}

/* ------------------------------------------------ for together.c */

void zkl__att_end_locked(zkl_attempt *att, int why, int code) {
  end_locked(att, why, code);
}
void zkl__att_suspend_locked(zkl_attempt *att) { suspend_locked(att); }
void zkl__att_triage_locked(zkl_attempt *att, int rc) {
  triage_locked(att, rc);
}
int zkl__att_req_refused_locked(zkl_attempt *att, int rc) {
  return req_refused_locked(att, rc);
}
void zkl__att_maybe_deliver_locked(zkl_attempt *att) {
  maybe_deliver_locked(att);
}
int zkl__att_make_prefix(zkl_attempt *att) { return make_prefix(att); }
void zkl__att_lost_at_release_locked(zkl_attempt *att) {
  lost_at_release_locked(att);
}
