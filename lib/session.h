/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session.h - the session layer: one ZooKeeper handle and what the library
 * does with it below the locks.
 *
 *   session.c  the session object: references, the mutex, the completion
 *              thread's entry and exit, requests, queued user callbacks
 *   cleanup.c  deletions owed to the server, retried
 *              after every reconnect until done or moot
 *   lease.c    the lease clock and its heartbeats
 *   timer.c    a thread that calls one tick function by the clock
 *   events.c   session events and the state callback, and the tick
 *   wrap.c     sessions on the application's handle, and their own watch
 *   follow.c   following the ensemble's configuration to new servers
 *   open.c     opening and closing
 *
 * It knows nothing of locks, attempts or watch records: the engine
 * registers a zkl_session_hooks table and hears of connection, expiry,
 * close, the lease and the clock through it. Each file writes only its own
 * part of struct zkl_session (marked below) and reads the others.
 *
 * One mutex per session (s->mu) guards the session and everything built on
 * it. Functions named *_locked expect it held. ZooKeeper calls are made
 * with it held: the client never runs our code from inside those calls
 * (completions and watchers always run on its completion thread), so this
 * cannot deadlock, and it keeps the order in which requests are queued the
 * order in which they were decided. The one exception is zoo_set_servers()
 * (follow.c), which resolves host names: it runs without s->mu.
 *
 * User callbacks never run under s->mu: they are queued as zkl_call records
 * and run by whoever holds the completion thread, after unlocking.
 */
#ifndef ZKL_SESSION_H
#define ZKL_SESSION_H

#include "common.h"

/* A user callback waiting to run, with the mutex dropped. The layer that
 * queues it embeds this record in its own and says how to run it and how
 * to let go of it afterwards. */
typedef struct zkl_call zkl_call;
struct zkl_call {
  zkl_call *next;
  void (*run)(zkl_call *c);            /* the callback, without s->mu */
  void (*release_locked)(zkl_call *c); /* drops its references, frees it */
};

/* What the session tells the layer above. Every hook runs with s->mu held,
 * on the completion thread unless said otherwise. */
typedef struct zkl_session_hooks {
  /* Connected (first time, or again in the same session). */
  void (*connected_locked)(void *ctx);
  /* The session is over: why is ZKL_EEXPIRED or ZAUTHFAILED. */
  void (*over_locked)(void *ctx, int why);
  /* zkl_session_close() began (on the closing thread). */
  void (*closing_locked)(void *ctx);
  /* The session is closed, on the closing thread. handle_closed: the
   * client closed the handle and dropped every watch without calling it
   * (own handles). Otherwise the handle is the application's, which may
   * close it at any time: the watches must leave the client now. */
  void (*closed_locked)(void *ctx, bool handle_closed);
  /* The clock (timer thread): act on deadlines up to now; returns the next
   * one, or 0 for none. Lost notices go to *direct for the caller to run
   * (on the timer thread, as the lease's). */
  int64_t (*tick_locked)(void *ctx, int64_t now, zkl_call **direct);
  /* The lease ran out: every held lock is lost. Notices go to *direct for
   * the caller to run (the timer thread, or the next tick). */
  void (*lease_lost_locked)(void *ctx, zkl_call **direct);
  /* The session is being freed: let go of ctx. */
  void (*free_locked)(void *ctx);
} zkl_session_hooks;

/* Request kinds, counted in zkl_session.sent (the tests count round trips
 * with them). */
