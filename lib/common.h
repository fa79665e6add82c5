/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common.h - what every file of lib/ may use: intrusive lists, the clock,
 * condition variables, logging, the completion-thread mark, and the pure
 * logic of names (lock names, node names, sequence numbers, queue order,
 * owner descriptions). Nothing here knows a session or a lock.
 */
#ifndef ZKL_COMMON_H
#define ZKL_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zklock.h"
#include "kinds.h"

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

/* -------------------------------------------------------------------- time */

int64_t zkl__now_ms(void); /* CLOCK_MONOTONIC */
/* Initializes a condition variable that measures timed waits on
 * CLOCK_MONOTONIC. */
int zkl__cond_init(pthread_cond_t *c);
/* Waits on c until signalled or until the monotonic deadline (ms). */
void zkl__cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m,
                          int64_t deadline_ms);

/* ----------------------------------------------------------------- logging */

void zkl__log(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void zkl__zk_log(const char *line); /* the ZooKeeper client's log callback */

/* ----------------------------------------------------------------- threads */

/* Marks the calling thread as a ZooKeeper completion thread (or the timer
 * thread): every callback the client runs calls it first. Blocking calls
 * consult zkl__on_zk_thread() and fail with ZKL_EDEADLK instead of waiting
 * for the thread they are on. */
void zkl__mark_zk_thread(void);
bool zkl__on_zk_thread(void);

/* ------------------------------------------------------------------ names */

/* ZKL_OK or ZKL_EINVAL: see zkl_lock_new() for the rules. */
int zkl__validate_name(const char *name);
/* Whether path is top or under it ("/a" is under "/a", "/ab" is not). */
bool zkl__path_is_under(const char *path, const char *top);
/* Whether every address of every host of the connect string refuses a TCP
 * connection within wait_ms (a host that does not resolve, an accept or
 * silence: no). Blocks up to wait_ms; takes no lock. refused.c */
bool zkl__every_server_refuses(const char *hosts, int wait_ms);
/* The znode of a valid name, with "/dir" after it when dir is not NULL: the
 * name itself when it is a full path (it starts with '/'), else under
 * ZKL_ROOT. len: ZKL_PATH_MAX is room for any. */
void zkl__name_path(char *buf, size_t len, const char *name, const char *dir);
/* Where queue's parents to create start: after ZKL_ROOT, which is made open
 * to all, for a queue under it; after the tree's root for any other. */
size_t zkl__first_parent(const char *queue);

/* "_c_<id>-" then a recipe's marker: the unique prefix of one attempt's
 * node, shaped as Curator's protected mode shapes it ("_c_", an id without
 * a dash, "-"), with 16 hex digits of randomness for the id where Curator
 * writes a uuid (36 bytes): every listing is shorter. */
#define ZKL_ID_HEX 16     /* hex digits of the id */
#define ZKL_PREFIX_MAX 64 /* room for any prefix + NUL */
/* Writes the prefix with marker into buf (ZKL_PREFIX_MAX bytes). ZKL_OK or
 * ZKL_ESYSTEM (no random bytes). */
int zkl__make_prefix_with(char *buf, const char *marker);
/* The most a recipe's own tag (zkl_recipe.node_tag_locked) takes in a
 * node's name, with its NUL: "_c_<id>-<tag><marker>" stays within
 * ZKL_PREFIX_MAX. */
#define ZKL_TAG_MAX 24
/* The mutex's prefix, "_c_<id>-lock-" (ZKL_PREFIX_LEN bytes + NUL). */
#define ZKL_PREFIX_LEN (3 + ZKL_ID_HEX + 1 + 5)
int zkl__make_prefix(char *buf);

/* 1 when name[0..n) ends like the node of a queue recipe: a marker that
 * libzklock speaks or recognises, then a sequence suffix as the server
 * writes it. A lock name segment that does is refused. */
int zkl__is_sequence_node(const char *name, size_t n);

/* The sequence number of a node of the name's own queue (any node kind of
 * kinds.c in that place), exactly as the server writes it: 1 and *seq, or
 * 0 when the name is not such a node. */
int zkl__parse_seq(const char *child, int32_t *seq);

/* Serial-number arithmetic (RFC 1982): to - from, taken modulo 2^32; < 0
 * when `to` comes first. Right while the live nodes of one parent span
 * fewer than 2^31 sequence numbers. */
static inline int32_t zkl__seq_distance(int32_t from, int32_t to) {
  return (int32_t)((uint32_t)to - (uint32_t)from);
}

/* A listing of one parent, as a queue: the nodes of the kinds asked for in
 * order, first holder first. Order is by sequence number in serial-number
 * arithmetic relative to the contender's own number (or the first node's
 * when there is none), so it stays right across the signed 32-bit wrap of
 * the parent's cversion; names break ties. */
typedef struct zkl_queue_entry {
  const char *name; /* borrowed from the listing */
  int32_t seq;
  int kind; /* its node kind: an index in zkl__node_kinds */
} zkl_queue_entry;

typedef struct zkl_queue {
  zkl_queue_entry *entries; /* count of them, in queue order */
  int count;
  int own;         /* index of the contender's node in entries, or -1 */
  int *duplicates; /* indexes in the listing of other nodes that carry */
  int n_duplicates;/* the contender's prefix (a retried create's) */
} zkl_queue;

/* Builds q from names[0..count). own (may be NULL) is the contender's node,
 * prefix (may be NULL) its unique prefix. ZKL_OK or ZKL_ENOMEM; free with
 * zkl__queue_free(). */
int zkl__queue_build(char *const *names, int count, const zkl_nodes *which,
                     const char *own, const char *prefix, zkl_queue *q);
/* The same, but only up to own (the nodes ahead of it, and own): what a
 * rule looks at (every rule looks ahead only), without sorting a long
 * queue's tail on every listing. Everything when own is NULL. */
int zkl__queue_build_ahead(char *const *names, int count,
                           const zkl_nodes *which, const char *own,
                           const char *prefix, zkl_queue *q);
void zkl__queue_free(zkl_queue *q);

/* --------------------------------------------------- owner descriptions */

/* Fills buf with the owner description written into each lock node:
 * "host=<h>\npid=<p>\nstart=<process start, unix ms>\n"; the lock adds
 * "info=<text>\n" when it has one, and its recipe a line of its own
 * (zkl_recipe.owner_line: a semaphore's lease node says its contender's
 * limit, under its node kind's data_key, kinds.h). Returns the length. */
int zkl__owner_data(char *buf, size_t len);
/* ZKL_OK for NULL or one line of at most ZKL_INFO_MAX printable bytes. */
int zkl__validate_info(const char *info);
typedef struct zkl_owner {
  char host[128];
  long pid;
  int64_t start_ms;
  char info[ZKL_INFO_MAX + 1];
} zkl_owner;
/* Reads an owner description (unknown fields stay empty or 0) of a node of
 * kind (an index in zkl__node_kinds; -1: unknown): a line of its kind's
 * data_key goes to its data_fact hook, into *facts (may be NULL). */
void zkl__parse_owner(const char *data, int len, int kind, zkl_owner *out,
                      zkl_node_facts *facts);

/* ----------------------------------------------------------------- ACLs */

/* The ACL of the nodes a lock creates (ZKL_ACL_*): parents below /locks
 * and lock nodes. */
const struct ACL_vector *zkl__acl(int mode);

#endif /* ZKL_COMMON_H */
