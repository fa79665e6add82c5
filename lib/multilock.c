/* SPDX-License-Identifier: Apache-2.0 */
/*
 * multilock.c - several names held at once, enqueued by one transaction.
 *
 * A multi-lock is a whole with no node of its own (a nodeless recipe) and
 * one part per name: a mutex contender of that name (its nodes are mutex
 * nodes, _c_<id>-lock-<seq>, so every other contender of the name, ours
 * or Curator's or kazoo's, queues beside it). Its preparation:
 *
 *   1. one zoo_multi creates the node of every part, all with one prefix
 *      (ZNONODE: a parent is missing; the parents are created as
 *      containers, then the transaction again, a few times at most; a
 *      refusal fails the acquire, and by atomicity nothing was made);
 *   2. a getData of the first node (its czxid, the token: every node of
 *      the transaction has it), sent before
 *   3. each part's attempt, adopted with its node known (the engine's
 *      NEW -> LISTING): it waits in its queue by the mutex's rule and tells
 *      its grant through a hook;
 *   4. every part holding: the whole is held (PREPARING -> HELD). A part
 *      may be granted long before the last one is, and its hold may end
 *      meanwhile (its node deleted or broken, the lease run out): the
 *      whole is granted only while every part holds, and a part whose hold
 *      ends while the whole waits fails the whole's acquire (ZKL_ELOST,
 *      after the other nodes are deleted: it was never granted, so no lost
 *      callback), or else a later holder of that name and the whole would
 *      both hold it.
 *
 * Why no deadlock: all the nodes of one transaction share its zxid, and in
 * every parent sequence numbers follow zxids. So every queue orders the
 * contenders it has in common the same way, a contender only ever waits for
 * contenders created before it, and the wait-for graph has no cycle,
 * whatever order callers name their locks in.
 *
 * A create whose reply is lost (the connection dropped): after the
 * reconnect, a write, then every queue is listed for the prefix (the
 * write orders the listings after the lost transaction, should it ever be
 * applied: find_locked says why), and the first name's node is adopted
 * only if its ephemeralOwner is this session (rule 6 of docs/recipe.md);
 * by atomicity, then every name has one. Otherwise the transaction goes
 * again.
 *
 * The release is one transaction of deletes; the parts end as released
 * without deleting (their recipe keeps the node while the whole deletes).
 * The loss of any part is the loss of the whole: one lost notice, with
 * that part's reason; the other parts are then released.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes.h"
#include "io.h"

/* Where the preparation is. */
enum phase {
  M_IDLE,    /* waiting for a connection to send the transaction */
  M_SENT,    /* the transaction is in flight */
  M_UNKNOWN, /* its outcome was lost: find it after the reconnect */
  M_FINDING, /* listing every queue for the prefix, then the first node */
  M_PARTS,   /* the nodes are made: the parts wait in their queues */
  M_HELD
};

typedef struct multi {
  zkl_lock *l; /* the whole (borrowed: this is its recipe argument) */
  int count;
  char prefix[ZKL_PREFIX_MAX];
  zkl_attempt *att; /* the whole's attempt, referenced until it ends */
  unsigned gen;     /* bumped at each send: older replies are stale */
  enum phase phase;
  int parent_rounds;
  int parent_rc;   /* a parent's create refused for a reason of its own */
  const char *refused;      /* the name ZooKeeper refused at the last acquire
                               (a part's name), or NULL: see
                               zkl_lock_refused_name() */
  int answers;              /* M_FINDING: listings answered */
  char **nodes;             /* per name: our node there, not (yet) a part's */
  char first[ZKL_PATH_MAX]; /* M_PARTS: the first name's node (the token's) */
  int64_t czxid;            /* the token, once known */
  bool czxid_known;
  bool czxid_lost; /* its getData's reply was lost: again at reconnect */
  bool deleting;   /* the whole deletes the parts' nodes itself */
} multi;

/* What a transaction does. */
enum txn_kind {
  T_CREATE,  /* makes every part's node: the enqueue */
  T_RELEASE, /* deletes every node: the whole's release */
  T_UNDO,    /* deletes what a T_CREATE made for an attempt that moved on */
  T_ORDER    /* a check of "/": a write that the recovery's listings follow
                (find_locked) */
};

/* One transaction in flight. */
typedef struct txn {
  zkl_attempt *att; /* referenced (zkl__attempt_req_begin_locked) */
  unsigned gen;
  enum txn_kind kind;
  int count;
  char prefix[ZKL_PREFIX_MAX];
  zoo_op_t *ops;
  zoo_op_result_t *results;
  char (*paths)[ZKL_PATH_MAX]; /* the ops' paths */
  char (*made)[ZKL_PATH_MAX];  /* T_CREATE: the paths made */
  char data[sizeof ((zkl_session *)0)->owner_data + ZKL_INFO_MAX + 8];
} txn;

static multi *multi_of(zkl_attempt *att) {
  return (multi *)zkl__attempt_lock(att)->arg;
}

static zkl_lock *part(const multi *m, int i) { return m->l->parts[i]; }

/* Deletions are ours to send: not when the session's end takes the nodes
 * (as the engine's ENDING). */
