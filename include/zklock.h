/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zklock.h - distributed locks on ZooKeeper, with fencing tokens.
 *
 * A lock named NAME lives under the znode /locks/NAME. To acquire it, a
 * contender creates an ephemeral sequential child there, and holds the lock
 * while its child has the lowest sequence number; otherwise it watches only
 * its immediate predecessor. Each grant returns a fencing token, the czxid of
 * the holder's node: successive holders of one lock get strictly increasing
 * tokens, so a resource that remembers the highest token it has accepted can
 * refuse a holder that was paused past its session's expiry.
 *
 * Objects
 *   zkl_session  one ZooKeeper session (one zhandle_t), opened by the library
 *                or wrapped around the application's own handle.
 *   zkl_lock     one contender for one lock name, on one session. Two
 *                zkl_lock objects with the same name exclude each other, in
 *                one session or in two. Every recipe's contender is a
 *                zkl_lock with the same calls: a mutex (zkl_lock_new), a
 *                side of a read/write lock (zkl_rwlock_new), a semaphore's
 *                lease (zkl_lock_new_semaphore), an election's candidate
 *                (zkl_lock_new_election).
 *
 * Names
 *   zkl_ for functions and types, ZKL_ for macros and constants. A function
 *   is zkl_<object>_<verb>[_<what>], the object being what it acts on:
 *   session, lock, rwlock, leader_watch, or name: zkl_name_* act on a lock
 *   NAME on the server without taking part in it (the session first; those
 *   that take a session ask the server and block). Process-wide calls have
 *   no object (zkl_version, zkl_strerror, zkl_on_log).
 *   Only the session is opened and closed (zkl_session_open/_close: it does
 *   I/O when made); everything else is made by zkl_<type>_new[_<variant>]
 *   (nothing is sent) and freed by zkl_<type>_free (never blocks; NULL is
 *   ignored). A call that allocates its result is freed by <call>_free.
 *   Accessors are nouns (zkl_lock_token): const, never fail, never block.
 *   zkl_*_get_<what> copies into storage the caller passes and returns a
 *   status; zkl_*_set_<what> sets one value; zkl_*_on_<event> sets a
 *   callback (NULL clears it). Both return ZKL_OK, ZKL_EINVAL (NULL object)
 *   or ZKL_ECLOSED once the session's close has begun.
 *   Callback types are zkl_<event>_cb, after the word of their setter or
 *   async call (zkl_state_cb, zkl_acquire_cb, zkl_commit_cb); they take the
 *   handle first, the status or reason second, the user pointer last.
 *   Every group of constants is a named enum with explicit values
 *   (zkl_state, zkl_lost_reason, ...); return codes stay int.
 *
 * Return codes
 *   ZKL_OK (0) on success, a negative code on failure: the library's own
 *   codes (ZKL_E*, -1000 and below) or, where ZooKeeper's answer is the cause
 *   and no ZKL_ code fits, ZooKeeper's own code passed through unchanged
 *   (ZNOAUTH, ZINVALIDACL, ZCONNECTIONLOSS for an outcome the connection
 *   took with it, ...). zkl_strerror() describes both. No error travels
 *   through errno or any global. A session that ended because the server
 *   refused its credentials answers ZAUTHFAILED wherever an expired one
 *   answers ZKL_EEXPIRED.
 *
 * Threads
 *   Every function may be called from any thread, and on different objects
 *   concurrently. An object must not be used during or after the call that
 *   frees it (zkl_lock_free, zkl_session_close).
 *
 *   Callbacks (acquire, release, lost, revoke, commit, leader, state, event)
 *   run on the ZooKeeper client's completion thread, one at a time, with no
 *   lock of the library held; the exceptions (lost notices of the lease and
 *   of the maximum hold, and their events; ZKL_STATE_CLOSED; zkl_name_break()'s
 *   report) are described where they are declared.
 *   A callback may call any non-blocking zkl_ function, including
 *   zkl_lock_free() on the lock it was called for. It must not block for
 *   long: every completion and watcher of the session waits behind it. The
 *   blocking functions (zkl_session_open, zkl_session_add_auth,
 *   zkl_lock_acquire, zkl_lock_release, zkl_lock_commit, zkl_name_revoke,
 *   zkl_name_break, zkl_name_get_leader, zkl_name_list, zkl_name_find)
 *   return ZKL_EDEADLK when called from a callback instead of hanging.
 *   zkl_session_close() called from a callback returns at once
 *   (ZKL_CLOSE_BACKGROUND) and finishes on a thread of its own.
 *
 * Questions
 *   The blocking calls that ask and return (zkl_name_list,
 *   zkl_name_get_leader, zkl_name_find, zkl_name_revoke, zkl_name_break)
 *   ask again when the connection is lost under them, as it is when a
 *   session that follows the ensemble moves to other servers just after it
 *   opened: once the session is connected again, from the start, for as
 *   long as the session timeout from the call's start allows
 *   (zkl_name_break: from the start of each of its steps). Only then do
 *   they return ZCONNECTIONLOSS; the session's end meanwhile returns
 *   ZKL_EEXPIRED or ZKL_ECLOSED. What they write may be written twice: a
 *   holder may hear one zkl_name_revoke() or one break's mark twice.
 *
 * Processes
 *   The ZooKeeper client does not open its socket close-on-exec: a child that
 *   execs inherits the session's connection unless it closes descriptors it
 *   does not know (zklock(1) does). After fork(), use a session in the
 *   parent only.
 *
 * Async contract
 *   When an async function returns an error, its callback never runs.
 *   Otherwise the callback runs exactly once: on success, on failure, on
 *   timeout, on zkl_lock_cancel(), on zkl_lock_free(), on zkl_session_close()
 *   and on session loss, each with its own status code.
 */
#ifndef ZKLOCK_H
#define ZKLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ZKL_BUILDING) && defined(__GNUC__)
#define ZKL_EXTERN __attribute__((visibility("default")))
#else
#define ZKL_EXTERN
#endif

/* Marks an old name that 1.x keeps until 2.0: a call of it warns "use f"
 * (GCC, Clang; nothing elsewhere). */
#if defined(__GNUC__)
#define ZKL_DEPRECATED_FOR(f) __attribute__((deprecated("use " #f)))
#else
#define ZKL_DEPRECATED_FOR(f)
#endif

/* ---------------------------------------------------------------- version */

#define ZKL_VERSION_MAJOR 1
#define ZKL_VERSION_MINOR 0
#define ZKL_VERSION_PATCH 0
#define ZKL_VERSION_HEX \
  ((ZKL_VERSION_MAJOR << 16) | (ZKL_VERSION_MINOR << 8) | ZKL_VERSION_PATCH)

/* The version of the library linked at run time, as ZKL_VERSION_HEX and as
 * "MAJOR.MINOR.PATCH". */
ZKL_EXTERN unsigned zkl_version(void);
ZKL_EXTERN const char *zkl_version_string(void);

/* ----------------------------------------------------------------- limits */

/* Every lock lives under this znode. */
#define ZKL_ROOT "/locks"
/* The longest lock name, in bytes (see zkl_lock_new()). */
#define ZKL_NAME_MAX 255
/* The longest owner description text, in bytes (zkl_lock_set_owner_info()). */
#define ZKL_INFO_MAX 200
/* The longest candidate id of an election, in bytes. */
#define ZKL_ID_MAX 1024
/* The most operations one guarded write may carry. */
#define ZKL_COMMIT_OPS_MAX 1024
/* The session timeouts zkl_session_open() asks the server for, in ms: a
 * request below the first is raised to it, one above the second lowered to
 * it (see zkl_session_options.session_timeout_ms); 0 asks for the default. */
#define ZKL_SESSION_TIMEOUT_MIN 100
#define ZKL_SESSION_TIMEOUT_MAX 1073741823
#define ZKL_SESSION_TIMEOUT_DEFAULT_MS 10000
/* Room enough for any connect string a session is opened with or follows
 * to, with its NUL (see zkl_session_get_servers()). */
#define ZKL_SERVERS_MAX 4096
/* Room enough for any full node path this library creates or reports:
 * ZKL_ROOT "/" name "/" "_c_" id "-" marker "-" sequence, plus the NUL. */
#define ZKL_PATH_MAX 512

/* ----------------------------------------------------------------- errors */

/* XX(name, value, sentence). The library's codes sit at -1000 and below,
 * disjoint from ZooKeeper's (0 to -127). */
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
     "the name is held or awaited by a lock of another kind")
/* -1019 was ZKL_EBACKGROUND (before 1.0): never reused. */

/* The library's codes. Functions return int: these, or ZooKeeper's. */
typedef enum zkl_error {
  ZKL_OK = 0,
#define ZKL_XX_ENUM_(name, value, text) ZKL_##name = (value),
  ZKL_ERRNO_MAP(ZKL_XX_ENUM_)
#undef ZKL_XX_ENUM_
} zkl_error;

/* A sentence describing rc, for ZKL_ codes and ZooKeeper codes alike. The
 * string is static: never free it. Unknown codes get a generic sentence. */
ZKL_EXTERN const char *zkl_strerror(int rc);

/* --------------------------------------------------------------- sessions */

typedef struct zkl_session zkl_session;

/* What the library sees of its session, as told to zkl_state_cb. */
typedef enum zkl_state {
  ZKL_STATE_CONNECTED = 1,   /* connected for the first time (told when
                                zkl_session_options.on_state was given) */
  ZKL_STATE_SUSPENDED = 2,   /* the connection dropped: the session may
                                survive; held locks are in doubt (the lease
                                decides when they are lost) */
  ZKL_STATE_RECONNECTED = 3, /* connected again, in the same session */
  ZKL_STATE_EXPIRED = 4,     /* the session is over: every call on it now
                                returns ZKL_EEXPIRED; close it and open a
                                new one */
  ZKL_STATE_AUTH_FAILED = 5, /* the server refused the credentials: the
                                session is over, as for EXPIRED */
  ZKL_STATE_CLOSED = 6       /* zkl_session_close() is done: the last call */
} zkl_state;

/* Called on each change of the session's state, on the completion thread,
 * one at a time (ZKL_STATE_CLOSED: on the thread that closes, after every
 * other callback of the session). The rules of callbacks apply (see
 * Threads). s stays valid until the callback returns. */
typedef void (*zkl_state_cb)(zkl_session *s, zkl_state state, void *arg);

