/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin.c - the calls of the agent that block in the library: zkl_name_break,
 * _revoke, _list, _find and _get_leader, asked by a client on the agent's
 * session (ZKL_MSG_BREAK .. ZKL_MSG_LEADER of wire.h).
 *
 * Each runs on a detached thread of its own, never on the loop (it serves
 * every client, and a break waits out its grace) nor on a library callback
 * thread (where the library refuses to block: ZKL_EDEADLK). serve.c bounds
 * how many run at once, per client and in all, and waits for them before it
 * closes the session they use. The thread builds the reply frame and hands
 * it to call->done (serve.c's server_admin_done), which queues it for the client through the
 * same out-queue and wake pipe the library's callbacks use, or drops it
 * when the client went away meanwhile (it names the client by id, never by
 * pointer, as the callbacks name their locks).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "wire.h"

void admin_free(admin_call *call) {
  if (!call)
    return;
  free(call->name);
  free(call->node);
  free(call);
}

admin_call *admin_read(zkl_rframe *f) {
  admin_call *call;
  const char *name = zkl__wire_get_str(f), *node = "";
  int32_t grace = 0, max_nodes = 0;
  if (f->type == ZKL_MSG_BREAK || f->type == ZKL_MSG_REVOKE)
    node = zkl__wire_get_str(f);
  if (f->type == ZKL_MSG_BREAK)
    grace = zkl__wire_get_i32(f);
  if (f->type == ZKL_MSG_FIND)
    max_nodes = zkl__wire_get_i32(f);
  if (!zkl__wire_done(f))
    return NULL;
  if (!(call = calloc(1, sizeof *call)) || !(call->name = strdup(name)) ||
      (*node && !(call->node = strdup(node)))) {
    admin_free(call);
    return NULL;
  }
  call->type = f->type;
  call->req = f->request;
  call->grace_ms = grace;
  call->max_nodes = max_nodes;
  return call;
}

int admin_action(const admin_call *call) {
  return call->type == ZKL_MSG_BREAK || call->type == ZKL_MSG_REVOKE
             ? POLICY_BREAK
             : POLICY_LIST;
}

bool admin_allowed(admin_call *call, const policy *p, uid_t uid, gid_t gid) {
  char under[ZKL_NAME_MAX + 2];
  int action = admin_action(call);
  if (policy_allows(p, action, call->name, uid, gid))
    return true;
  /* A find under "jobs" is what `zklock --list jobs/` asks, and the rule
   * "list jobs/" covers every name it finds there but "jobs" itself (a
   * lock of that name, if there is one), which the answer then leaves
   * out. "" is every name, "/" every full path: no prefix of one another. */
  if (call->type != ZKL_MSG_FIND || !call->name[0] ||
      snprintf(under, sizeof under, "%s/", call->name) >= (int)sizeof under ||
      !policy_allows(p, action, under, uid, gid))
    return false;
  call->hide_prefix = true;
  return true;
}

/* zkl_name_break's report, kept for the reply. */
typedef struct broken {
  int n, cap;
  int32_t *rc;
  char **node;
  bool failed;
} broken;

static void on_broken(zkl_session *s, int rc, const char *node, void *arg) {
  broken *b = arg;
  (void)s;
  if (b->failed)
    return;
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 8;
    int32_t *r = realloc(b->rc, sizeof *r * (size_t)cap);
    char **v = r ? realloc(b->node, sizeof *v * (size_t)cap) : NULL;
    if (r)
      b->rc = r;
    if (!v) {
      b->failed = true;
      return;
    }
    b->node = v;
    b->cap = cap;
  }
  if (!(b->node[b->n] = strdup(node))) {
    b->failed = true;
    return;
  }
  b->rc[b->n++] = rc;
}

static void reply_break(admin_call *call, zkl_wbuf *w) {
  broken b = {0};
  int rc = zkl_name_break(call->s, call->name, call->node, call->grace_ms,
                          on_broken, &b), i;
  zkl__wire_i32(w, rc);
  zkl__wire_i32(w, b.n);
  for (i = 0; i < b.n; i++) {
    zkl__wire_i32(w, b.rc[i]);
    zkl__wire_str(w, b.node[i]);
    free(b.node[i]);
  }
  free(b.rc);
  free(b.node);
}

