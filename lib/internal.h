/*
 * internal.h - what the files of lib/ share. Nothing here is exported.
 *
 * One mutex per session (s->mu) guards the session, its locks, their
 * attempts and watch records. Functions named *_locked expect it held.
 * ZooKeeper calls are made with it held: the client never runs our code from
 * inside those calls (completions and watchers always run on its completion
 * thread), so this cannot deadlock, and it keeps the order in which requests
 * of one lock are queued the order in which the state machine decided them.
 *
 * User callbacks never run under s->mu: the state machine queues them as
 * zkl_call records, and whoever holds the completion thread runs them after
 * unlocking (session.c: zkl__drain_calls).
 */
#ifndef ZKL_INTERNAL_H
#define ZKL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zklock.h"

/* ZKL_ROOT, ZKL_NAME_MAX, ZKL_INFO_MAX and ZKL_PATH_MAX are public. */
#define ZKL_PREFIX_LEN 45 /* strlen("_c_<uuid>-lock-") */

/* ------------------------------------------------------------ small lists */

typedef struct zkl_link {
  struct zkl_link *prev, *next;
} zkl_link;

static inline void zkl__list_init(zkl_link *h) { h->prev = h->next = h; }
static inline bool zkl__list_empty(const zkl_link *h) { return h->next == h; }
static inline void zkl__list_push(zkl_link *h, zkl_link *n) {
  n->prev = h->prev;
  n->next = h;
  h->prev->next = n;
  h->prev = n;
}
static inline void zkl__list_remove(zkl_link *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->prev = n->next = n;
}
static inline unsigned zkl__list_length(const zkl_link *h) {
  unsigned n = 0;
  const zkl_link *p;
  for (p = h->next; p != h; p = p->next)
    n++;
  return n;
}
#define zkl__container_of(ptr, type, member) \
  ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* ------------------------------------------------------------------ names */

/* ZKL_OK or ZKL_EINVAL: see zkl_lock_new() for the rules. */
int zkl__validate_name(const char *name);

/* Writes "_c_<uuid v4>-lock-" (ZKL_PREFIX_LEN bytes + NUL) into buf, which
 * has room for ZKL_PREFIX_LEN + 1 bytes. ZKL_OK or ZKL_ESYSTEM. */
int zkl__make_prefix(char *buf);

/* 1 when name[0..n) ends like the node of a queue recipe: a marker that
 * libzklock speaks or recognises, then a sequence suffix as the server
 * writes it. A lock name segment that does is refused. */
int zkl__is_sequence_node(const char *name, size_t n);

/* Parses the sequence number of a lock node name: the signed decimal after
 * the last "lock-" (Curator's and ours) or "__lock__" (kazoo's) marker, which
 * must run to the end of the name. Returns 1 and sets *seq, or 0 when the
 * name is not a lock node. */
int zkl__parse_seq(const char *child, int32_t *seq);

/* Where a contender stands in a listing. Order is by sequence number compared
 * with serial-number arithmetic relative to the contender's own number, so
 * that it stays right across the signed 32-bit wrap of the parent's cversion;
 * names break ties. */
typedef struct zkl_standing {
  bool own_found;
  int n_before;     /* lock nodes ordered before the contender's */
  int pred;         /* index in names of the immediate predecessor, or -1 */
  int n_duplicates; /* other nodes carrying the contender's prefix */
} zkl_standing;

/* Computes the standing of the node named own (which must parse) among
 * names[0..count). If dup is not NULL, the indexes of other nodes starting
 * with prefix are written to dup (room for count entries). */
void zkl__standing(char *const *names, int count, const char *own,
                   const char *prefix, zkl_standing *out, int *dup);

/* Sorts names[0..count) into queue order (lock nodes only, first holder
 * first); non-lock names are dropped. Returns the number kept. Order is
 * serial-number arithmetic relative to the smallest-looking number. */
int zkl__queue_order(const char **names, int count);

/* Fills buf with the owner description written into each lock node:
 * "host=<h>\npid=<p>\nstart=<process start, unix ms>\n"; the lock adds
 * "info=<text>\n" when it has one. Returns the length. */
