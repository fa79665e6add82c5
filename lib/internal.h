/* SPDX-License-Identifier: Apache-2.0 */
/*
 * internal.h - everything of lib/ at once, for the tests: the layers
 * (common.h, session.h, engine.h) and what tests look at inside a session.
 * The library's own files include only the layer they need.
 */
#ifndef ZKL_INTERNAL_H
#define ZKL_INTERNAL_H

#include "common.h"
#include "engine.h"
#include "recipes.h"
#include "session.h"

/* For tests: what a session still holds. */
typedef struct zkl_debug_counts {
  unsigned watches;  /* watch records the client may still call */
  unsigned cleanups; /* background deletes not yet done */
  unsigned inflight; /* requests without completion */
  unsigned parked;   /* attempts waiting for a reconnect (SUSPENDED) */
  unsigned calls;    /* user callbacks queued */
  unsigned long sent[ZKL_RQ_KINDS]; /* requests sent, by kind */
} zkl_debug_counts;
void zkl__debug_counts(zkl_session *s, zkl_debug_counts *out);
/* Waits until the session holds no watch record, cleanup, request,
 * suspended attempt or queued callback. 0 when reached, -1 on timeout. */
int zkl__debug_wait_quiet(zkl_session *s, int timeout_ms);
/* The same, but armed watches may remain: nothing is on its way. */
int zkl__debug_wait_settled(zkl_session *s, int timeout_ms);
/* Waits until the session's connection state is `want`: 0, or -1. */
int zkl__debug_wait_connected(zkl_session *s, bool want, int timeout_ms);
/* Waits until exactly `want` attempts of s are suspended: 0, or -1. */
int zkl__debug_wait_suspended(zkl_session *s, unsigned want, int timeout_ms);
/* Waits until the session is known to be over; returns why (0: timeout). */
int zkl__debug_wait_dead(zkl_session *s, int timeout_ms);

/* For tests: the lease's numbers as the library uses them (lease.c). */
typedef struct zkl_debug_lease {
  int timeout_ms;     /* T */
  int margin_ms;      /* -1: off */
  int ping_bound_ms;  /* P */
  int full_ms;        /* T - margin - P: the most a proof leaves */
  int64_t left_ms;    /* of the lease now (0: nothing proven) */
  unsigned long proofs;
} zkl_debug_lease;
void zkl__debug_lease(zkl_session *s, zkl_debug_lease *out);

/* Sessions allocated and not yet freed, in this process. */
unsigned zkl__debug_sessions_alive(void);

/* The test hooks: only in the library the tests link
 * (lib/libzklock_test.la, built with ZKL_TEST_HOOKS, as the tests are);
 * the installed library has none of them. */
#ifdef ZKL_TEST_HOOKS

/* Test hook: when set, called with s->mu held on the completion thread just
 * before a waiter sends the watch on the node it waits for, so tests can
 * make that node vanish in that window. */
extern void (*zkl__hook_before_watch)(const char *pred_path);

/* Test hook: when set, called by zkl__participants_locked() (so by
 * zkl_name_list(), zkl_name_revoke() and zkl_name_break()) on the caller's thread,
 * with no lock held, between its listing of the name's places and its
 * reads of the nodes listed, so that tests can make a holder let go in
 * that window. */
extern void (*zkl__hook_participants_listed)(const char *name);

/* Test hook: the next zkl__test_stale_grants grants are taken as if the
 * lease were under half (they wait for a fresher one, then list once more
 * before holding), so tests can drive that path at will. */
extern int zkl__test_stale_grants;
/* Test hook: while non-zero, grants waiting for a fresher lease go on
 * waiting (CONFIRMING), fresh or not. */
extern int zkl__test_hold_confirming;
/* Test hook: while hold is true, the I/O thread of s, a session through
 * zklockd, reads nothing the agent sends (it still writes and pings), so
 * that a test can make an answer cross a call of its own. */
void zkl__test_agent_hold_reads(zkl_session *s, bool hold);
/* Test hook: while non-zero, acquires skip their recipe's first try
 * before preparing (zkl_recipe.try_before_prepare): every semaphore
 * contender comes through its gate, as before that try existed. */
extern int zkl__test_no_first_try;

#endif /* ZKL_TEST_HOOKS */

#endif /* ZKL_INTERNAL_H */