static bool deletes_wanted(const zkl_session *s) {
  return !s->dead && !s->closed && !(s->closing && s->owns_handle);
}

static void forget_nodes(multi *m) {
  int i;
  for (i = 0; i < m->count; i++) {
    free(m->nodes[i]);
    m->nodes[i] = NULL;
  }
}

/* Deletes the nodes made for parts that never got them. */
static void delete_unadopted_locked(multi *m) {
  zkl_session *s = m->l->s;
  char path[ZKL_PATH_MAX];
  int i;
  for (i = 0; i < m->count; i++)
    if (m->nodes[i] && deletes_wanted(s)) {
      snprintf(path, sizeof path, "%s/%s", part(m, i)->queue, m->nodes[i]);
      zkl__cleanup_delete_locked(s, path);
    }
  forget_nodes(m);
}

/* Whatever a create with this prefix may have made, in every queue. */
static void delete_prefix_locked(multi *m, const char *prefix) {
  zkl_session *s = m->l->s;
  int i;
  if (!deletes_wanted(s))
    return;
  for (i = 0; i < m->count; i++)
    zkl__cleanup_prefix_locked(s, part(m, i)->queue, prefix);
}

static void fail_locked(multi *m, int rc) {
  zkl__attempt_prepared_locked(m->att, rc); /* ends it: unprepare cleans */
}

/* ----------------------------------------------------------- transactions */

static void txn_free(txn *t) {
  if (!t)
    return;
  free(t->ops);
  free(t->results);
  free(t->paths);
  free(t->made);
  free(t);
}

static txn *txn_new(zkl_attempt *att, int count, enum txn_kind kind) {
  txn *t = calloc(1, sizeof *t);
  bool creates = kind == T_CREATE;
  if (!t)
    return NULL;
  t->att = att;
  t->count = count;
  t->kind = kind;
  t->ops = calloc((size_t)count, sizeof *t->ops);
  t->results = calloc((size_t)count, sizeof *t->results);
  t->paths = calloc((size_t)count, sizeof *t->paths);
  t->made = creates ? calloc((size_t)count, sizeof *t->made) : NULL;
  if (!t->ops || !t->results || !t->paths || (creates && !t->made)) {
    txn_free(t);
    return NULL;
  }
  return t;
}

static void created_locked(txn *t, int rc);
static void deleted_locked(txn *t, int rc);
static void undone_locked(txn *t, int rc);

static void txn_done_locked(zkl_req *r, const zkl_answer *a) {
  txn *t = r->owner;
  if (t->kind == T_CREATE)
    created_locked(t, a->rc);
  else if (t->kind == T_RELEASE)
    deleted_locked(t, a->rc);
  else if (t->kind == T_UNDO)
    undone_locked(t, a->rc);
  /* T_ORDER: any answer will do (see find_locked) */
  zkl__attempt_req_end_locked(t->att); /* may free the attempt */
  txn_free(t);
}

/* Sends t; on ZKL_OK its completion owns it. */
static int txn_send_locked(txn *t) {
  zkl_session *s = zkl__attempt_lock(t->att)->s;
  zkl_req *r = zkl__req_new_locked(s, ZKL_RQ_MULTI_LOCK);
  int rc;
  if (!r)
    return ZKL_ENOMEM;
  r->owner = t;
  r->answered_locked = txn_done_locked;
  zkl__attempt_req_begin_locked(t->att);
  zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
  rc = zkl__safe_amulti(s->zh, t->count, t->ops, t->results, zkl__on_void, r);
  if (rc == ZOK)
    return ZKL_OK;
  zkl__req_abort_locked(r);
  zkl__attempt_req_end_locked(t->att);
  return rc == ZINVALIDSTATE ? ZKL_EEXPIRED : rc;
}

/* ---------------------------------------------------------- other requests */

static void replied_locked(void *owner, const zkl_reply *rp);
static const zkl_io_ops io_ops = {replied_locked};

/* A request of the attempt through io.c, counted as the attempt's. */
static int send_io_locked(multi *m, int kind, const char *path) {
  zkl_session *s = m->l->s;
  int rc;
  zkl__attempt_req_begin_locked(m->att);
  if (kind == ZKL_RQ_LIST)
    rc = zkl__io_list_locked(s, kind, path, &io_ops, m->att, m->gen);
  else
    rc = zkl__io_get_locked(s, kind, path, &io_ops, m->att, m->gen);
  if (rc != ZKL_OK)
    zkl__attempt_req_end_locked(m->att);
  return rc;
}

static int send_parents_locked(multi *m) {
  zkl_session *s = m->l->s;
  char path[ZKL_PATH_MAX];
  int rc = ZKL_OK, i;
  size_t root = strlen(ZKL_ROOT), j, qlen;
  for (i = 0; i < m->count && rc == ZKL_OK; i++) {
    const char *q = part(m, i)->queue;
    qlen = strlen(q);
    for (j = root; j <= qlen && rc == ZKL_OK; j++) {
      if (j < qlen && q[j] != '/')
        continue;
      memcpy(path, q, j);
      path[j] = '\0';
      zkl__attempt_req_begin_locked(m->att);
      rc = zkl__io_create_locked(
          s, ZKL_RQ_PARENT, path, NULL, -1,
          j == root ? &ZOO_OPEN_ACL_UNSAFE : zkl__acl(m->l->acl),
          ZOO_CONTAINER, &io_ops, m->att, m->gen);
      if (rc != ZKL_OK)
        zkl__attempt_req_end_locked(m->att);
    }
  }
  return rc;
}

