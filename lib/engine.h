/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h - the queue engine: contenders (zkl_lock), their attempts, and
 * the recipe plug that decides who goes first.
 *
 *   kinds.c       the registry: every node kind, its place and family, who
 *                 refuses whom (kinds.h)
 *   watch.c       watch records: what the client may still call
 *   io.c          the engine's requests and their completions
 *   lock_object.c the zkl_lock object: references, settings, parts, and
 *                 how results reach the user (waiters, callbacks, hooks)
 *   engine.c      the attempt state machine; it names no recipe
 *   together.c    its states' part for nodes made together, one per part
 *                 (ZKL_MAKE_PARTS_TOGETHER: a multi-lock); attempt.h is
 *                 the attempt the two share
 *   entries.c     the entry points (acquire, release, cancel, free) and
 *                 the session's hooks, which post events to the machine
 *   lock.c        the public zkl_lock_* functions every kind shares
 *   blocking.c    the blocking face
 *   break.c       zkl_name_break(): a holder's node marked, then deleted after
 *                 a grace (the holder's side is in engine.c)
 * and one file per recipe, each a zkl_recipe descriptor and its public
 * constructor (recipes.h lists them and what they share).
 *
 * Every recipe is a queue of ephemeral sequential nodes under one parent
 * with its own rule for "may I go now, and if not, whom do I watch". The
 * engine does the rest, the same for all of them: create, list, check the
 * name's kinds, watch, recover a lost create, time out, cancel, release,
 * lose, clean up; and, for a whole whose parts' nodes are made together,
 * the transaction, its recovery and the parts' joint grant. A new recipe is a file with a descriptor (designated
 * initialisers; every hook it does not need left out) and, for a new kind
 * of node, one entry in kinds.c.
 */
#ifndef ZKL_ENGINE_H
#define ZKL_ENGINE_H

#include <string.h>

#include "session.h"

typedef struct zkl_attempt zkl_attempt; /* one acquisition: engine.c */

/* ---------------------------------------------------------------- recipes */

/* What a first try's listing of one of its parts' queues found
 * (zkl_recipe.try_before_prepare, try_verdict_locked). */
typedef struct zkl_part_listing {
  int rc;    /* the listing's: ZOK, ZNONODE (no such queue yet), or why it
                failed */
  int count; /* ZOK: the nodes there */
} zkl_part_listing;

/* What a recipe's rule answers, given the queue and the contender's place
 * in it. */
typedef enum zkl_verdict_kind {
  ZKL_GRANT,         /* it may go now */
  ZKL_WAIT_NODE,     /* wait for entries[node] to go */
  ZKL_WAIT_CHILDREN, /* wait for the queue to change (a child watch) */
  ZKL_REFUSE         /* it may not take part: the acquire fails with code
                        (its node deleted first), try-once or not */
} zkl_verdict_kind;

typedef struct zkl_verdict {
  zkl_verdict_kind kind;
  int node;             /* ZKL_WAIT_NODE: the entry to watch */
  bool grant_on_delete; /* ZKL_WAIT_NODE: its deletion grants at once, with
                           no new listing (no node that counts can appear
                           before ours while ours exists) */
  int code;             /* waiting: the code to end with, instead of
                           ZKL_ETIMEDOUT, should the wait time out now; 0:
                           none. ZKL_REFUSE: the acquire's status */
} zkl_verdict;

struct zkl_together_ops; /* attempt.h, together.c */