enum {
  ZKL_RQ_PARENT,      /* create a parent container */
  ZKL_RQ_CREATE,      /* create a contender's node */
  ZKL_RQ_LIST,        /* list a queue */
  ZKL_RQ_PRED_GET,    /* watch the node waited for */
  ZKL_RQ_OWN_GET,     /* watch our own node */
  ZKL_RQ_RECOVER_GET, /* is the node a lost create left ours? */
  ZKL_RQ_DELETE,      /* delete an abandoned attempt's node */
  ZKL_RQ_RELEASE,     /* delete of a release */
  ZKL_RQ_CHILD_WATCH, /* a listing that also watches the queue */
  ZKL_RQ_CLEANUP,     /* a background cleanup */
  ZKL_RQ_CARRIER,     /* only brings the completion thread round */
  ZKL_RQ_PROBE,       /* the round trip of an open on a handle */
  ZKL_RQ_LEASE_SYNC,  /* the lease's beat: a sync (lease.c) */
  ZKL_RQ_LEASE_WRITE, /* the lease's write: a check of "/" (lease.c) */
  ZKL_RQ_QUERY,       /* a question of a user's thread (ask.c) */
  ZKL_RQ_TAP,         /* a wrapped session's own watch on "/" */
  ZKL_RQ_MULTI,       /* a guarded transaction */
  ZKL_RQ_KIND_CHECK,  /* a listing of another family's place (kinds.h) */
  ZKL_RQ_MULTI_LOCK,  /* a multi-lock's transaction (creates or deletes) */
  ZKL_RQ_BREAK,       /* zkl_name_break(): reads, the mark, the delete */
  ZKL_RQ_CONFIG,      /* a reading of the ensemble's configuration */
  ZKL_RQ_FLUSH,       /* after a move to other servers (follow.c) */
  ZKL_RQ_PART_CHECK,  /* a first try's listing of a part's queue */
  ZKL_RQ_AHEAD_GET,   /* watch the node before the one waited for */
  ZKL_RQ_ORDER,       /* a write that a lost create's search follows */
  ZKL_RQ_KINDS
};

/* The client's answer to a request, whatever the call's shape: only the
 * fields of that shape are set. Borrowed for the handler's run. */
typedef struct zkl_answer {
  int rc;
  const char *value; /* create: the path made; get: the data */
  int len;           /* get: the data's length */
  const struct Stat *stat;              /* create2, get, exists */
  const struct String_vector *children; /* get_children */
} zkl_answer;

typedef struct zkl_req zkl_req;
/* What a request's sender does with the answer: runs inside the frame
 * every completion shares (requests.c): the session's mutex held, the
 * thread marked as the completion thread, the lease's clock moved by a
 * server's answer; after it the request is freed and queued user
 * callbacks run with the mutex dropped. */
typedef void (*zkl_answered_fn)(zkl_req *r, const zkl_answer *a);

/* A request in flight. Holds a session reference; freed by its completion
 * (zkl__req_done_locked). The sender's fields are the sender's to use. */
struct zkl_req {
  zkl_session *s;
  int kind;
  int64_t sent_ms; /* when it was queued: the server heard it later */
  /* What its answer can prove of the lease (lease.c): set by the sender
   * (zkl__lease_tag_locked) or zero, a read. */
  unsigned conn;         /* the connection it went on: s->lease.conn */
  unsigned char proof;   /* ZKL_PROOF_* */
  zkl_answered_fn answered_locked; /* set by the sender */
  /* the sender's */
  void *owner;
  void *item;
  unsigned round;
  int index;
  char *path; /* freed with the request */
  /* The result of a transaction of one op (zkl__io_order_locked): the
   * client writes it before the completion runs. */
  zoo_op_result_t one_result;
};

/* The completions to hand the client, one per shape of its calls: each
 * runs r->answered_locked in the frame above. data is the zkl_req. */
void zkl__on_string(int rc, const char *value, const struct Stat *stat,
                    const void *data);
void zkl__on_strings(int rc, const struct String_vector *children,
                     const void *data);
void zkl__on_data(int rc, const char *value, int len, const struct Stat *stat,
                  const void *data);
void zkl__on_stat(int rc, const struct Stat *stat, const void *data);
void zkl__on_void(int rc, const void *data);
void zkl__on_value(int rc, const char *value, const void *data); /* sync */
/* zoo_amulti, made safe to call: ZINVALIDSTATE without calling it once the
 * session is over, ZBADARGUMENTS for an op whose path the client would
 * refuse (requests.c says why); else what zoo_amulti returns. */
int zkl__safe_amulti(zhandle_t *zh, int count, const zoo_op_t *ops,
                     zoo_op_result_t *results, void_completion_t done,
                     const void *data);

typedef struct zkl_cleanups {
  zkl_link jobs;
  /* Called when the last job is done (wrap.c: a closed session may then
   * give its watch back). */
  void (*drained_locked)(zkl_session *s);
} zkl_cleanups;

/* What an answer can prove of the lease (lease.c). */
enum {
  ZKL_PROOF_READ = 0,  /* answered by its server alone: an X at most */
  ZKL_PROOF_FORWARDED, /* a sync: answered through the leader (a Y) */
  ZKL_PROOF_WRITE      /* a write: committed through the leader (a Y, an M) */
};
#define ZKL_LEASE_BEATS 4 /* answered beats kept: X candidates */
#define ZKL_LEASE_CANDS 2 /* X, Y pairs waiting for a write */