/* Called for each event of the session's locks and of the session itself
 * (struct zkl_event, "What happens" below). */
struct zkl_event;
typedef void (*zkl_event_cb)(zkl_session *s, const struct zkl_event *ev,
                             void *arg);

/* Flags of zkl_session_options.flags, or-ed together. */
typedef enum zkl_open_flag {
  ZKL_OPEN_NO_FOLLOW_CONFIG = 1 /* keep the connect string as given: do not
                                   follow the ensemble's configuration */
} zkl_open_flag;

/* How to open a session. Fill it with zkl_session_options_init() first:
 * every field's zero is its default, and struct_size tells the library
 * which fields this caller knows (later versions append fields; a
 * struct_size smaller than 1.0's, or one larger than this library's with
 * anything but zeros beyond what it knows, is refused with ZKL_EINVAL). */
typedef struct zkl_session_options {
  size_t struct_size;     /* set by zkl_session_options_init() */
  const char *hosts;      /* "host:port[,host:port...][/chroot]", shorter
                             than ZKL_SERVERS_MAX; copied. Exactly one of
                             hosts and handle. */
  zhandle_t *handle;      /* build the session on the application's own
                             handle instead of opening one (below) */
  int session_timeout_ms; /* 0: ZKL_SESSION_TIMEOUT_DEFAULT_MS; clamped
                             (below); must be 0 with handle */
  int connect_timeout_ms; /* how long open waits for the first connection
                             (with handle: for the first answer); 0: the
                             session timeout */
  unsigned flags;         /* zkl_open_flag bits */
  int lease_margin_ms;    /* as zkl_session_set_lease_margin(): 0 default,
                             < 0 no lease */
  int server_tick_ms;     /* as zkl_session_set_server_tick(): 0 assumes
                             T/2 */
  zkl_state_cb on_state;  /* as zkl_session_on_state(), set before the
                             first connection, so it hears
                             ZKL_STATE_CONNECTED */
  void *state_arg;
  zkl_event_cb on_event;  /* as zkl_session_on_event(), set before the
                             first connection: it hears the ZKL_EVENT_SERVERS
                             the first reading of the configuration can
                             cause before open returns */
  void *event_arg;
} zkl_session_options;