/* The transaction that makes every part's node (behind the parents when
 * asked: a session's requests are applied in order). */
static void send_create_locked(multi *m, bool with_parents) {
  zkl_lock *l = m->l;
  zkl_session *s = l->s;
  txn *t;
  int rc = ZKL_OK, len, i;
  forget_nodes(m);
  m->gen++;
  m->parent_rc = 0;
  if (with_parents)
    rc = send_parents_locked(m);
  if (rc == ZKL_OK && !(t = txn_new(m->att, m->count, T_CREATE)))
    rc = ZKL_ENOMEM;
  if (rc != ZKL_OK) {
    fail_locked(m, rc);
    return;
  }
  t->gen = m->gen;
  memcpy(t->prefix, m->prefix, sizeof t->prefix);
  /* who we are, for zkl_name_list() and zklock --list */
  len = snprintf(t->data, sizeof t->data, "%s%s%s%s", s->owner_data,
                 l->info ? "info=" : "", l->info ? l->info : "",
                 l->info ? "\n" : "");
  for (i = 0; i < m->count; i++) {
    snprintf(t->paths[i], ZKL_PATH_MAX, "%s/%s", part(m, i)->queue,
             m->prefix);
    zoo_create_op_init(&t->ops[i], t->paths[i], t->data, len,
                       zkl__acl(l->acl), ZOO_EPHEMERAL_SEQUENTIAL, t->made[i],
                       ZKL_PATH_MAX);
  }
  m->phase = M_SENT;
  if ((rc = txn_send_locked(t)) != ZKL_OK) {
    txn_free(t);
    fail_locked(m, rc);
  }
}

/* A fresh prefix, for a transaction that must not meet an older one's
 * nodes (another session's, as in CURATOR-498). */
static void send_create_fresh_locked(multi *m) {
  if (zkl__make_prefix_with(m->prefix,
                            zkl__node_kinds[ZKL_NODE_MUTEX].marker) != ZKL_OK)
    fail_locked(m, ZKL_ESYSTEM);
  else
    send_create_locked(m, false);
}

/* ------------------------------------------------------------ the parts */

/* Whether every part holds right now. The parts are asked, not counted:
 * a part's grant is told once, and its hold may end afterwards (a break,
 * the lease), which fails the whole (multi_part_ended_locked). A part
 * granted but waiting for a fresher lease (CONFIRMING) does not hold. */
static bool parts_hold(const multi *m) {
  int i;
  for (i = 0; i < m->count; i++)
    if (!part(m, i)->att || zkl__attempt_state(part(m, i)->att) != ZKL_AS_HELD)
      return false;
  return true;
}

/* The whole is granted only while every part holds. */
static void maybe_grant_locked(multi *m) {
  if (m->czxid_known && zkl__attempt_state(m->att) == ZKL_AS_PREPARING &&
      parts_hold(m))
    zkl__attempt_granted_locked(m->att, m->czxid);
}

/* A part's acquire ended (ctx: the multi). Each one started is counted as
 * a request of the whole's attempt until here. */
static void part_acquired_locked(void *ctx, int rc, int64_t token) {
  multi *m = ctx;
  zkl_attempt *att = m->att;
  int i;
  (void)token;
  if (zkl__attempt_state(att) == ZKL_AS_PREPARING) {
    if (rc == ZKL_OK) {
      maybe_grant_locked(m);
    } else {
      for (i = 0; rc == ZKL_EKIND && i < m->count; i++)
        if (part(m, i)->other_kind)
          m->l->other_kind = part(m, i)->other_kind;
      fail_locked(m, rc);
    }
  }
  /* (else the whole is ending: it let go of the parts already) */
  zkl__attempt_req_end_locked(att);
}

static void part_let_go_locked(void *ctx, int rc, int64_t token) {
  multi *m = ctx;
  (void)rc;
  (void)token;
  zkl__attempt_req_end_locked(m->att);
}

/* The nodes are made: the token's getData first, then each part in its
 * queue, all in one round trip. */
static void adopt_all_locked(multi *m) {
  zkl_attempt *att = m->att;
  int rc, i;
  m->phase = M_PARTS;
  m->czxid_lost = false;
  snprintf(m->first, sizeof m->first, "%s/%s", part(m, 0)->queue,
           m->nodes[0]);
  if (!m->czxid_known) {
    if ((rc = send_io_locked(m, ZKL_RQ_OWN_GET, m->first)) != ZKL_OK) {
      fail_locked(m, rc);
      return;
    }
  }
  for (i = 0; i < m->count; i++) {
    zkl_target t = {0};
    char *node = m->nodes[i];
    t.hook_locked = part_acquired_locked;
    t.hook_ctx = m;
    m->nodes[i] = NULL; /* the part's, if adopted */
    zkl__attempt_req_begin_locked(att);
    rc = zkl__attempt_adopt_locked(part(m, i), m->prefix, node,
                                   zkl__attempt_try_once(att) ? 0 : -1, &t);
    if (rc != ZKL_OK) {
      m->nodes[i] = node; /* deleted by the unprepare hook */
      zkl__attempt_req_end_locked(att);
      fail_locked(m, rc);
      return;
    }
    free(node);
    if (zkl__attempt_state(att) != ZKL_AS_PREPARING)
      return; /* a part failed at once, and the whole with it */
  }
}