typedef struct zkl_lease {
  unsigned held;       /* locks held: the beats carry writes while > 0 */
  unsigned confirming; /* grants waiting for a fresher lease: writes too */
  int margin_ms;       /* 0: default, -1: lease off, > 0: the user's */
  int tick_ms;         /* the servers' tickTime at most; 0: T/2 */
  zkl_call *notices;   /* lost notices for the timer thread to run */
  /* The evidence. A connection's number changes when it drops, when a
   * new one is made and around a move to other servers: a proof never
   * mixes two (0: none, or moving). */
  unsigned conn;
  bool moving;
  int64_t opened_ms;   /* a new session began opening then (0: wrapped) */
  int64_t anchor_ms;   /* proven: the session lives until this + T */
  int64_t answered_ms; /* send time of the latest request answered */
  unsigned long proofs;
  bool told_refused;
  /* the beats */
  bool beat_inflight;  /* the beat of this connection is out */
  unsigned requests;   /* the lease's requests whose completion has not run */
  int64_t next_beat_ms;
  struct {
    int64_t sent_ms, answered_ms;
  } beats[ZKL_LEASE_BEATS]; /* answered on conn, oldest first */
  unsigned nbeats;
  struct {
    int64_t anchor_ms, after_ms; /* X's send time, Y's answer */
  } cands[ZKL_LEASE_CANDS]; /* oldest first */
  unsigned ncands;
} zkl_lease;

typedef struct zkl_timer {
  pthread_t thread;
  bool running;
  bool stop;
  pthread_cond_t cond;
  pthread_mutex_t *mu;
  int64_t (*tick_locked)(void *ctx, int64_t now);
  void *ctx;
  int64_t wake_ms; /* when it sleeps until: 0 forever, -1 it is awake */
} zkl_timer;

typedef struct zkl_tap zkl_tap;

/* The servers the session's client uses, and the ensemble's configuration
 * it follows (follow.c). */
typedef struct zkl_follow {
  bool on;         /* follow the configuration (own handles only) */
  char *servers;   /* the client's list now, "host:port,...", no chroot;
                      NULL for a wrapped handle */
  char *chroot;    /* "" or "/path", as opened */
  char *wanted;    /* a list to move to, not yet given to the client */
  bool move_queued;     /* the call that gives it is queued */
  int64_t version;      /* the newest configuration read, -1: none yet */
  bool told_unfollowable; /* logged once: nothing here to follow */
  /* The session is connected (again): follow.c reads the configuration.
   * Set by zkl__follow_init(); events.c calls it, so that the layer below
   * never calls up into follow.c. The strings above are the session's to
   * free (session.c). */
  void (*connected_locked)(zkl_session *s);
} zkl_follow;

struct zkl_session {
  pthread_mutex_t mu;
  /* agent.c: a session through zklockd; NULL for a ZooKeeper session.
   * Such a session uses mu and nothing else of this struct. */
  struct zkl_agent *agent;
  pthread_cond_t cond; /* any progress: broadcast on every leave/unlock */
  zhandle_t *zh;
  bool owns_handle;
  int requested_timeout_ms;
  char owner_data[256]; /* the owner description of this process */
  int owner_len;

  /* events.c: the connection as the library knows it */
  bool connected;
  int negotiated_timeout_ms;
  int64_t session_id;
  int dead; /* 0, or why the session is over: ZKL_EEXPIRED, ZAUTHFAILED */
  zkl_state_cb state_cb;
  void *state_arg;
  zkl_event_cb event_cb;
  void *event_arg;
  bool was_connected; /* a connection was seen: the next is a reconnect */

  /* open.c: closing */
  bool closing;  /* zkl_session_close() has begun: new calls fail */
  bool closed;   /* the handle is no longer used */
  bool orphaned; /* closed by the user, wrapped, still owing deletions */

  /* session.c */
  unsigned refs;     /* user + locks + watch records + requests */
  unsigned inflight; /* requests whose completion has not run */
  unsigned busy;     /* completion-thread entries running right now */
  zkl_call *calls;
  zkl_call **calls_tail;
  /* Until zkl_session_open() succeeds, the application's state and event
   * calls wait here: a failed open calls none of them (events.c). */
  bool opening;
  zkl_call *held;
  zkl_call **held_tail;
  bool carrier_inflight;
  unsigned long sent[ZKL_RQ_KINDS]; /* requests sent, by kind */
  const zkl_session_hooks *hooks;
  void *hooks_ctx;
  /* Hears every answer, in the frame, before its handler runs: the lease
   * (zkl__lease_attach). A pointer, not a call, so that the frame, which
   * the lease's own requests go through, names no file above it. */
  void (*answer_seen_locked)(zkl_session *s, zkl_req *r, int rc);

