/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attempt.h - the attempt itself, shared by the files of the engine:
 *
 *   engine.c    the state machine: the states, go (GO), the edges, the
 *               single node's create, listing, watches, rule and release,
 *               the replies and what the outside says
 *   together.c  nodes made together (ZKL_MAKE_PARTS_TOGETHER: a
 *               multi-lock): the transaction of creates, its recovery
 *               for N queues, PARTS, the release and undo of N nodes
 *
 * Nothing outside the engine includes it: the rest of the library sees an
 * attempt only through engine.h.
 */
#ifndef ZKL_ATTEMPT_H
#define ZKL_ATTEMPT_H

#include "engine.h"
#include "io.h"

struct zkl_attempt {
  zkl_lock *l; /* reference */
  unsigned refs;
  zkl_att_state state;
  unsigned round;   /* bumped by every transition */
  unsigned pending; /* its requests and arming gets whose reply has not come */
  char prefix[ZKL_PREFIX_MAX];
  /* our node: as the world knows it, not a phase */
  enum {
    OWN_NONE,     /* no node, nothing on its way */
    OWN_CREATING, /* a create is in flight */
    OWN_UNKNOWN,  /* a create's outcome was lost: maybe there is one */
    OWN_KNOWN     /* node, czxid */
  } own;
  char *node;
  int64_t czxid;
  zkl_watch *own_watch;
  /* Whether the watch on our own node is wanted yet (wants_own_watch):
   * from the start of a wait, or once a hold has lasted the lock's
   * watch_after_ms (own_watch_at_ms, on the timer; 0: not planned). */
  bool own_watch_wanted;
  int64_t own_watch_at_ms;
  /* What the watch on our own node read: a break's mark (zkl_name_break(),
   * break.c), or a change it could not read before the node went. Either
   * way a deletion that follows is a break. */
  bool break_marked;
  bool changed_unread;
  /* The mark itself was read (not an election's id written again, which
   * a revoke writes too): zkl_lock_break_mark() says so. */
  bool break_seen;
  /* CREATING */
  bool with_parents;
  int parent_rounds;
  int parent_rc; /* a parent create refused for a reason of its own */
  int create_rc; /* the create's reply (1: not yet) */
  /* The kinds check (kinds.h): the places of the other families, listed
   * once our node exists, before the first verdict. A contender in the
   * name itself looks only when its listing shows a semaphore's places; a
   * contender in a semaphore's places always looks at the name itself. */
  enum { CHECK_NONE, CHECK_WANTED, CHECK_SENT, CHECK_DONE } check;
  const char *clash; /* the kind of lock found there that refuses us */
  /* A first try before preparing (zkl_recipe.try_before_prepare), and
   * what its listings of the parts' queues found (one per part). */
  bool unprepared_try;
  zkl_part_listing *part_lists;
  /* ZKL_MAKE_PARTS_TOGETHER: the whole's attempt has no node of its own;
   * its transaction makes one per part (the parts' own attempts adopt
   * them on entering PARTS). */
  char **nodes; /* per part: its node's child name, until adopted */
  int answers;  /* RECOVERING: the queues' listings answered so far */
  char first[ZKL_PATH_MAX]; /* PARTS: the first part's node (the token's) */
  bool czxid_known;         /* the token (czxid) is known */
  bool czxid_lost;          /* its getData's reply was lost: again at the
                               reconnect */
  bool deleting_parts;      /* RELEASING: the whole deletes its parts'
                               nodes, which their releases keep */
  /* LISTING (list_with_watch), WATCHING, WAITING */
  int wait_code; /* the rule's code should the wait time out now */
  zkl_watch *wait;
  char *wait_for; /* WATCHING: the node waited for */
  /* WATCHING, when that node was not the first: the node before it, whose
   * deletion usually makes it the first. Watched too, so that we list
   * again while it holds, and are granted when it goes with no listing
   * between (a handoff costs no listing of the queue, however long). */
  zkl_watch *ahead;
  char *ahead_of;
  /* That node was the first: once it goes, nothing but the node waited
   * for is ahead of ours, and the rule (asked then) grants us when that
   * one goes, so its deletion needs no listing either. */
  bool ahead_grants;
  bool grant_on_delete;
  /* the request */
  int64_t deadline_ms;      /* 0: none */
  int64_t started_ms;       /* when the acquire began */
  int64_t granted_ms;       /* when it was granted */
  int64_t hold_deadline_ms; /* HELD: when its maximum hold runs out (0:
                               none; set at the grant, from l->max_hold_ms) */
  int hold_grace_ms;        /* then, how long its node stays (STOPPING) for
                               the holder to stop (l->max_hold_grace_ms) */
  int64_t stop_deadline_ms; /* STOPPING: when the node goes anyway */
  bool try_once;
  zkl_target acq;
  zkl_target rel;
  /* how it ended (end_locked) */
  enum { END_FAIL, END_LOST, END_RELEASED, END_CLOSED } why;
  int code;          /* END_FAIL, END_RELEASED: status; END_LOST: reason */
  zkl_call **direct; /* END_LOST: where the timer thread's notices go (the
                        lease's, the maximum hold's) */
};