static void on_czxid_locked(multi *m, const zkl_reply *rp) {
  zkl_session *s = m->l->s;
  if (rp->rc == ZOK) {
    m->czxid = rp->stat->czxid;
    m->czxid_known = true;
    maybe_grant_locked(m);
  } else if (zkl__is_connection_loss(rp->rc)) {
    m->czxid_lost = true;
    if (s->connected && !s->dead) { /* told after the reconnect */
      int rc;
      m->czxid_lost = false;
      if ((rc = send_io_locked(m, ZKL_RQ_OWN_GET, m->first)) != ZKL_OK)
        fail_locked(m, rc);
    }
  } else if (rp->rc != ZNONODE && !zkl__is_session_over(rp->rc)) {
    fail_locked(m, rp->rc);
  }
  /* ZNONODE: the part whose node it is hears it too, and fails */
}

/* ------------------------------------------------------ creating, finding */

static void find_locked(multi *m);

/* Deletes the nodes that `made` (a T_CREATE) made, in one transaction of
 * deletes counted as a request of att: an ending attempt is told only once
 * they are gone. Deleting them in the background instead (cleanups) let
 * ECANCELED and ETIMEDOUT come while they were still there: a test that
 * looked then found them, and so would the caller's next acquire, behind
 * its own leftover (issue 24). When that cannot be sent (disconnected, no
 * memory), they go in the background, and the attempt, disconnected, is
 * told at once as every attempt is. */
static void undo_locked(zkl_attempt *att, const txn *made) {
  zkl_session *s = zkl__attempt_lock(att)->s;
  txn *t = s->connected ? txn_new(att, made->count, T_UNDO) : NULL;
  int i;
  for (i = 0; t && i < made->count; i++) {
    memcpy(t->paths[i], made->made[i], ZKL_PATH_MAX);
    zoo_delete_op_init(&t->ops[i], t->paths[i], -1);
  }
  if (t && txn_send_locked(t) == ZKL_OK)
    return; /* undone_locked */
  txn_free(t);
  for (i = 0; i < made->count; i++)
    zkl__cleanup_delete_locked(s, made->made[i]);
}

/* A node already gone (deleted by someone: ZNONODE fails the whole
 * transaction), a lost reply, a refusal: each that may be left is deleted
 * on its own, in the background (retried after a reconnect). */
static void undone_locked(txn *t, int rc) {
  zkl_session *s = zkl__attempt_lock(t->att)->s;
  int i;
  if (rc != ZOK && !zkl__is_session_over(rc) && deletes_wanted(s))
    for (i = 0; i < t->count; i++)
      zkl__cleanup_delete_locked(s, t->paths[i]);
}

static bool any_result(const txn *t, int err) {
  int i;
  for (i = 0; i < t->count; i++)
    if (t->results[i].err == err)
      return true;
  return false;
}

/* The name whose create the transaction failed on. ZooKeeper answers a
 * failed multi with ZOK for the ops before the one that failed and
 * ZRUNTIMEINCONSISTENCY for those after it; op i is part i's create. */
static const char *refused_name(const multi *m, const txn *t) {
  int i;
  for (i = 0; i < t->count && i < m->count; i++)
    if (t->results[i].err != ZOK && t->results[i].err != ZRUNTIMEINCONSISTENCY)
      return part(m, i)->name;
  return NULL;
}

/* The name whose queue needs the parent at path (the first, when several
 * share it). */
static const char *name_under(const multi *m, const char *path) {
  size_t n = strlen(path);
  int i;
  for (i = 0; i < m->count; i++) {
    const char *q = part(m, i)->queue;
    if (strncmp(q, path, n) == 0 && (q[n] == '\0' || q[n] == '/'))
      return part(m, i)->name;
  }
  return NULL;
}