#if defined(__cplusplus) ||                                                  \
    (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define ZKL_INLINE_ inline
#elif defined(__GNUC__)
#define ZKL_INLINE_ __inline__
#else
#define ZKL_INLINE_
#endif
/* Zeroes o and records the caller's sizeof. Inline, not exported: only code
 * compiled against the caller's header knows the size of its struct. */
static ZKL_INLINE_ void zkl_session_options_init(zkl_session_options *o) {
  unsigned char *p = (unsigned char *)o;
  size_t i;
  for (i = 0; i < sizeof *o; i++)
    p[i] = 0;
  o->struct_size = sizeof *o;
}
#undef ZKL_INLINE_

/* Opens a ZooKeeper session (or builds one on o->handle) and waits until it
 * is connected; *out is set only on ZKL_OK. o and the strings in it are
 * copied. Blocks for at most connect_timeout_ms.
 * Returns ZKL_OK; ZKL_EINVAL for NULL out or o, a bad struct_size, neither
 * or both of hosts and handle, a negative timeout, a session timeout with
 * handle, an unknown flag, a connect string that does not parse or is too
 * long, or a margin or tick that leaves no lease once the server granted
 * its timeout (the session just opened is then closed again);
 * ZKL_ERESOLVE when no host of it resolves;
 * ZKL_ECONNECT when no server answered within the connect timeout (refused,
 * or silent: the client does not tell which); ZKL_EEXPIRED when the server
 * refused the session at once, or the handle's session is already over;
 * ZKL_ENOMEM; ZKL_ESYSTEM; ZKL_EDEADLK on a completion thread.
 * The session timeout: clamped to
 * [ZKL_SESSION_TIMEOUT_MIN, ZKL_SESSION_TIMEOUT_MAX] (100 ms to 2^30 - 1
 * ms) before it is sent: the ZooKeeper client gives the first connection
 * two thirds of the request to open (1 ms never opens, a few ms only on a
 * fast loopback) and computes twice the request in an int (2^30 and up
 * never opens). The server then negotiates it into its bounds ([2, 20]
 * ticks by default), so a request below its floor gets the floor either
 * way; see zkl_session_timeout().
 * Following the ensemble (unless ZKL_OPEN_NO_FOLLOW_CONFIG): the servers of
 * an ensemble can change at run time (ZooKeeper 3.5's reconfig), and a
 * client that keeps the connect string it started with loses the ensemble
 * once its old servers are gone. So, as Curator's EnsembleTracker does, the
 * session reads the ensemble's configuration (/zookeeper/config) with a
 * watch at every connection and every change, and when the servers it names
 * (their client addresses) differ from the session's, it gives the client
 * the new list (zoo_set_servers(); the chroot stays), which may move the
 * connection to another server, as the client balances its sessions over
 * the new list. Nothing of the session is lost by a move: the connection
 * drops and comes back in the same session (ZKL_STATE_SUSPENDED and
 * ZKL_STATE_RECONNECTED may be told), and the lease covers the gap. The
 * move is made on the completion thread, where the client resolves the
 * new host names (it does so every second on its I/O thread anyway).
 * Each change is told to the event hook as ZKL_EVENT_SERVERS;
 * zkl_session_get_servers() gives the list in use at any time. The first
 * reading can replace the given list at once (host names by the addresses
 * the servers give, a list of one server by the whole ensemble), before
 * this call returns. Nothing is followed when the configuration names no
 * client address for some server (servers that take their client port from
 * the static clientPort line; standalone servers, whose configuration is
 * empty), nor when the node is missing (servers before 3.5). Give
 * ZKL_OPEN_NO_FOLLOW_CONFIG when the addresses the ensemble knows itself by
 * are not the ones this client must use (a proxy, NAT, a load balancer),
 * or when the list must not change for another reason.
 * The library routes the ZooKeeper client's own log through
 * zkl_on_log() instead of printing it.
 * With o->handle: the session is built on a handle the application already
 * has, so that it needs no second connection. The handle stays the
 * application's: the library never closes it, and the application must keep
 * it open until zkl_session_close() has returned. The handle may still be
 * connecting. Its server list stays the application's too: such a session
 * does not follow the ensemble's configuration (an application that wants
 * that reads /zookeeper/config and calls zoo_set_servers() itself).
 * ZooKeeper delivers session events to the handle's default watcher, which
 * the application owns; the library hears them through a watch of its own
 * (an exists watch on "/", one per wrapped session), so the application
 * need not forward them. It may (zkl_session_forward_watcher_event()).
 * Open then waits until the server has answered one request of the session
 * (which proves it connected and sets the library's watch), at most the
 * connect timeout (0: the handle's session timeout).
 * Advice: ZooKeeper 3.8's client resolves its host list again at every turn
 * of its I/O loop unless told otherwise, which more than doubles the CPU a
 * lock costs; zkl_session_open() sets zoo_set_servers_resolution_delay(zh,
 * 1000) on the handles it opens, and an application may do the same on
 * its own. */
ZKL_EXTERN int zkl_session_open(zkl_session **out,
                                const zkl_session_options *o);

/* For sessions built on the application's handle only, optional: hands the
 * library one event the application's default watcher received (the
 * library also hears them itself). Events that are not session events are
 * ignored, so the watcher may forward everything. Must not be called once
 * zkl_session_close() has begun. Never blocks. */
ZKL_EXTERN void zkl_session_forward_watcher_event(zkl_session *s, int type,
                                                  int state);

/* How far zkl_session_close() got on the server. */
typedef enum zkl_close_outcome {
  ZKL_CLOSE_DONE = 0,       /* nothing of the session is left on the server */
  ZKL_CLOSE_UNREACHED = 1,  /* the server could not be told (no
                               connection): the session, and its nodes, end
                               when the server expires it, within its
                               timeout */
  ZKL_CLOSE_EXPIRED = 2,    /* the session had already ended (expired, or
                               refused credentials): nothing was left */
  ZKL_CLOSE_BACKGROUND = 3  /* the deletions of a session built on the
                               application's handle go on in the background
                               (below), or the close was called from a
                               callback: it returned at once and a thread of
                               its own finishes the close */
} zkl_close_outcome;

/* Ends the session. Pending acquires complete with ZKL_ECLOSED, held locks are
 * released, and for a session the library opened the ZooKeeper
 * session is closed (which deletes its lock nodes at once on the server).
 * For a session built on the application's handle the lock nodes are
 * deleted one by one and the handle
 * is left open; if the server cannot be reached within twice the session
 * timeout (+ 2 s), close returns and the deletions go on in the background
 * for as long as the handle lives: they are made when the handle reconnects
 * in the same session, and are moot once that session ends. The
 * application may close the handle at any time after this call returns;
 * if it does while deletions are still owed, a few hundred bytes of the
 * session stay allocated (the client drops the library's watch without a
 * word).
 * zkl_lock objects of the session stay allocated: every call on them that
 * returns a status then returns ZKL_ECLOSED (zkl_lock_token() 0), and each
 * must still be freed with zkl_lock_free(), before or after this call.
 * Blocks until all of the session's callbacks have run; the state callback's
 * ZKL_STATE_CLOSED is the last. s is invalid once this returns.
 *   how  (may be NULL) receives how far the close got (zkl_close_outcome).
 * Returns ZKL_OK (the close completed, whatever *how says), or ZKL_EINVAL
 * when s is NULL (how untouched). */
ZKL_EXTERN int zkl_session_close(zkl_session *s, zkl_close_outcome *how);

/* The session's handle, for the application's own ZooKeeper calls. Borrowed:
 * valid until zkl_session_close(). NULL for NULL. */
ZKL_EXTERN zhandle_t *zkl_session_handle(const zkl_session *s);

/* The session timeout the server granted, in milliseconds (0 before the first
 * connection or for NULL). */
ZKL_EXTERN int zkl_session_timeout(const zkl_session *s);

/* Copies the connect string the session's client uses now into buf: the one
 * it was opened with, or the servers of the ensemble's configuration it has
 * followed since (see zkl_session_open()), with the chroot it was opened
 * with, "host:port[,host:port...][/chroot]". ZKL_SERVERS_MAX bytes are
 * always enough. Returns ZKL_OK; ZKL_EINVAL for NULL arguments, a buffer
 * too small, or a wrapped session (its list is the application's). Any
 * thread; never blocks. */
ZKL_EXTERN int zkl_session_get_servers(const zkl_session *s, char *buf,
                                       size_t len);

/* The lease: a holder is told it lost its locks before anyone else can be
 * granted them. Only the ZooKeeper leader expires sessions, T ms (the
 * timeout it granted) after it last heard of one, and a follower's answer
 * is not the leader's: a follower cut off from the leader goes on answering
 * its clients for up to syncLimit x tickTime, while the leader expires
 * their sessions and hands their locks on. So the library counts only what
 * the leader provably heard: a request X, then a sync sent at least P after
 * X's answer, then a write that succeeded, all on one connection, prove
 * that the leader heard of the session at or after X was sent and that it
 * had a quorum (docs/correctness.md). P is half the servers' tickTime and a
 * little (zkl_session_set_server_tick()). The library sends a sync every
 * P/2 (at least every T/8) and, while a lock is held, a write after each (a check of "/" in a
 * transaction); the locks' own writes count too. When X's send time + T -
 * margin passes without a newer proof, every held lock of the session is
 * declared lost (ZKL_LOST_LEASE_EXPIRED). If the connection comes back in
 * the same session before then, nothing is reported.
 * The lease is therefore shorter than T: a fresh proof leaves T - margin -
 * P at most, and a holder cut off from the leader is told between about
 * T - margin - 1.5 P and T - margin - P after the cut (with the defaults
 * below, 0.49 T to 0.62 T: 4.9 s to 6.2 s of a 10 s session). Every grant
 * begins with
 * at least half of T - margin - P ahead; a grant that finds less waits for
 * a write to prove a newer lease first (one round trip, when a sync is at
 * hand; up to P more after a reconnect).
 * Assumed: the servers' clocks and ours run at the same rate (the margin
 * covers small differences); one ensemble; tickTime at most T/2 unless set
 * otherwise (ZooKeeper's default minSessionTimeout, 2 x tickTime, ensures
 * it: a server never grants a shorter session).
 *   margin_ms  > 0: the margin; 0: the default, T/10 within [100, 2000] ms;
 *              < 0: no lease (locks are then reported lost only when the
 *              session is expired or their node deleted, as Curator does;
 *              no syncs or writes are sent for it).
 * Returns ZKL_OK; ZKL_EINVAL for NULL or a margin that leaves no lease (not
 * below T - P); ZKL_ECLOSED once close has begun. */
ZKL_EXTERN int zkl_session_set_lease_margin(zkl_session *s, int margin_ms);

/* The servers' tickTime, or a bound on it (ms), from which the lease takes
 * P = tick/2 + tick/20; 0 (the default) assumes T/2, the most ZooKeeper's
 * default minSessionTimeout allows. Set it when the servers' tickTime is
 * known: the lease then gets longer (with ZooKeeper's shipped tickTime of
 * 2000 and a 10 s session, P goes from 2.75 s to 1.1 s). A bound below the
 * real tickTime breaks the promise above. Returns ZKL_OK; ZKL_EINVAL for
 * NULL, tick_ms < 0, or a tick that leaves the margin set no lease;
 * ZKL_ECLOSED once close has begun. Any thread. */
ZKL_EXTERN int zkl_session_set_server_tick(zkl_session *s, int tick_ms);

/* When the lease runs out, as things stand (CLOCK_MONOTONIC, ms): the
 * moment held locks will be declared lost unless a newer proof comes
 * first. 0 when the session holds no lock, the lease is off, or nothing
 * has been proven yet. For a process that must stop work it cannot pause
 * (zklock(1) hands it to a watchdog). */
ZKL_EXTERN int64_t zkl_session_lease_deadline(const zkl_session *s);

/* Adds credentials to the session, as zoo_add_auth() does, and waits for
 * the server's verdict; the client shows them again after every reconnect.
 * Needed before creating locks with ZKL_ACL_CREATOR.
 *   scheme       "digest" (credentials "user:password") or another scheme
 *                the server knows; copied.
 *   credentials  len bytes; copied.
 * Returns ZKL_OK; ZAUTHFAILED when the server refused them (the session is
 * then over, as ZooKeeper ends it); ZKL_EINVAL; ZKL_EEXPIRED; ZKL_ECLOSED;
 * ZKL_EDEADLK on a completion thread; or ZCONNECTIONLOSS when no verdict
 * came within the session timeout. A connection lost before the verdict
 * (a server that refuses a scheme closes the connection as it answers, and
 * its answer can be lost with it) is waited out: the client shows the
 * credentials again at the reconnect, and a read answered after that says
 * they were accepted. */
ZKL_EXTERN int zkl_session_add_auth(zkl_session *s, const char *scheme,
                                    const char *credentials, int len);

/* Sets (or with NULL clears) the state callback; changes from then on are
 * told. arg is passed untouched. Returns ZKL_OK; ZKL_EINVAL for NULL s;
 * ZKL_ECLOSED once close has begun. */
ZKL_EXTERN int zkl_session_on_state(zkl_session *s, zkl_state_cb cb,
                                    void *arg);

/* Where the ZooKeeper client's log lines and the library's own diagnostics
 * go, process-wide. fn receives a line without a trailing newline and must
 * not call into the library; NULL (the default) discards them, except that
 * the environment variable ZKLOCK_DEBUG=1 sends them to stderr. Takes effect
 * at once, for every session. Returns ZKL_OK. */
typedef void (*zkl_log_cb)(const char *line, void *arg);
ZKL_EXTERN int zkl_on_log(zkl_log_cb cb, void *arg);

/* ------------------------------------------------------------------ locks */

typedef struct zkl_lock zkl_lock;

/* One name, one lock. Whatever kinds of lock meet on a name, the outcome is
 * one of these:
 *   - a mutex, a read/write lock's write side: exclude each other and every
 *     reader (a mutex is a write lock that nobody reads);
 *   - read sides: share with each other, wait for every mutex and writer
 *     ahead of them;
 *   - an election, a semaphore: share a name with nothing else. An acquire
 *     on a name that a lock of another of these three families (mutex and
 *     read/write; election; semaphore) holds or waits for fails with
 *     ZKL_EKIND, its node deleted, and zkl_lock_other_kind() names the kind
 *     found. Two families arriving at once on a free name: in one queue
 *     (mutex or read/write against an election) the one whose node came
 *     first goes on and the other is refused; against a semaphore, whose
 *     nodes live in NAME/locks and NAME/leases, both may be refused, never
 *     both granted.
 * The check costs nothing on a name of one family, except for a semaphore
 * (one more listing, of NAME itself, sent with its first create) and for a
 * mutex, read/write lock or election on a name whose listing shows a
 * semaphore's places (one more round trip, to look in them).
 * Peers do not check kinds: Curator's mutex, read/write lock and leader
 * latch, and kazoo's locks, each see only their own nodes (and kazoo's
 * Lock and WriteLock each other's). Our contenders see theirs as above, so
 * ours never hold beside a peer they exclude; a peer of another family on
 * one of our names may. */

/* Creates a contender for the lock NAME of session s. Nothing is sent to
 * ZooKeeper until the first acquire.
 *   name  one or more '/'-separated segments, 1..255 bytes in all; no
 *         empty segment (so no leading, trailing or doubled '/'), no "." or
 *         ".." segment; valid UTF-8 without the code points ZooKeeper
 *         refuses in paths: control characters (U+0000-U+001F,
 *         U+007F-U+009F), U+D800-U+F8FF, U+FFF0 and above (so nothing beyond
 *         the BMP); no segment shaped like a lock node, i.e. ending in a
 *         marker of a recipe this library speaks or recognises (lock-,
 *         __lock__, __rlock__, __READ__, __WRIT__, lease-, latch-) and a
 *         sequence suffix as ZooKeeper writes it (ten digits, or a minus
 *         sign and nine or ten): under the parent of the lock that the
 *         segments before it name, it would pass for a contender; no
 *         "locks" or "leases" segment after the first: under the lock the
 *         segments before it name, that is a semaphore's gate or leases.
 *         Copied. Its lock nodes live under /locks/NAME.
 * Returns ZKL_OK; ZKL_EINVAL for a NULL argument or a bad name (nothing is
 * sent); ZKL_ECLOSED or ZKL_EEXPIRED when the session is closed or expired;
 * ZKL_ENOMEM. */
ZKL_EXTERN int zkl_lock_new(zkl_lock **out, zkl_session *s, const char *name);

/* Whether name is a valid lock name (the rules of zkl_lock_new()), with
 * no session needed: ZKL_OK or ZKL_EINVAL. */
ZKL_EXTERN int zkl_name_check(const char *name);

/* The same, saying why a name is refused: ZKL_OK (why is then ""), or
 * ZKL_EINVAL with a sentence in why ("it has an empty segment ('//' at
 * byte 3)"; at most len bytes with the NUL; the name itself is not quoted
 * in it, so it is safe to print). ZKL_EINVAL with why untouched when why is
 * NULL or len is 0. */
ZKL_EXTERN int zkl_name_explain(const char *name, char *why, size_t len);

/* Copies every queue (parent path) a contender of NAME of any kind may use
 * into buf, one space between two, from the registry of lock kinds: the
 * name itself, then a semaphore's leases and its gate. Pure: no session, no
 * I/O. Returns ZKL_OK; ZKL_EINVAL for NULL buf, a bad name (as
 * zkl_name_check()) or a buf too small (3 * ZKL_PATH_MAX always do). */
ZKL_EXTERN int zkl_name_get_queues(const char *name, char *buf, size_t len);

/* Frees the lock. A held lock is released; a pending acquire is abandoned and
 * its callback runs with ZKL_ECLOSED (after this call returns, with a pointer
 * that must then only be compared, never used). The lock's node is deleted in
 * the background, as after a release. The lost callback does not run after
 * this call. Never blocks. NULL is ignored. */
ZKL_EXTERN void zkl_lock_free(zkl_lock *l);

/* Acquires the lock, waiting at most timeout_ms.
 *   timeout_ms  -1 waits without bound, 0 tries once (one exchange with the
 *               server, then ZKL_EBUSY if someone else holds it; ZKL_ECONNECT
 *               at once when the session is not connected, or when the
 *               connection drops before the server answered), > 0 bounds
 *               the wait.
 *   token       if not NULL, receives the fencing token on success.
 * If this zkl_lock already holds the lock, its hold count is incremented and
 * the same token is returned at once; the node is deleted when as many
 * releases have been made.
 * Returns ZKL_OK; ZKL_EBUSY (timeout 0); ZKL_ETIMEDOUT; ZKL_ECANCELED when
 * zkl_lock_cancel() was called from another thread; ZKL_EEXPIRED when the
 * session expired; ZKL_ELOST when the contender's node was deleted while it
 * waited (by someone else, or by the server as the session expired: the
 * session's next calls then return ZKL_EEXPIRED), or when it was granted
 * but lost (its lease ran out) before this call returned, or (a
 * multi-lock) when a name it held for itself while it waited for the
 * others stopped holding (see zkl_lock_new_multi()); ZKL_ECONNECT
 * (timeout 0);
 * ZKL_ECLOSED; ZKL_EINPROGRESS when another acquire or release of this lock is
 * under way, or a hold past its maximum still keeps its node (see
 * zkl_lock_set_max_hold()); ZKL_EUPGRADE (a read/write lock's write side while
 * its read side is held or wanted); ZKL_ELIMIT (a semaphore in use with another
 * limit, see zkl_lock_new_semaphore()); ZKL_EINVAL;
 * ZKL_ENOMEM; ZKL_ESYSTEM (no random bytes for the node's id, or a
 * condition variable); ZKL_EDEADLK on a completion thread; ZAUTHFAILED when
 * the session ended on refused credentials; or a ZooKeeper error such as
 * ZNOAUTH or ZINVALIDACL. On every failure the contender's node and watch are
 * gone, or (connection lost) scheduled for deletion as soon as the session
 * reconnects. */
ZKL_EXTERN int zkl_lock_acquire(zkl_lock *l, int timeout_ms, int64_t *token);

/* Releases one hold; at zero, deletes the node and returns when the server
 * confirmed the deletion (or, if the connection is down, when the deletion has
 * been scheduled for the reconnect; the session's end deletes it otherwise).
 * Returns ZKL_OK; ZKL_ENOTHELD; ZKL_ELOST once after the lock was lost (the
 * lost callback, if any, is told too), also when the lease turns out to
 * have run out at this call; then ZKL_EEXPIRED if the session expired (or
 * ZAUTHFAILED, ended on refused credentials), else ZKL_ENOTHELD;
 * ZKL_EINPROGRESS; ZKL_ECLOSED; ZKL_EINVAL; ZKL_ESYSTEM (a condition
 * variable); ZKL_EDEADLK on a completion thread; or a ZooKeeper error such
 * as ZNOAUTH (the lock then stays held). */
ZKL_EXTERN int zkl_lock_release(zkl_lock *l);

/* Called once per async acquire, on the completion thread.
 *   rc     ZKL_OK (token valid), or a failure code as for zkl_lock_acquire(),
 *          ZKL_ECANCELED after zkl_lock_cancel(), ZKL_ECLOSED after
 *          zkl_lock_free() or zkl_session_close(). ZKL_ELOST also when the
 *          lock was granted but lost before this callback ran (it waited
 *          behind other callbacks while the lease ran out; the lost
 *          callback, on the timer thread, may come first).
 *   token  the fencing token when rc is ZKL_OK, else 0. */
typedef void (*zkl_acquire_cb)(zkl_lock *l, int rc, int64_t token, void *arg);

/* Called once per async release, on the completion thread, with the status
 * zkl_lock_release() would return. */
typedef void (*zkl_release_cb)(zkl_lock *l, int rc, void *arg);

/* Starts an acquire and returns at once; cb (required) runs exactly once.
 * timeout_ms as for zkl_lock_acquire(). arg is passed to cb untouched.
 * Returns ZKL_OK (cb will run); or, and cb will not run: ZKL_EINVAL;
 * ZKL_EINPROGRESS; ZKL_ECLOSED; ZKL_EEXPIRED (session expired) or
 * ZAUTHFAILED; ZKL_ECONNECT (timeout 0 while not connected); ZKL_EUPGRADE;
 * ZKL_ENOMEM; ZKL_ESYSTEM. No thread is created per lock. */
ZKL_EXTERN int zkl_lock_acquire_async(zkl_lock *l, int timeout_ms,
                                      zkl_acquire_cb cb, void *arg);

/* Starts a release and returns at once; cb (may be NULL) runs exactly once.
 * Returns ZKL_OK (cb will run); or, and cb will not run: ZKL_ENOTHELD;
 * ZKL_ELOST once after a loss; ZKL_EEXPIRED or ZAUTHFAILED (the session's
 * end released it); ZKL_EINPROGRESS; ZKL_ECLOSED; ZKL_EINVAL; ZKL_ENOMEM. */
ZKL_EXTERN int zkl_lock_release_async(zkl_lock *l, zkl_release_cb cb,
                                      void *arg);

/* Cancels a pending acquire (async or blocking): it completes with
 * ZKL_ECANCELED once its node and watch are gone (or scheduled for deletion
 * if the connection is down). Returns ZKL_OK, or ZKL_EIDLE when no acquire is
 * pending (it may just have succeeded: the caller then holds the lock);
 * ZKL_ECLOSED after zkl_session_close(); ZKL_EINVAL for NULL. */
ZKL_EXTERN int zkl_lock_cancel(zkl_lock *l);

/* Why a held lock was lost, as passed to zkl_lost_cb. */
typedef enum zkl_lost_reason {
  ZKL_LOST_SESSION_EXPIRED = 1, /* the server expired the session */
  ZKL_LOST_NODE_DELETED = 2,    /* someone else deleted the lock node */
  ZKL_LOST_LEASE_EXPIRED = 3,   /* no news from the server for the lease's
                                   length: see zkl_session_set_lease_margin */
  ZKL_LOST_BROKEN = 4,          /* broken: zkl_name_break() (zklock --break)
                                   deleted the node after its grace */
  ZKL_LOST_MAX_HOLD = 5         /* held longer than its maximum hold
                                   (zkl_lock_set_max_hold()): the library
                                   deletes the node once this notice has
                                   run, after its grace or the holder's
                                   release */
} zkl_lost_reason;

/* Called once when a held lock is lost; the lock is then no longer held
 * (zkl_lock_token() returns 0), the next release returns ZKL_ELOST, and its
 * node, if the session still lives, is deleted in the background. reason is
 * a ZKL_LOST_ value. Stop using the protected resource at once.
 * Thread: the completion thread, except for ZKL_LOST_LEASE_EXPIRED and
 * ZKL_LOST_MAX_HOLD, which come from the session's timer thread: the
 * completion thread may then be stuck behind a connection attempt to an
 * unreachable server, and the holder's own thread may be the one that hangs.
 * Such a call can run concurrently with a completion-thread callback. The
 * same rules hold there: no blocking call (they return ZKL_EDEADLK), no long
 * work. */
typedef void (*zkl_lost_cb)(zkl_lock *l, zkl_lost_reason reason, void *arg);

/* Sets (or with NULL clears) the lost callback. arg is passed untouched.
 * Returns ZKL_OK; ZKL_EINVAL for NULL l; ZKL_ECLOSED once the session's
 * close has begun (the callback is then not set). */
ZKL_EXTERN int zkl_lock_on_lost(zkl_lock *l, zkl_lost_cb cb, void *arg);

/* The fencing token of the current hold; 0 when not held, and 0 when the
 * session's lease has run out (the hold is then declared lost, see
 * zkl_session_set_lease_margin(): a process frozen past its lease reads
 * "not held" on waking, even before its timer thread has run). */
ZKL_EXTERN int64_t zkl_lock_token(const zkl_lock *l);

/* The kind of lock that refused the last acquire of l with ZKL_EKIND:
 * "mutex", "read lock", "write lock", "election" or "semaphore"; NULL when
 * the last acquire was not refused so. Static: never free it. */
ZKL_EXTERN const char *zkl_lock_other_kind(const zkl_lock *l);

/* The lock's name as given to zkl_lock_new(). Borrowed: valid until
 * zkl_lock_free(). */
ZKL_EXTERN const char *zkl_lock_name(const zkl_lock *l);

/* Who may change the nodes a lock creates, from its next acquire on. */
typedef enum zkl_acl {
  ZKL_ACL_OPEN = 0,   /* anyone may do anything (the default, as Curator) */
  ZKL_ACL_CREATOR = 1 /* only sessions with the creator's credentials may
                         delete the lock's nodes or change their data;
                         everyone may read them (waiters must). Needs
                         zkl_session_add_auth() first, else acquires fail
                         with ZINVALIDACL. Parents that already exist keep
                         their ACL; /locks itself stays open. */
} zkl_acl;

/* Selects the ACL (ZKL_ACL_*) of the nodes the lock creates: its parents
 * below /locks and its lock nodes. Returns ZKL_OK; ZKL_EINVAL; ZKL_ECLOSED
 * or ZKL_EEXPIRED when the session is closed or expired. */
ZKL_EXTERN int zkl_lock_set_acl(zkl_lock *l, zkl_acl acl);

/* Sets a line of text written into the lock's node at its next acquire,
 * beside the host, pid and process start time the library always writes
 * there; zkl_name_list() and `zklock --list` show it. NULL or "" clears
 * it. Copied. Returns ZKL_OK; ZKL_EINVAL for more than ZKL_INFO_MAX bytes
 * or a control character; ZKL_ENOMEM; ZKL_ECLOSED or ZKL_EEXPIRED when the
 * session is closed or expired. */
ZKL_EXTERN int zkl_lock_set_owner_info(zkl_lock *l, const char *info);

/* The longest a hold of l may last, from its next grant on: max_hold_ms
 * > 0 bounds every hold, 0 (the default) does not. ZooKeeper ends the hold
 * of a process that dies or freezes (its session expires), but not of one
 * whose thread hangs while its process lives; this is the lock's own
 * timeout, as Redis's SET key value NX PX ms, without its unsafety. When a
 * hold has lasted max_hold_ms, the session's timer thread (never the
 * holder's thread, which may be the one that hangs) ends it, in this
 * order:
 *   1. The hold ends as lost with ZKL_LOST_MAX_HOLD: zkl_lock_token()
 *      reads 0, guarded writes (zkl_lock_commit()) are refused, the next
 *      zkl_lock_release() returns ZKL_ELOST; the lost callback, then
 *      ZKL_EVENT_LOST, run on the timer thread (no blocking call there).
 *   2. The node stays in the queue, so nobody else is granted, until the
 *      lost callback has returned and then until the first of: the
 *      holder's zkl_lock_release() (it returns ZKL_ELOST: "I have
 *      stopped"), zkl_lock_free(), the grace set with
 *      zkl_lock_set_max_hold_grace() (0 by default: at once), the node's
 *      deletion by someone else, the session's end or close. Meanwhile an
 *      acquire of l returns ZKL_EINPROGRESS.
 *   3. The node is deleted (at the reconnect, should the connection be
 *      down; a downgrade's write node stays while its read side holds, as
 *      at a release), and the next contender is granted with a higher
 *      token, which a fenced resource prefers.
 * So a holder can rely on this: nobody is granted before its lost
 * callback has returned; one that needs longer to stop (a thread to join,
 * a command to kill, as `zklock --max-hold` does) sets a grace and releases
 * once it has stopped; the grace bounds the hold even when the holder
 * never does. The hold is counted from the grant, on this process's
 * monotonic clock; reentrant holds do not extend it. A hold already under
 * way keeps the bound (and grace) it was granted with. For a read/write
 * lock, set each side; for a semaphore, its lease (the zkl_lock
 * zkl_lock_new_semaphore() made); for a multi-lock, the multi-lock (its names
 * are let go together, at the end of its grace).
 * Returns ZKL_OK; ZKL_EINVAL (NULL, or max_hold_ms < 0); ZKL_ECLOSED or
 * ZKL_EEXPIRED when the session is closed or expired. Never blocks. */
ZKL_EXTERN int zkl_lock_set_max_hold(zkl_lock *l, int max_hold_ms);

/* How long the node of a hold that ran past its maximum (see
 * zkl_lock_set_max_hold(), step 2) stays in the queue after the holder was
 * told, for the holder to stop what it does before anyone else is granted:
 * grace_ms >= 0, 0 (the default) lets it go as soon as the lost callback
 * has returned. The holder's zkl_lock_release() lets it go earlier. Counted
 * from the moment the hold ended, on the timer thread's clock. Read at the
 * next grant. Returns ZKL_OK; ZKL_EINVAL (NULL, or grace_ms < 0);
 * ZKL_ECLOSED or ZKL_EEXPIRED when the session is closed or expired. Never
 * blocks. */
ZKL_EXTERN int zkl_lock_set_max_hold_grace(zkl_lock *l, int grace_ms);

/* How long a hold lasts before the library watches its own node: a watch
 * (one read) that tells the holder at once when someone deletes its node
 * (ZKL_LOST_NODE_DELETED), marks it for a break (zkl_name_break(): the revoke
 * callback, then ZKL_LOST_BROKEN) or asks it to let go (zkl_name_revoke()).
 * Most holds are shorter than this, and a read per cycle is a fifth of an
 * uncontended cycle's cost, so a hold younger than watch_after_ms has no
 * watch: a deletion meanwhile is noticed when the watch is armed (the lost
 * callback, with ZKL_LOST_NODE_DELETED even for a break, whose mark went
 * with the node), or by the release, which returns ZKL_ELOST (the lost
 * callback runs too); a revoke or a break's mark is seen when the watch is
 * armed. A waiter always watches its own node from the start of its wait,
 * at no round trip of its own. The session still guards every hold: the
 * lease (zkl_session_set_lease_margin()) and the session's expiry do not
 * depend on this watch, and neither does the fencing token.
 *   watch_after_ms  >= 0; 0 watches every hold from its grant. The default
 *                   is ZKL_WATCH_AFTER_DEFAULT_MS. For a read/write lock,
 *                   set each side; for a multi-lock, the multi-lock (its
 *                   parts follow).
 * Read at the next grant. Returns ZKL_OK; ZKL_EINVAL (NULL, or
 * watch_after_ms < 0); ZKL_ECLOSED or ZKL_EEXPIRED when the session is
 * closed or expired. Never blocks. */
#define ZKL_WATCH_AFTER_DEFAULT_MS 100
ZKL_EXTERN int zkl_lock_set_watch_after(zkl_lock *l, int watch_after_ms);

/* Copies the full path of the contender's current node (while it waits or
 * holds) into buf. Returns ZKL_OK; ZKL_ENOTHELD when it has no node;
 * ZKL_ECLOSED after zkl_session_close(); ZKL_EINVAL when buf is NULL or too
 * small (ZKL_PATH_MAX bytes are always enough). */
ZKL_EXTERN int zkl_lock_get_node_path(const zkl_lock *l, char *buf, size_t len);

/* ----------------------------------------------------------- revocation */

/* Called when someone asks this contender to let go (zkl_name_revoke(), or
 * Curator's Revoker), on the completion thread. What to do is the holder's
 * choice: release, finish first, or ignore it. */
typedef void (*zkl_revoke_cb)(zkl_lock *l, void *arg);

/* Sets (or with NULL clears) the revoke callback, for a holder or a waiter.
 * The request reaches it through the data watch the contender keeps on its
 * own node anyway: no extra watch or request. A contender of several nodes
 * is asked as one, with itself as l: a multi-lock when any of its nodes is
 * asked, a semaphore for its lease node or its node at the gate.
 * Returns ZKL_OK; ZKL_EINVAL for NULL l; ZKL_ECLOSED once the session's
 * close has begun (the callback is then not set). */
ZKL_EXTERN int zkl_lock_on_revoke(zkl_lock *l, zkl_revoke_cb cb, void *arg);

/* Asks holders of lock NAME to let go: writes the bytes __REVOKE__ into
 * their nodes, as Curator's Revoker does (so Curator holders hear it too);
 * an election candidate's node is read and written again as it is
 * instead, so that its data stays its id, which zkl_name_get_leader(), `zklock
 * --leader` and Curator's LeaderLatch read (the candidate hears the new
 * version: see zkl_lock_new_election()).
 * Whom, as zkl_name_list() tells it:
 *   node  NULL: every contender that holds (its `holds`): a mutex's or a
 *         writer's holder, every reader holding (a downgraded reader
 *         included: see zkl_rwlock_new()), an election's leader, every
 *         lease holder of a semaphore. Otherwise the child name of one
 *         contender (zkl_lock_get_node_path()'s last segment), holding or
 *         waiting, in NAME's own queue or among a semaphore's leases or at
 *         its gate, with the downgraded reader that holds on it when it is
 *         a write node a downgrade kept; a name that no contender's node
 *         can have (a semaphore's "leases" or "locks", say) is refused.
 * The writes replace the nodes' owner descriptions (not a candidate's id).
 * Blocks for three round trips (zkl_name_list()' two, then the writes
 * at once; four when a candidate is asked: its read comes first); the
 * listing follows a sync sent with it, so that a server behind the leader
 * cannot hide a holder. Returns ZKL_OK (asked; whether each lets go is its
 * choice); ZKL_ENOTHELD when there is nobody to ask (nobody holds, no such
 * contender, or it left meanwhile); ZKL_EINVAL (nothing is sent);
 * ZKL_ECLOSED; ZKL_EEXPIRED; ZKL_EDEADLK on a completion thread; or a
 * ZooKeeper error (ZNOAUTH for a creator-only node). */
ZKL_EXTERN int zkl_name_revoke(zkl_session *s, const char *name,
                               const char *node);

/* What zkl_name_break() did to one node it went after: node is its full path
 * (borrowed for the call); rc ZKL_OK (broken), ZKL_ENOTHELD (it let go, or
 * was replaced, before the delete), or the error that stopped it. */
typedef void (*zkl_break_cb)(zkl_session *s, int rc, const char *node,
                             void *arg);

/* Breaks a stuck lock: deletes a holder's node of lock NAME after a grace,
 * so that the next contender is granted, with a higher token. Unlike a
 * delete by hand (zkCli), the holder learns at once that, and why, it lost
 * the lock. The nodes are picked as zkl_name_list() lists them (see
 * node below), after a sync sent with the listing (a server behind the
 * leader cannot hide a holder), and its rule runs on the queue as listed: a
 * holder that lets go before its node is read is not replaced by the next in
 * line (which may have been granted after the break began), and the break then
 * hits nothing. Each node picked is named by the czxid read then. For each:
 *   1. Mark: the node is read and, if its czxid is still the one picked,
 *      its data rewritten, under the version read, as the bytes
 *      "__BREAK__\n" followed by what it held (the owner description
 *      stays readable); an election candidate's data, its id, is written
 *      again as it is, and its new version is the mark (see
 *      zkl_lock_new_election()). A holder of this
 *      library sees the mark through the watch it keeps on its own node
 *      (from watch_after_ms into its hold: zkl_lock_set_watch_after()):
 *      its revoke callback runs (zkl_lock_on_revoke()), and it may let go
 *      within the grace.
 *   2. Grace: the caller waits grace_ms, or until every node marked is
 *      gone.
 *   3. Delete, only if it is still the same node: under the version read
 *      after the mark (when it changed since, it is read again and deleted
 *      only if its czxid is the one marked), so that a holder that let go
 *      and a newer holder, even one at the same path, are never hit. A
 *      holder loses the lock with ZKL_LOST_BROKEN (ZKL_LOST_NODE_DELETED if
 *      it never saw the mark: disconnected throughout the grace, say, or
 *      a hold younger than its watch_after_ms broken with a shorter
 *      grace, or one broken at once in the round trip after its grant,
 *      before its watch's first read; see below); a waiter's acquire
 *      fails with ZKL_ELOST.
 *   Why a holder that never saw the mark is told ZKL_LOST_NODE_DELETED,
 *   and not ZKL_LOST_BROKEN: the mark goes with the node, so all it finds
 *   is its node gone, as after any delete. Telling a break apart would
 *   need a trace the break leaves elsewhere, read before the loss is told:
 *   a round trip more between the deletion (after which the next contender
 *   may be granted) and the holder's notice to stop. The library tells the
 *   loss at once and names only what it saw; a wrong reason would be worse
 *   than a plainer one. To be told ZKL_LOST_BROKEN, a holder watches its
 *   node from the grant (zkl_lock_set_watch_after(l, 0), as zklock does)
 *   and a break gives a grace longer than the holders' watch_after_ms
 *   (zklock --break: 5 s by default).
 *   name      the lock NAME.
 *   node      the child name of the contender to break (the last segment
 *             of zkl_lock_get_node_path()), looked for in every place of the
 *             name (its own queue, a semaphore's leases and gate) as
 *             zkl_name_revoke() does (a write node that a downgrade kept takes
 *             its downgraded reader with it); or NULL for every contender
 *             that zkl_name_list() says holds: a mutex's or write
 *             side's holder, the readers sharing the lock (a downgraded
 *             reader and the write node it keeps, see zkl_rwlock_new()),
 *             an election's leader, each lease held (by its contender's
 *             own limit), the part a multi-lock holds on this name (the
 *             whole multi-lock loses). A downgraded reader's node is
 *             deleted before the write node it keeps: its holder loses
 *             the read side (ZKL_LOST_BROKEN) before the writers queued
 *             behind that write node can be granted.
 *   grace_ms  >= 0; 0 deletes at once.
 *   cb        may be NULL: called once for each node picked, on the
 *             calling thread, with no lock held, after the work and before
 *             zkl_name_break() returns.
 * Blocks for the grace and a few round trips. Returns ZKL_OK when a node
 * was broken; ZKL_ENOTHELD when none was: nobody holds, the node is not
 * there, or each let go (or was replaced) within the grace; ZKL_EINVAL (a
 * bad name, a node not shaped as a contender's, grace_ms < 0); ZNOAUTH
 * without the rights the node's ACL demands (ZKL_ACL_CREATOR: the
 * creator's credentials): nothing is deleted; ZKL_ECLOSED; ZKL_EEXPIRED;
 * ZKL_ENOMEM; ZKL_EDEADLK on a completion thread; or another ZooKeeper
 * error (ZCONNECTIONLOSS: the connection was lost under the delete and the
 * node is gone, so whether this call deleted it is unknown; or it stayed
 * lost past the session timeout: see "Questions" at the top). When
 * several nodes are picked, an error wins over ZKL_OK. */
ZKL_EXTERN int zkl_name_break(zkl_session *s, const char *name,
                              const char *node, int grace_ms, zkl_break_cb cb,
                              void *arg);

/* --------------------------------------------------------- guarded writes */

/* Called once when an async guarded write completes, on the completion
 * thread, with the status zkl_lock_commit() would return. */
typedef void (*zkl_commit_cb)(zkl_lock *l, int rc, void *arg);

/* Runs ops (count of them, as for zoo_multi()) as one transaction that
 * commits only while l holds its lock: a check on l's own node goes in
 * front, so if that node is gone (the lock was lost: session expired, node
 * deleted, a holder paused past its session) nothing is written. This is
 * the fencing of the token, done by ZooKeeper itself, for state that lives
 * in ZooKeeper.
 *   ops      borrowed for the call (async: until the callback); what they
 *            point to (paths, data, a create's path buffer) likewise.
 *   results  count entries, filled as zoo_multi() fills them, for the
 *            caller's ops (the guard's own result is not included).
 * Returns ZKL_OK (every op applied); ZKL_ELOST when the guard failed, or the
 * lease had run out (nothing written); ZKL_ENOTHELD when l does not hold its
 * lock (nothing sent); ZBADARGUMENTS for an op whose path ZooKeeper
 * refuses (nothing sent); the code of the first op that failed, as
 * zoo_multi() returns it (nothing written); ZKL_EINVAL (NULL, count <= 0
 * or above ZKL_COMMIT_OPS_MAX); ZKL_EEXPIRED; ZKL_ECLOSED; ZKL_ENOMEM;
 * ZKL_EDEADLK on a completion thread (blocking face). Works for any
 * zkl_lock that holds: a mutex, either side of a read/write lock, a
 * semaphore lease, a leader, a multi-lock (a check on each of its nodes: it
 * commits only while every name is held). */
ZKL_EXTERN int zkl_lock_commit(zkl_lock *l, int count, const zoo_op_t *ops,
                               zoo_op_result_t *results);
/* The same, returning at once; cb (required) runs exactly once unless this
 * returns an error. */
ZKL_EXTERN int zkl_lock_commit_async(zkl_lock *l, int count,
                                     const zoo_op_t *ops,
                                     zoo_op_result_t *results, zkl_commit_cb cb,
                                     void *arg);

/* -------------------------------------------------------- read/write locks */

typedef struct zkl_rwlock zkl_rwlock;

/* Creates a read/write lock on NAME (the rules of zkl_lock_new()), as
 * Curator's InterProcessReadWriteLock lays it out, so that C and Java
 * readers and writers (and kazoo's ReadLock and WriteLock) share it:
 *   readers  share the lock: one is granted when no writer is queued ahead
 *            of it, and otherwise waits for the nearest writer ahead;
 *   writers  exclude everyone: one is granted when it is first in the
 *            queue (readers and writers ordered together), and otherwise
 *            waits for its immediate predecessor.
 * Each side is a zkl_lock: acquire, release, the async calls, timeouts,
 * cancel, lost notices, the lease, tokens, guarded writes, revocation all
 * work as for a mutex. Nothing is sent until a side's first acquire.
 * Downgrade: the holder of the write side may take the read side (granted
 * at once, ahead of other writers). Taking the write side while holding or
 * waiting for only the read side is refused with ZKL_EUPGRADE: it would
 * wait for itself.
 * Downgrade keeps the write node until the read side is released, so
 * that writers queued behind it go on waiting. The read node of a
 * downgrade (the read side taken while the write side holds) says so in
 * its name, "_c_<id>-with-<write node's id>-__READ__<seq>", for those
 * that read the queue: zkl_name_list() says it holds while that write
 * node holds (although writers that queued while the write side held
 * stand between them), so zkl_name_revoke() asks it, and zkl_name_break() (and
 * `zklock --break`) breaks it with the write node, before it. Curator's
 * and kazoo's readers see a read node like any other.
 * Tokens: a side's token is its node's czxid. Successive writers' tokens
 * strictly increase, and every reader's token is higher than that of the
 * last writer granted before it. So a resource may refuse a write token
 * below the highest write token it accepted, and a read token below that
 * same highest write token. It cannot order readers among themselves, nor
 * a writer against the readers before it: a downgraded reader's token is
 * higher than that of a writer queued before its read node.
 * Returns ZKL_OK; ZKL_EINVAL; ZKL_ECLOSED; ZKL_EEXPIRED; ZKL_ENOMEM. */
ZKL_EXTERN int zkl_rwlock_new(zkl_rwlock **out, zkl_session *s,
                              const char *name);
/* The read and write sides. Borrowed: valid until zkl_rwlock_free(); never
 * pass them to zkl_lock_free() (it ignores them). NULL for NULL. */
ZKL_EXTERN zkl_lock *zkl_rwlock_read(zkl_rwlock *rw);
ZKL_EXTERN zkl_lock *zkl_rwlock_write(zkl_rwlock *rw);
/* Frees both sides, as zkl_lock_free() frees a lock. NULL is ignored. */
ZKL_EXTERN void zkl_rwlock_free(zkl_rwlock *rw);

/* ------------------------------------------------------------- semaphores */

/* Creates a contender for the semaphore NAME of `limit` leases (> 0): a
 * zkl_lock whose acquire takes one lease (at most `limit` are held at any
 * moment) and whose release gives it back; everything else is as for a
 * mutex (timeouts, try-once, async, cancel, lost notices, the lease rule,
 * tokens). For more than one lease at a time, make more contenders.
 * The layout is Curator's InterProcessSemaphoreV2 (/locks/NAME/locks, a
 * mutex that admits one contender at a time to count, and
 * /locks/NAME/leases), so that Curator clients with the same limit share
 * it. Waiters do not wake as a herd: only the contender counting watches the
 * leases. The first try of an acquire skips the mutex: it makes its lease
 * node (named as a try-once's, below), and lists the leases and the mutex's
 * queue; with fewer than `limit` leases ahead and nobody at the mutex (who
 * came first: FIFO holds), it holds, in one round trip; otherwise it
 * deletes its node, then queues at the mutex as above (it never waits with
 * such a node in place: a Curator contender counting would wait for it).
 * So an uncontended acquire costs one round trip, a contended one three.
 * The limit is stored in every lease node's name, as `consul lock` stores
 * it: _c_<id>-limit<N>-lease-<seq> (and in its data, "limit=N", as older
 * versions did). A contender that finds a lease node ahead of its own that
 * says another limit is refused: its acquire fails at once, waiting or
 * trying once, with ZKL_ELIMIT, and its node is deleted before that is
 * told. Of two that disagree, the later yields (only nodes ahead count,
 * and none can appear ahead of a node later), so every contender of ours
 * that holds says the same limit, and at most that many hold; once no
 * lease node of ours is left, any limit may start afresh. Try-once and
 * first-try nodes (below) say the limit too; a refused try leaves no node
 * behind.
 * Curator's InterProcessSemaphoreV2 stores nothing: each client passes its
 * own limit, and its lease nodes say none, nor did older libzklock's
 * names. Such nodes are counted, never compared (a Curator contender that
 * disagrees is neither refused nor refuses ours), so Curator contenders
 * share a semaphore with ours safely only when they give the same limit;
 * they then admit up to the largest limit among them. One of ours that
 * finds more lease nodes ahead of its own than its limit waits on (for
 * fewer). If that wait times out while the nodes ahead that came through
 * the mutex, each a held lease, are more than its limit, it fails with
 * ZKL_ELIMIT rather than ZKL_ETIMEDOUT: ZKL_ELIMIT is then said only when
 * the disagreement is certain. A try-once does not queue at the mutex: it
 * makes its lease node, named _c_<id>-limit<N>-try-lease-<seq> (a lease
 * node like any other to Curator, which counts every node of leases/),
 * counts, and deletes it when busy. Such a node may be a held lease or one
 * on its way out (a try that found the leases full, or whose connection
 * dropped), so it keeps a counting contender waiting but never makes it
 * say ZKL_ELIMIT by its count; an excess seen only through try-onces'
 * nodes (or first tries': holders that found the leases free) ends as
 * ZKL_ETIMEDOUT. A try-once itself cannot tell, and says ZKL_EBUSY (or
 * ZKL_ELIMIT for a node ahead that says another limit).
 * Free it with zkl_lock_free(). Returns ZKL_OK; ZKL_EINVAL (a bad name, or
 * limit <= 0); ZKL_ECLOSED; ZKL_EEXPIRED; ZKL_ENOMEM. */
ZKL_EXTERN int zkl_lock_new_semaphore(zkl_lock **out, zkl_session *s,
                                      const char *name, int limit);

/* ------------------------------------------------------------ multi-locks */

/* The most names one multi-lock takes. */
#define ZKL_MULTI_NAMES_MAX 64

/* Creates a contender that holds `count` (1..ZKL_MULTI_NAMES_MAX) mutex
 * names at once: a zkl_lock whose acquire is granted when it holds every
 * name, and whose release lets go of all of them. names: valid lock names
 * (the rules of zkl_lock_new()), no two alike; copied.
 *
 * How: one ZooKeeper transaction (zoo_multi) creates its node in every
 * name's queue, a mutex node like any other (_c_<id>-lock-<seq>), so
 * every other contender of each name, a zkl_lock_new() mutex, another
 * multi-lock, Curator's InterProcessMutex or kazoo's Lock, queues beside it
 * by the usual rule. All the nodes of one transaction share its zxid, and
 * every queue orders its contenders by creation, so every queue orders
 * the contenders it shares the same way: a contender only ever waits for
 * contenders created before it, and callers that name the same locks in
 * opposite orders cannot deadlock (Curator's InterProcessMultiLock takes
 * its locks one after another, and can). Enqueueing costs one round trip
 * and one write whatever the count; the release is one transaction of
 * deletes. Names whose parents do not exist yet: the parents are created
 * as containers, then the transaction again. By atomicity, a transaction
 * refused for one name (ZNOAUTH: an ACL that does not let this session
 * create there) creates nothing in the others: the acquire fails with that
 * code and leaves nothing behind, and zkl_lock_refused_name() says
 * which name it was.
 *
 * The token is the czxid all of its nodes share: in each of its queues it
 * is greater than the token of every earlier holder of that name (of any
 * kind), so a resource guarded by any one of the names can check it as
 * for a plain mutex. While held, loss of any one name (its node deleted,
 * the session's end, the lease) is loss of the whole: one lost callback,
 * with that name's reason; the other nodes are deleted. While it waits,
 * the names where it is first already hold for it, and it is granted only
 * while every one of them still holds: when one stops holding before the
 * last is granted (its node deleted, or broken by zkl_name_break(), its lease
 * run out, the session over), the acquire fails with ZKL_ELOST (the
 * session's code when it is over, ZKL_ECLOSED when it closes) once its
 * other nodes are deleted, and no lost callback runs: it was never
 * granted, and the next holder of that name holds it alone. A cancel or a
 * timeout while its transaction is on its way is told once the
 * transaction's answer came and the nodes it made are deleted (as
 * zkl_lock_acquire() says of every failure). Timeouts, cancel,
 * try-once (granted only when it is first in every queue at once; else
 * ZKL_EBUSY, and its nodes are deleted), the async face, events and stats
 * are as for every kind: the events are the whole's (while it waits, the
 * node it waits for is the one in the first queue where it is not first).
 * zkl_lock_name() is the names joined by one space each, in the order
 * given; zkl_lock_get_node_path() gives the first name's node,
 * zkl_lock_get_node_paths() every node.
 *
 * What it does not cover, and why:
 * - A multi-lock is one contender: it does not know what the same process
 *   holds through other zkl_lock objects. A caller that holds name A (a
 *   plain mutex) and then asks for a multi-lock of {A, B} queues behind
 *   itself on A: it waits until its timeout (ZKL_ETIMEDOUT; or forever
 *   with -1), like any mutex acquired twice through two objects. Worse,
 *   when someone else's multi-lock of {A, B} was created before ours, that
 *   one holds B and waits for our A: a deadlock that only the timeouts
 *   break. Take every name you need in one multi-lock, or nest only
 *   acquires that cannot wait (try-once).
 * - Curator's InterProcessMultiLock takes its names one at a time, each
 *   node with a zxid of its own, so the global order does not hold against
 *   it: Curator holds A, our transaction then queues on A and B, then
 *   Curator's node on B comes behind ours; each waits for the other. Mixed
 *   with it, a deadlock is possible (as between two of Curator's own), and
 *   only the timeouts break it (ZKL_ETIMEDOUT here). Mixing with
 *   single-name contenders (ours, Curator's, kazoo's) is safe: they hold no
 *   other name while they wait.
 * - Only mutex names: a name used as a read/write lock, a semaphore or an
 *   election refuses it (ZKL_EKIND), as it refuses a mutex.
 * - A name that contains a space makes zkl_lock_name() ambiguous.
 * Free it with zkl_lock_free(). Returns ZKL_OK; ZKL_EINVAL (no names, too
 * many, a bad name or two alike); ZKL_ECLOSED; ZKL_EEXPIRED; ZKL_ENOMEM. */
ZKL_EXTERN int zkl_lock_new_multi(zkl_lock **out, zkl_session *s,
                                  const char *const *names, int count);

/* Which of a multi-lock's names ZooKeeper refused at its last acquire: the
 * name whose node, or a parent of it, could not be made (ZNOAUTH: that
 * name's nodes belong to other credentials; ZINVALIDACL, ...), when the
 * acquire failed so; NULL otherwise, before any acquire, and for a lock
 * that is no multi-lock (its one name is zkl_lock_name()). Borrowed: one
 * of the names as given, valid until zkl_lock_free(); reset when the next
 * acquire starts. Never blocks. */
ZKL_EXTERN const char *zkl_lock_refused_name(const zkl_lock *l);

/* Copies the full paths of every node of the contender (while it waits or
 * holds) into buf, one space between two, in the order of its names: a
 * multi-lock's nodes, or the one node of any other contender (as
 * zkl_lock_get_node_path()). Returns ZKL_OK; ZKL_ENOTHELD when it has no node
 * (a multi-lock before its transaction came back); ZKL_ECLOSED after
 * zkl_session_close(); ZKL_EINVAL when buf is NULL or too small
 * (ZKL_PATH_MAX bytes per name are always enough). */
ZKL_EXTERN int zkl_lock_get_node_paths(const zkl_lock *l, char *buf,
                                       size_t len);

/* Copies the queues (parent paths) the contender and its parts make their
 * nodes in into buf, one space between two: "/locks/NAME" for a mutex,
 * "/locks/NAME/leases /locks/NAME/locks" for a semaphore, each name's for a
 * multi-lock. Fixed when the contender is made; needs no session, never
 * blocks. Returns ZKL_OK; ZKL_EINVAL when an argument is NULL or buf is too
 * small (ZKL_PATH_MAX bytes per queue are always enough). */
ZKL_EXTERN int zkl_lock_get_queues(const zkl_lock *l, char *buf, size_t len);

/* --------------------------------------------------------------- elections */

/* Creates a candidate in the election NAME with `id` (1..ZKL_ID_MAX bytes,
 * copied; written into its node), as Curator's LeaderLatch lays it out
 * (_c_<id>-latch-<seq>, the id as data), so that C services take part in
 * the same election as Java ones. The candidate is a zkl_lock:
 *   zkl_lock_acquire()/_async()  stand; granted = leading, with the token
 *                                (the node's czxid) as the epoch a resource
 *                                can check; a timeout stops standing
 *   zkl_lock_release(), zkl_lock_cancel()  resign
 *   zkl_lock_on_lost()           told when it stops leading otherwise
 *                                (session expired, node deleted, the
 *                                lease's early notice)
 * While the lease rule is on, two candidates never both believe they lead:
 * a cut-off leader is told before the server can expire it.
 * The node's data is the id for as long as the node lives: zkl_name_revoke()
 * and zkl_name_break() never write anything else into a candidate's node
 * (Curator's LeaderLatch, zkl_name_get_leader(), zkl_leader_watch_new()
 * and `zklock --leader` read the data as the id), but write the id again as
 * it is. The
 * candidate takes any such write (its node's version above 0) as a request
 * to let go: its revoke callback runs (zkl_lock_on_revoke()), and since a
 * revoke and a break's mark then look the same, a deletion of its node
 * after one is told as ZKL_LOST_BROKEN (a revoke never deletes). Do not
 * write into a candidate's node yourself: that too asks it to let go.
 * Free it with zkl_lock_free(). Returns ZKL_OK; ZKL_EINVAL; ZKL_ECLOSED;
 * ZKL_EEXPIRED; ZKL_ENOMEM. */
ZKL_EXTERN int zkl_lock_new_election(zkl_lock **out, zkl_session *s,
                                     const char *name, const char *id);

/* Who leads the election NAME now: the leader's id (copied into id, at most
 * len bytes with the NUL; may be NULL), its node's data, which revokes and
 * breaks leave as it is, and token (may be NULL). Two round trips; a
 * snapshot. Returns ZKL_OK; ZKL_ENOTHELD when nobody leads;
 * ZKL_EINVAL; ZKL_ECLOSED; ZKL_EEXPIRED; ZKL_EDEADLK on a completion thread;
 * or a ZooKeeper error. */
ZKL_EXTERN int zkl_name_get_leader(zkl_session *s, const char *name, char *id,
                                   size_t len, int64_t *token);

typedef struct zkl_leader_watch zkl_leader_watch;

/* Called with the leader now, then each time it changes: rc ZKL_OK with its
 * id (borrowed until the callback returns) and token; ZKL_ENOTHELD (id
 * NULL) when nobody leads. A last call with another code (ZKL_EEXPIRED,
 * ZKL_ECLOSED, a ZooKeeper error) says the watch has ended. Never after
 * zkl_leader_watch_free(). On the completion thread. */
typedef void (*zkl_leader_cb)(zkl_leader_watch *w, int rc, const char *id,
                              int64_t token, void *arg);

/* Watches who leads the election NAME, for anyone, candidate or not: one
 * ZooKeeper watch at a time (on the leader's node, or, while nobody stands,
 * on the election), no polling, and candidates queuing behind the leader
 * cause no call. Returns ZKL_OK; ZKL_EINVAL; ZKL_ECLOSED; ZKL_EEXPIRED;
 * ZKL_ENOMEM. */
ZKL_EXTERN int zkl_leader_watch_new(zkl_leader_watch **out, zkl_session *s,
                                    const char *name, zkl_leader_cb cb,
                                    void *arg);
/* Stops watching: cb is not called after this returns (one already
 * running on the completion thread may finish; calling this from cb is
 * fine). Never blocks. NULL is ignored. */
ZKL_EXTERN void zkl_leader_watch_free(zkl_leader_watch *w);

/* ---------------------------------------------------------- what happens */

/* What happened to a lock or a session, as told to zkl_event_cb. */
typedef enum zkl_event_type {
  ZKL_EVENT_QUEUED = 1, /* waiting: `position` contenders ahead, watching
                           `waiting_for` (told again when that changes) */
  ZKL_EVENT_GRANTED = 2, /* after `wait_ms`, with `token` */
  ZKL_EVENT_RELEASED = 3, /* after holding `hold_ms` */
  ZKL_EVENT_LOST = 4,   /* after holding `hold_ms`; `reason`: ZKL_LOST_* */
  ZKL_EVENT_TIMED_OUT = 5, /* after waiting `wait_ms` */
  ZKL_EVENT_CANCELED = 6, /* after waiting `wait_ms` (cancel, free, close) */
  ZKL_EVENT_FAILED = 7, /* the acquire failed otherwise: `reason` is its
                           code (ZKL_EBUSY for a try-once, ...) */
  ZKL_EVENT_SESSION = 8, /* the session's state: `reason` is ZKL_STATE_* */
  ZKL_EVENT_SERVERS = 9 /* the session follows the ensemble to new servers:
                           `servers` is the connect string its client uses
                           from now on (see zkl_session_open()) */
} zkl_event_type;

/* One event. Everything in it is borrowed until the callback returns. */
typedef struct zkl_event {
  zkl_event_type type;     /* ZKL_EVENT_* */
  zkl_lock *lock;          /* NULL for ZKL_EVENT_SESSION and _SERVERS */
  const char *name;        /* the lock's name; NULL for the session */
  const char *node;        /* the contender's node (child name), or NULL */
  const char *waiting_for; /* QUEUED: the node waited for, or NULL when
                              waiting for the queue to change (semaphore) */
  int position;            /* QUEUED: contenders ahead in the queue. A
                              semaphore's contender is queued twice: at
                              its gate (a node of NAME/locks waited for,
                              contenders ahead there), then among the
                              leases (NULL, leases ahead) */
  int64_t wait_ms;         /* GRANTED, TIMED_OUT, CANCELED, FAILED */
  int64_t hold_ms;         /* RELEASED, LOST */
  int64_t token;           /* GRANTED */
  int reason;              /* LOST, FAILED, SESSION: see above */
  const char *servers;     /* SERVERS: the new connect string, with the
                              chroot; NULL for other events */
} zkl_event;

/* zkl_event_cb (declared with the sessions) is called for each event of
 * the session's locks and of the session itself, on the completion thread
 * (LOST by the lease or the maximum hold: on the timer thread, as the lost
 * callback), in the order they happened, after they happened. The rules of
 * callbacks apply: it must not block. */

/* Sets (or with NULL clears) the session's event hook: per session, for
 * every lock of it. With no hook set, nothing is recorded or allocated.
 * Returns ZKL_OK, ZKL_EINVAL (NULL s) or ZKL_ECLOSED. */
ZKL_EXTERN int zkl_session_on_event(zkl_session *s, zkl_event_cb cb,
                                    void *arg);

/* Counters and times of one lock object since it was made (all its
 * attempts, whatever the recipe). */
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

/* Copies l's counters into out: a mutex and a few fields, cheap enough to
 * call every second. Returns ZKL_OK; ZKL_EINVAL (NULL; out untouched);
 * as every call on the session's locks, ZKL_ECLOSED once
 * zkl_session_close() has begun and ZKL_EEXPIRED once the session has
 * expired (ZAUTHFAILED once its credentials were refused), but out is
 * filled all the same: the counters as the close or the end left them
 * (the losses it caused counted). */
ZKL_EXTERN int zkl_lock_get_stats(const zkl_lock *l, zkl_lock_stats *out);

/* The session's own counters since it was opened, beside each lock's
 * (zkl_lock_get_stats()): for an application to export, as zklock(1)
 * exports a lock's. */
typedef struct zkl_session_stats {
  uint64_t requests;     /* requests sent to ZooKeeper, of every kind */
  uint64_t queries;      /* of them: the questions of zkl_name_list(),
                            zkl_name_find(), zkl_name_get_leader(),
                            zkl_name_revoke() */
  uint64_t heartbeats;   /* of them: the lease's syncs and writes */
  uint64_t watch_events; /* watches of the session's locks that fired */
  uint64_t disconnects;  /* the connection was lost (the session lived) */
  uint64_t reconnects;   /* connected again within the same session */
  uint64_t expiries;     /* the session expired (0 or 1) */
  unsigned locks_held;   /* the session's locks held now (a read/write
                            lock's side, a semaphore's lease, a lead
                            count as one lock each) */
  unsigned locks_waiting; /* its locks whose acquire is under way now */
} zkl_session_stats;

/* Copies s's counters into out, with the session's mutex held for a moment
 * (cheap enough to call every second, from any thread, a callback
 * included). Returns ZKL_OK; ZKL_EINVAL (NULL; out untouched); ZKL_ECLOSED
 * once zkl_session_close() has begun, ZKL_EEXPIRED (ZAUTHFAILED) once the
 * session is over, with out filled all the same (expiries counts it). */
ZKL_EXTERN int zkl_session_get_stats(const zkl_session *s,
                                     zkl_session_stats *out);

/* ------------------------------------------------------------ participants */

/* One contender of a lock, as zkl_name_list() saw it. Strings are owned
 * by the list. */
typedef struct zkl_participant {
  const char *node;   /* full path of its lock node */
  int64_t token;      /* the node's czxid: its fencing token */
  int64_t queued_ms;  /* when the node was created (Unix ms, server clock) */
  const char *host;   /* from the node's owner description; "" if unknown */
  long pid;           /* 0 if unknown */
  int64_t started_ms; /* when its process started (Unix ms); 0 if unknown */
  const char *info;   /* zkl_lock_set_owner_info() text; "" if none */
  const char *kind;   /* what the node is, by its name and place: "lock" (a
                         mutex's, Curator's or kazoo's), "read", "write" (a
                         read/write lock's sides, Curator's or kazoo's),
                         "latch" (a candidate), "lease" (a semaphore's lease
                         node, in NAME/leases), "gate" (a semaphore's
                         contender queued at its gate, in NAME/locks) */
  bool holds;         /* it held the lock, by its kind's rule, when NAME
                         was listed (nodes gone by the time they were read
                         still count ahead of the others, and are left out
                         of the list): the first node of NAME's own queue
                         (a mutex's or writer's holder, an election's
                         leader); a reader with only readers ahead of it,
                         or one that a downgrade made while the write node
                         it names holds (zkl_rwlock_new()); a
                         lease node with fewer lease nodes ahead of it than
                         its own limit, or, its limit unknown (Curator's), any
                         lease node but that of the contender holding the
                         gate (which waits for a lease); never a gate node */
  int limit;          /* a lease node's limit, as its contender wrote it
                         into the node's name, or (older libzklock) its
                         data; Curator's say none: 0 if unknown or not a
                         lease */
  const char *lock;   /* the kind of lock its contender takes: "mutex"
                         (kazoo's Lock and WriteLock too), "rwlock",
                         "election", "semaphore" */
  bool repeated;      /* this contender already appeared earlier in the
                         list: a semaphore's contender waiting for a lease
                         has a lease node and the gate's first node, and
                         only the lease node counts it (count contenders
                         without repeated ones) */
} zkl_participant;

/* Lists the contenders of the lock NAME without taking part: every node of
 * every kind under /locks/NAME (ours, Curator's, kazoo's), read through
 * the library's registry of lock kinds. The list is NAME's own queue (a
 * mutex's, a read/write lock's readers and writers, an election's
 * candidates), then a semaphore's lease nodes (NAME/leases), then its
 * queue at the gate (NAME/locks), each in queue order, so that the holder
 * of a mutex and the leader of an election come first. Two round trips:
 * the three places listed at once, then every node's data read at once. A
 * snapshot: it can be stale by the time it is read. Nodes of other
 * libraries are listed with empty owner fields (a candidate's data is its
 * id, not an owner description).
 *   out    receives the list; free it with zkl_name_list_free(). Set only
 *          on success (NULL with count 0 is not used: an empty list is
 *          still an allocation).
 *   count  receives the number of entries (0 when nobody holds the lock).
 * Returns ZKL_OK; ZKL_EINVAL; ZKL_EEXPIRED; ZKL_ECLOSED; ZKL_ENOMEM;
 * ZKL_EDEADLK on a completion thread; or a ZooKeeper error. */
ZKL_EXTERN int zkl_name_list(zkl_session *s, const char *name,
                             zkl_participant **out, int *count);
ZKL_EXTERN void zkl_name_list_free(zkl_participant *list);

/* Finds the locks under prefix: the tree under /locks/PREFIX (prefix a
 * lock name, or "" for every lock), walked level by level (one round trip
 * per level). A node is a lock when one of its children is a contender
 * node of any kind the library knows (ours, Curator's, kazoo's; see
 * zkl_participant.kind) or a semaphore's place (a "locks" or "leases"
 * child of a lock's node: never of /locks itself, so the locks "locks",
 * "leases", "locks/x" and "leases/x/y", which the name rules allow, are
 * found like any other); a lock's name may also be the prefix of
 * another's. The prefix itself is listed
 * when it is a lock. At most max_nodes nodes are listed below the prefix
 * (and 64 levels); what lies beyond is not looked at.
 *   names      receives the names, sorted (strcmp), without the
 *              /locks/ root; free with zkl_name_find_free(). Set only on
 *              success.
 *   count      receives how many.
 *   truncated  (may be NULL) receives whether the bound cut the walk.
 * A snapshot, as zkl_name_list(): a lock may come or go meanwhile.
 * Returns ZKL_OK (an absent prefix: none found); ZKL_EINVAL (a bad
 * prefix, max_nodes < 1); ZKL_EEXPIRED; ZKL_ECLOSED; ZKL_ENOMEM;
 * ZKL_EDEADLK on a completion thread; or a ZooKeeper error. */
ZKL_EXTERN int zkl_name_find(zkl_session *s, const char *prefix, int max_nodes,
                             char ***names, int *count, bool *truncated);
ZKL_EXTERN void zkl_name_find_free(char **names, int count);

#ifdef __cplusplus
}
#endif

#endif /* ZKLOCK_H */