typedef struct zkl_recipe {
  const char *name; /* for logs: "mutex", "read", "write", ... */
  int node;         /* the nodes it writes (ZKL_NODE_*, kinds.h): their
                       marker, place and family. Its queue is every node of
                       that place, of every family: the rule sees all. */
  bool list_with_watch; /* listings set a child watch: the rule may say
                           ZKL_WAIT_CHILDREN */
  /* The rule. q->own >= 0. arg: the contender's recipe argument. */
  void (*decide_locked)(const zkl_queue *q, const void *arg, zkl_verdict *out);
  /* May this contender start an acquire now? ZKL_OK or a code (the write
   * side of a read/write lock refuses while its read side is held).
   * NULL: always. Runs with s->mu held. */
  int (*admit_locked)(const void *arg);
  /* A tag for the name of the node it is about to make, from what the
   * contender knows now: written into buf (len bytes, ZKL_TAG_MAX), it goes
   * between the id and the marker, "_c_<id>-<tag><marker><seq>", so that
   * every listing shows it at no cost: the read side of a read/write lock
   * names the write node of its own that it rides on (a downgrade:
   * kinds.h); a semaphore's lease node says its limit, and whether it was
   * made without the gate. skips_prepare: the node is made without the
   * recipe's preparation (a try-once, or a first try before preparing).
   * Returns the tag's length, 0 for none. NULL: none. Runs with s->mu
   * held. */
  int (*node_tag_locked)(const void *arg, bool skips_prepare, char *buf,
                         size_t len);
  /* The node's data. NULL: the owner description. */
  int (*node_data)(const void *arg, char *buf, size_t len);
  /* With the owner description: one more line of it, written into buf
   * (at most 32 bytes); returns its length. NULL: none. */
  int (*owner_line)(const void *arg, char *buf, size_t len);
  /* A release is about to delete the node at path: return true to keep it
   * (the recipe then owns it: the read/write lock's downgrade). NULL: never.
   */
  bool (*keep_on_release_locked)(const void *arg, const zkl_lock *l,
                                 const char *path);
  /* An attempt of l ended (after a hold, or without one). NULL: nothing. */
  void (*ended_locked)(const void *arg, const zkl_lock *l);
  /* What an attempt must get before it makes its node (NULL: nothing), as
   * a semaphore's contender takes its gate. Called on entering PREPARING;
   * the recipe tells the end with zkl__attempt_prepared_locked(). A
   * try-once does not prepare: preparing may wait, a try-once never does
   * (a recipe that cannot do without refuses it in admit_locked). */
  void (*prepare_locked)(zkl_attempt *att);
  /* The attempt needs what prepare got no more: granted, or ending (its
   * node's delete already sent). NULL: nothing. */
  void (*unprepare_locked)(zkl_attempt *att);
  /* The first try of an acquire skips the preparation: it makes its node
   * at once (its tag told skips_prepare), and lists its parts' queues
   * beside its own. If its first verdict holds by try_verdict_locked, it
   * holds; otherwise its node's delete is sent and it prepares after all
   * (CREATING or LISTING -> PREPARING), so such a node never waits (a
   * semaphore's gate-free first try: docs/recipe.md). */
  bool try_before_prepare;
  /* try_before_prepare: whether the first try holds, given its own
   * verdict and what its listings of the parts' queues found (parts[i] of
   * l->parts[i]; rc ZOK and count 0 for one not answered). NULL: when its
   * verdict grants. Runs with s->mu held. */
  bool (*try_verdict_locked)(const void *arg, const zkl_verdict *own,
                             const zkl_part_listing *parts, int n_parts);
  /* The hold of part, one of l's parts (see zkl_lock.parts), ended,
   * whatever ended it: lost (reason: its ZKL_LOST_* reason: its node
   * deleted or broken, the lease, the session), or let go (reason 0:
   * released, or closed with the session). Called once per hold, with the
   * part's attempt already detached (part->att is NULL or a new one), so
   * the part no longer holds. What that means for l is the recipe's
   * business (a part's lost callback never runs). NULL: nothing. */
  void (*part_ended_locked)(zkl_lock *l, zkl_lock *part, int reason);
  /* How its attempts make their nodes. ZKL_MAKE_ONE (0): one node of its
   * own, in its own queue. ZKL_MAKE_PARTS_TOGETHER: no node of its own
   * but one per part (a multi-lock: each part a contender of one name),
   * all made by one transaction under one prefix; the engine then hands
   * each node to its part, which waits in its queue by its own rule, and
   * the whole is granted while every part holds (PARTS), its token the
   * first node's czxid; its release deletes them all in one transaction.
   * Such a recipe does not prepare, and names together.c's table of what
   * each state does for it (together: &zkl__together_ops), through which
   * the engine reaches that file without naming it. */
  int make;
  const struct zkl_together_ops *together;
} zkl_recipe;

enum { ZKL_MAKE_ONE, ZKL_MAKE_PARTS_TOGETHER };


/* ------------------------------------------------------------------ breaks */

/* break.c writes this, then a newline and the node's old data, into the
 * node of a holder it is about to break; the holder's watch on its own node
 * reads it (engine.c). */