  zkl_cleanups cleanups; /* cleanup.c */
  zkl_lease lease;       /* lease.c */
  zkl_timer timer;       /* timer.c */
  zkl_tap *tap;          /* wrap.c */
  zkl_follow follow;     /* follow.c */

  /* counted where they happen, for zkl_session_get_stats() (stats.c) */
  unsigned long disconnects; /* events.c: connected, then not */
  unsigned long reconnects;  /* events.c: connected again, same session */
  unsigned long expiries;    /* events.c: the session expired */
  unsigned long watch_events; /* watch.c: a lock's watch fired */
};

/* ---------------------------------------------------------------- open.c */

/* zkl_session_options as read and checked by open.c (every default
 * applied but the timeouts' zeros). */
typedef struct zkl_open_opts {
  const char *hosts;
  zhandle_t *handle;
  int session_timeout_ms;
  int connect_timeout_ms; /* 0: the session timeout */
  unsigned flags;
  int lease_margin_ms;
  int server_tick_ms;
  zkl_state_cb on_state;
  void *state_arg;
  zkl_event_cb on_event;
  void *event_arg;
  const char *agent;
} zkl_open_opts;

/* Gives a new session, before its first connection, what the options say
 * of it: the lease's margin and tick, the state callback, the event hook. */
void zkl__session_apply_opts_locked(zkl_session *s, const zkl_open_opts *p);
/* Once the server granted its timeout: ZKL_OK, or ZKL_EINVAL when the
 * options' margin and tick leave no lease (lease.c). */
int zkl__lease_fits_locked(const zkl_session *s);

/* ------------------------------------------------------------- session.c */

/* Allocates a session with one (the user's) reference. */
int zkl__session_alloc(zkl_session **out, int timeout_ms, bool owns_handle);
/* Frees a session that never got further than zkl__session_alloc plus a
 * timer that has been stopped. */
void zkl__session_free(zkl_session *s);
/* Sessions allocated and not yet freed (atomic; the tests read it: a
 * session kept alive by a reference nobody will drop leaks no node). */
extern unsigned zkl__sessions_alive;
void zkl__session_ref_locked(zkl_session *s);
void zkl__session_unref_locked(zkl_session *s);
/* Registers the layer above (once). */
void zkl__session_set_hooks_locked(zkl_session *s,
                                   const zkl_session_hooks *hooks, void *ctx);
void *zkl__session_hooks_ctx_locked(const zkl_session *s);
/* The session's state for new calls: ZKL_OK, ZKL_ECLOSED, ZKL_EEXPIRED. */
int zkl__session_usable_locked(const zkl_session *s);
/* True when rc says a request's outcome is unknown (connection lost). */
bool zkl__is_connection_loss(int rc);
/* True when rc says the session is over. */
bool zkl__is_session_over(int rc);
/* Takes a watch (wtype: ZWATCHTYPE_*) out of the client, locally, with no
 * request. True when it was there; false when the client has already taken
 * it out to deliver its event, which then reaches the watcher. Why no
 * request: removing one watcher by name only asks the server whether it
 * holds such a watch (CheckWatches) and then drops it from the client, so
 * a request bought a round trip, a wait for the connection when it was
 * down, and, when the application closed a wrapped handle meanwhile, a
 * request the client neither answers nor frees (the 3.8 client runs the
 * completions it fails with ZCLOSING only while its completion thread
 * lives). The server's end fires at the node's next change or goes with
 * the session, and the client drops an event no watcher waits for. */
bool zkl__watch_leave_client(zhandle_t *zh, const char *path, int wtype,
                             watcher_fn watcher, void *ctx);

/* Allocates a request (counted in sent[kind]); NULL on ENOMEM. Its
 * sender sets answered_locked and hands the client a zkl__on_* completion
 * with the request as its data. */
zkl_req *zkl__req_new_locked(zkl_session *s, int kind);
/* Undoes zkl__req_new_locked when the client refused to send it. */
void zkl__req_abort_locked(zkl_req *r);
/* Ends a request's life inside its completion. */
void zkl__req_done_locked(zkl_req *r);

