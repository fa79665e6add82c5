/*
 * participants.c - who holds a lock and who waits for it, read without
 * taking part: one listing of the lock's parent, then a getData of every
 * lock node, all sent back to back (two round trips in all). The result is
 * a snapshot in queue order; it may be stale by the time it is read.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session.h"

/* The nodes of the name itself, of every family (kinds.c). */
static const zkl_nodes name_nodes = {ZKL_PLACE_NAME, ZKL_FAMILIES_ALL};

typedef struct node_read {
  char *name;
  bool present; /* getData answered */
  int64_t czxid, ctime;
  zkl_owner owner;
} node_read;

typedef struct query {
  zkl_session *s;
  pthread_cond_t cond;
  const char *parent;
  int pending; /* requests out */
  int rc;      /* the first failure */
  node_read *nodes;
  int count;
} query;

static void query_done_one_locked(query *q) {
  if (--q->pending == 0)
    pthread_cond_signal(&q->cond);
}

static void read_done(int rc, const char *value, int len,
                      const struct Stat *stat, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  query *q = r->owner;
  node_read *n = &q->nodes[r->index];
  rc = zkl__enter_req_locked(r, rc);
  if (rc == ZOK) {
    n->present = true;
    n->czxid = stat->czxid;
    n->ctime = stat->ctime;
    zkl__parse_owner(value, len, &n->owner);
  } else if (rc != ZNONODE && !q->rc) {
    q->rc = rc; /* gone since the listing is fine; anything else is not */
  }
  query_done_one_locked(q);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void list_done(int rc, const struct String_vector *children,
                      const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  query *q = r->owner;
  int i;
  rc = zkl__enter_req_locked(r, rc);
  if (rc == ZOK && children->count > 0) {
    q->nodes = calloc((size_t)children->count, sizeof *q->nodes);
    if (!q->nodes)
      q->rc = ZKL_ENOMEM;
  } else if (rc != ZOK && rc != ZNONODE) {
    q->rc = rc; /* no parent: nobody holds or waits */
  }
  for (i = 0; q->nodes && !q->rc && i < children->count; i++) {
    char path[ZKL_PATH_MAX];
    int32_t seq;
    zkl_req *get;
    if (zkl__node_kind_of(children->data[i], &name_nodes, &seq) < 0)
      continue; /* not a node of a queue */
    node_read *n = &q->nodes[q->count];
    if (!(n->name = strdup(children->data[i]))) {
      q->rc = ZKL_ENOMEM;
      break;
    }
    q->count++;
    snprintf(path, sizeof path, "%s/%s", q->parent, n->name);
    get = zkl__req_new_locked(s, ZKL_RQ_QUERY);
    if (!get) {
      q->rc = ZKL_ENOMEM;
      break;
    }
    get->owner = q;
    get->index = q->count - 1;
    rc = zoo_aget(s->zh, path, 0, read_done, get);
    if (rc != ZOK) {
      zkl__req_abort_locked(get);
      q->rc = rc == ZINVALIDSTATE ? ZKL_EEXPIRED : rc;
      break;
    }
    q->pending++;
  }
  query_done_one_locked(q);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

/* Lays the answer out in one allocation: the array, then the strings. */
static int build_result(query *q, zkl_participant **out, int *count) {
  char **names;
  zkl_queue order;
  int present = 0, i, j, rc;
  size_t size;
  char *strings;
  zkl_participant *list;

  names = calloc((size_t)(q->count ? q->count : 1), sizeof *names);
  if (!names)
    return ZKL_ENOMEM;
  for (i = 0; i < q->count; i++)
    if (q->nodes[i].present)
      names[present++] = q->nodes[i].name;
  rc = zkl__queue_build(names, present, &name_nodes, NULL, NULL, &order);
  free(names);
  if (rc != ZKL_OK)
    return rc;
  /* entries[i].name points at the name of the read it came from */
  size = sizeof *list * (size_t)(order.count ? order.count : 1);
  for (i = 0; i < order.count; i++)
    for (j = 0; j < q->count; j++)
      if (q->nodes[j].name == order.entries[i].name) {
        node_read *n = &q->nodes[j];
        size += strlen(q->parent) + 1 + strlen(n->name) + 1 +
                strlen(n->owner.host) + 1 + strlen(n->owner.info) + 1;
      }
  list = malloc(size);
  if (!list) {
    zkl__queue_free(&order);
    return ZKL_ENOMEM;
  }
  strings = (char *)(list + (order.count ? order.count : 1));
  for (i = 0; i < order.count; i++) {
    node_read *n = NULL;
    zkl_participant *p = &list[i];
    for (j = 0; j < q->count && !n; j++)
      if (q->nodes[j].name == order.entries[i].name)
        n = &q->nodes[j];
    p->node = strings;
    strings += sprintf(strings, "%s/%s", q->parent, n->name) + 1;
    p->token = n->czxid;
    p->queued_ms = n->ctime;
    p->host = strcpy(strings, n->owner.host);
    strings += strlen(strings) + 1;
    p->pid = n->owner.pid;
    p->started_ms = n->owner.start_ms;
    p->info = strcpy(strings, n->owner.info);
    strings += strlen(strings) + 1;
    p->kind = zkl__node_kinds[order.entries[i].kind].word;
  }
  *out = list;
  *count = order.count;
  zkl__queue_free(&order);
  return ZKL_OK;
}

int zkl_participants(zkl_session *s, const char *name, zkl_participant **out,
                     int *count) {
  char parent[ZKL_PATH_MAX];
  query q;
  zkl_req *r;
  int rc, i;
  if (!s || !out || !count || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  snprintf(parent, sizeof parent, "%s/%s", ZKL_ROOT, name);
  memset(&q, 0, sizeof q);
  q.s = s;
  q.parent = parent;
  if (pthread_cond_init(&q.cond, NULL) != 0)
    return ZKL_ESYSTEM;
  pthread_mutex_lock(&s->mu);
  rc = zkl__session_usable_locked(s);
  if (rc == ZKL_OK && !(r = zkl__req_new_locked(s, ZKL_RQ_QUERY)))
    rc = ZKL_ENOMEM;
  if (rc == ZKL_OK) {
    r->owner = &q;
    q.pending = 1;
    rc = zoo_aget_children(s->zh, parent, 0, list_done, r);
    if (rc != ZOK) {
      zkl__req_abort_locked(r);
      q.pending = 0;
      rc = rc == ZINVALIDSTATE ? ZKL_EEXPIRED : rc;
    }
  }
  /* Every request completes, answered or not: wait for all of them, since
   * they write into q. */
  while (q.pending > 0)
    pthread_cond_wait(&q.cond, &s->mu);
  if (rc == ZKL_OK)
    rc = q.rc;
  if (rc == ZKL_OK)
    rc = build_result(&q, out, count);
  pthread_mutex_unlock(&s->mu);
  for (i = 0; i < q.count; i++)
    free(q.nodes[i].name);
  free(q.nodes);
  pthread_cond_destroy(&q.cond);
  return rc;
}

void zkl_participants_free(zkl_participant *list) { free(list); }
