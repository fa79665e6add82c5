/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats.c - the session's own counters (zkl_session_get_stats()): each is
 * counted, under s->mu, by the file where it happens (session.h says
 * which); the locks held and waited for are counted here, from the
 * engine's list of contenders, at the moment of the call.
 */
#include "config.h"

#include <string.h>

#include "engine.h"
#include "agent.h"

static void count_lock(zkl_lock *l, void *ctx) {
  zkl_session_stats *out = ctx;
  zkl_att_state st;
  /* A part (a semaphore's gate) is its whole's business: counted once,
   * as the whole. */
  if (l->whole || !l->att)
    return;
  st = zkl__attempt_state(l->att);
  if (st == ZKL_AS_HELD)
    out->locks_held++;
  else if (zkl__lock_busy_locked(l))
    out->locks_waiting++;
}

int zkl_session_get_stats(const zkl_session *cs, zkl_session_stats *out) {
  if (cs && ZKL_REMOTE_SESSION(cs))
    return out ? zkl__remote_get_stats(cs, out) : ZKL_EINVAL;
  zkl_session *s = (zkl_session *)cs; /* for s->mu only */
  zkl_engine *e;
  int k, rc;
  if (!s || !out)
    return ZKL_EINVAL;
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&s->mu);
  for (k = 0; k < ZKL_RQ_KINDS; k++)
    out->requests += s->sent[k];
  out->queries = s->sent[ZKL_RQ_QUERY];
  out->heartbeats = s->sent[ZKL_RQ_LEASE_SYNC] + s->sent[ZKL_RQ_LEASE_WRITE];
  out->watch_events = s->watch_events;
  out->disconnects = s->disconnects;
  out->reconnects = s->reconnects;
  out->expiries = s->expiries;
  if ((e = zkl__session_hooks_ctx_locked(s)) != NULL)
    zkl__each_lock_locked(e, count_lock, out);
  rc = zkl__session_usable_locked(s); /* out filled all the same */
  pthread_mutex_unlock(&s->mu);
  return rc;
}
