/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.h - sessions through zklockd, the host's lock agent (agent.c).
 *
 * A session opened with zkl_session_options.agent has no ZooKeeper handle:
 * its locks are handles on the agent's session, which runs the engine for
 * them. The public functions ask ZKL_REMOTE_SESSION / ZKL_REMOTE_LOCK first
 * and hand such an object to the zkl__remote_* function of the same name;
 * nothing below them (the engine, the session layer) ever sees one.
 */
#ifndef ZKL_AGENT_H
#define ZKL_AGENT_H

#include "common.h"
#include "wire.h"

typedef struct zkl_agent zkl_agent;
typedef struct zkl_remote zkl_remote;

#define ZKL_REMOTE_SESSION(s) ((s)->agent != NULL)
#define ZKL_REMOTE_LOCK(l) ((l)->remote != NULL)

/* open.c: zkl_session_open() with o.agent. */
int zkl__remote_open(zkl_session **out, const char *path, int timeout_ms,
                     zkl_state_cb on_state, void *state_arg,
                     zkl_event_cb on_event, void *event_arg);
int zkl__remote_close(zkl_session *s, zkl_close_outcome *how);
int zkl__remote_timeout(const zkl_session *s);
int64_t zkl__remote_lease_deadline(const zkl_session *s);
int zkl__remote_on_state(zkl_session *s, zkl_state_cb cb, void *arg);
/* zkl_session_on_event, _get_servers, and the counts of _get_stats that
 * are this process's own (agent.c; the agent's counters: agent_admin.c). */
int zkl__remote_on_event(zkl_session *s, zkl_event_cb cb, void *arg);
int zkl__remote_get_servers(const zkl_session *s, char *buf, size_t len);
void zkl__remote_count_locks(const zkl_session *s, unsigned *held,
                             unsigned *waiting);
/* The protocol revision agreed with the agent at HELLO (wire.h). */
int zkl__remote_revision(const zkl_session *s);
int zkl__remote_get_stats(const zkl_session *s, zkl_session_stats *out);

/* The kinds (ZKL_AGENT_* of wire.h): names[0..count), limit (semaphore),
 * id (election). */
int zkl__remote_new(zkl_lock **out, zkl_session *s, int kind,
                    const char *const *names, int count, int limit,
                    const char *id);
/* A read/write lock's two sides, made and freed together. */
int zkl__remote_new_rwlock(zkl_lock **read, zkl_lock **write, zkl_session *s,
                           const char *name);
void zkl__remote_free_rwlock(zkl_lock *read, zkl_lock *write);
void zkl__remote_free(zkl_lock *l);
int zkl__remote_acquire(zkl_lock *l, int timeout_ms, int64_t *token);
int zkl__remote_release(zkl_lock *l);
int zkl__remote_acquire_async(zkl_lock *l, int timeout_ms, zkl_acquire_cb cb,
                              void *arg);
int zkl__remote_release_async(zkl_lock *l, zkl_release_cb cb, void *arg);
int zkl__remote_cancel(zkl_lock *l);
int zkl__remote_on_lost(zkl_lock *l, zkl_lost_cb cb, void *arg);
int zkl__remote_on_revoke(zkl_lock *l, zkl_revoke_cb cb, void *arg);
int64_t zkl__remote_token(const zkl_lock *l);
const char *zkl__remote_other_kind(const zkl_lock *l);
const char *zkl__remote_refused_name(const zkl_lock *l);
bool zkl__remote_break_mark(const zkl_lock *l);
/* option: ZKL_AGENT_SET_*; text for the owner info, else value. */
int zkl__remote_set(zkl_lock *l, int option, int value, const char *text);
/* ZKL_AGENT_SET_LAYOUT, checked first as the library checks it. */
int zkl__remote_set_layout(zkl_lock *l, int layout);
/* The first node's path (one), or all of them (paths). */
int zkl__remote_node_paths(const zkl_lock *l, bool all, char *buf,
                           size_t len);

/* Whether l is a multi-lock (its queues are the agent's to know; any other
 * kind's are its name's: zkl_lock_get_queues). */
bool zkl__remote_is_multi(const zkl_lock *l);
/* agent.c: a call on the session (no lock), waited for: put writes its
 * fields after the header, parse (on the agent thread, s->mu held) reads
 * the reply's after rc into out; false when they do not parse (it frees
 * what it took). Returns the reply's rc, or why none came (ZKL_EAGENT,
 * ZKL_ECLOSED, ZKL_EDEADLK on the session's callback thread). */
typedef void (*zkl_agent_put)(zkl_wbuf *b, const void *args);
typedef bool (*zkl_agent_parse)(zkl_rframe *f, int rc, void *out);
int zkl__agent_ask(zkl_session *s, int type, zkl_agent_put put,
                   const void *args, zkl_agent_parse parse, void *out);

/* agent_admin.c: zkl_name_break, _revoke, _list, _find, _get_leader
 * through the agent (as the functions of the same name). */
int zkl__remote_break(zkl_session *s, const char *name, const char *node,
                      int grace_ms, zkl_break_cb cb, void *arg);
int zkl__remote_revoke(zkl_session *s, const char *name, const char *node);
int zkl__remote_list(zkl_session *s, const char *name, zkl_participant **out,
                     int *count);
int zkl__remote_find(zkl_session *s, const char *prefix, int max_nodes,
                     char ***names, int *count, bool *truncated);
int zkl__remote_get_leader(zkl_session *s, const char *name, char *id,
                           size_t len, int64_t *token);

/* Leader watches through the agent (agent.c). _free returns false when lw
 * is not one (the library's own: it frees it). */
int zkl__remote_leader_watch_new(zkl_leader_watch **out, zkl_session *s,
                                 const char *name, zkl_leader_cb cb,
                                 void *arg);
bool zkl__remote_leader_watch_free(zkl_leader_watch *lw);

/* Guarded writes through the agent (agent.c; zkl_lock_commit and
 * _commit_async: cb NULL for the blocking one). */
int zkl__remote_commit(zkl_lock *l, int count, const zoo_op_t *ops,
                       zoo_op_result_t *results, zkl_commit_cb cb, void *arg);
/* agent_commit.c: the ops as ZKL_MSG_COMMIT's fields, and its reply's
 * results into the caller's. _check says, before anything is sent, what
 * cannot be (ZBADARGUMENTS: no path, another type, data missing;
 * ZKL_EINVAL: its reply would not fit in a frame). */
typedef struct zkl_commit_out {
  int count;
  const zoo_op_t *ops;
  zoo_op_result_t *results;
} zkl_commit_out;
int zkl__commit_check(int count, const zoo_op_t *ops);
void zkl__commit_put(zkl_wbuf *b, int32_t handle, int count,
                     const zoo_op_t *ops);
bool zkl__commit_parse(zkl_rframe *f, int rc, void *out); /* a zkl_commit_out */

/* What a call the agent does not serve returns: ZKL_EINVAL, logged with
 * its name (docs/agent.md lists them, and why). */
int zkl__remote_unsupported(const char *what);

#endif /* ZKL_AGENT_H */
