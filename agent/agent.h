/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.h - zklockd, the per-host lock agent: one ZooKeeper session (the
 * library's, with its lease) serves every local process that connects to
 * its Unix socket; a process's locks live as long as its connection.
 *
 *   zklockd.c  the command line, signals, the session, the socket
 *   serve.c    the loop: connections, frames, the calls, the lease relay
 *   policy.c   who may lock, list or break which names, and write which
 *              paths (zklockd.conf)
 *   admin.c    the calls that block (break, revoke, list, find, leader),
 *              each on a thread of its own
 *   commit.c   a guarded write's frame read into ops, its results written
 *   auth.c     the agent's ZooKeeper credentials (--auth-file), added to
 *              every session it opens
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

enum {
  POLICY_LOCK = 0,
  POLICY_LIST,
  POLICY_BREAK,
  POLICY_WRITE, /* on a znode path (a guarded write's op), not a name */
  POLICY_ACTIONS
};

typedef struct policy policy;
/* Reads path (NULL: the built-in default); on failure writes why into err
 * and returns NULL. agent_uid joins the default's breakers and writers. */
policy *policy_load(const char *path, uid_t agent_uid, char *err,
                    size_t errlen);
void policy_free(policy *p);
/* Whether the process (uid, gid) may do action on name (POLICY_WRITE: on
 * a znode path). */
bool policy_allows(const policy *p, int action, const char *name, uid_t uid,
                   gid_t gid);

/* ------------------------------------------------------------------ auth */

/* The credentials the agent's sessions show (--auth-file). */
typedef struct agent_auth {
  char *scheme;      /* "digest", ... */
  char *credentials; /* "USER:PASSWORD" for digest */
  int len;
} agent_auth;

/* Reads path: one line SCHEME:CREDENTIALS, in a regular file that nobody
 * but its owner may read or change, owned by the agent's user or root.
 * NULL with err set when it is not so. */
agent_auth *auth_load(const char *path, char *err, size_t errlen);
void auth_free(agent_auth *a);
/* zkl_session_open, then a's credentials added (a NULL: none) before
 * anything else is asked; the session closed again when they are refused. */
int auth_open(zkl_session **out, const zkl_session_options *o,
              const agent_auth *a);

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
  const agent_auth *auth; /* --auth-file, for every session opened; NULL */
  bool acl_forced;       /* --acl: every lock's nodes get acl, whatever */
  zkl_acl acl;           /*   ACL its client asked for */
} server_config;

/* Serves until stop is set (a signal handler's flag; the handler also
 * writes to the wake fd server_wake_fd() returns). reload is set by
 * SIGHUP: the policy is read again from policy_path. Returns the exit
 * status. */
int server_run(const server_config *cfg, volatile int *stop,
               volatile int *reload, const char *policy_path, int wake_fd);

/* ----------------------------------------------------------------- procs */

/* A pidfd of the process at the other end of sock (pid: SO_PEERCRED's),
 * or -1 when none can be had (no pidfds, another pid namespace). */
int procs_peer_pidfd(int sock, pid_t pid);
/* Whether the process of pidfd has exited (never blocks; -1: false). */
bool procs_exited(int pidfd);
/* A pidfd of worker pid, which the client at peer (uid) names: ZKL_OK with
 * *pidfd, ZKL_EINVAL (no such process, another pid namespace), ZKL_EDENIED
 * (another user's; root's clients may name anyone's). */
int procs_open_worker(pid_t pid, pid_t peer, uid_t uid, int *pidfd);

/* ----------------------------------------------------------------- admin */

/* One blocking call of a client (ZKL_MSG_BREAK, _REVOKE, _LIST, _FIND,
 * _LEADER), run by admin.c on a thread of its own. */
typedef struct admin_call {
  int type;
  char *name;   /* the name, or find's prefix */
  char *node;   /* break's or revoke's node; NULL: every holder */
  int32_t grace_ms, max_nodes;
  bool hide_prefix; /* a find allowed under name only: name itself left out
                       of the answer (admin_allowed) */
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
/* Whether p lets (uid, gid) ask call: its action on its name, or for a
 * find, on every name under its prefix (the prefix and a '/'), the prefix
 * itself then left out of the answer. */
bool admin_allowed(admin_call *call, const policy *p, uid_t uid, gid_t gid);
/* Runs call on a detached thread, which ends in call->done(); else
 * ZKL_ESYSTEM (call is still the caller's). */
int admin_start(admin_call *call);
void admin_free(admin_call *call);
/* serve.c: a call's reply, from its thread: queued for its client if it is
 * still there; frees call and b. */
void server_admin_done(server *srv, admin_call *call, zkl_wbuf *b);

/* ---------------------------------------------------------------- commit */

/* A client's guarded write (ZKL_MSG_COMMIT): its ops, and everything they
 * point to, owned here until the library's callback has run. */
typedef struct commit_call {
  uint64_t id;      /* what the library's callback carries */
  uint64_t client;  /* which client, and which of its locks (by id: either */
  uint64_t lock;    /*   may be gone by the callback) */
  uint32_t req;     /* the client's request id */
  int32_t handle;
  int count;
  zoo_op_t *ops;
  zoo_op_result_t *results;
  const char **paths;      /* each op's, for the policy */
  struct Stat *stats;      /* a setData's, when the client wants it */
  struct ACL_vector *acls; /* a create's */
  char **bufs;             /* a create's path buffer, or NULL */
  int *buf_asked, *buf_len; /* its size: the caller's, and the agent's */
  char *arena;             /* the frame's strings and bytes, copied */
  struct commit_call *next; /* in the server's list */
} commit_call;

/* Reads a COMMIT's fields; NULL when f is malformed (f->bad set) or out of
 * memory (f->bad not set). */
commit_call *commit_read(zkl_rframe *f);
/* The reply to request req: rc, and the results when the ops ran. */
void commit_reply(const commit_call *cc, uint32_t req, int rc, bool ran,
                  zkl_wbuf *b);
void commit_free(commit_call *cc);

#endif /* ZKLOCKD_AGENT_H */