int zkl__owner_data(char *buf, size_t len);
/* ZKL_OK for NULL or one line of at most ZKL_INFO_MAX printable bytes. */
int zkl__validate_info(const char *info);
typedef struct zkl_owner {
  char host[128];
  long pid;
  int64_t start_ms;
  char info[ZKL_INFO_MAX + 1];
} zkl_owner;
/* Reads an owner description (unknown fields stay empty or 0). */
void zkl__parse_owner(const char *data, int len, zkl_owner *out);

/* -------------------------------------------------------------------- time */

int64_t zkl__now_ms(void); /* CLOCK_MONOTONIC */
/* Initializes a condition variable that measures timed waits on
 * CLOCK_MONOTONIC. */
int zkl__cond_init(pthread_cond_t *c);
/* Waits on c until signalled or until the monotonic deadline (ms). */
void zkl__cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m,
                          int64_t deadline_ms);

/* -------------------------------------------------------------- logging */

void zkl__log(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void zkl__zk_log(const char *line); /* the ZooKeeper client's log callback */

/* ---------------------------------------------------------------- threads */

/* Marks the calling thread as a ZooKeeper completion thread: every callback
 * the client runs calls it first. Blocking calls consult zkl__on_zk_thread()
 * and fail with ZKL_EDEADLK instead of waiting for the thread they are on. */
void zkl__mark_zk_thread(void);
bool zkl__on_zk_thread(void);

/* ------------------------------------------------------------ structures */

typedef struct zkl_attempt zkl_attempt;
typedef struct zkl_watch zkl_watch;
typedef struct zkl_tap zkl_tap;

/* A blocking caller parked on the async core. */
typedef struct zkl_waiter {
  pthread_cond_t cond;
  bool done;
  int rc;
  int64_t token;
} zkl_waiter;

/* A user callback waiting to run on the completion thread. Holds a reference
 * on its lock so the pointer handed to the callback stays valid memory. */
typedef struct zkl_call {
  struct zkl_call *next;
  enum { ZKL_CALL_ACQUIRE, ZKL_CALL_DONE, ZKL_CALL_LOST } kind;
  zkl_lock *l;
  int rc;
  int64_t token;
  zkl_acquire_cb acquire_cb;
  zkl_done_cb done_cb;
  zkl_lost_cb lost_cb;
  void *arg;
} zkl_call;

/* Who hears about an acquire or release: a blocking waiter, or a callback
 * whose record was allocated when the call was made, so that delivering it
 * can never fail. */
typedef struct zkl_target {
  zkl_waiter *waiter;
  zkl_call *call;
  bool armed;
} zkl_target;

/* Background cleanup the session owes ZooKeeper: retried after every
 * reconnect until it succeeds or the session ends. */
typedef struct zkl_cleanup {
  zkl_link link; /* in s->cleanups */
  enum {
    ZKL_CLEAN_DELETE,        /* delete path */
    ZKL_CLEAN_DELETE_PREFIX, /* delete children of path starting with prefix */
    ZKL_CLEAN_REMOVE_WATCH   /* remove watch record w */
  } kind;
  char *path;
  char prefix[ZKL_PREFIX_LEN + 1];
  zkl_watch *w;
  bool inflight;
} zkl_cleanup;

/* A watch the ZooKeeper client holds for us. The client keeps the context
 * pointer until the watch fires, is removed, or the handle is closed, so the
 * record outlives any attempt that dropped it. */
struct zkl_watch {
  zkl_session *s;   /* reference */
  zkl_link link;    /* in s->watches */
  zkl_attempt *att; /* reference; the attempt it serves */
  enum { ZKL_WATCH_PRED, ZKL_WATCH_OWN } kind;
  char *path;
  bool get_inflight;    /* the getData that sets it has not completed */
  bool registered;      /* the client holds it */
  bool remove_inflight; /* a removal request is out */
  bool cleanup_queued;  /* a removal waits in s->cleanups */
  int pins;             /* a callback of ours is using it: not freed yet */
};

typedef enum {
  ZKL_PH_CREATING,   /* create (+ listing) in flight */
  ZKL_PH_RECOVERING, /* create outcome unknown: looking for our node */
  ZKL_PH_LISTING,    /* listing in flight, own node known */
  ZKL_PH_WATCHING,   /* watching the predecessor */
  ZKL_PH_HELD,
  ZKL_PH_RELEASING,
  ZKL_PH_FINISHED /* result decided; cleanup may still run */
} zkl_phase;

/* What to redo after a reconnect. */
enum {
  ZKL_RESUME_LIST = 1,    /* list the children again */
  ZKL_RESUME_RECOVER = 2, /* find the node a lost create may have made */
  ZKL_RESUME_OWN_WATCH = 4
};

/* One acquisition of one lock, from the create to the release. Outlives its
 * lock's interest in it while requests or watch records still point at it. */
struct zkl_attempt {
  zkl_lock *l; /* reference */
  unsigned refs;
  zkl_phase phase;
  unsigned round;   /* bumped when in-flight listings or watches go stale */
  unsigned pending; /* requests whose completion has not run */
  char prefix[ZKL_PREFIX_LEN + 1];
  char *node; /* child name of our node, once known */
  int64_t czxid;
  bool create_inflight;
  bool create_unknown; /* ZCONNECTIONLOSS/ZOPERATIONTIMEOUT on create */
  bool create_nonode;  /* the parent was missing */
  int create_err;
  int parent_rounds;
  int parent_err; /* a parent create refused for a reason of its own */
  bool pred_was_lowest;
  zkl_watch *pred_watch;
  zkl_watch *own_watch;
  int64_t deadline_ms; /* 0: none */
  bool try_once;
  unsigned resume; /* ZKL_RESUME_* */
  bool parked;
  zkl_link park_link; /* in s->parked */
  int result;
  bool delivered;
  zkl_target acq;
  zkl_target rel;
};

struct zkl_lock {
  zkl_session *s; /* reference */
  zkl_link link;  /* in s->locks */
  unsigned refs;  /* user + attempts + queued calls */
  bool freed;
  char *name;
  char *parent; /* /locks/<name> */
  zkl_attempt *att; /* current acquire, hold or release */
  int hold_count;
  int64_t token;
  bool lost; /* lost since the last acquire; the next release reports it */
  zkl_lost_cb lost_cb;
  void *lost_arg;
  char *info; /* zkl_lock_set_owner_info() */
  int acl;    /* ZKL_ACL_* for the nodes it creates */
};

struct zkl_session {
  pthread_mutex_t mu;
  pthread_cond_t cond; /* connection state changes, drain progress */
  zhandle_t *zh;
  bool owns_handle;
  int requested_timeout_ms;
  int negotiated_timeout_ms;
  bool connected;
  int64_t session_id;
  int dead;     /* 0, or why the session is over: ZKL_ELOST, ZAUTHFAILED */
  bool closing; /* zkl_session_close() has begun: new calls fail */
  bool closed;
  bool orphaned; /* closed, wrapped, still owing the server deletions */
  zkl_tap *tap;  /* wrapped: a watch of its own that hears session events */
  unsigned refs;     /* user + locks + watch records + requests */
  unsigned inflight; /* requests whose completion has not run */
  unsigned busy;     /* completion-thread entries running right now */
  zkl_link locks;
  zkl_link parked;
  zkl_link watches;
  zkl_link cleanups;
  zkl_call *calls;
  zkl_call **calls_tail;
  bool carrier_inflight;
  /* timer thread: acquire deadlines */
  pthread_t timer;
  bool timer_running;
  bool timer_stop;
  pthread_cond_t timer_cond;
  char owner_data[256];
  int owner_len;
  unsigned long sent[16]; /* requests sent, by kind (tests count them) */
  /* lease.c */
  unsigned held;           /* locks in the HELD phase */
  int64_t last_ack_ms;     /* send time of the latest answered request */
  bool heartbeat_inflight;
  int lease_margin_ms;     /* 0: default, -1: lease off, > 0: the user's */
  zkl_call *lease_calls;   /* lost notices for the timer thread to run */
};

/* A request in flight. Holds a session reference and, if set, an attempt
 * reference; freed by its completion. */
typedef struct zkl_req {
  zkl_session *s;
  enum {
    ZKL_RQ_PARENT,
    ZKL_RQ_CREATE,
    ZKL_RQ_LIST,
    ZKL_RQ_PRED_GET,
    ZKL_RQ_OWN_GET,
    ZKL_RQ_RECOVER_GET,
    ZKL_RQ_DELETE,  /* cleanup of an abandoned attempt */
    ZKL_RQ_RELEASE, /* delete of a release */
    ZKL_RQ_REMOVE_WATCH,
    ZKL_RQ_CLEANUP, /* a zkl_cleanup job */
    ZKL_RQ_CARRIER, /* only brings the completion thread round */
    ZKL_RQ_PROBE,   /* zkl_session_wrap's round trip */
    ZKL_RQ_HEARTBEAT, /* keeps the lease moving while locks are held */
    ZKL_RQ_QUERY,     /* zkl_participants() */
    ZKL_RQ_TAP,       /* a wrapped session's own watch on "/" */
    ZKL_RQ_KINDS
  } kind;
  zkl_attempt *att;
  zkl_watch *w;
  zkl_cleanup *job;
  unsigned round;
  int64_t sent_ms; /* when it was queued: the server heard it later */
  void *query;     /* ZKL_RQ_QUERY: the query and the child it reads */
  int index;
  char *path;      /* for requests that need to know it on completion */
} zkl_req;

/* ---------------------------------------------------------- session.c */

/* Allocates a request; NULL on ENOMEM. Takes session (and attempt) refs. */
zkl_req *zkl__req_new(zkl_session *s, int kind, zkl_attempt *att);
/* Undoes zkl__req_new when the ZooKeeper call refused the request. */
void zkl__req_abort_locked(zkl_req *r);
/* Start and end of every completion-thread entry point: mark the thread,
 * take the lock, count the entry. */
void zkl__enter_locked(zkl_session *s);
/* The same for a request's completion; a server's answer (rc) also renews
 * the lease (lease.c). */
void zkl__enter_req_locked(zkl_req *r, int rc);
/* Runs callbacks the caller collected itself (the timer thread's lost
 * notices), unlocking meanwhile; frees them. */
void zkl__run_calls_locked(zkl_session *s, zkl_call *list);
/* Drops the lock, runs queued user callbacks, frees the session if that was
 * its last reference. s must not be used afterwards. */
void zkl__leave(zkl_session *s);
/* Ends a request's life inside a completion (under the lock). */
void zkl__req_done_locked(zkl_req *r);

void zkl__session_unref_locked(zkl_session *s);
/* Unlocks s and frees it if that was its last reference (user threads). */
void zkl__unlock(zkl_session *s);
void zkl__queue_call_locked(zkl_session *s, zkl_call *c);
void zkl__park_locked(zkl_attempt *att, unsigned resume);
void zkl__unpark_locked(zkl_attempt *att);
/* Schedules background cleanup; runs it now when connected. */
void zkl__cleanup_delete_locked(zkl_session *s, const char *path);
void zkl__cleanup_prefix_locked(zkl_session *s, const char *parent,
                                const char *prefix);
void zkl__cleanup_watch_locked(zkl_session *s, zkl_watch *w);
/* The ACL of the nodes a lock creates (ZKL_ACL_*): parents below /locks
 * and lock nodes. */
const struct ACL_vector *zkl__acl(int mode);
/* The session's state for new calls: ZKL_OK, ZKL_ECLOSED, ZKL_ELOST, ... */
int zkl__session_usable_locked(const zkl_session *s);
/* True when rc says a request's outcome is unknown (connection lost). */
bool zkl__is_connection_loss(int rc);
/* True when rc says the session is over. */
bool zkl__is_session_over(int rc);

/* ------------------------------------------------------------- lock.c */

void zkl__attempt_unref_locked(zkl_attempt *att);
void zkl__lock_unref_locked(zkl_lock *l);
/* Session events seen by the state machine. */
void zkl__locks_resume_locked(zkl_session *s); /* after a reconnect */
void zkl__locks_session_over_locked(zkl_session *s);
void zkl__locks_lease_lost_locked(zkl_session *s, zkl_call **direct);
void zkl__locks_close_locked(zkl_session *s);
/* Timer: fails every attempt whose deadline passed; returns the next
 * deadline, or 0 when none. */
int64_t zkl__locks_expire_locked(zkl_session *s, int64_t now_ms);
/* Shared by the blocking and async faces. The caller holds s->mu. */
int zkl__acquire_locked(zkl_lock *l, int timeout_ms, zkl_target *t);
int zkl__release_locked(zkl_lock *l, zkl_target *t);
int zkl__cancel_locked(zkl_lock *l);
/* Watch record life (lock.c owns the watcher function). */
void zkl__watch_maybe_free_locked(zkl_watch *w);
void zkl__watch_cleanup_done_locked(zkl_watch *w, int rc);
void zkl__pred_watcher(zhandle_t *zh, int type, int state, const char *path,
                       void *ctx);

/* For tests: what a session still holds. */
typedef struct zkl_debug_counts {
  unsigned watches;  /* watch records the client may still call */
  unsigned cleanups; /* background deletes/removals not yet done */
  unsigned inflight; /* requests without completion */
  unsigned parked;   /* attempts waiting for a reconnect */
  unsigned calls;    /* user callbacks queued */
  unsigned long sent[16]; /* requests sent, by zkl_req kind */
} zkl_debug_counts;
void zkl__debug_counts(zkl_session *s, zkl_debug_counts *out);
/* Waits until the session holds no watch record, cleanup, request, parked
 * attempt or queued callback. 0 when reached, -1 on timeout. */
int zkl__debug_wait_quiet(zkl_session *s, int timeout_ms);
/* The same, but armed watches may remain: nothing is on its way. */
int zkl__debug_wait_settled(zkl_session *s, int timeout_ms);
/* Waits until the session's connection state is `want`: 0, or -1. */
int zkl__debug_wait_connected(zkl_session *s, bool want, int timeout_ms);
/* Waits until the session is known to be over; returns why (0: timeout). */
int zkl__debug_wait_dead(zkl_session *s, int timeout_ms);

/* Test hook: when set, called with s->mu held on the completion thread just
 * before a waiter sends the watch on its predecessor, so tests can make the
 * predecessor vanish in that window. NULL outside tests. */
extern void (*zkl__hook_before_watch)(const char *pred_path);

/* ------------------------------------------------------------ lease.c */

/* The margin in force (ms), or -1 when the lease is off. */
int zkl__lease_margin_ms(const zkl_session *s);
/* True when the lease is on and nothing proves the session alive now. */
bool zkl__lease_expired_locked(const zkl_session *s, int64_t now_ms);
/* For calls on held locks from the user's threads: a process frozen past
 * its lease (SIGSTOP, a paused VM) must be told before it takes one more
 * step as a holder, even if its timer thread has not run yet. Declares the
 * held locks lost when the lease ran out (the notices go to the timer
 * thread) and returns true. */
bool zkl__lease_enforce_locked(zkl_session *s);
/* Sends heartbeats, declares held locks lost when the lease runs out (their
 * notices go to *direct); returns when to look again (0: no need). */
int64_t zkl__lease_tick_locked(zkl_session *s, int64_t now, zkl_call **direct);

/* ------------------------------------------------------------ timer.c */

int zkl__timer_start(zkl_session *s);
void zkl__timer_stop(zkl_session *s); /* joins; call without s->mu */
/* Makes the timer look again at deadlines, heartbeats and the lease. */
void zkl__timer_kick_locked(zkl_session *s);

#endif /* ZKL_INTERNAL_H */
