/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease.c - the library's lease, as zklock and its watchdog enforce it.
 *
 * The library keeps the lease (see zkl_session_set_lease_margin()): its
 * anchor t is a moment the leader provably heard of the session at or
 * after, so the session lives until t + T at least; held locks are
 * declared lost at t + T - m; the library's beats keep t recent.
 * zkl_session_lease_deadline() tells zklock that deadline,
 * and zklock hands it to its watchdog, which acts m/2 later should zklock
 * not have: still before t + T, when the server could expire the session.
 * For that, zklock must know m: it sets it itself, to the library's default
 * rule (T/10 within 100..2000 ms), rather than guess it.
 *
 * zklock sends no request of its own for the lease: the library's
 * heartbeats are the only ones.
 *
 * Main thread only (no lock needed): the values are read and remembered
 * where the main loop asks for them.
 */
#include "config.h"

#include "cli.h"

static zkl_session *session;
static int timeout_ms, margin_ms;
static int64_t last_deadline; /* the latest non-zero deadline seen */
static int64_t first_proof;   /* before any: when connecting began */

int lease_init(zkl_session *s, int64_t proven_ms, int server_tick_ms) {
  int t = zkl_session_timeout(s), m = t / 10, rc;
  session = s;
  timeout_ms = t;
  first_proof = proven_ms;
  m = m < 100 ? 100 : m > 2000 ? 2000 : m;
  margin_ms = m < t ? m : t / 2; /* a server with a tiny tick */
  /* Through the agent (no handle here), the agent's library keeps the
   * lease with this same default rule: nothing to set. */
  if (!zkl_session_handle(s))
    return ZKL_OK;
  rc = zkl_session_set_server_tick(s, server_tick_ms);
  return rc == ZKL_OK ? zkl_session_set_lease_margin(s, margin_ms) : rc;
}

int lease_timeout(void) { return timeout_ms; }
int lease_margin(void) { return margin_ms; }

int64_t lease_deadline(void) {
  int64_t d = zkl_session_lease_deadline(session);
  if (d > last_deadline)
    last_deadline = d;
  return d;
}

int64_t lease_proven(void) {
  lease_deadline();
  return last_deadline ? last_deadline - timeout_ms + margin_ms : first_proof;
}