static void created_locked(txn *t, int rc) {
  zkl_attempt *att = t->att;
  multi *m = multi_of(att);
  zkl_session *s = m->l->s;
  int i;
  if (m->att != att || t->gen != m->gen || m->phase != M_SENT ||
      zkl__attempt_state(att) != ZKL_AS_PREPARING) {
    /* The attempt moved on (cancelled, timed out, failed) while the
     * transaction was out: undo what it made, as the attempt's own
     * request, which the ending attempt waits for. */
    if (rc == ZOK && deletes_wanted(s))
      undo_locked(att, t);
    else if (zkl__is_connection_loss(rc))
      delete_prefix_locked(m, t->prefix);
    return;
  }
  if (rc == ZOK) {
    for (i = 0; i < t->count; i++) {
      const char *slash = strrchr(t->made[i], '/');
      m->nodes[i] = strdup(slash ? slash + 1 : t->made[i]);
    }
    for (i = 0; i < t->count; i++)
      if (!m->nodes[i]) {
        forget_nodes(m);
        for (i = 0; i < t->count; i++)
          zkl__cleanup_delete_locked(s, t->made[i]);
        fail_locked(m, ZKL_ENOMEM);
        return;
      }
    m->czxid_known = false;
    adopt_all_locked(m);
  } else if (zkl__is_connection_loss(rc)) {
    if (zkl__attempt_try_once(att)) {
      delete_prefix_locked(m, m->prefix);
      fail_locked(m, ZKL_ECONNECT);
    } else {
      m->phase = M_UNKNOWN;
      if (s->connected && !s->dead) /* told after the reconnect */
        find_locked(m);
    }
  } else if (zkl__is_session_over(rc)) {
    /* the session's end fails the attempt */
  } else if (rc == ZNONODE || any_result(t, ZNONODE)) {
    /* No parent (first use, or a container reaped since): the parents,
     * then the transaction again, a few times in case they keep
     * vanishing. */
    if (m->parent_rc)
      fail_locked(m, m->parent_rc); /* m->refused: that parent's name */
    else if (m->parent_rounds++ < 3)
      send_create_locked(m, true);
    else
      fail_locked(m, ZNONODE);
  } else {
    m->refused = refused_name(m, t);
    fail_locked(m, rc); /* refused (ZNOAUTH...): nothing was made */
  }
}

/* A write, sent first on the connection the listings go out on: a
 * transaction with one check of "/", which changes nothing. Its answer,
 * whatever it is, does not matter: only its place in the order does. */
static int send_order_locked(multi *m) {
  txn *t = txn_new(m->att, 1, T_ORDER);
  int rc;
  if (!t)
    return ZKL_ENOMEM;
  snprintf(t->paths[0], ZKL_PATH_MAX, "/");
  zoo_check_op_init(&t->ops[0], t->paths[0], -1);
  if ((rc = txn_send_locked(t)) != ZKL_OK)
    txn_free(t);
  return rc;
}

/* After a lost reply (the reconnect made): is the transaction there? Every
 * queue is listed for its prefix. If it is ever applied, these listings
 * must see its nodes: else they are nobody's (the transaction goes again,
 * and the lost one's nodes stay until the session ends, blocking their
 * queues once ours are gone). So a write goes first (send_order_locked),
 * the listings right behind it, for no round trip more; then:
 * - The listings see everything applied before that write. Writes are
 *   ordered by the leader's PrepRequestProcessor (one thread, which gives
 *   them their zxids), every server applies them in zxid order, and
 *   answers a session's requests in order (its CommitProcessor keeps a
 *   session's reads behind its pending write; a standalone server's
 *   pipeline is first in, first out).
 * - The write went out after the new connection's handshake, which the
 *   server answers only once the leader has revalidated the session and
 *   made that server the session's owner (Leader.revalidateSession;
 *   LeaderZooKeeperServer.revalidateSession for the leader's own clients;
 *   SessionTrackerImpl.setOwner).
 * - PrepRequestProcessor checks every create against the session's owner
 *   (checkSession). The lost transaction, if the leader prepares it after
 *   that and it came through another server, fails whole
 *   (ZSESSIONMOVED): nothing. If the leader prepared it before, its zxid
 *   is below the write's, so the listings see it.
 * - Through the same server as before (the same follower, the leader, a
 *   standalone server) the owner does not change, but the server closed
 *   the old connection before it answered the handshake
 *   (ZooKeeperServer.processConnectRequest), dropping what it had not yet
 *   read; what it had read is in its pipeline ahead of the write.
 * Without the write, a listing served by a server that had not yet
 * applied the transaction missed it: a follower other than the one the
 * transaction went through knows it only as the leader's proposal until
 * the commit comes, and answers a read of the session at once. (The
 * follower it went through keeps the session's reads behind it, and so
 * does the leader, whose CommitProcessor gets the requests followers
 * forward too: ProposalRequestProcessor.) That is the window issue 24
 * named: the transaction went again, and the lost one's nodes, applied a
 * moment later, stayed until the session ended when the attempt ended
 * before a part listed its queue (a cancel while it was sent again).
 * tests/test_late_create shows both, the links of an ensemble slowed.
 * What the order does not cover: a request that one of the server's I/O
 * threads read from the old connection just as another handled the
 * reconnect's handshake, and handed on after the write
 * (ZooKeeperServer.processPacket is not atomic with the close), a race
 * inside the server of a few instructions against two round trips of the
 * client. Its nodes would have the prefix the transaction is sent again
 * with: a part that lists its queue afterwards deletes them as
 * duplicates; otherwise they stay until the session ends. */
static void find_locked(multi *m) {
  int i, rc;
  forget_nodes(m);
  m->gen++;
  m->phase = M_FINDING;
  m->answers = 0;
  if ((rc = send_order_locked(m)) != ZKL_OK) {
    fail_locked(m, rc);
    return;
  }
  for (i = 0; i < m->count; i++)
    if ((rc = send_io_locked(m, ZKL_RQ_LIST, part(m, i)->queue)) != ZKL_OK) {
      fail_locked(m, rc);
      return;
    }
}

