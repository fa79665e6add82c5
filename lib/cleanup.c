/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cleanup.c - what the session owes the server: deletions of nodes nobody
 * wants any more, when they could not be done at once (the connection was
 * down, or dropped on the way). Each job is retried after every reconnect
 * until it succeeds or the session ends, since the end of the session takes
 * ephemeral nodes with it (rule 7 of docs/recipe.md: clear local state only
 * after that; CURATOR-678 lost every later acquire by clearing first).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "session.h"

typedef struct zkl_cleanup {
  zkl_link link; /* in s->cleanups.jobs */
  enum {
    CLEAN_DELETE,       /* delete path */
    CLEAN_DELETE_PREFIX /* delete children of path starting with prefix */
  } kind;
  char *path;
  char prefix[ZKL_PREFIX_MAX];
  bool inflight;
} zkl_cleanup;

unsigned zkl__cleanups_count_locked(const zkl_session *s) {
  return zkl__list_length(&s->cleanups.jobs);
}

static void job_free_locked(zkl_session *s, zkl_cleanup *job) {
  zkl__list_remove(&job->link);
  free(job->path);
  free(job);
  if (zkl__list_empty(&s->cleanups.jobs) && s->cleanups.drained_locked)
    s->cleanups.drained_locked(s);
}

static void job_run_locked(zkl_session *s, zkl_cleanup *job);

static void job_finish_locked(zkl_session *s, zkl_cleanup *job, int rc) {
  job->inflight = false;
  if (zkl__is_connection_loss(rc) && !s->dead && !s->closed) {
    if (s->connected)
      job_run_locked(s, job); /* the client already reconnected */
    return;                   /* else retried on the next reconnect */
  }
  if (rc != ZOK && rc != ZNONODE && !zkl__is_session_over(rc))
    zkl__log("cleanup of %s failed: %s; giving up", job->path, zerror(rc));
  job_free_locked(s, job);
}

static void deleted_locked(zkl_req *r, const zkl_answer *a) {
  job_finish_locked(r->s, r->owner, a->rc);
}

static void listed_locked(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  zkl_cleanup *job = r->owner;
  int i;
  if (a->rc == ZOK) {
    char path[ZKL_PATH_MAX];
    size_t plen = strlen(job->prefix);
    for (i = 0; i < a->children->count; i++) {
      if (strncmp(a->children->data[i], job->prefix, plen) != 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", job->path, a->children->data[i]);
      zkl__cleanup_delete_locked(s, path);
    }
  }
  job_finish_locked(s, job, a->rc);
}

static void ordered_locked(void *owner, const zkl_reply *rp) {
  (void)owner; /* any answer will do: the listing behind it decides */
  (void)rp;
}
static const zkl_io_ops order_ops = {ordered_locked};

static void job_run_locked(zkl_session *s, zkl_cleanup *job) {
  zkl_req *r;
  int rc;
  if (job->inflight || !s->connected || s->dead || s->closed)
    return;
  /* The nodes of a create whose reply was lost: listed behind a write, so
   * that the create, if it is ever applied, is in the listing (io.h,
   * zkl__io_order_locked). Refused, the listing goes anyway: it fails the
   * same way, and the job runs again at the next reconnect. */
  if (job->kind == CLEAN_DELETE_PREFIX)
    (void)zkl__io_order_locked(s, ZKL_RQ_CLEANUP, &order_ops, NULL, 0);
  r = zkl__req_new_locked(s, ZKL_RQ_CLEANUP);
  if (!r)
    return; /* retried at the next reconnect */
  r->owner = job;
  switch (job->kind) {
  case CLEAN_DELETE:
    r->answered_locked = deleted_locked;
    zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
    rc = zoo_adelete(s->zh, job->path, -1, zkl__on_void, r);
    break;
  default:
    r->answered_locked = listed_locked;
    rc = zoo_aget_children(s->zh, job->path, 0, zkl__on_strings, r);
    break;
  }
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    /* Refused at once. A lost connection waits for the reconnect. */
    if (!zkl__is_connection_loss(rc))
      job_finish_locked(s, job, rc);
    return;
  }
  job->inflight = true;
}

static zkl_cleanup *job_new_locked(zkl_session *s, int kind, const char *path) {
  zkl_cleanup *job;
  if (s->dead || s->closed)
    return NULL; /* the session's end removes its ephemeral nodes */
  job = calloc(1, sizeof *job);
  if (!job)
    return NULL;
  job->kind = kind;
  if (!(job->path = strdup(path))) {
    free(job);
    return NULL;
  }
  zkl__list_push(&s->cleanups.jobs, &job->link);
  return job;
}

void zkl__cleanup_delete_locked(zkl_session *s, const char *path) {
  zkl_cleanup *job = job_new_locked(s, CLEAN_DELETE, path);
  if (job)
    job_run_locked(s, job);
}

void zkl__cleanup_prefix_locked(zkl_session *s, const char *parent,
                                const char *prefix) {
  zkl_cleanup *job = job_new_locked(s, CLEAN_DELETE_PREFIX, parent);
  if (!job)
    return;
  snprintf(job->prefix, sizeof job->prefix, "%s", prefix);
  job_run_locked(s, job);
}

void zkl__cleanups_run_locked(zkl_session *s) {
  zkl_link *n, *next;
  for (n = s->cleanups.jobs.next; n != &s->cleanups.jobs; n = next) {
    next = n->next;
    job_run_locked(s, zkl__container_of(n, zkl_cleanup, link));
  }
}

/* Forgets the jobs that wait for a reconnect. One whose request is in
 * flight stays: its completion comes (with ZSESSIONEXPIRED, say) and frees
 * it, seeing the session over. */
void zkl__cleanups_drop_locked(zkl_session *s) {
  zkl_link *n, *next;
  for (n = s->cleanups.jobs.next; n != &s->cleanups.jobs; n = next) {
    zkl_cleanup *job = zkl__container_of(n, zkl_cleanup, link);
    next = n->next;
    if (!job->inflight)
      job_free_locked(s, job);
  }
}
