/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kinds.h - the registry of lock kinds (kinds.c): what every node under
 * /locks/NAME is, and which kinds may share a name.
 *
 * A lock name is one lock, whatever kinds meet on it. Every node a
 * contender of any kind writes (ours, Curator's, kazoo's) is listed once
 * here, with where it lives, which family it belongs to and whether it is
 * a reader. Everything that reads a queue (the engine, revocation,
 * zkl_name_list(), who-leads, the command's views) asks this table and
 * writes no marker of its own.
 *
 * The families, and what happens when they meet on one name:
 *   lock      the mutex and both sides of a read/write lock: one queue of
 *             the name's children. A mutex node is a writer that nobody
 *             reads: it excludes writers and readers, and readers wait for
 *             it (kazoo's Lock and WriteLock write the same nodes, so this
 *             is kazoo's rule too).
 *   election  candidates under the name's children.
 *   semaphore a gate (NAME/locks) and leases (NAME/leases).
 * Two families never share a name: the contender that comes second is
 * refused with ZKL_EKIND, checked in the listings its acquire makes (see
 * zkl__kinds_clash below for the rule and its races).
 */
#ifndef ZKL_KINDS_H
#define ZKL_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where under /locks/NAME a node lives. */
typedef enum zkl_place {
  ZKL_PLACE_NAME,   /* /locks/NAME itself */
  ZKL_PLACE_GATE,   /* /locks/NAME/locks, a semaphore's gate */
  ZKL_PLACE_LEASES, /* /locks/NAME/leases, a semaphore's leases */
  ZKL_PLACE_COUNT
} zkl_place;

/* What everyone who reads the places needs to know of each (kinds.c's
 * table, indexed by zkl_place). */
typedef struct zkl_place_info {
  const char *dir;  /* its child name under /locks/NAME; NULL: the name
                       itself */
  int list_order;   /* where its nodes come in zkl_name_list()' list:
                       0 first */
  const char *word; /* what it is, for messages: "semaphore's gate" */
  bool is_gate;     /* its first node's owner holds the gate: a contender
                       waiting for a lease (zkl__kinds_holders' gate_session) */
} zkl_place_info;
extern const zkl_place_info zkl__places[ZKL_PLACE_COUNT];

typedef enum zkl_family {
  ZKL_FAMILY_LOCK,
  ZKL_FAMILY_ELECTION,
  ZKL_FAMILY_SEMAPHORE
} zkl_family;

/* What a reader of the queues knows of one node besides its name: from its
 * data and its Stat. */
typedef struct zkl_node_facts {
  int limit;       /* a lease node's own limit (its name's, else "limit=N"
                      in its data), 0 unknown: Curator's lease nodes carry
                      neither */
  int64_t session; /* its ephemeralOwner */
} zkl_node_facts;

struct zkl_queue;

/* What a hold rule may know besides the queue: every rule looks only at
 * the nodes ahead of the one it judges, and at that node's facts. */
typedef struct zkl_hold_ctx {
  const zkl_node_facts *facts; /* facts[i] of entry i; NULL: none known */
  const bool *holds;   /* holds[j] of every entry j ahead of the one
                          judged, by its own kind's rule; NULL: each rule
                          that needs one asks the rule of that entry */
  int64_t gate_session; /* the owner of the gate's first node; 0: none */
} zkl_hold_ctx;

/* A kind's hold rule: whether entry i of q (a queue of one place) holds.
 * Pure, and the one place each rule is written: zkl__kinds_holders() asks
 * it of every node, and each recipe's rule asks it of its own node
 * (keeping only whom it waits for, and its refusals).
 *   first   the first node holds (a mutex, a writer, an election's
 *           candidate: whoever is first leads)
 *   reader  a reader holds with only readers ahead of it (a mutex node is
 *           a writer nobody reads), or when it rides on a node ahead that
 *           holds (a downgrade, ZKL_RIDER_TAG below)
 *   lease   a lease node holds with fewer lease nodes ahead of it than its
 *           own limit (f->limit). With no limit known, it holds unless its
 *           session owns the gate's first node: a contender waiting for a
 *           lease (Curator's or ours) holds the gate meanwhile. */
typedef bool (*zkl_hold_rule)(const struct zkl_queue *q, int i,
                              const zkl_node_facts *f, const zkl_hold_ctx *c);
bool zkl__holds_first(const struct zkl_queue *q, int i,
                      const zkl_node_facts *f, const zkl_hold_ctx *c);
bool zkl__holds_reader(const struct zkl_queue *q, int i,
                       const zkl_node_facts *f, const zkl_hold_ctx *c);
bool zkl__holds_lease(const struct zkl_queue *q, int i,
                      const zkl_node_facts *f, const zkl_hold_ctx *c);

/* One kind of node: a marker before the sequence suffix, in one place. */
typedef struct zkl_node_kind {
  const char *marker;
  zkl_place place;
  zkl_family family;
  bool reader;      /* shares the lock with other readers */
  const char *kind; /* the kind of lock it belongs to, for messages:
                       "mutex", "read lock", "election", ... */
  const char *lock; /* the kind of lock its contender takes, as
                       zkl_participant.lock says it: "mutex", "rwlock",
                       "election", "semaphore" */
  const char *word; /* the word `zklock --list` prints for it */
  bool keeps_data;  /* its data is read as it is by others (an election
                       candidate's id: Curator's LeaderLatch reads it so),
                       so a revoke or a break never writes other data into
                       it: they write it again as it is, and the new
                       version alone asks its contender to let go */
  zkl_hold_rule holds; /* who holds, as a listing tells; NULL: never (a
                          gate's nodes queue for the gate) */
  /* A fact of the node that its name says (a lease node's limit,
   * ZKL_LIMIT_TAG below). NULL: none. */
  void (*name_fact)(const char *child, zkl_node_facts *f);
  /* A fact of the node that its data says, as "<data_key>=<value>\n" in
   * the owner description (an older libzklock's lease node says its limit
   * there only): data_fact reads value (len bytes, not NUL-terminated);
   * what the name said comes first. The recipe that writes the line uses
   * the same key. NULL: none. */
  const char *data_key;
  void (*data_fact)(const char *value, size_t len, zkl_node_facts *f);
} zkl_node_kind;

/* The node kinds, indexes in zkl__node_kinds. */
enum {
  ZKL_NODE_MUTEX,      /* _c_<id>-lock-: ours and Curator's mutex (<id>: our
                          16 hex digits, or Curator's uuid) */
  ZKL_NODE_KAZOO_LOCK, /* <uuid>__lock__: kazoo's Lock and WriteLock */
  ZKL_NODE_WRITE,      /* _c_<id>-__WRIT__: ours and Curator's */
  ZKL_NODE_READ,       /* _c_<id>-__READ__: ours and Curator's */
  ZKL_NODE_KAZOO_READ, /* <uuid>__rlock__: kazoo's ReadLock */
  ZKL_NODE_LATCH,      /* _c_<id>-latch-: ours and Curator's LeaderLatch */
  ZKL_NODE_GATE,       /* locks/_c_<id>-lock-: a semaphore's gate */
  ZKL_NODE_LEASE,      /* leases/_c_<id>-lease-: a semaphore's lease */
  ZKL_NODE_COUNT
};
extern const zkl_node_kind zkl__node_kinds[ZKL_NODE_COUNT];
extern const int zkl__node_kind_count;

/* Whether a revoke or a break must leave the data of the contender node
 * child (its last segment) as it is (keeps_data). */
bool zkl__node_keeps_data(const char *child);

/* The child names of /locks/NAME that are a place of their own. */
const char *zkl__place_dir(zkl_place place); /* NULL, "locks", "leases" */
/* The place whose nodes come at position k (0 first) of the list. */
zkl_place zkl__place_listed(int k);

/* Which node kinds a queue takes: those of one place, of the families in
 * a mask (ZKL_FAMILIES_ALL, or 1u << family). */
#define ZKL_FAMILIES_ALL 0x7u
typedef struct zkl_nodes {
  zkl_place place;
  unsigned families;
} zkl_nodes;

/* The node kind of child among which (its index in zkl__node_kinds) and
 * its sequence number, or -1 when child is no node of those. */
int zkl__node_kind_of(const char *child, const zkl_nodes *which, int32_t *seq);

/* Who refuses whom (ZKL_EKIND). Each answers the kind of lock that keeps a
 * contender of family out of the name, or NULL when nothing does.
 *
 * In the queue of the name itself (the lock and election families): the
 * first node decides, when it is of another family. The first is whoever
 * came first: the one that came later yields, and contenders of the
 * first's family wait behind a later one as behind any predecessor (it is
 * about to go).
 *
 * Across places (a semaphore's look at the name itself, the look of a
 * contender of the name at a semaphore's places when its listing shows
 * them): any node of another family there.
 *
 * Why two contenders of different families never both hold: each makes its
 * node, then lists the places of the other. ZooKeeper applies writes one
 * after the other and answers a session's read after that session's own
 * writes, so whichever node was written second, its owner's listing shows
 * the other's, whichever server answers. In one queue both see the same
 * first node; across places both may see the other and both be refused
 * (neither holds). */
const char *zkl__kinds_clash_first(zkl_family family,
                                   const struct zkl_queue *q);
const char *zkl__kinds_clash_any(zkl_family family, zkl_place place,
                                 char *const *children, int count);
/* Whether a listing of the name itself shows a place of its own (a
 * semaphore's locks/ or leases/), which a contender there must look in. */
bool zkl__kinds_has_places(char *const *children, int count);

/* A downgrade (rwlock.c): a reader's node made while its contender's own
 * write side holds names that write node by its id, in a tag before its
 * marker: "_c_<id>-with-<wid>-__READ__<seq>". The write node stays in the
 * queue until the reader lets go, and writers that queued behind it while
 * it held are ahead of the reader's node and wait for it; so that reader
 * holds while the node it names holds, whatever stands between them
 * (zkl__kinds_holders), and whoever breaks or revokes the holders of the
 * name reaches it too. */
#define ZKL_RIDER_TAG "with-"
/* The tag of a reader riding on node (a child name of ours, "_c_<id>-..."),
 * written into buf: its length, or 0 when node carries no id of ours. */
int zkl__rider_tag(const char *node, char *buf, size_t len);
/* Whether child, a reader's node, rides on node (both child names in one
 * queue): its tag names node's id. */
bool zkl__rides_on(const char *child, const char *node);

/* A semaphore's lease node of ours says its contender's limit in its name,
 * before its marker: "_c_<id>-limit<N>-lease-<seq>" (a try-once's,
 * "_c_<id>-limit<N>-try-lease-<seq>"), so that every listing of the
 * leases shows it at no cost: a contender that finds a lease node ahead
 * of its own with another limit is refused (ZKL_ELIMIT, semaphore.c), and
 * zkl__kinds_holders() counts each by its own. Curator's lease nodes say
 * nothing, in their name or their data; those of older libzklock say
 * it in their data only ("limit=N", which a revoke overwrites). */
#define ZKL_LIMIT_TAG "limit"
/* The limit a node's name says (ZKL_LIMIT_TAG), or 0 when it says none. */
int zkl__node_limit(const char *child);

/* Who holds, as a listing tells, by each node's kind's rule (its holds
 * field, above): holds[i] for entry i of q, a queue of one place
 * (zkl__queue_build), facts[i] its facts; gate_session the owner of the
 * gate's first node (0: none). What holds by these rules may not hold by
 * its owner's (contenders that disagree on a limit), and a snapshot may be
 * stale when read. */
void zkl__kinds_holders(const struct zkl_queue *q, const zkl_node_facts *facts,
                        int64_t gate_session, bool *holds);

#endif /* ZKL_KINDS_H */
