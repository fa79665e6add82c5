/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zklock.h - distributed locks on ZooKeeper, with fencing tokens. Each
 * call's full contract is on its man page; zklock(3) is the overview.
 *
 * A lock named NAME lives under the znode /locks/NAME. A contender creates
 * an ephemeral sequential child there and holds the lock while its child is
 * the lowest; otherwise it watches only its predecessor. Each grant returns
 * a fencing token, the czxid of the holder's node: successive holders get
 * strictly increasing tokens, so a resource that remembers the highest
 * token it accepted can refuse a holder paused past its session's expiry.
 *
 * Objects
 *   zkl_session  one ZooKeeper session (one zhandle_t), opened by the library
 *                or built on the application's own handle.
 *   zkl_lock     one contender for one lock name, on one session; two with
 *                the same name exclude each other, in one session or two.
 *   Every recipe's contender is a zkl_lock with the same calls: a mutex
 *   (zkl_lock_new), a read/write lock's side (zkl_rwlock_new), a semaphore's
 *   lease (zkl_lock_new_semaphore), an election's candidate
 *   (zkl_lock_new_election), a multi-lock (zkl_lock_new_multi).
 *
 * Names
 *   zkl_ for functions and types, ZKL_ for macros and constants. Functions
 *   are zkl_<object>_<verb>[_<what>], the object being session, lock,
 *   rwlock, leader_watch, or name: zkl_name_* act on a lock NAME on the
 *   server without taking part (those taking a session ask it and block).
 *   Process-wide calls have none (zkl_version, zkl_strerror, zkl_on_log).
 *   Only the session is opened and closed (it does I/O when made); the rest
 *   is made by zkl_<type>_new[_<variant>] (nothing is sent) and freed by
 *   zkl_<type>_free (never blocks; NULL ignored); an allocated result is
 *   freed by <call>_free. Accessors are nouns (zkl_lock_token): const, never
 *   fail, never block. zkl_*_get_<what> copies into the caller's storage;
 *   zkl_*_set_<what> sets a value and zkl_*_on_<event> a callback (NULL
 *   clears): ZKL_OK, ZKL_EINVAL (NULL object) or ZKL_ECLOSED (close begun).
 *   Callback types are zkl_<event>_cb(handle, status or reason, user
 *   pointer). Constants are named enums with explicit values; codes are int.
 *
 * Return codes
 *   ZKL_OK (0), or a negative code: the library's (ZKL_E*, -1000 and below)
 *   or, where ZooKeeper's answer is the cause and no ZKL_ code fits,
 *   ZooKeeper's own unchanged (ZNOAUTH, ZINVALIDACL, ZCONNECTIONLOSS for an
 *   outcome the connection took with it, ...). zkl_strerror() describes
 *   both; nothing travels through errno or any global. A session ended by
 *   refused credentials answers ZAUTHFAILED for ZKL_EEXPIRED.
 *
 * Threads
 *   Any function may be called from any thread, on different objects
 *   concurrently; an object must not be used during or after the call that
 *   frees it (zkl_lock_free, zkl_session_close). Callbacks run one at a time
 *   on the client's completion thread, no lock of the library held (except,
 *   as their pages say: lost notices of the lease and of the maximum hold
 *   and their events, ZKL_STATE_CLOSED, zkl_name_break()'s report). One may
 *   call any non-blocking zkl_ function (zkl_lock_free() on its own lock
 *   too) and must not block for long: the session's completions and
 *   watchers wait behind it. There the blocking calls (zkl_session_open,
 *   _add_auth, zkl_lock_acquire, _release, _commit, zkl_name_revoke, _break,
 *   _get_leader, _list, _find) return ZKL_EDEADLK instead of hanging, and
 *   zkl_session_close() returns at once (ZKL_CLOSE_BACKGROUND) and finishes
 *   on a thread of its own. Through the agent (options.agent) the session
 *   has a callback thread and a lost-notice thread of its own, both
 *   completion threads in this sense; a callback that blocks there delays
 *   neither the session's pings to the agent nor a lost notice.
 *
 * Questions
 *   zkl_name_list, _get_leader, _find, _revoke and _break ask again from the
 *   start when the connection is lost under them (say, a session following
 *   the ensemble moves just after it opened) while the session timeout from
 *   the call's (zkl_name_break: each step's) start allows; only then do they
 *   return ZCONNECTIONLOSS (the session's end: ZKL_EEXPIRED, ZKL_ECLOSED).
 *   So a holder may hear one revoke or one break's mark twice.
 *
 * Processes
 *   The client's socket is not close-on-exec: a child that execs inherits
 *   the connection unless it closes descriptors it does not know (zklock(1)
 *   does). After fork(), use a session in the parent only.
 *
 * Async contract
 *   When an async function returns an error, its callback never runs; else
 *   it runs exactly once: on success, failure, timeout, zkl_lock_cancel(),
 *   zkl_lock_free(), zkl_session_close() or session loss, each its own code.
 */
#ifndef ZKLOCK_H
#define ZKLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ZKL_BUILDING) && defined(__GNUC__)
#define ZKL_EXTERN __attribute__((visibility("default")))
#else
#define ZKL_EXTERN
#endif

/* Marks a name 1.x keeps until 2.0: a call warns "use f" (GCC, Clang). */
#if defined(__GNUC__)
#define ZKL_DEPRECATED_FOR(f) __attribute__((deprecated("use " #f)))
#else
#define ZKL_DEPRECATED_FOR(f)
#endif

/* ---------------------------------------------------------------- version */
#define ZKL_VERSION_MAJOR 1
#define ZKL_VERSION_MINOR 1
#define ZKL_VERSION_PATCH 0
#define ZKL_VERSION_HEX \
  ((ZKL_VERSION_MAJOR << 16) | (ZKL_VERSION_MINOR << 8) | ZKL_VERSION_PATCH)
/* The run-time version, as ZKL_VERSION_HEX and "1.1.0". See zkl_version(3).
 * 1.1 added: zkl_session_options.agent, ZKL_EDENIED, ZKL_EAGENT,
 * ZKL_LOST_AGENT, zkl_session_add_worker(), zkl_lock_break_mark(),
 * zkl_errname(), zkl_lock_set_layout() and zkl_layout; test
 * ZKL_VERSION_HEX >= 0x010100 before using them. */
ZKL_EXTERN unsigned zkl_version(void);
ZKL_EXTERN const char *zkl_version_string(void);

/* ----------------------------------------------------------------- limits */
#define ZKL_ROOT "/locks"          /* where relative names live; "/a/b": its own */
#define ZKL_NAME_MAX 255           /* longest lock name, bytes */
#define ZKL_INFO_MAX 200           /* longest owner info text, bytes */
#define ZKL_ID_MAX 1024            /* longest election candidate id, bytes */
#define ZKL_COMMIT_OPS_MAX 1024    /* most ops of one guarded write */
/* Session timeouts (ms): requests are clamped to [MIN, MAX]; 0: default. */
#define ZKL_SESSION_TIMEOUT_MIN 100
#define ZKL_SESSION_TIMEOUT_MAX 1073741823
#define ZKL_SESSION_TIMEOUT_DEFAULT_MS 10000
#define ZKL_SERVERS_MAX 4096       /* room for any connect string, + NUL */
#define ZKL_PATH_MAX 512           /* room for any node path, + NUL */

/* ----------------------------------------------------------------- errors */
/* XX(name, value, sentence): -1000 and below, apart from ZooKeeper's. */
#define ZKL_ERRNO_MAP(XX)                                                     \
  XX(EINVAL, -1001, "invalid argument")                                       \
  XX(EBUSY, -1002, "the lock is held by another contender")                   \
  XX(ETIMEDOUT, -1003, "timed out waiting for the lock")                      \
  XX(ECANCELED, -1004, "the acquire was canceled")                            \
  XX(ENOTHELD, -1005, "the lock is not held")                                 \
  XX(ELOST, -1006, "the lock was lost")                                       \
  XX(ECONNECT, -1007, "no ZooKeeper server could be reached in time")         \
  XX(EDEADLK, -1008,                                                          \
     "blocking call made on the ZooKeeper completion thread")                 \
  XX(ENOMEM, -1009, "out of memory")                                          \
  XX(EINPROGRESS, -1010,                                                      \
     "an acquire or release is already in progress on this lock")             \
  XX(EIDLE, -1011, "no acquire is in progress on this lock")                  \
  XX(ECLOSED, -1012, "the lock or its session was closed")                    \
  XX(ESYSTEM, -1013, "a system call failed (threads or clock)")             \
  XX(EEXPIRED, -1014,                                                         \
     "the session expired: close it and open a new one")                      \
  XX(ERESOLVE, -1015, "no host of the connect string could be resolved")    \
  XX(EUPGRADE, -1016,                                                         \
     "the write side cannot be taken while holding only the read side")       \
  XX(ELIMIT, -1017,                                                           \
     "the semaphore is in use with another limit: its contenders "            \
     "disagree on it")                                                        \
  XX(EKIND, -1018,                                                            \
     "the name is held or awaited by a lock of another kind")                 \
  XX(EDENIED, -1020, "the lock agent's policy does not allow this")           \
  XX(EAGENT, -1021,                                                           \
     "the lock agent is not there, or it ended the connection")
/* The library's codes (-1019, ZKL_EBACKGROUND before 1.0, is not reused). */
typedef enum zkl_error {
  ZKL_OK = 0,
#define ZKL_XX_ENUM_(name, value, text) ZKL_##name = (value),
  ZKL_ERRNO_MAP(ZKL_XX_ENUM_)
#undef ZKL_XX_ENUM_
} zkl_error;
/* A static sentence for rc (ZKL_ or ZooKeeper code). See zkl_strerror(3). */
ZKL_EXTERN const char *zkl_strerror(int rc);
/* The code's own name, "ZKL_ETIMEDOUT" or "ZNONODE", static; "" for a
 * code that is neither's (1.1). See zkl_strerror(3). */
ZKL_EXTERN const char *zkl_errname(int rc);

/* --------------------------------------------------------------- sessions */
typedef struct zkl_session zkl_session;
/* What the library sees of its session, as told to zkl_state_cb. */
typedef enum zkl_state {
  ZKL_STATE_CONNECTED = 1,   /* first connection (heard via options.on_state) */
  ZKL_STATE_SUSPENDED = 2,   /* connection dropped; held locks in doubt */
  ZKL_STATE_RECONNECTED = 3, /* connected again, in the same session */
  ZKL_STATE_EXPIRED = 4,     /* over: calls return ZKL_EEXPIRED; reopen */
  ZKL_STATE_AUTH_FAILED = 5, /* credentials refused: over, as EXPIRED */
  ZKL_STATE_CLOSED = 6       /* zkl_session_close() is done: the last call */
} zkl_state;
/* Told each change of state (ZKL_STATE_CLOSED: on the closing thread), and
 * each event of the session and its locks (struct zkl_event below). */
typedef void (*zkl_state_cb)(zkl_session *s, zkl_state state, void *arg);
struct zkl_event;
typedef void (*zkl_event_cb)(zkl_session *s, const struct zkl_event *ev,
                             void *arg);
/* Flags of zkl_session_options.flags, or-ed together. */
typedef enum zkl_open_flag {
  ZKL_OPEN_NO_FOLLOW_CONFIG = 1 /* do not follow the ensemble's config */
} zkl_open_flag;

/* How to open a session: zkl_session_options_init() first; every field's
 * zero is its default. See zkl_session_open(3). */
typedef struct zkl_session_options {
  size_t struct_size;     /* set by zkl_session_options_init() */
  const char *hosts;      /* "host:port[,...][/chroot]"; copied; or handle */
  zhandle_t *handle;      /* build on the application's own handle */
  int session_timeout_ms; /* 0: the default; clamped; 0 with handle */
  int connect_timeout_ms; /* how long open waits; 0: the session timeout */
  unsigned flags;         /* zkl_open_flag bits */
  int lease_margin_ms;    /* as zkl_session_set_lease_margin() */
  int server_tick_ms;     /* as zkl_session_set_server_tick() */
  zkl_state_cb on_state;  /* as zkl_session_on_state(), from the start */
  void *state_arg;
  zkl_event_cb on_event;  /* as zkl_session_on_event(), from the start */
  void *event_arg;
  const char *agent;      /* zklockd's socket path instead of hosts: locks
                             through the host's agent (zklockd(8)) */
} zkl_session_options;

#if defined(__cplusplus) ||                                                  \
    (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define ZKL_INLINE_ inline
#elif defined(__GNUC__)
#define ZKL_INLINE_ __inline__
#else
#define ZKL_INLINE_
#endif
/* Zeroes o, records the caller's sizeof (inline: only the caller knows). */
static ZKL_INLINE_ void zkl_session_options_init(zkl_session_options *o) {
  unsigned char *p = (unsigned char *)o;
  size_t i;
  for (i = 0; i < sizeof *o; i++)
    p[i] = 0;
  o->struct_size = sizeof *o;
}
#undef ZKL_INLINE_

/* Opens a session (or wraps o->handle) and waits until it is connected;
 * *out is set only on ZKL_OK. o and its strings are copied. Blocks for at
 * most connect_timeout_ms. ZKL_EINVAL, ZKL_ERESOLVE, ZKL_ECONNECT,
 * ZKL_EEXPIRED. o's callbacks are called only once it succeeds: a failed
 * open calls neither. See zkl_session_open(3). */
ZKL_EXTERN int zkl_session_open(zkl_session **out,
                                const zkl_session_options *o);
/* Optional, for a wrapped session: hands the library one event of the
 * application's watcher. Never blocks. zkl_session_forward_watcher_event(3) */
ZKL_EXTERN void zkl_session_forward_watcher_event(zkl_session *s, int type,
                                                  int state);
/* How far zkl_session_close() got on the server. */
typedef enum zkl_close_outcome {
  ZKL_CLOSE_DONE = 0,       /* nothing of the session is left on the server */
  ZKL_CLOSE_UNREACHED = 1,  /* not told: the server expires it in time */
  ZKL_CLOSE_EXPIRED = 2,    /* already ended: nothing was left */
  ZKL_CLOSE_BACKGROUND = 3  /* a thread of its own finishes the close */
} zkl_close_outcome;

/* Ends s: pending acquires complete with ZKL_ECLOSED, held locks are
 * released, every callback of the session has run (ZKL_STATE_CLOSED last);
 * *how (may be NULL) says how far the server side got. s is invalid
 * afterwards. Blocks, except from a callback. See zkl_session_close(3). */
ZKL_EXTERN int zkl_session_close(zkl_session *s, zkl_close_outcome *how);
/* The handle (borrowed until close), the granted timeout (ms; 0 before the
 * first connection), the connect string in use now into buf (ZKL_EINVAL
 * for a wrapped session). Never block. See zkl_session_get_servers(3). */
ZKL_EXTERN zhandle_t *zkl_session_handle(const zkl_session *s);
ZKL_EXTERN int zkl_session_timeout(const zkl_session *s);
ZKL_EXTERN int zkl_session_get_servers(const zkl_session *s, char *buf,
                                       size_t len);
/* The lease margin: held locks are declared lost (ZKL_LOST_LEASE_EXPIRED)
 * before the server could grant them to anyone else. margin_ms > 0 sets
 * it, 0 takes the default (T/10 within [100, 2000] ms), < 0 turns the lease
 * off. See zkl_session_set_lease_margin(3). */
ZKL_EXTERN int zkl_session_set_lease_margin(zkl_session *s, int margin_ms);
/* The servers' tickTime or a bound on it (ms; 0: T/2 assumed; never below
 * the real one); when the lease runs out (CLOCK_MONOTONIC ms, 0: none). */
ZKL_EXTERN int zkl_session_set_server_tick(zkl_session *s, int tick_ms);
ZKL_EXTERN int64_t zkl_session_lease_deadline(const zkl_session *s);
/* Adds credentials (copied), as zoo_add_auth(), and waits for the verdict.
 * Blocks. ZAUTHFAILED (the session is over), ZCONNECTIONLOSS (no verdict in
 * the session timeout). See zkl_session_add_auth(3). */
ZKL_EXTERN int zkl_session_add_auth(zkl_session *s, const char *scheme,
                                    const char *credentials, int len);
/* Process pid works under the session's locks: a child that may run on
 * after the caller, such as zklock's command. Should the session's
 * connection end (its process dies) while pid runs, its held locks pass on
 * only once pid has ended too, or once the lease last in force has run
 * out (zkl_session_lease_deadline() plus the margin): pid must be stopped
 * by then. Direct, the ZooKeeper session outlives its process that long
 * anyway, and the call only checks pid; through an agent, the agent
 * watches pid. ZKL_EINVAL: no such process, or an agent too old for it;
 * ZKL_EDENIED: another user's process. Blocks (one round trip to an
 * agent). See zkl_session_add_worker(3). */
ZKL_EXTERN int zkl_session_add_worker(zkl_session *s, pid_t pid);
/* Sets (NULL clears) the state callback. See zkl_session_on_state(3). */
ZKL_EXTERN int zkl_session_on_state(zkl_session *s, zkl_state_cb cb,
                                    void *arg);
/* Where the client's log and the library's diagnostics go, process-wide
 * (NULL: dropped; ZKLOCK_DEBUG=1: stderr); cb must not call the library.
 * ZKLOCK_TRACE=1 adds every transition of a lock's state machine, with the
 * source line that made it, and on its own (without ZKLOCK_DEBUG) sends
 * the log to stderr too when no cb is set; a cb set gets those lines
 * instead. See zkl_on_log(3). */
typedef void (*zkl_log_cb)(const char *line, void *arg);
ZKL_EXTERN int zkl_on_log(zkl_log_cb cb, void *arg);

/* ------------------------------------------------------------------ locks */
typedef struct zkl_lock zkl_lock;
/* Makes a mutex contender for NAME (copied; rules: zkl_name_check(3));
 * nothing is sent until the first acquire. One name, one lock: mutexes and
 * writers exclude everyone, readers share, an election or a semaphore
 * shares a name with nothing else (ZKL_EKIND). See zkl_lock_new(3). */
ZKL_EXTERN int zkl_lock_new(zkl_lock **out, zkl_session *s, const char *name);
/* Whether name is a valid lock name (ZKL_OK or ZKL_EINVAL), no session
 * needed; _explain puts why in why (len bytes). See zkl_name_check(3). */
ZKL_EXTERN int zkl_name_check(const char *name);
ZKL_EXTERN int zkl_name_explain(const char *name, char *why, size_t len);
/* Copies every queue (parent path) a contender of NAME of any kind may use
 * into buf, space-separated: the name, a semaphore's leases and gate. Pure.
 * ZKL_EINVAL for a bad name or a short buf. See zkl_lock_get_node_path(3). */
ZKL_EXTERN int zkl_name_get_queues(const char *name, char *buf, size_t len);
/* Frees l (never blocks; NULL ignored): a hold is released, a pending
 * acquire's callback runs with ZKL_ECLOSED, the node goes in the background;
 * no lost callback after this. See zkl_lock_free(3). */
ZKL_EXTERN void zkl_lock_free(zkl_lock *l);
/* Acquires l, waiting at most timeout_ms (-1: no bound, 0: one try);
 * *token (may be NULL) gets the fencing token. Reentrant per object. On
 * failure nothing of the attempt is left on the server. Blocks. See
 * zkl_lock_acquire(3). */
ZKL_EXTERN int zkl_lock_acquire(zkl_lock *l, int timeout_ms, int64_t *token);
/* Releases one hold; at zero deletes the node and waits for the server.
 * ZKL_ENOTHELD; ZKL_ELOST once after a loss. Blocks. */
ZKL_EXTERN int zkl_lock_release(zkl_lock *l);
/* The async faces: the callback (the acquire's required, with the token on
 * ZKL_OK) runs once, on the completion thread, with the blocking call's
 * status, unless the call returns an error. Never block. */
typedef void (*zkl_acquire_cb)(zkl_lock *l, int rc, int64_t token, void *arg);
typedef void (*zkl_release_cb)(zkl_lock *l, int rc, void *arg);
ZKL_EXTERN int zkl_lock_acquire_async(zkl_lock *l, int timeout_ms,
                                      zkl_acquire_cb cb, void *arg);
ZKL_EXTERN int zkl_lock_release_async(zkl_lock *l, zkl_release_cb cb,
                                      void *arg);
/* Cancels a pending acquire (it completes with ZKL_ECANCELED); ZKL_EIDLE
 * when none is pending (it may just have succeeded). */
ZKL_EXTERN int zkl_lock_cancel(zkl_lock *l);
/* Why a held lock was lost, as passed to zkl_lost_cb. */
typedef enum zkl_lost_reason {
  ZKL_LOST_SESSION_EXPIRED = 1, /* the server expired the session */
  ZKL_LOST_NODE_DELETED = 2,    /* someone else deleted the lock node */
  ZKL_LOST_LEASE_EXPIRED = 3,   /* the lease ran out (no news in time) */
  ZKL_LOST_BROKEN = 4,          /* zkl_name_break() deleted the node */
  ZKL_LOST_MAX_HOLD = 5,        /* held past zkl_lock_set_max_hold() */
  ZKL_LOST_AGENT = 6            /* the agent went away or went silent */
} zkl_lost_reason;

/* Told once when a held lock is lost: stop using the resource at once.
 * Completion thread; timer thread for LEASE_EXPIRED, MAX_HOLD (beside other
 * callbacks, same rules); through the agent, every reason on a thread of its
 * own. Set (NULL clears): see zkl_lock_on_lost(3). */
typedef void (*zkl_lost_cb)(zkl_lock *l, zkl_lost_reason reason, void *arg);
ZKL_EXTERN int zkl_lock_on_lost(zkl_lock *l, zkl_lost_cb cb, void *arg);
/* The current hold's fencing token (0: not held, or the lease ran out); the
 * kind that refused the last acquire with ZKL_EKIND (static; else NULL);
 * the name (borrowed until zkl_lock_free()). See zkl_lock_token(3). */
ZKL_EXTERN int64_t zkl_lock_token(const zkl_lock *l);
ZKL_EXTERN const char *zkl_lock_other_kind(const zkl_lock *l);
ZKL_EXTERN const char *zkl_lock_name(const zkl_lock *l);
/* Who may change the nodes a lock creates, from its next acquire on. */
typedef enum zkl_acl {
  ZKL_ACL_OPEN = 0,   /* anyone may do anything (the default, as Curator) */
  ZKL_ACL_CREATOR = 1, /* only the creator's credentials may delete or
                          write; everyone reads. Needs zkl_session_add_auth() */
  ZKL_ACL_PRIVATE = 2  /* only the creator's credentials may do anything,
                          read included: every contender must show them
                          (zklockd --acl private). Needs the same */
} zkl_acl;
/* The ACL of the nodes l creates. See zkl_lock_set_acl(3). */
ZKL_EXTERN int zkl_lock_set_acl(zkl_lock *l, zkl_acl acl);
/* A line of text (copied; NULL or "" clears) written into l's node at its
 * next acquire, shown by zkl_name_list(). ZKL_EINVAL above ZKL_INFO_MAX
 * bytes or for a control character. See zkl_lock_set_owner_info(3). */
ZKL_EXTERN int zkl_lock_set_owner_info(zkl_lock *l, const char *info);
/* Bounds each hold of l from its next grant: after max_hold_ms (0: no
 * bound) the timer thread ends the hold as lost (ZKL_LOST_MAX_HOLD); the
 * node goes once the lost callback has returned and the holder released, or
 * the grace ran out. Never blocks. See zkl_lock_set_max_hold(3). */
ZKL_EXTERN int zkl_lock_set_max_hold(zkl_lock *l, int max_hold_ms);
/* How long (ms; default 0) that node stays after the holder was told. */
ZKL_EXTERN int zkl_lock_set_max_hold_grace(zkl_lock *l, int grace_ms);
/* How long a hold lasts before the library watches its own node (0: from
 * the grant; default ZKL_WATCH_AFTER_DEFAULT_MS). Read at the next grant.
 * Never blocks. See zkl_lock_set_watch_after(3). */
#define ZKL_WATCH_AFTER_DEFAULT_MS 100
ZKL_EXTERN int zkl_lock_set_watch_after(zkl_lock *l, int watch_after_ms);
/* Whose node names a mutex writes (1.1): Curator's (the default,
 * "_c_<id>-lock-<seq>") or kazoo's ("_c_<id>-__lock__<seq>"), which kazoo's
 * Lock sees with its default settings and Curator's mutex does not order.
 * Only a mutex from zkl_lock_new(), before its first acquire. See
 * zkl_lock_set_layout(3). */
typedef enum zkl_layout {
  ZKL_LAYOUT_CURATOR = 0,
  ZKL_LAYOUT_KAZOO = 1
} zkl_layout;
ZKL_EXTERN int zkl_lock_set_layout(zkl_lock *l, zkl_layout layout);
/* Copies the full path of l's node into buf; ZKL_ENOTHELD when it has none.
 * See zkl_lock_get_node_path(3). */
ZKL_EXTERN int zkl_lock_get_node_path(const zkl_lock *l, char *buf, size_t len);

/* ----------------------------------------------------------- revocation */
/* Told when someone asks this contender to let go (the holder's choice);
 * set (NULL clears) for a holder or a waiter. See zkl_lock_on_revoke(3). */
typedef void (*zkl_revoke_cb)(zkl_lock *l, void *arg);
ZKL_EXTERN int zkl_lock_on_revoke(zkl_lock *l, zkl_revoke_cb cb, void *arg);
/* Whether the request was a break's (zkl_name_break): the hold's node
 * carries a break's mark and is deleted when the breaker's grace ends, so
 * the holder must stop its work and let go before then. Never blocks.
 * See zkl_lock_on_revoke(3). */
ZKL_EXTERN bool zkl_lock_break_mark(const zkl_lock *l);
/* Asks the holders of NAME (or the one contender node) to let go by writing
 * __REVOKE__ into their nodes, as Curator's Revoker does; blocks.
 * ZKL_ENOTHELD when there is nobody to ask. See zkl_lock_on_revoke(3). */
ZKL_EXTERN int zkl_name_revoke(zkl_session *s, const char *name,
                               const char *node);
/* What zkl_name_break() did to one node (full path, borrowed): rc ZKL_OK
 * (broken), ZKL_ENOTHELD (it let go first), or an error. */
typedef void (*zkl_break_cb)(zkl_session *s, int rc, const char *node,
                             void *arg);
/* Breaks a stuck lock: marks each node of NAME that holds (or the one
 * contender node), waits grace_ms or until they are gone, then deletes each
 * one still the node it marked, so a holder that let go is never hit.
 * Blocks. ZKL_OK when a node was broken, ZKL_ENOTHELD when none was; cb
 * (may be NULL) is told each node on the calling thread. zkl_name_break(3) */
ZKL_EXTERN int zkl_name_break(zkl_session *s, const char *name,
                              const char *node, int grace_ms, zkl_break_cb cb,
                              void *arg);

/* --------------------------------------------------------- guarded writes */
typedef void (*zkl_commit_cb)(zkl_lock *l, int rc, void *arg);
/* Runs ops as one zoo_multi() that commits only while l holds (a check on
 * its node goes first): ZKL_ELOST when it no longer holds, and nothing is
 * written. ops is borrowed for the call. Blocks. See zkl_lock_commit(3). */
ZKL_EXTERN int zkl_lock_commit(zkl_lock *l, int count, const zoo_op_t *ops,
                               zoo_op_result_t *results);
/* The same, returning at once; cb (required) runs once, on the completion
 * thread, unless this returns an error; ops borrowed until then. */
ZKL_EXTERN int zkl_lock_commit_async(zkl_lock *l, int count,
                                     const zoo_op_t *ops,
                                     zoo_op_result_t *results, zkl_commit_cb cb,
                                     void *arg);

/* -------------------------------------------------------- read/write locks */
typedef struct zkl_rwlock zkl_rwlock;
/* Makes a read/write lock on NAME in Curator's InterProcessReadWriteLock
 * layout. Each side is a zkl_lock (borrowed, freed by zkl_rwlock_free). The
 * write holder may take the read side (downgrade); the reverse fails with
 * ZKL_EUPGRADE. See zkl_rwlock_new(3). */
ZKL_EXTERN int zkl_rwlock_new(zkl_rwlock **out, zkl_session *s,
                              const char *name);
/* The sides, borrowed (not for zkl_lock_free()) until zkl_rwlock_free()
 * frees both, as zkl_lock_free() a lock. */
ZKL_EXTERN zkl_lock *zkl_rwlock_read(zkl_rwlock *rw);
ZKL_EXTERN zkl_lock *zkl_rwlock_write(zkl_rwlock *rw);
ZKL_EXTERN void zkl_rwlock_free(zkl_rwlock *rw);

/* ------------------------------------------------------------- semaphores */
/* Makes a contender whose acquire takes one of limit leases of the
 * semaphore NAME, in the layout of Curator's InterProcessSemaphoreV2. A
 * contender whose limit disagrees with a lease ahead of it fails with
 * ZKL_ELIMIT. Free with zkl_lock_free(). See zkl_lock_new_semaphore(3). */
ZKL_EXTERN int zkl_lock_new_semaphore(zkl_lock **out, zkl_session *s,
                                      const char *name, int limit);

/* ------------------------------------------------------------ multi-locks */
#define ZKL_MULTI_NAMES_MAX 64 /* the most names one multi-lock takes */
/* Makes one contender for count (1..ZKL_MULTI_NAMES_MAX) mutex names. One
 * transaction enqueues it on all of them, and it is granted while it holds
 * every one; multi-locks never deadlock with each other, whatever the order
 * of names. names is copied. Free with zkl_lock_free(). See
 * zkl_lock_new_multi(3). */
ZKL_EXTERN int zkl_lock_new_multi(zkl_lock **out, zkl_session *s,
                                  const char *const *names, int count);
/* The name refused at a multi-lock's last acquire (borrowed), else NULL. */
ZKL_EXTERN const char *zkl_lock_refused_name(const zkl_lock *l);
/* Every node's full path, one space between two (ZKL_PATH_MAX per node): a
 * multi-lock's in the order of its names; else its own, then its parts'
 * (a semaphore's lease node, then its gate node), each while it has it. */
ZKL_EXTERN int zkl_lock_get_node_paths(const zkl_lock *l, char *buf,
                                       size_t len);
/* The queues (parent paths) l and its parts use, space-separated; fixed at
 * zkl_lock_new*(), never blocks. ZKL_EINVAL for NULL or a short buf. */
ZKL_EXTERN int zkl_lock_get_queues(const zkl_lock *l, char *buf, size_t len);

/* --------------------------------------------------------------- elections */
/* Makes a candidate with id in the election NAME (Curator's LeaderLatch
 * layout). Granted means leading, and the token is the epoch. See
 * zkl_lock_new_election(3). */
ZKL_EXTERN int zkl_lock_new_election(zkl_lock **out, zkl_session *s,
                                     const char *name, const char *id);
/* Who leads NAME now: its id into id (len bytes) and token (both may be
 * NULL); ZKL_ENOTHELD when nobody leads. Blocks. */
ZKL_EXTERN int zkl_name_get_leader(zkl_session *s, const char *name, char *id,
                                   size_t len, int64_t *token);
/* Watches who leads NAME, candidate or not: cb is told the leader now, then
 * each change (ZKL_OK with id, borrowed, and token; ZKL_ENOTHELD: nobody);
 * another code ends the watch. Free never blocks; cb is not called after. */
typedef struct zkl_leader_watch zkl_leader_watch;
typedef void (*zkl_leader_cb)(zkl_leader_watch *w, int rc, const char *id,
                              int64_t token, void *arg);
ZKL_EXTERN int zkl_leader_watch_new(zkl_leader_watch **out, zkl_session *s,
                                    const char *name, zkl_leader_cb cb,
                                    void *arg);
ZKL_EXTERN void zkl_leader_watch_free(zkl_leader_watch *w);

/* ---------------------------------------------------------- what happens */
/* What happened to a lock or a session, as told to zkl_event_cb. */
typedef enum zkl_event_type {
  ZKL_EVENT_QUEUED = 1,    /* waiting: position, waiting_for */
  ZKL_EVENT_GRANTED = 2,   /* after wait_ms, with token */
  ZKL_EVENT_RELEASED = 3,  /* after holding hold_ms */
  ZKL_EVENT_LOST = 4,      /* after holding hold_ms; reason: ZKL_LOST_* */
  ZKL_EVENT_TIMED_OUT = 5, /* after waiting wait_ms */
  ZKL_EVENT_CANCELED = 6,  /* after waiting wait_ms (cancel, free, close) */
  ZKL_EVENT_FAILED = 7,    /* the acquire failed otherwise: reason, a code */
  ZKL_EVENT_SESSION = 8,   /* the session's state: reason, ZKL_STATE_* */
  ZKL_EVENT_SERVERS = 9    /* the session follows the ensemble: servers */
} zkl_event_type;
/* One event. Everything in it is borrowed until the callback returns. */
typedef struct zkl_event {
  zkl_event_type type;     /* ZKL_EVENT_* */
  zkl_lock *lock;          /* NULL for ZKL_EVENT_SESSION and _SERVERS */
  const char *name;        /* the lock's name; NULL for the session */
  const char *node;        /* the contender's node (child name), or NULL */
  const char *waiting_for; /* QUEUED: the node waited for, or NULL */
  int position;            /* QUEUED: contenders ahead in the queue */
  int64_t wait_ms;         /* GRANTED, TIMED_OUT, CANCELED, FAILED */
  int64_t hold_ms;         /* RELEASED, LOST */
  int64_t token;           /* GRANTED */
  int reason;              /* LOST, FAILED, SESSION: see above */
  const char *servers;     /* SERVERS: the new connect string, or NULL */
} zkl_event;

/* Sets (or with NULL clears) the session's event hook, for every lock of
 * it; told in order, after the fact (completion thread; LOST by the lease
 * or the maximum hold: the timer thread). See zkl_session_on_event(3). */
ZKL_EXTERN int zkl_session_on_event(zkl_session *s, zkl_event_cb cb,
                                    void *arg);
/* Counters and times of one lock object since it was made. */
typedef struct zkl_lock_stats {
  uint64_t acquires; /* attempts started (reentrant holds not counted) */
  uint64_t grants;
  uint64_t timeouts;
  uint64_t cancels;  /* cancel, free and close of pending acquires */
  uint64_t failures; /* other failed acquires (try-once EBUSY among them) */
  uint64_t losses;
  uint64_t releases;
  int64_t wait_total_ms; /* from acquire to grant, summed over grants */
  int64_t wait_max_ms;
  int64_t hold_total_ms; /* from grant to release or loss */
  int64_t hold_max_ms;
} zkl_lock_stats;
/* Copies l's counters (filled even on ZKL_ECLOSED, ZKL_EEXPIRED). */
ZKL_EXTERN int zkl_lock_get_stats(const zkl_lock *l, zkl_lock_stats *out);
/* The session's own counters since it was opened. */
typedef struct zkl_session_stats {
  uint64_t requests;     /* requests sent to ZooKeeper, of every kind */
  uint64_t queries;      /* of them: the zkl_name_* questions */
  uint64_t heartbeats;   /* of them: the lease's syncs and writes */
  uint64_t watch_events; /* watches of the session's locks that fired */
  uint64_t disconnects;  /* the connection was lost (the session lived) */
  uint64_t reconnects;   /* connected again within the same session */
  uint64_t expiries;     /* the session expired (0 or 1) */
  unsigned locks_held;   /* the session's locks held now */
  unsigned locks_waiting; /* its locks whose acquire is under way now */
} zkl_session_stats;
/* Copies s's counters, as l's above. See zkl_session_get_stats(3). */
ZKL_EXTERN int zkl_session_get_stats(const zkl_session *s,
                                     zkl_session_stats *out);

/* ------------------------------------------------------------ participants */
/* One contender, as zkl_name_list() saw it; strings owned by the list. */
typedef struct zkl_participant {
  const char *node;   /* full path of its lock node */
  int64_t token;      /* the node's czxid: its fencing token */
  int64_t queued_ms;  /* when the node was created (Unix ms, server clock) */
  const char *host;   /* from the node's owner description; "" if unknown */
  long pid;           /* 0 if unknown */
  int64_t started_ms; /* when its process started (Unix ms); 0 if unknown */
  const char *info;   /* zkl_lock_set_owner_info() text; "" if none */
  const char *kind;   /* "lock", "read", "write", "latch", "lease", "gate" */
  bool holds;         /* it held, by its kind's rule, when NAME was listed */
  int limit;          /* a lease node's limit; 0 if unknown or no lease */
  const char *lock;   /* its contender's lock: "mutex", "rwlock", "election",
                         "semaphore" */
  bool repeated;      /* listed before (a semaphore waiter's gate node) */
} zkl_participant;

/* Lists NAME's contenders of every kind (ours, Curator's, kazoo's) in queue
 * order, with who holds; a snapshot; free with zkl_name_list_free(). Blocks.
 * See zkl_name_list(3). */
ZKL_EXTERN int zkl_name_list(zkl_session *s, const char *name,
                             zkl_participant **out, int *count);
ZKL_EXTERN void zkl_name_list_free(zkl_participant *list);
/* Finds the lock names under prefix ("" for all), walking at most max_nodes
 * nodes; free with zkl_name_find_free(). Blocks. See zkl_name_find(3). */
ZKL_EXTERN int zkl_name_find(zkl_session *s, const char *prefix, int max_nodes,
                             char ***names, int *count, bool *truncated);
ZKL_EXTERN void zkl_name_find_free(char **names, int count);

#ifdef __cplusplus
}
#endif

#endif /* ZKLOCK_H */