static void found_all_locked(multi *m) {
  char path[ZKL_PATH_MAX];
  int i, rc;
  if (m->nodes[0]) {
    snprintf(path, sizeof path, "%s/%s", part(m, 0)->queue, m->nodes[0]);
    if ((rc = send_io_locked(m, ZKL_RQ_RECOVER_GET, path)) != ZKL_OK)
      fail_locked(m, rc);
    return;
  }
  for (i = 0; i < m->count && !m->nodes[i]; i++)
    ;
  if (i < m->count) {
    /* A node without the first: not ours (a transaction makes all or
     * none); start over under a fresh prefix, leaving it alone. */
    forget_nodes(m);
    send_create_fresh_locked(m);
  } else {
    send_create_locked(m, false); /* the transaction never happened */
  }
}

static void on_found_listing_locked(multi *m, const zkl_reply *rp) {
  zkl_session *s = m->l->s;
  size_t plen = strlen(m->prefix);
  int i, j;
  if (zkl__is_connection_loss(rp->rc)) {
    m->gen++; /* the other listings are moot */
    m->phase = M_UNKNOWN;
    if (s->connected && !s->dead)
      find_locked(m);
    return;
  }
  if (rp->rc != ZOK && rp->rc != ZNONODE) {
    if (!zkl__is_session_over(rp->rc))
      fail_locked(m, rp->rc);
    return;
  }
  for (i = 0; i < m->count && strcmp(part(m, i)->queue, rp->path) != 0; i++)
    ;
  if (i == m->count)
    return;
  for (j = 0; rp->rc == ZOK && j < rp->children->count && !m->nodes[i]; j++)
    if (strncmp(rp->children->data[j], m->prefix, plen) == 0 &&
        !(m->nodes[i] = strdup(rp->children->data[j]))) {
      fail_locked(m, ZKL_ENOMEM);
      return;
    }
  if (++m->answers == m->count)
    found_all_locked(m);
}

static void on_found_get_locked(multi *m, const zkl_reply *rp) {
  zkl_session *s = m->l->s;
  int i;
  if (rp->rc == ZOK && rp->stat->ephemeralOwner == s->session_id) {
    for (i = 0; i < m->count && m->nodes[i]; i++)
      ;
    if (i < m->count) { /* cannot be, by atomicity: do not trust it */
      delete_unadopted_locked(m);
      send_create_fresh_locked(m);
      return;
    }
    m->czxid = rp->stat->czxid; /* the transaction's, shared by all */
    m->czxid_known = true;
    adopt_all_locked(m);
  } else if (rp->rc == ZOK || rp->rc == ZNONODE) {
    forget_nodes(m); /* not ours (CURATOR-498), or gone: leave it alone */
    send_create_fresh_locked(m);
  } else if (zkl__is_connection_loss(rp->rc)) {
    m->phase = M_UNKNOWN;
    if (s->connected && !s->dead)
      find_locked(m);
  } else if (!zkl__is_session_over(rp->rc)) {
    fail_locked(m, rp->rc);
  }
}

static void replied_locked(void *owner, const zkl_reply *rp) {
  zkl_attempt *att = owner;
  multi *m = multi_of(att);
  bool current = m->att == att && rp->round == m->gen &&
                 zkl__attempt_state(att) == ZKL_AS_PREPARING;
  switch (current ? rp->kind : -1) {
  case ZKL_RQ_PARENT:
    /* ZNODEEXISTS is the usual answer; a refusal of its own is kept: the
     * transaction then fails with ZNONODE, which would hide the cause. */
    if (rp->rc != ZOK && rp->rc != ZNODEEXISTS && rp->rc != ZNONODE &&
        !zkl__is_connection_loss(rp->rc) && !zkl__is_session_over(rp->rc)) {
      if (!m->parent_rc)
        m->refused = name_under(m, rp->path);
      m->parent_rc = rp->rc;
    }
    break;
  case ZKL_RQ_OWN_GET:
    if (m->phase == M_PARTS)
      on_czxid_locked(m, rp);
    break;
  case ZKL_RQ_LIST:
    if (m->phase == M_FINDING)
      on_found_listing_locked(m, rp);
    break;
  case ZKL_RQ_RECOVER_GET:
    if (m->phase == M_FINDING)
      on_found_get_locked(m, rp);
    break;
  default:
    break;
  }
  zkl__attempt_req_end_locked(att);
}

/* ------------------------------------------------------------- the hooks */

static void multi_prepare_locked(zkl_attempt *att) {
  multi *m = multi_of(att);
  zkl_session *s = m->l->s;
  if (m->att) /* (the last attempt's end let go of it) */
    zkl__attempt_unref_locked(m->att);
  zkl__attempt_ref_locked(att);
  m->att = att;
  m->phase = M_IDLE;
  m->parent_rounds = 0;
  m->refused = NULL;
  m->czxid_known = false;
  forget_nodes(m);
  if (zkl__make_prefix_with(m->prefix,
                            zkl__node_kinds[ZKL_NODE_MUTEX].marker) != ZKL_OK)
    fail_locked(m, ZKL_ESYSTEM);
  else if (s->connected)
    send_create_locked(m, false);
  /* else at the reconnect */
}

