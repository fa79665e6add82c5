/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire.h - the agent's protocol on a Unix stream socket (docs/agent.md):
 * frames, their header, and the fields of a body. Shared by the library's
 * agent sessions (agent.c) and zklockd (agent/), and nothing else: it
 * knows no session and no lock.
 *
 * A frame is a 4-byte big-endian length L (of what follows, 8..ZKL_WIRE_MAX)
 * then an 8-byte header: version, type, two zero bytes, and the request id
 * (big-endian 32 bits; 0 for the agent's own news). The body is a sequence
 * of fields whose order the type fixes: i32, i64 (big-endian, two's
 * complement), str (a u32 length, then that many bytes, no NUL among
 * them) and bytes (the same, NULs allowed: a guarded write's data). Why no
 * serialization library: a dozen small messages, read by a daemon that
 * must survive anything a hostile local process writes; a bounds-checked
 * reader of four field kinds is shorter to audit than a general decoder,
 * and the library's users get no new dependency.
 *
 * The version in every header stays 1. What grew since is told by HELLO:
 * the client asks for the revision it speaks (ZKL_WIRE_REVISION), the
 * agent answers the lower of that and its own; an agent of revision 1
 * (before COMMIT) answers 1 whatever it is asked, and cuts off a client
 * that sends it a type it does not know, so a client sends COMMIT, STATS
 * and EVENTS only to an agent that answered 2, and waits for a PONG only
 * from such an agent; the agent sends news of revision 2 (EVENT, SERVERS,
 * PONG) only to a client that asked for 2. Revision 3 adds WORK, which a
 * client sends only to an agent that answered 3 (an agent of revision 2
 * cuts off a client that sends it). Revision 4 adds SET's layout, which a
 * client sends only to an agent that answered 4 (an older agent refuses the
 * setting and cuts the client off).
 */
#ifndef ZKL_WIRE_H
#define ZKL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZKL_WIRE_VERSION 1
#define ZKL_WIRE_HEADER 8          /* after the length */
#define ZKL_WIRE_MAX (1024 * 1024) /* the most a frame's L may say */
#define ZKL_WIRE_REVISION 4 /* HELLO's: 2 serves COMMIT, STATS, EVENTS, EVENT,
                               SERVERS, PONG and HELLO's servers; 3, WORK
                               and REVOKED's breaking field; 4, SET's
                               ZKL_AGENT_SET_LAYOUT */

/* Calls (client to agent). Each is answered by one ZKL_MSG_REPLY with its
 * request id, unless said otherwise. */
enum {
  ZKL_MSG_HELLO = 1,   /* i32 revision wanted -> i32 revision (the lower
                          of the two), i32 timeout_ms, i64 session id,
                          i32 agent pid, and from revision 2: str servers
                          (the connect string its session uses now, or "") */
  ZKL_MSG_NEW = 2,     /* i32 handle, i32 kind, i32 limit, str id, i32 count,
                          str names... -> i32 rc only when it fails */
  ZKL_MSG_SET = 3,     /* i32 handle, i32 option, i32 value, str text
                          -> i32 rc only when it fails */
  ZKL_MSG_ACQUIRE = 4, /* i32 handle, i32 timeout_ms -> i32 rc, i64 token,
                          i64 lease deadline, str node paths, str other
                          kind, str refused name (when the acquire ends) */
  ZKL_MSG_RELEASE = 5, /* i32 handle -> i32 rc (when the release ends) */
  ZKL_MSG_CANCEL = 6,  /* i32 handle -> i32 rc */
  ZKL_MSG_FREE = 7,    /* i32 handle; no reply */
  ZKL_MSG_BREAK = 8,   /* str name, str node, i32 grace_ms -> i32 rc, i32 n,
                          then n times (i32 rc, str node): the report of
                          zkl_break_cb, which the caller's thread is told */
  ZKL_MSG_REVOKE = 9,  /* str name, str node -> i32 rc */
  /* The session's questions (zkl_name_*): the agent asks them on a worker
   * thread of its own, so they never hold up its loop; a node "" is none
   * (NULL), else a child name, as zkl_name_revoke() takes it. The reply's
   * fields after rc come only when rc is ZKL_OK (BREAK's: always). LIST,
   * FIND and LEADER need "list" on the name (FIND: on its prefix, so every
   * name found is one the rule covers, or on the prefix and a '/', and
   * the prefix itself is then not found); BREAK and REVOKE need "break",
   * unless the node is one of the caller's own (zklockd(8)); ZKL_EDENIED
   * too when 4 of the client's (64 in all) are running already. */
  ZKL_MSG_LIST = 10,   /* str name -> i32 rc, i32 n, then n times (str node,
                          i64 token, i64 queued_ms, str host, i64 pid,
                          i64 started_ms, str info, str kind, i32 holds,
                          i32 limit, str lock, i32 repeated) */
  ZKL_MSG_FIND = 11,   /* str prefix, i32 max_nodes -> i32 rc,
                          i32 truncated, i32 n, then n times str name */
  ZKL_MSG_LEADER = 12, /* str name -> i32 rc, str id, i64 token */
  /* A leader watch (zkl_leader_watch_new): the client numbers it from its
   * lock handles; no reply, its news come as ZKL_MSG_LEADER_NEWS (a
   * refusal, ZKL_EDENIED, included: any rc but ZKL_OK and ZKL_ENOTHELD
   * ends it). Needs "list" on the name. */
  ZKL_MSG_WATCH_LEADER = 13, /* i32 handle, str name */
  ZKL_MSG_UNWATCH = 14,      /* i32 handle; no reply, no news after */
  /* A guarded write (zkl_lock_commit) on the client's own handle, run as
   * the agent's lock commits it; needs "write" on every op's path (none
   * under ZKL_ROOT), and ZKL_EDENIED too when 64 of the client's are in
   * flight; no answer once the handle is freed. The
   * request: i32 handle, i32 count, then count ops, each i32 type (a
   * ZOO_*_OP), str path, i32 version, and by its type:
   *   a create:  i32 datalen (-1: NULL data), bytes data, i32 flags,
   *              i64 ttl, i32 acl count (-1: NULL), then that many
   *              (i32 perms, str scheme, str id), i32 path buffer size
   *   a setData: i32 datalen, bytes data, i32 stat wanted (0 or 1)
   *   a delete, a check: nothing more.
   * The reply: i32 rc, i32 n (0 when nothing was sent, else count), then
   * n results, each i32 err, i32 value set (0 or 1), str value (the
   * created path as the C client cut it to the buffer), i32 valuelen,
   * i32 stat set (0 or 1), then the Stat: i64 czxid, i64 mzxid, i64
   * ctime, i64 mtime, i32 version, i32 cversion, i32 aversion, i64
   * ephemeralOwner, i32 dataLength, i32 numChildren, i64 pzxid. */
  ZKL_MSG_COMMIT = 15,
  /* zkl_session_get_stats: the agent's session's counters, answered at
   * once by its loop. */
  ZKL_MSG_STATS = 16, /* -> i32 rc, i64 requests, queries, heartbeats,
                         watch_events, disconnects, reconnects, expiries,
                         i32 locks held, i32 locks waiting (every client's) */
  ZKL_MSG_EVENTS = 17, /* i32 on: tell ZKL_MSG_EVENT news, or stop; no reply */
  /* zkl_session_add_worker (revision 3): process pid works under this
   * connection's locks; when the connection ends, its held nodes wait for
   * pid's end (or the end of the lease last relayed to it). */
  ZKL_MSG_WORK = 18, /* i32 pid -> i32 rc: ZKL_EINVAL (no such process, or
                        too many), ZKL_EDENIED (another user's) */
  ZKL_MSG_CALLS_END,
  ZKL_MSG_PING = 31 /* no fields: the client is alive (every third of the
                       session timeout); answered by ZKL_MSG_PONG */
};

/* The agent's frames. A REPLY to BREAK, LIST or FIND whose fields would
 * not fit in ZKL_WIRE_MAX carries only i32 rc (ZKL_ENOMEM); one to COMMIT,
 * rc ZKL_ENOMEM and n 0 (the client asks for none that would not fit). */
enum {
  ZKL_MSG_REPLY = 32,  /* the answer to request id: i32 rc, then the call's */
  ZKL_MSG_LOST = 33,   /* i32 handle, i32 ZKL_LOST_* reason */
  ZKL_MSG_REVOKED = 34, /* i32 handle: someone asks its holder to let go;
                           from revision 3, i32 breaking: 1 for a break's
                           mark (zkl_lock_break_mark), 0 for a request */
  ZKL_MSG_LEASE = 35,  /* i64 deadline (CLOCK_MONOTONIC ms; 0: none) */
  ZKL_MSG_STATE = 36,  /* i32 ZKL_STATE_* of the agent's session */
  ZKL_MSG_BYE = 37,    /* i32 rc: the agent ends this connection, and why */
  ZKL_MSG_LEADER_NEWS = 38, /* i32 handle, i32 rc, str id, i64 token */
  /* What only the agent sees of a client's attempt, to a client that asked
   * (ZKL_MSG_EVENTS): today ZKL_EVENT_QUEUED, its place in the queue. */
  ZKL_MSG_EVENT = 39,  /* i32 ZKL_EVENT_* type, i32 handle, str node, str
                          waiting_for ("": none), i32 position, str node
                          paths (the attempt's, as zkl_lock_get_node_paths
                          gives them; "": none yet) */
  ZKL_MSG_SERVERS = 40, /* str servers: the agent's session follows the
                           ensemble there (to every client) */
  ZKL_MSG_PONG = 41 /* no fields: the answer to a PING; a client that hears
                       nothing for a session timeout after a PING takes the
                       agent for gone (its blocking calls end) */
};

/* What a contender is (ZKL_MSG_NEW). */
enum {
  ZKL_AGENT_MUTEX = 1,
  ZKL_AGENT_RWLOCK = 2, /* two handles: h its read side, h + 1 its write */
  ZKL_AGENT_SEMAPHORE = 4,
  ZKL_AGENT_ELECTION = 5,
  ZKL_AGENT_MULTI = 6
};

/* Settings (ZKL_MSG_SET). */
enum {
  ZKL_AGENT_SET_INFO = 1,       /* text */
  ZKL_AGENT_SET_MAX_HOLD = 2,   /* value, ms */
  ZKL_AGENT_SET_GRACE = 3,      /* value, ms */
  ZKL_AGENT_SET_WATCH_AFTER = 4, /* value, ms */
  ZKL_AGENT_SET_ACL = 5,        /* value, ZKL_ACL_* */
  ZKL_AGENT_SET_LAYOUT = 6      /* value, ZKL_LAYOUT_* (revision 4) */
};

/* A frame being written: grows as fields are put. */
typedef struct zkl_wbuf {
  unsigned char *data;
  size_t len, cap;
  bool failed;  /* out of memory or over ZKL_WIRE_MAX: send nothing */
  bool too_big; /* failed for being over ZKL_WIRE_MAX */
} zkl_wbuf;

/* Starts a frame (the length is filled in by zkl__wire_end). */
void zkl__wire_begin(zkl_wbuf *b, int type, uint32_t request);
void zkl__wire_i32(zkl_wbuf *b, int32_t v);
void zkl__wire_i64(zkl_wbuf *b, int64_t v);
void zkl__wire_str(zkl_wbuf *b, const char *s); /* NULL: "" */
void zkl__wire_bytes(zkl_wbuf *b, const void *p, size_t n);
/* Fills in the length: true when the frame is whole and within bounds. */
bool zkl__wire_end(zkl_wbuf *b);
void zkl__wire_free(zkl_wbuf *b);

/* A frame being read: its header, then the body's fields in order. A read
 * past the end or a malformed field sets bad, and every later read gives
 * 0 or "" (so a reader checks bad once, at the end). */
typedef struct zkl_rframe {
  int version, type;
  uint32_t request;
  const unsigned char *p, *end;
  bool bad;
  char *strings; /* room for the strings read, NUL-terminated */
  size_t used, room;
} zkl_rframe;

/* How many bytes the frame at the start of data[0..len) takes (length
 * included): 0 when more bytes are needed to tell, -1 when its length is
 * out of bounds (the stream cannot be trusted from there on). */
long zkl__wire_frame_size(const unsigned char *data, size_t len);
/* Opens the whole frame data[0..size) for reading (size from
 * zkl__wire_frame_size). False when its header is malformed or it is out
 * of memory. zkl__wire_close frees what reading took. */
bool zkl__wire_open(zkl_rframe *f, const unsigned char *data, size_t size);
int32_t zkl__wire_get_i32(zkl_rframe *f);
int64_t zkl__wire_get_i64(zkl_rframe *f);
/* Valid until zkl__wire_close. */
const char *zkl__wire_get_str(zkl_rframe *f);
/* The same for bytes (NULs allowed); *len their count. */
const void *zkl__wire_get_bytes(zkl_rframe *f, uint32_t *len);
/* True when every field was read well and nothing is left over. */
bool zkl__wire_done(const zkl_rframe *f);
void zkl__wire_close(zkl_rframe *f);

#endif /* ZKL_WIRE_H */
