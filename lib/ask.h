/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ask.h - questions a user's thread asks and waits for (zkl_name_list(),
 * zkl_name_revoke(), zkl_name_get_leader()): requests sent back to back, then waited
 * for together, so that each batch costs one round trip (ask.c); and the
 * question two of them share, a name's contenders (participants.c).
 */
#ifndef ZKL_ASK_H
#define ZKL_ASK_H

#include "io.h"

typedef struct zkl_ask zkl_ask;
struct zkl_ask {
  zkl_session *s;
  pthread_cond_t cond;
  int pending; /* requests sent and not yet answered */
  int rc;      /* the first failure: a refusal at a send, or the handler's */
  /* Each answer, on the completion thread with s->mu held; index as sent.
   * The asker's data lives on beside: embed the zkl_ask first. */
  void (*replied_locked)(zkl_ask *a, int index, const zkl_reply *rp);
};

/* A user's thread about to ask: ZKL_OK with s->mu held; or, holding
 * nothing, ZKL_EDEADLK on a completion thread, ZKL_ECLOSED, ZKL_EEXPIRED. */
int zkl__ask_enter(zkl_session *s);
/* Done asking: unlocks s (zkl__unlock: which may free it). */
void zkl__ask_leave(zkl_session *s);

/* ZKL_OK or ZKL_ESYSTEM. */
int zkl__ask_init(zkl_ask *a, zkl_session *s,
                  void (*replied_locked)(zkl_ask *a, int index,
                                         const zkl_reply *rp));
void zkl__ask_destroy(zkl_ask *a);

enum { ZKL_ASK_LIST, ZKL_ASK_GET, ZKL_ASK_SET, ZKL_ASK_SYNC };
/* Sends one request, without a watch: a listing of path, its data, a
 * write of data[0..len) at any version, or a sync (the session's next
 * reads see at least what the leader had committed when it was sent). A refusal
 * is kept in a->rc (if the first) and returned; then no answer comes. */
int zkl__ask_send_locked(zkl_ask *a, int op, const char *path,
                         const char *data, int len, int index);
/* Waits until every request sent has been answered; returns a->rc. */
int zkl__ask_wait_locked(zkl_ask *a);
/* An answer's failure as a question returns it: the session's end as
 * ZKL_EEXPIRED, anything else as it is. */
int zkl__ask_code(int rc);

/* A question that reads once (or writes what it may write twice) asks
 * again when its connection is lost under it: a move to other servers
 * (follow.c) drops the connection of a session that has only just opened,
 * so a one-shot question is the first to meet it. It asks again from the
 * start once the session is connected (at once when no session event said
 * otherwise: the client holds the request until its connection is back),
 * within its deadline: the session timeout from the question's start (the
 * one negotiated, else the one asked for), past which the server has
 * expired the session, or is about to.
 *
 *   zkl_ask_retry t;
 *   zkl__ask_retry_init_locked(s, &t);
 *   do rc = ...the question...; while (zkl__ask_again_locked(s, &t, &rc));
 */
typedef struct zkl_ask_retry {
  int64_t deadline;
} zkl_ask_retry;
void zkl__ask_retry_init_locked(const zkl_session *s, zkl_ask_retry *t);
/* rc: the question's outcome. true: ask again (the connection was lost,
 * and the deadline has not passed); false: *rc is the outcome to return
 * (rc as it was, or the session's end while waiting). */
bool zkl__ask_again_locked(zkl_session *s, zkl_ask_retry *t, int *rc);

/* participants.c: the contenders of name (a valid lock name), read through
 * the registry in two batches. Asked inside zkl__ask_enter(). synced: a
 * sync goes first, in the same batch (no round trip of its own), so that
 * a server behind the leader does not answer with a queue that misses a
 * node committed before the call: zkl_name_break() and zkl_name_revoke() act on
 * what they read (a downgrade's read node, made after its write node, must
 * not be missed while the write node is seen). */
int zkl__participants_locked(zkl_session *s, const char *name,
                             zkl_participant **out, int *count, bool synced);
/* The same, from a user's thread, as zkl_name_list() asks it. */
int zkl__participants_ask(zkl_session *s, const char *name,
                          zkl_participant **out, int *count, bool synced);

#endif /* ZKL_ASK_H */