#define ZKL_BREAK_MARK "__BREAK__"
#define ZKL_BREAK_MARK_LEN 9
static inline bool zkl__is_break_mark(const char *data, int len) {
  return data && len >= ZKL_BREAK_MARK_LEN &&
         memcmp(data, ZKL_BREAK_MARK, ZKL_BREAK_MARK_LEN) == 0 &&
         (len == ZKL_BREAK_MARK_LEN || data[ZKL_BREAK_MARK_LEN] == '\n');
}

/* ---------------------------------------------------------------- targets */

/* A blocking caller parked on the async core. */
typedef struct zkl_waiter {
  pthread_cond_t cond;
  bool done;
  int rc;
  int64_t token;
} zkl_waiter;

/* Who hears about an acquire or release: a blocking waiter, a user
 * callback (its record allocated when the call was made, so that
 * delivering it can never fail), or the engine itself (a gate). */
typedef struct zkl_target {
  zkl_waiter *waiter;
  struct zkl_notice *notice;
  void (*hook_locked)(void *ctx, int rc, int64_t token);
  void *hook_ctx;
} zkl_target;

/* ---------------------------------------------------------------- engine */

/* The engine's part of a session (the session's hooks context). */
typedef struct zkl_engine {
  zkl_session *s;
  zkl_link locks;     /* lock_object.c: every zkl_lock of the session */
  zkl_link watches;   /* watch.c: every watch record the client may call */
  zkl_link observers; /* entries.c: every zkl_observer */
} zkl_engine;

/* --------------------------------------------------------------- watches */

typedef struct zkl_watch zkl_watch;

/* What a watch record tells its owner (engine.c), with s->mu held. */
typedef struct zkl_watch_ops {
  /* The get that arms it completed (rc; data and stat when ZOK). Called
   * also when the owner dropped the watch meanwhile. */
  void (*armed_locked)(zkl_watch *w, int rc, const char *data, int len,
                       const struct Stat *stat, const void *children);
  /* The watch fired (ZOO_*_EVENT). */
  void (*fired_locked)(zkl_watch *w, int type);
  /* The record is being freed: let go of the owner's reference. */
  void (*release_locked)(zkl_watch *w);
} zkl_watch_ops;

enum { ZKL_WATCH_DATA, ZKL_WATCH_CHILDREN, ZKL_WATCH_EXISTS };

/* Arms a watch on path: a getData (ZKL_WATCH_DATA; unlike exists it sets
 * nothing on a missing node), a getChildren (ZKL_WATCH_CHILDREN) or an
 * exists (ZKL_WATCH_EXISTS: set on a missing node too, which armed_locked
 * then hears as ZOK with a NULL stat), counted as request kind rq. owner is passed back through ops. Returns the record
 * or NULL (no memory, or the client refused: *rc says which). */
zkl_watch *zkl__watch_arm_locked(zkl_session *s, int type, int rq,
                                 const char *path, const zkl_watch_ops *ops,
                                 void *owner, int *rc);
/* The owner no longer wants it: it is removed from the client (now, or
 * after the reconnect) and freed once the client lets go of it. Its events
 * no longer reach the owner. */
void zkl__watch_drop_locked(zkl_watch *w);
void *zkl__watch_owner(const zkl_watch *w);
const char *zkl__watch_path(const zkl_watch *w);
/* The client closed the handle and dropped every watch: free the records
 * of session s. */
void zkl__watches_forget_all_locked(zkl_session *s);
/* Drops every watch of the session (its handle lives on, the
 * application's): each leaves the client at once, or when its get returns,
 * or is freed by the event on its way. */
void zkl__watches_drop_all_locked(zkl_session *s);
unsigned zkl__watches_count_locked(const zkl_session *s);

/* -------------------------------------------------------------- attempts */