static void reply_list(admin_call *call, zkl_wbuf *w) {
  zkl_participant *list = NULL;
  int count = 0, i;
  int rc = zkl_name_list(call->s, call->name, &list, &count);
  zkl__wire_i32(w, rc);
  if (rc != ZKL_OK)
    return;
  zkl__wire_i32(w, count);
  for (i = 0; i < count; i++) {
    const zkl_participant *p = &list[i];
    zkl__wire_str(w, p->node);
    zkl__wire_i64(w, p->token);
    zkl__wire_i64(w, p->queued_ms);
    zkl__wire_str(w, p->host);
    zkl__wire_i64(w, p->pid);
    zkl__wire_i64(w, p->started_ms);
    zkl__wire_str(w, p->info);
    zkl__wire_str(w, p->kind);
    zkl__wire_i32(w, p->holds);
    zkl__wire_i32(w, p->limit);
    zkl__wire_str(w, p->lock);
    zkl__wire_i32(w, p->repeated);
  }
  zkl_name_list_free(list);
}

static bool has_name(char **names, int count, const char *name) {
  int i;
  for (i = 0; i < count; i++)
    if (strcmp(names[i], name) == 0)
      return true;
  return false;
}

static void reply_find(admin_call *call, zkl_wbuf *w) {
  char **names = NULL;
  int count = 0, i;
  bool truncated = false;
  int rc = zkl_name_find(call->s, call->name, call->max_nodes, &names, &count,
                         &truncated);
  zkl__wire_i32(w, rc);
  if (rc != ZKL_OK)
    return;
  zkl__wire_i32(w, truncated);
  zkl__wire_i32(w, count - (call->hide_prefix && has_name(names, count,
                                                          call->name)));
  for (i = 0; i < count; i++)
    if (!call->hide_prefix || strcmp(names[i], call->name) != 0)
      zkl__wire_str(w, names[i]);
  zkl_name_find_free(names, count);
}

static void reply_leader(admin_call *call, zkl_wbuf *w) {
  char id[ZKL_PATH_MAX * 2];
  int64_t token = 0;
  int rc = zkl_name_get_leader(call->s, call->name, id, sizeof id, &token);
  zkl__wire_i32(w, rc);
  if (rc != ZKL_OK)
    return;
  zkl__wire_str(w, id);
  zkl__wire_i64(w, token);
}

static void *admin_thread(void *arg) {
  admin_call *call = arg;
  zkl_wbuf w = {0};
  zkl__wire_begin(&w, ZKL_MSG_REPLY, call->req);
  switch (call->type) {
  case ZKL_MSG_BREAK:
    reply_break(call, &w);
    break;
  case ZKL_MSG_REVOKE:
    zkl__wire_i32(&w, zkl_name_revoke(call->s, call->name, call->node));
    break;
  case ZKL_MSG_LIST:
    reply_list(call, &w);
    break;
  case ZKL_MSG_FIND:
    reply_find(call, &w);
    break;
  case ZKL_MSG_LEADER:
    reply_leader(call, &w);
    break;
  }
  if (!zkl__wire_end(&w)) {
    /* Too big for a frame (or no memory): the rc alone says so. */
    zkl__wire_begin(&w, ZKL_MSG_REPLY, call->req);
    zkl__wire_i32(&w, ZKL_ENOMEM);
  }
  call->done(call->srv, call, &w);
  return NULL;
}

int admin_start(admin_call *call) {
  pthread_t t;
  pthread_attr_t attr;
  int rc;
  if (pthread_attr_init(&attr) != 0)
    return ZKL_ESYSTEM;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  rc = pthread_create(&t, &attr, admin_thread, call);
  pthread_attr_destroy(&attr);
  return rc == 0 ? ZKL_OK : ZKL_ESYSTEM;
}