/* Start of every completion-thread entry point: marks the thread, takes
 * the lock, counts the entry. */
void zkl__enter_locked(zkl_session *s);
/* The same for a request's completion; the answer goes to the lease
 * first (a write may prove it). Returns rc as the completion is to take
 * it: ZRUNTIMEINCONSISTENCY, the client's verdict on a connection whose
 * answers did not match its requests (after a move to other servers,
 * follow.c), is the lost connection it is: ZCONNECTIONLOSS. */
int zkl__enter_req_locked(zkl_req *r, int rc);
/* Drops the lock after running queued user callbacks; frees the session if
 * that was its last reference. s must not be used afterwards. */
void zkl__leave(zkl_session *s);
/* For user threads: broadcasts progress, unlocks, frees s if that was its
 * last reference. */
void zkl__unlock(zkl_session *s);

/* Queues a user callback for the completion thread. */
void zkl__queue_call_locked(zkl_session *s, zkl_call *c);
/* The application's state and event calls: queued, or held while the
 * session is opening. */
void zkl__hold_or_queue_call_locked(zkl_session *s, zkl_call *c);
/* The open is over: ok queues the held calls in order, else releases them
 * (a failed open calls nothing of the application's). */
void zkl__session_opened_locked(zkl_session *s, bool ok);
/* Runs callbacks the caller collected itself (the timer thread's lost
 * notices), unlocking meanwhile; releases them. */
void zkl__run_calls_locked(zkl_session *s, zkl_call *list);
/* Runs the queued callbacks now (close, when no completion will come). */
void zkl__drain_calls_locked(zkl_session *s);
/* True when no request, entry or queued callback is under way. */
bool zkl__session_quiet_locked(const zkl_session *s);

/* ------------------------------------------------------------- cleanup.c */

static inline void zkl__cleanups_init(zkl_session *s) {
  zkl__list_init(&s->cleanups.jobs);
}
/* Schedules a cleanup; runs it now when connected. */
void zkl__cleanup_delete_locked(zkl_session *s, const char *path);
void zkl__cleanup_prefix_locked(zkl_session *s, const char *parent,
                                const char *prefix);
void zkl__cleanups_run_locked(zkl_session *s);  /* after a reconnect */
void zkl__cleanups_drop_locked(zkl_session *s); /* the session's end */
unsigned zkl__cleanups_count_locked(const zkl_session *s);

/* --------------------------------------------------------------- lease.c */

/* The margin in force (ms), or -1 when the lease is off. */
int zkl__lease_margin_ms(const zkl_session *s);
/* P: the longest the leader goes without pinging a learner (ms). */
int zkl__lease_ping_bound_ms(const zkl_session *s);
/* True when the lease is on and nothing proves the session alive now. */
bool zkl__lease_expired_locked(const zkl_session *s, int64_t now_ms);
/* The moment the leader may expire the session, by what is proven: the
 * lease's deadline plus its margin (the anchor plus the session timeout);
 * 0 when nothing is proven or the lease is off. */
int64_t zkl__lease_expiry_locked(const zkl_session *s);
/* At least half of the lease is still ahead (always, with the lease off):
 * what a grant needs to be held at once (engine.c). */
bool zkl__lease_fresh_locked(const zkl_session *s, int64_t now_ms);
/* What is left of it (ms; 0 when nothing is proven or the lease is off). */
int64_t zkl__lease_left_locked(const zkl_session *s, int64_t now_ms);
/* The connection as events.c and follow.c see it: connected (new_session:
 * the first connection of a session this library created), dropped, and
 * a move to other servers beginning (moving) and done. */
void zkl__lease_connected_locked(zkl_session *s, bool new_session);
void zkl__lease_disconnected_locked(zkl_session *s);
void zkl__lease_moving_locked(zkl_session *s, bool moving);
/* Marks a request as sent on the current connection, with what its
 * answer can prove (ZKL_PROOF_*). Call before handing it to the client. */
void zkl__lease_tag_locked(zkl_session *s, zkl_req *r, int proof);
/* Makes the lease hear every answer of s (s->answer_seen_locked): a write
 * that succeeded proves the candidates whose Y came before it. Called once,
 * by whoever made s (open.c, wrap.c), before its first request. */