/* The states of an attempt: see the diagram at the top of engine.c. */
typedef enum zkl_att_state {
  ZKL_AS_NEW,        /* just made: nothing sent */
  ZKL_AS_PREPARING,  /* its recipe's preparation (a semaphore's gate) */
  ZKL_AS_CREATING,   /* create (+ parents) and listing in flight */
  ZKL_AS_RECOVERING, /* a create's outcome is unknown: finding our node */
  ZKL_AS_PARTS,      /* ZKL_MAKE_PARTS_TOGETHER: the nodes are made and
                        handed to the parts, each waiting by its own rule */
  ZKL_AS_LISTING,    /* our node known; a listing in flight */
  ZKL_AS_WATCHING,   /* waiting for one node to go */
  ZKL_AS_WAITING,    /* waiting for the queue to change */
  ZKL_AS_CONFIRMING, /* granted, waiting for a fresher lease (lease.c) */
  ZKL_AS_SUSPENDED,  /* the connection dropped before an answer */
  ZKL_AS_HELD,       /* granted */
  ZKL_AS_RELEASING,  /* the release's delete in flight */
  ZKL_AS_STOPPING,   /* held past its maximum, told so: its node stays
                        until the holder lets go or its grace runs out */
  ZKL_AS_ENDING,     /* failed: cleaning up before it is told */
  ZKL_AS_ENDED,      /* told; lives on only for what is still out */
  ZKL_AS_COUNT
} zkl_att_state;

/* What the outside tells an attempt (entries.c posts them; the machine
 * decides what each means in the attempt's state). */
typedef enum zkl_att_event {
  ZKL_EV_CANCEL,     /* end a pending acquire with code */
  ZKL_EV_RELEASE,    /* release the hold; arg: the zkl_target to tell */
  ZKL_EV_CLOSE,      /* the session is closing */
  ZKL_EV_OVER,       /* the session is over; code: why */
  ZKL_EV_LEASE_LOST, /* the lease ran out; arg: zkl_call ** for notices */
  ZKL_EV_CONNECTED,  /* (re)connected */
  ZKL_EV_TICK,       /* the clock; arg: a zkl_tick */
  ZKL_EV_PART_LOST   /* a part's hold was lost (its recipe posts it);
                        code: the reason: a hold ends as lost with it */
} zkl_att_event;

/* ZKL_EV_TICK's arg: the time, the next deadline found so far (0: none;
 * each attempt brings it forward to its own), and where the lost notices
 * of holds that ran out go (the timer thread runs them). */
typedef struct zkl_tick {
  int64_t now;
  int64_t next;
  zkl_call **direct;
} zkl_tick;

/* Something that is not a contender but lives on the engine's session and
 * hears its events: ZKL_EV_CONNECTED, ZKL_EV_OVER (code: why),
 * ZKL_EV_CLOSE (leader.c). */
typedef struct zkl_observer {
  zkl_link link;
  void (*event_locked)(struct zkl_observer *o, zkl_att_event ev, int code);
} zkl_observer;
void zkl__observer_add_locked(zkl_engine *e, zkl_observer *o);
void zkl__observer_remove_locked(zkl_observer *o);

/* engine.c: starts an attempt of l (l has none). */
int zkl__attempt_start_locked(zkl_lock *l, int timeout_ms, zkl_target *t);
void zkl__attempt_event_locked(zkl_attempt *att, zkl_att_event ev, int code,
                               void *arg);
zkl_att_state zkl__attempt_state(const zkl_attempt *att);
/* For recipes that prepare (zkl_recipe.prepare_locked): the attempt's
 * contender; a reference kept across a callback; whether it is still
 * acquiring; and the end of its preparation (ZKL_OK: it makes its node
 * now; else it fails with that code). */
zkl_lock *zkl__attempt_lock(const zkl_attempt *att);
void zkl__attempt_ref_locked(zkl_attempt *att);
void zkl__attempt_unref_locked(zkl_attempt *att);
bool zkl__attempt_acquiring(const zkl_attempt *att);
bool zkl__attempt_try_once(const zkl_attempt *att);
void zkl__attempt_prepared_locked(zkl_attempt *att, int rc);
/* Its node's child name, when known. */
const char *zkl__attempt_node(const zkl_attempt *att);
/* Starts an attempt of l (l has none) whose node another made (a
 * multi-lock's transaction made every part's node): node (a child name of
 * l->queue, made with prefix) is known, and the attempt enters LISTING at
 * once (SUSPENDED while disconnected). timeout_ms as for
 * zkl__attempt_start_locked (0: a try-once, granted only if first at its
 * first listing). On failure nothing was started: node is the caller's to
 * delete. */
int zkl__attempt_adopt_locked(zkl_lock *l, const char *prefix,
                              const char *node, int timeout_ms,
                              zkl_target *t);
/* A recipe's own request (or a part's attempt) for the attempt: while one
 * is out, an ending attempt is not told (it waits for it to settle, as for
 * its own requests). Each begin holds a reference that its end drops. */