static void multi_reconnected_locked(zkl_attempt *att) {
  multi *m = multi_of(att);
  int rc;
  if (m->att != att)
    return;
  if (m->phase == M_IDLE) {
    send_create_locked(m, false);
  } else if (m->phase == M_UNKNOWN) {
    find_locked(m);
  } else if (m->phase == M_PARTS && m->czxid_lost) {
    m->czxid_lost = false;
    if ((rc = send_io_locked(m, ZKL_RQ_OWN_GET, m->first)) != ZKL_OK)
      fail_locked(m, rc);
  }
}

/* Ends what the parts do: acquiring ones are cancelled (their ending
 * deletes their nodes), held ones released; counted, with a target, when
 * the whole's attempt is to wait for them. */
static void let_go_parts_locked(multi *m, bool counted) {
  int i;
  for (i = 0; i < m->count; i++) {
    zkl_lock *p = part(m, i);
    if (!p->att)
      continue;
    if (zkl__attempt_acquiring(p->att)) {
      zkl__attempt_event_locked(p->att, ZKL_EV_CANCEL, ZKL_ECANCELED, NULL);
    } else if (zkl__attempt_state(p->att) == ZKL_AS_HELD) {
      zkl_target t = {0};
      if (counted) {
        t.hook_locked = part_let_go_locked;
        t.hook_ctx = m;
        zkl__attempt_req_begin_locked(m->att);
      }
      zkl__attempt_event_locked(p->att, ZKL_EV_RELEASE, 0, &t);
    }
  }
}

/* Granted (nothing to let go of) or ending. */
static void multi_unprepare_locked(zkl_attempt *att) {
  multi *m = multi_of(att);
  if (m->att != att)
    return;
  if (zkl__attempt_state(att) == ZKL_AS_HELD) {
    m->phase = M_HELD;
    return;
  }
  m->gen++; /* replies still out are stale: the transaction's undoes */
  if (m->phase == M_UNKNOWN || m->phase == M_FINDING)
    delete_prefix_locked(m, m->prefix);
  delete_unadopted_locked(m);
  m->phase = M_IDLE;
  let_go_parts_locked(m, true);
}

/* The whole's release: the parts end without deleting, then one
 * transaction deletes every node. */
static void multi_release_locked(zkl_attempt *att) {
  multi *m = multi_of(att);
  zkl_session *s = m->l->s;
  txn *t = txn_new(att, m->count, T_RELEASE);
  char path[ZKL_PATH_MAX];
  int n = 0, i;
  m->deleting = true;
  for (i = 0; i < m->count; i++) {
    zkl_lock *p = part(m, i);
    zkl_target none = {0};
    if (!p->att || zkl__attempt_state(p->att) != ZKL_AS_HELD)
      continue;
    if (zkl__lock_node_path_locked(p, path, sizeof path) == ZKL_OK) {
      if (t) {
        memcpy(t->paths[n], path, sizeof path);
        zoo_delete_op_init(&t->ops[n], t->paths[n], -1);
        n++;
      } else {
        zkl__cleanup_delete_locked(s, path); /* no memory for one */
      }
    }
    zkl__attempt_event_locked(p->att, ZKL_EV_RELEASE, 0, &none);
  }
  m->deleting = false;
  if (t && n > 0 && s->connected) {
    t->count = n;
    if (txn_send_locked(t) == ZKL_OK)
      return; /* deleted_locked ends it */
  }
  /* Disconnected, or refused at the call: they go at the reconnect, or
   * with the session. */
  for (i = 0; t && i < n; i++)
    zkl__cleanup_delete_locked(s, t->paths[i]);
  txn_free(t);
  zkl__attempt_released_locked(att, ZKL_OK);
}

static void deleted_locked(txn *t, int rc) {
  zkl_session *s = zkl__attempt_lock(t->att)->s;
  int i;
  /* One node already gone (deleted by someone: ZNONODE fails the whole
   * transaction), a lost reply, a refusal: delete each on its own. */
  if (rc != ZOK && !zkl__is_session_over(rc) && !s->dead)
    for (i = 0; i < t->count; i++)
      zkl__cleanup_delete_locked(s, t->paths[i]);
  /* A node gone before the release: that part's hold was lost while no
   * watch was on it yet (zkl_lock_set_watch_after()); so is the whole. */
  zkl__attempt_released_locked(t->att, rc == ZNONODE ? ZKL_ELOST : ZKL_OK);
}

/* A part's hold ended. While the whole waits for its other parts, that
 * part held for it, and the whole cannot be granted with it gone: its
 * acquire fails, whatever ended the part's hold (its node deleted or
 * broken, the lease, the session): ZKL_ELOST (the session's end code when
 * the session is over, ZKL_ECLOSED when it closes: the whole hears that
 * too, in whichever order). It was never granted, so there is no lost
 * callback; it is told once its other nodes are deleted, as every failed
 * acquire is (the ending's cleanup; the lost part's own node went with
 * its hold: deleted by someone, or, after the lease, deleted by the
 * session before anything the ending sends). While the whole holds, a
 * part's loss is the whole's (the lease's excepted: that reaches the
 * whole itself, with the timer's notices); a part let go then is the
 * whole's own doing (its release, the session's close). */
