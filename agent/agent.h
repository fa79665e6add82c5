/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.h - zklockd, the per-host lock agent: one ZooKeeper session (the
 * library's, with its lease) serves every local process that connects to
 * its Unix socket; a process's locks live as long as its connection.
 *
 *   zklockd.c  the command line, signals, the session, the socket
 *   serve.c    the loop: connections, frames, the calls, the lease relay
 *   policy.c   who may lock, list or break which names (zklockd.conf)
 *
 * Threads: the loop thread reads and writes every socket and makes every
 * library call; the library's completion and timer threads run the
 * callbacks, which only queue frames for the loop (under srv->mu, never
 * blocking on a socket) and wake it. Lock order: srv->mu, then the
 * library's own (the library runs callbacks with none of its locks held).
 */
#ifndef ZKLOCKD_AGENT_H
#define ZKLOCKD_AGENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

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
} server_config;

/* Serves until stop is set (a signal handler's flag; the handler also
 * writes to the wake fd server_wake_fd() returns). reload is set by
 * SIGHUP: the policy is read again from policy_path. Returns the exit
 * status. */
int server_run(const server_config *cfg, volatile int *stop,
               volatile int *reload, const char *policy_path, int wake_fd);

#endif /* ZKLOCKD_AGENT_H */