static inline zkl_session *sess(const zkl_attempt *att) { return att->l->s; }

static inline bool acquiring(zkl_att_state st) {
  return st >= ZKL_AS_PREPARING && st <= ZKL_AS_SUSPENDED;
}

/* Whether the attempt's nodes are one per part, made together. */
static inline bool zkl__together(const zkl_attempt *att) {
  return att->l->recipe->make == ZKL_MAKE_PARTS_TOGETHER;
}

/* engine.c: every transition (file and line for the trace and the
 * diagram's check). */
void zkl__att_go_locked(zkl_attempt *att, zkl_att_state to, const char *file,
                        int line);
#define GO(att, to) zkl__att_go_locked((att), (to), __FILE__, __LINE__)
/* engine.c: ends an attempt (why: END_*, code); the one triage of a
 * failed reply; a lost connection (a try-once fails); a request the
 * client refused (undoes zkl__attempt_req_begin_locked, returns rc); a
 * failed acquire told once its requests settled; a fresh prefix; a
 * release that found the node gone. */
void zkl__att_end_locked(zkl_attempt *att, int why, int code);
void zkl__att_triage_locked(zkl_attempt *att, int rc);
void zkl__att_suspend_locked(zkl_attempt *att);
int zkl__att_req_refused_locked(zkl_attempt *att, int rc);
void zkl__att_maybe_deliver_locked(zkl_attempt *att);
int zkl__att_make_prefix(zkl_attempt *att);
void zkl__att_lost_at_release_locked(zkl_attempt *att);
/* engine.c: the replies of the attempt's requests. */
extern const zkl_io_ops *const zkl__att_io_ops;

/* together.c: what each state does for nodes made together, as a table
 * the recipe names (zkl_recipe.together), so that engine.c, which calls
 * it, and together.c, which calls engine.c, are no circle. */
struct zkl_together_ops {
  void (*create_locked)(zkl_attempt *att);  /* entering CREATING */
  void (*recover_locked)(zkl_attempt *att); /* RECOVERING */
  void (*parts_locked)(zkl_attempt *att);   /* PARTS */
  void (*release_locked)(zkl_attempt *att); /* RELEASING */
  void (*end_locked)(zkl_attempt *att);     /* ENDING */
  void (*ended_locked)(zkl_attempt *att);   /* ENDED */
  /* The part's name whose queue needs the parent at path. */
  const char *(*name_under)(const zkl_attempt *att, const char *path);
  /* Replies: RECOVERING's listings and getData; PARTS' token. */
  void (*on_listing_locked)(zkl_attempt *att, const zkl_reply *rp);
  void (*on_found_locked)(zkl_attempt *att, const zkl_reply *rp);
  void (*on_token_locked)(zkl_attempt *att, const zkl_reply *rp);
  /* Sends the token's getData again (after a lost reply). */
  int (*send_token_locked)(zkl_attempt *att);
};

static inline const struct zkl_together_ops *
zkl__together_of(const zkl_attempt *att) {
  return att->l->recipe->together;
}

/* Whether part's release keeps its node: its whole deletes them all. */
static inline bool zkl__together_kept(const zkl_lock *part) {
  return part->whole && part->whole->att &&
         part->whole->recipe->make == ZKL_MAKE_PARTS_TOGETHER &&
         part->whole->att->deleting_parts;
}

#endif /* ZKL_ATTEMPT_H */