static void multi_part_ended_locked(zkl_lock *l, zkl_lock *p, int reason) {
  multi *m = (multi *)l->arg;
  zkl_session *s = l->s;
  if (!l->att || m->att != l->att)
    return;
  /* Only a part adopted by this attempt of the whole counts: the ending
   * attempt is detached first, so a part that still has one ended an
   * older attempt; and before the adoption (M_PARTS) every part that ends
   * is one the last attempt let go of, whose release was answered only
   * after this acquire began (the test saw a new acquire fail with
   * ZKL_ELOST when the parts' deletes were answered late). */
  if (p->att || m->phase < M_PARTS)
    return;
  if (zkl__attempt_state(l->att) == ZKL_AS_PREPARING)
    fail_locked(m, s->dead      ? s->dead
                   : s->closing ? ZKL_ECLOSED
                                : ZKL_ELOST);
  else if (zkl__attempt_state(l->att) == ZKL_AS_HELD && reason != 0 &&
           reason != ZKL_LOST_LEASE_EXPIRED)
    zkl__attempt_event_locked(l->att, ZKL_EV_PART_LOST, reason, NULL);
}

/* Any attempt of the whole ended: parts still held (after a loss) are
 * released, unless the session's end or close takes them anyway. */
static void multi_ended_locked(const void *arg, const zkl_lock *l) {
  multi *m = (multi *)arg;
  zkl_attempt *att = m->att;
  if (!l->s->dead && !l->s->closing)
    let_go_parts_locked(m, false);
  forget_nodes(m);
  m->phase = M_IDLE;
  m->att = NULL;
  if (att)
    zkl__attempt_unref_locked(att);
}

/* A part keeps its node at its release while the whole deletes them all. */
static bool part_kept_locked(const void *arg, const zkl_lock *l,
                             const char *path) {
  (void)l;
  (void)path;
  return ((const multi *)arg)->deleting;
}

static const zkl_recipe multi_recipe = {
    .name = "multi",
    .node = ZKL_NODE_MUTEX, /* its parts' */
    .nodeless = true,
    .decide_locked = zkl__first_goes, /* (never asked: it has no node) */
    .prepare_locked = multi_prepare_locked,
    .unprepare_locked = multi_unprepare_locked,
    .part_ended_locked = multi_part_ended_locked,
    .release_locked = multi_release_locked,
    .reconnected_locked = multi_reconnected_locked,
    .ended_locked = multi_ended_locked,
};

/* A part: a mutex contender of one name. */
static const zkl_recipe part_recipe = {
    .name = "multi-part",
    .node = ZKL_NODE_MUTEX,
    .decide_locked = zkl__first_goes,
    .keep_on_release_locked = part_kept_locked,
};

static void multi_free(void *arg) {
  multi *m = arg;
  forget_nodes(m);
  free(m->nodes);
  free(m);
}

int zkl_lock_new_multi(zkl_lock **out, zkl_session *s, const char *const *names,
                       int count) {
  char queue[ZKL_PATH_MAX], *joined;
  size_t len = 0;
  zkl_lock *l, *p;
  multi *m;
  int i, j, rc;
  if (!out || !s || !names || count < 1 || count > ZKL_MULTI_NAMES_MAX)
    return ZKL_EINVAL;
  for (i = 0; i < count; i++) {
    if (zkl__validate_name(names[i]) != ZKL_OK)
      return ZKL_EINVAL;
    for (j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return ZKL_EINVAL;
    len += strlen(names[i]) + 1;
  }
  if (!(joined = malloc(len)))
    return ZKL_ENOMEM;
  joined[0] = '\0';
  for (i = 0; i < count; i++) {
    if (i)
      strcat(joined, " ");
    strcat(joined, names[i]);
  }
  m = calloc(1, sizeof *m);
  if (!m || !(m->nodes = calloc((size_t)count, sizeof *m->nodes))) {
    free(m);
    free(joined);
    return ZKL_ENOMEM;
  }
  m->count = count;
  snprintf(queue, sizeof queue, "%s/%s", ZKL_ROOT, names[0]);
  rc = zkl__contender_new(&l, s, joined, queue, &multi_recipe, m);
  free(joined);
  if (rc != ZKL_OK) {
    multi_free(m);
    return rc;
  }
  zkl__lock_set_free_arg(l, multi_free);
  m->l = l;
  for (i = 0; i < count; i++) {
    snprintf(queue, sizeof queue, "%s/%s", ZKL_ROOT, names[i]);
    rc = zkl__contender_new(&p, s, names[i], queue, &part_recipe, m);
    if (rc == ZKL_OK && (rc = zkl__lock_add_part(l, p)) != ZKL_OK)
      zkl__contender_free(p);
    if (rc != ZKL_OK) {
      zkl__contender_free(l); /* and the parts made so far */
      return rc;
    }
  }
  *out = l;
  return ZKL_OK;
}

const char *zkl_lock_refused_name(const zkl_lock *l) {
  zkl_session *s;
  const char *name = NULL;
  if (!l)
    return NULL;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  if (l->recipe == &multi_recipe)
    name = ((const multi *)l->arg)->refused;
  pthread_mutex_unlock(&s->mu);
  return name;
}
