/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.h - zklockd, the per-host lock agent: one ZooKeeper session (the
 * library's, with its lease) serves every local process that connects to
 * its Unix socket; a process's locks live as long as its connection.
 *
 *   zklockd.c  the command line, signals, the session, the socket
 *   serve.c    the loop: connections, frames, the calls, the lease relay
 *   policy.c   who may lock, list or break which names (zklockd.conf)
 *   admin.c    the calls that block (break, revoke, list, find, leader),
 *              each on a thread of its own
 *
 * Threads: the loop thread reads and writes every socket and makes every
 * library call; the library's completion and timer threads run the
 * callbacks, which only queue frames for the loop (under srv->mu, never
 * blocking on a socket) and wake it; so do admin.c's threads with their
 * replies (server_admin_done). Lock order: srv->mu, then the
 * library's own (the library runs callbacks with none of its locks held).
 */
#ifndef ZKLOCKD_AGENT_H
#define ZKLOCKD_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire.h"
#include "zklock.h"

/* ---------------------------------------------------------------- policy */

enum { POLICY_LOCK = 0, POLICY_LIST, POLICY_BREAK, POLICY_ACTIONS };

typedef struct policy policy;
/* Reads path (NULL: the built-in default); on failure writes why into err
 * and returns NULL. agent_uid joins the default's breakers. */
policy *policy_load(const char *path, uid_t agent_uid, char *err,
                    size_t errlen);
void policy_free(policy *p);
/* Whether the process (uid, gid) may do action on name. */
bool policy_allows(const policy *p, int action, const char *name, uid_t uid,
                   gid_t gid);

/* ----------------------------------------------------------------- serve */

typedef struct server server;

typedef struct server_config {
  int listen_fd;         /* listening, non-blocking */
  zkl_session *session;  /* open */
  policy *pol;           /* taken over */
  bool verbose;
  const char *hosts;     /* for reopening after an expiry */
  int session_timeout_ms;
  int server_tick_ms;    /* --server-tick; 0: T/2 assumed */
  unsigned open_flags;   /* ZKL_OPEN_*: --no-follow-config */
} server_config;

/* Serves until stop is set (a signal handler's flag; the handler also
 * writes to the wake fd server_wake_fd() returns). reload is set by
 * SIGHUP: the policy is read again from policy_path. Returns the exit
 * status. */
int server_run(const server_config *cfg, volatile int *stop,
               volatile int *reload, const char *policy_path, int wake_fd);

/* ----------------------------------------------------------------- admin */

/* One blocking call of a client (ZKL_MSG_BREAK, _REVOKE, _LIST, _FIND,
 * _LEADER), run by admin.c on a thread of its own. */
typedef struct admin_call {
  int type;
  char *name;   /* the name, or find's prefix */
  char *node;   /* break's or revoke's node; NULL: every holder */
  int32_t grace_ms, max_nodes;
  uint32_t req;    /* the client's request id */
  uint64_t client; /* which client (by id: it may be gone by the reply) */
  zkl_session *s;
  server *srv;
  /* Where its thread hands the reply (serve.c sets server_admin_done):
   * a pointer, so that admin.c names nothing of serve.c's. It queues the
   * reply for its client if it is still there, and frees call and b. */
  void (*done)(server *srv, struct admin_call *call, zkl_wbuf *b);
} admin_call;

/* Reads a call's fields; NULL when f is malformed (f->bad set) or out of
 * memory (f->bad not set). */
admin_call *admin_read(zkl_rframe *f);
/* What the policy must allow on call->name: POLICY_LIST or POLICY_BREAK. */
int admin_action(const admin_call *call);
/* Runs call on a detached thread, which ends in call->done(); else
 * ZKL_ESYSTEM (call is still the caller's). */
int admin_start(admin_call *call);
void admin_free(admin_call *call);
/* serve.c: a call's reply, from its thread: queued for its client if it is
 * still there; frees call and b. */
void server_admin_done(server *srv, admin_call *call, zkl_wbuf *b);

#endif /* ZKLOCKD_AGENT_H */
