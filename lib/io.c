/*
 * io.c - the engine's requests: creates, listings, reads and deletes of
 * queue nodes. Each is sent for an owner (an attempt, opaque here) and a
 * round, and its completion hands one zkl_reply to the owner's handler.
 * Nothing here decides anything: that is the state machine's job.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "io.h"

static void reply_locked(zkl_req *r, zkl_reply *rp) {
  const zkl_io_ops *ops = r->item;
  rp->kind = r->kind;
  rp->round = r->round;
  rp->path = r->path;
  ops->replied_locked(r->owner, rp);
}

static void string_done(int rc, const char *value, const struct Stat *stat,
                        const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_reply rp = {0};
  rc = zkl__enter_req_locked(r, rc);
  rp.rc = rc;
  rp.value = value;
  rp.stat = stat;
  reply_locked(r, &rp);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void strings_done(int rc, const struct String_vector *children,
                         const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_reply rp = {0};
  rc = zkl__enter_req_locked(r, rc);
  rp.rc = rc;
  rp.children = children;
  reply_locked(r, &rp);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void data_done(int rc, const char *value, int len,
                      const struct Stat *stat, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_reply rp = {0};
  rc = zkl__enter_req_locked(r, rc);
  rp.rc = rc;
  rp.value = value;
  rp.len = len;
  rp.stat = stat;
  reply_locked(r, &rp);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void void_done(int rc, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_reply rp = {0};
  rc = zkl__enter_req_locked(r, rc);
  rp.rc = rc;
  reply_locked(r, &rp);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

/* A refusal of the client, at the call: our codes. */
static int refusal(int rc) {
  if (rc == ZINVALIDSTATE)
    return ZKL_EEXPIRED;
  if (rc == ZMARSHALLINGERROR || rc == ZSYSTEMERROR)
    return ZKL_ENOMEM;
  return rc;
}

static zkl_req *new_req_locked(zkl_session *s, int kind, const char *path,
                               const zkl_io_ops *ops, void *owner,
                               unsigned round) {
  zkl_req *r = zkl__req_new_locked(s, kind);
  if (!r)
    return NULL;
  if (!(r->path = strdup(path))) {
    zkl__req_abort_locked(r);
    return NULL;
  }
  r->item = (void *)ops;
  r->owner = owner;
  r->round = round;
  return r;
}

/* Finishes a send: ZKL_OK, or the request undone and the refusal. */
static int sent_locked(zkl_req *r, int rc) {
  if (rc == ZOK)
    return ZKL_OK;
  zkl__req_abort_locked(r);
  return refusal(rc);
}

int zkl__io_create_locked(zkl_session *s, int kind, const char *path,
                          const char *data, int len,
                          const struct ACL_vector *acl, int mode,
                          const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  return sent_locked(r, zoo_acreate2(s->zh, path, data, len, acl, mode,
                                     string_done, r));
}

int zkl__io_list_locked(zkl_session *s, int kind, const char *path,
                        const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  return sent_locked(r, zoo_aget_children(s->zh, path, 0, strings_done, r));
}

int zkl__io_get_locked(zkl_session *s, int kind, const char *path,
                       const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  return sent_locked(r, zoo_aget(s->zh, path, 0, data_done, r));
}

int zkl__io_delete_locked(zkl_session *s, int kind, const char *path,
                          const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  return sent_locked(r, zoo_adelete(s->zh, path, -1, void_done, r));
}
