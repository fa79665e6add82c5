/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workers.c - zkl_session_add_worker(): a process that works under the
 * session's locks, such as zklock's command (its keeper, cli/keeper.c),
 * and may run on after the process that holds them.
 *
 * The promise is the same both ways: once the holding process is gone,
 * its locks pass on no sooner than the worker's end, or than the end of the
 * lease last in force (the deadline plus the margin). Direct, that is what
 * the ZooKeeper session does by itself: it outlives its process until the
 * leader expires it, no sooner than the deadline plus the margin
 * (docs/correctness.md), so there is nothing to record and the call only
 * checks the process. Through an agent, the agent would free a dead
 * client's locks at once; it is told the worker (ZKL_MSG_WORK) and keeps
 * them until the worker has ended too, or until that lease has run out
 * (agent/serve.c). The worker must be stopped by then: zklock's keeper
 * sends SIGKILL by the deadline plus half the margin.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>

#include "agent.h"
#include "session.h"

static void put_pid(zkl_wbuf *b, const void *p) {
  zkl__wire_i32(b, (int32_t) * (const pid_t *)p);
}

static bool parse_rc(zkl_rframe *f, int rc, void *out) {
  (void)rc;
  (void)out;
  return zkl__wire_done(f);
}

static int remote_add_worker(zkl_session *s, pid_t pid) {
  int revision = zkl__remote_revision(s);
  if (revision < 3) {
    zkl__log("zkl_session_add_worker: the agent speaks protocol revision "
             "%d, older than workers: upgrade zklockd(8)",
             revision);
    return ZKL_EINVAL;
  }
  return zkl__agent_ask(s, ZKL_MSG_WORK, put_pid, &pid, parse_rc, NULL);
}

int zkl_session_add_worker(zkl_session *s, pid_t pid) {
  bool closing;
  if (!s || pid <= 0)
    return ZKL_EINVAL;
  if (ZKL_REMOTE_SESSION(s))
    return remote_add_worker(s, pid);
  pthread_mutex_lock(&s->mu);
  closing = s->closing;
  pthread_mutex_unlock(&s->mu);
  if (closing)
    return ZKL_ECLOSED;
  /* The same answers the agent gives: no such process, or not ours to
   * vouch for. */
  if (kill(pid, 0) != 0)
    return errno == EPERM ? ZKL_EDENIED : ZKL_EINVAL;
  return ZKL_OK;
}