void zkl__attempt_req_begin_locked(zkl_attempt *att);
void zkl__attempt_req_end_locked(zkl_attempt *att);

/* The diagram as data: 1 when the state machine may go from one state to
 * another. Every transition is checked against it. */
bool zkl__edge_allowed(int from, int to);
const char *zkl__state_name(int state);
/* How often each edge was taken in this process, and how often a
 * transition the diagram does not have was attempted (a bug: logged,
 * counted, and made anyway). */
unsigned long zkl__edge_count(int from, int to);
unsigned long zkl__edge_violations(void);

/* ------------------------------------------------------------ contenders */

typedef struct zkl_notice zkl_notice;

/* One contender for one queue: what the user holds as a zkl_lock. Its
 * parts are written by the file named beside them. */
struct zkl_lock {
  /* agent.c: a lock through zklockd (its session's); NULL otherwise. Such
   * a lock uses s, name, refs and owned, and nothing else of this struct. */
  struct zkl_remote *remote;
  /* lock_object.c: the object */
  zkl_session *s; /* reference */
  zkl_link link;  /* in the engine's locks */
  unsigned refs;  /* user + attempts + queued notices */
  bool freed;
  char *name;  /* as the user gave it */
  char *queue; /* the queue's parent path */
  const zkl_recipe *recipe;
  const void *arg;
  /* The contenders that this one's recipe drives (a semaphore's gate, a
   * multi-lock's one contender per name), in the order added: each takes
   * this one's ACL and owner description, its queueing while this one
   * prepares is told as this one's, the end of its hold (a loss among
   * them) goes to this one's recipe (part_ended_locked) instead of a
   * callback, and it is freed with this one. */
  zkl_lock **parts;
  int n_parts;
  zkl_lock *whole; /* the contender this one is the part of, or NULL */
  zkl_lost_cb lost_cb;
  void *lost_arg;
  char *info; /* zkl_lock_set_owner_info() */
  int acl;    /* ZKL_ACL_* of the nodes it creates */
  bool owned; /* a part of something else (a read/write lock's side, a
                 semaphore's gate): not the user's to free */
  void (*free_arg)(void *arg); /* frees arg with the lock, if set */
  zkl_revoke_cb revoke_cb;
  void *revoke_arg;
  int max_hold_ms; /* zkl_lock_set_max_hold(); 0: none */
  int max_hold_grace_ms; /* zkl_lock_set_max_hold_grace(); 0: none */
  int watch_after_ms; /* zkl_lock_set_watch_after() */

  /* engine.c: the hold */
  zkl_attempt *att; /* current acquire, hold or release */
  int hold_count;
  int64_t token;
  bool lost; /* lost since the last acquire: the next release says so */
  int64_t lost_token; /* the token of the hold lost last */
  const char *other_kind; /* the kind of lock that refused the last acquire
                             with ZKL_EKIND (a static string), or NULL */
  const char *refused; /* ZKL_MAKE_PARTS_TOGETHER: the name (a part's)
                          whose parent or create ZooKeeper refused at the
                          last acquire, or NULL (zkl_lock_refused_name) */
  zkl_lock_stats stats;
};

/* lock_object.c */
/* Marks l as a part of something else, which frees it (zkl_lock_free
 * refuses it); free_arg (may be NULL) frees its recipe argument. */
void zkl__lock_own(zkl_lock *l, void (*free_arg)(void *arg));
void zkl__lock_set_free_arg(zkl_lock *l, void (*free_arg)(void *arg));
bool zkl__lock_owned(const zkl_lock *l);
/* Queues the revoke callback of l, if any. */
void zkl__notify_revoke_locked(zkl_lock *l);
void zkl__lock_set_revoke_locked(zkl_lock *l, zkl_revoke_cb cb, void *arg);
/* Makes part a part of whole (see zkl_lock.parts): whole holds a
 * reference to it, and part is owned (zkl__lock_own). ZKL_OK or
 * ZKL_ENOMEM (then nothing changed). */
int zkl__lock_add_part(zkl_lock *whole, zkl_lock *part);
void zkl__lock_ref_locked(zkl_lock *l);
void zkl__lock_unref_locked(zkl_lock *l);
/* Visits every lock of the engine; fn may end its attempt or drop its
 * last reference, never another lock's. */
