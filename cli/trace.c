/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c - -v: what the library tells of the lock and the session, one line
 * each on stderr, with the time it happened (taken by the hook, not when
 * the line is printed).
 *
 * The hook (events.c) runs on the library's threads and must not block: it
 * only copies the event. The main loop prints them here, and for a
 * contender that queued behind a node, names that node's owner (one more
 * listing, from the main thread).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *lost_why(int reason) {
  switch (reason) {
  case ZKL_LOST_SESSION_EXPIRED:
    return "the session expired";
  case ZKL_LOST_NODE_DELETED:
    return "its node was deleted";
  case ZKL_LOST_LEASE_EXPIRED:
    return "the lease ran out (no answer from ZooKeeper in time)";
  case ZKL_LOST_BROKEN:
    return "it was broken (zklock --break)";
  case ZKL_LOST_MAX_HOLD:
    return "its maximum hold ran out (--max-hold)";
  default:
    return "unknown reason";
  }
}

static const char *session_state(int state) {
  switch (state) {
  case ZKL_STATE_CONNECTED:
    return "connected";
  case ZKL_STATE_SUSPENDED:
    return "suspended: the connection was lost, the lock is in doubt until "
           "it comes back or the lease runs out";
  case ZKL_STATE_RECONNECTED:
    return "reconnected in the same session";
  case ZKL_STATE_EXPIRED:
    return "expired";
  case ZKL_STATE_AUTH_FAILED:
    return "ended: the server refused the credentials";
  case ZKL_STATE_CLOSED:
    return "closed";
  default:
    return "in an unknown state";
  }
}

/* The connect string last told, so that a change is told once: by the
 * event, or by trace_servers_now() when the event came before the hook. */
static char servers_told[ZKL_SERVERS_MAX];

static void tell_servers(const struct timespec *at, const char *servers) {
  if (strcmp(servers, servers_told) == 0)
    return;
  snprintf(servers_told, sizeof servers_told, "%s", servers);
  cli_verbose_at(at,
                 "the ensemble's servers changed: the session follows them "
                 "to %s",
                 cli_quote(servers));
}

void trace_servers_now(zkl_session *s, const char *given) {
  char now[ZKL_SERVERS_MAX];
  struct timespec at;
  clock_gettime(CLOCK_REALTIME, &at);
  if (zkl_session_get_servers(s, now, sizeof now) != ZKL_OK)
    return;
  if (!given) { /* the agent's session: where it is is news, not a change */
    snprintf(servers_told, sizeof servers_told, "%s", now);
    cli_verbose_at(&at, "the agent's session uses the servers %s",
                   cli_quote(now));
    return;
  }
  if (!servers_told[0])
    snprintf(servers_told, sizeof servers_told, "%s", given);
  tell_servers(&at, now);
}

static void print_one(zkl_session *s, const ev_trace *t) {
  const zkl_event *ev = &t->ev;
  char path[ZKL_PATH_MAX], owner[600];
  if (ev->type == ZKL_EVENT_SESSION) {
    cli_verbose_at(&t->at, "session %s", session_state(ev->reason));
    return;
  }
  if (ev->type == ZKL_EVENT_SERVERS) {
    tell_servers(&t->at, ev->servers);
    return;
  }
  names_parent(path, sizeof path, ev->name ? ev->name : "?");
  switch (ev->type) {
  case ZKL_EVENT_QUEUED:
    if (!ev->waiting_for)
      cli_verbose_at(&t->at,
                     "queued for %s: %d ahead, waiting for one of "
                     "them to let go",
                     path, ev->position);
    else if (s && queue_describe_node(s, ev->name, ev->waiting_for, owner,
                                      sizeof owner))
      cli_verbose_at(&t->at, "queued for %s: %d ahead, behind %s (%s)", path,
                     ev->position, owner, ev->waiting_for);
    else
      cli_verbose_at(&t->at, "queued for %s: %d ahead, behind %s", path,
                     ev->position, ev->waiting_for);
    break;
  case ZKL_EVENT_GRANTED:
    cli_verbose_at(&t->at, "granted %s after %s, token %" PRId64, path,
                   cli_duration(ev->wait_ms), ev->token);
    break;
  case ZKL_EVENT_RELEASED:
    cli_verbose_at(&t->at, "released %s after holding it %s", path,
                   cli_duration(ev->hold_ms));
    break;
  case ZKL_EVENT_LOST:
    cli_verbose_at(&t->at, "lost %s after holding it %s: %s", path,
                   cli_duration(ev->hold_ms), lost_why(ev->reason));
    break;
  case ZKL_EVENT_TIMED_OUT:
    cli_verbose_at(&t->at, "timed out waiting for %s after %s", path,
                   cli_duration(ev->wait_ms));
    break;
  case ZKL_EVENT_CANCELED:
    cli_verbose_at(&t->at, "stopped waiting for %s after %s", path,
                   cli_duration(ev->wait_ms));
    break;
  case ZKL_EVENT_FAILED:
    cli_verbose_at(&t->at, "could not acquire %s (after %s): %s", path,
                   cli_duration(ev->wait_ms), zkl_strerror(ev->reason));
    break;
  default:
    cli_verbose_at(&t->at, "event %d on %s", ev->type, path);
  }
}

void trace_flush(zkl_session *s) {
  ev_trace t;
  int dropped;
  bool got;
  if (!cli_verbose) { /* the hook is on for the waiting status only */
    while (ev_take_trace(&t, &dropped))
      ;
    return;
  }
  do {
    got = ev_take_trace(&t, &dropped);
    if (dropped > 0)
      cli_verbose_msg("%d events came faster than they could be shown and "
                      "were not",
                      dropped);
    if (got)
      print_one(s, &t);
  } while (got);
}