void zkl__lease_attach(zkl_session *s);
/* A lock was granted (+1) or stopped being held (-1). */
void zkl__lease_hold_locked(zkl_session *s, int delta);
/* A grant waits for a fresher lease (+1), or no longer (-1): the beats
 * then carry a write at once. */
void zkl__lease_confirming_locked(zkl_session *s, int delta);
/* For calls on held locks from the user's threads: a process frozen past
 * its lease must be told before it takes one more step as a holder. When
 * the lease ran out, declares the held locks lost (their notices go to the
 * timer thread) and returns true. */
bool zkl__lease_enforce_locked(zkl_session *s);
/* Sends the beats, declares held locks lost when the lease runs out
 * (notices to *direct); returns when to look again (0: no need). */
int64_t zkl__lease_tick_locked(zkl_session *s, int64_t now,
                               zkl_call **direct);
/* Takes the notices that user calls handed to the timer thread. */
zkl_call *zkl__lease_take_notices_locked(zkl_session *s);

/* --------------------------------------------------------------- timer.c */

/* Starts the thread: it calls tick(ctx, now) with *mu held whenever the
 * deadline tick returned last passes, or when kicked. */
int zkl__timer_start(zkl_timer *t, pthread_mutex_t *mu,
                     int64_t (*tick_locked)(void *ctx, int64_t now),
                     void *ctx);
void zkl__timer_stop(zkl_timer *t); /* joins; call without *mu */
/* Makes the thread call tick again now. */
void zkl__timer_kick_locked(zkl_timer *t);
/* The same, only if it would not look by `due` anyway. */
void zkl__timer_kick_at_locked(zkl_timer *t, int64_t due);

/* -------------------------------------------------------------- events.c */

/* A session event of the handle (from our watcher, the application's
 * forward, or the tap). */
void zkl__on_state_locked(zkl_session *s, zhandle_t *zh, int state);
/* The default watcher of handles the library opens. */
void zkl__session_watcher(zhandle_t *zh, int type, int state,
                          const char *path, void *ctx);
/* The timer's tick. */
int64_t zkl__session_tick_locked(void *ctx, int64_t now);
/* Tells the event hook, if any, about ev (copied): queued for the
 * completion thread, or appended to *direct when direct is not NULL (the
 * timer thread's lost notices). */
void zkl__emit_locked(zkl_session *s, const zkl_event *ev, zkl_call **direct);
/* Queues the state callback's ZKL_STATE_CLOSED, last. */
void zkl__report_closed_locked(zkl_session *s);

/* ---------------------------------------------------------------- wrap.c */

/* zkl_session_open() with o->handle (p checked): builds the session on the
 * application's handle and waits for the server's first answer. */
int zkl__session_wrap(zkl_session **out, const zkl_open_opts *p);

/* A closing wrapped session gives its watch back once it owes the server
 * nothing more. */
void zkl__tap_release_locked(zkl_session *s);
bool zkl__tap_held_locked(const zkl_session *s);
/* For tests: taps of wrapped sessions the client may still call. */
unsigned zkl__debug_taps(void);

/* -------------------------------------------------------------- follow.c */

/* Sets up s->follow for hosts, the connect string of an own handle: on
 * says whether to follow. ZKL_OK or ZKL_ENOMEM. */
int zkl__follow_init(zkl_session *s, const char *hosts, bool on);
/* For tests: moves the client to servers ("host:port,...") now, on the
 * calling thread (not a completion thread, without s->mu), as a change of
 * the configuration would; nothing if the session does not follow. */
int zkl__follow_move_now(zkl_session *s, const char *servers);

/* Pure helpers, for the tests too. */
/* The client addresses the configuration text data[0..len) names, into
 * out (len outlen) as a connect string "host:port,..." in the order of the
 * server lines, and its version into *version (-1 when it has none).
 * Returns 1 with a list; 0 when there is nothing to follow (no server
 * line, or a server line without a client address); -1 when a line does
 * not parse or the list does not fit. A client host that is a wildcard
 * address (0.0.0.0, ::) is replaced by the server's own (quorum) host, as
 * Curator does; IPv6 hosts lose their brackets, as the C client wants. */
int zkl__config_servers(const char *data, int len, char *out, size_t outlen,
                        int64_t *version);
/* Whether two connect strings (no chroot) name the same servers, in any
 * order. */
bool zkl__servers_same(const char *a, const char *b);

#endif /* ZKL_SESSION_H */