void zkl__each_lock_locked(zkl_engine *e, void (*fn)(zkl_lock *l, void *ctx),
                           void *ctx);
/* Delivers rc (and token) to a target, once: wakes the waiter, queues the
 * callback, or calls the hook. */
void zkl__notify_locked(zkl_lock *l, zkl_target *t, int rc, int64_t token);
/* Queues (or, with direct, appends to *direct) the lost callback of l;
 * nothing for a part (its whole's recipe hears of it instead:
 * zkl__notify_part_ended_locked). */
void zkl__notify_lost_locked(zkl_lock *l, int reason, zkl_call **direct);
/* The hold of part ended (reason as for zkl_recipe.part_ended_locked):
 * tells its whole's recipe, unless part was freed (with its whole). */
void zkl__notify_part_ended_locked(zkl_lock *part, int reason);
/* engine.c: the same, for a whole whose recipe makes its parts' nodes
 * together (ZKL_MAKE_PARTS_TOGETHER): the engine's own rule (PARTS). */
void zkl__attempt_part_ended_locked(zkl_lock *whole, zkl_lock *part,
                                    int reason);

/* The object alone: a contender for the queue at path `queue` (a full
 * path under ZKL_ROOT) with recipe r; name is the lock name users see. arg
 * is passed to the recipe (borrowed: it must outlive the contender). The
 * session's engine must be attached (zkl__engine_of_locked). Recipes call
 * zkl__contender_new() instead. */
int zkl__lock_object_new(zkl_lock **out, zkl_session *s, const char *name,
                         const char *queue, const zkl_recipe *r,
                         const void *arg);
/* entries.c: what recipes call to make a contender (attaching the engine
 * to the session first) and to free one (zkl_lock_free without its
 * checks; zkl__contender_free_locked with the session's mutex taken). */
int zkl__contender_new(zkl_lock **out, zkl_session *s, const char *name,
                       const char *queue, const zkl_recipe *r,
                       const void *arg);
void zkl__contender_free(zkl_lock *l);
/* Frees n contenders whose recipes look at one another (a read/write
 * lock's sides): under one hold of the session's mutex, each is kept
 * alive until all have ended, so that no recipe hook run by one's ending
 * reads another that is already gone. */
void zkl__contenders_free(zkl_lock *const *ls, int n);
/* Ends what l is doing (a pending acquire completes with ZKL_ECLOSED, a
 * hold is released) and drops the user's reference. */
void zkl__contender_free_locked(zkl_lock *l);

/* The shared entry points of the blocking and async faces; s->mu held.
 * The target's notice, if any, is the attempt's from then on (t->notice is
 * set to NULL). */
int zkl__acquire_locked(zkl_lock *l, int timeout_ms, zkl_target *t);
int zkl__release_locked(zkl_lock *l, zkl_target *t);
int zkl__cancel_locked(zkl_lock *l);
zkl_session *zkl__lock_session(const zkl_lock *l);
/* Copies the full path of the attempt's node while it waits or holds:
 * ZKL_OK, ZKL_ENOTHELD, ZKL_EINVAL (too small). */
int zkl__lock_node_path_locked(const zkl_lock *l, char *buf, size_t len);
/* The token of the current hold, 0 when none (enforcing the lease). */
int64_t zkl__lock_token_locked(zkl_lock *l);
/* The node of a held lock (the child name), or NULL. */
const char *zkl__lock_held_node_locked(const zkl_lock *l);
/* True while an acquire of l is under way or l is held. */
bool zkl__lock_busy_locked(const zkl_lock *l);
/* Whether a hold of l (or of one of its parts) has read a break's mark on
 * its node (zkl_lock_break_mark()). */
bool zkl__lock_break_mark_locked(const zkl_lock *l);

/* User callbacks: the records of acquire and release callbacks. */
struct zkl_notice *zkl__notice_acquire(zkl_acquire_cb cb, void *arg);
struct zkl_notice *zkl__notice_release(zkl_release_cb cb, void *arg);
void zkl__notice_free(struct zkl_notice *n);

/* The engine of a session, attached at its first lock (s->mu held); NULL
 * when out of memory. */
zkl_engine *zkl__engine_of_locked(zkl_session *s);

/* For tests and debugging: attempts waiting for a reconnect. */
unsigned zkl__engine_suspended_locked(const zkl_session *s);

#endif /* ZKL_ENGINE_H */
