/* SPDX-License-Identifier: Apache-2.0 */
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

static void answered_locked(zkl_req *r, const zkl_answer *a) {
  const zkl_io_ops *ops = r->item;
  zkl_reply rp = {0};
  rp.kind = r->kind;
  rp.round = r->round;
  rp.path = r->path;
  rp.rc = a->rc;
  rp.value = a->value;
  rp.len = a->len;
  rp.stat = a->stat;
  rp.children = a->children;
  ops->replied_locked(r->owner, &rp);
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
  r->answered_locked = answered_locked;
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
  zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
  return sent_locked(r, zoo_acreate2(s->zh, path, data, len, acl, mode,
                                     zkl__on_string, r));
}

int zkl__io_list_locked(zkl_session *s, int kind, const char *path,
                        const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  return sent_locked(r, zoo_aget_children(s->zh, path, 0, zkl__on_strings, r));
}

int zkl__io_get_locked(zkl_session *s, int kind, const char *path,
                       const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  return sent_locked(r, zoo_aget(s->zh, path, 0, zkl__on_data, r));
}

int zkl__io_set_locked(zkl_session *s, int kind, const char *path,
                       const char *data, int len, const zkl_io_ops *ops,
                       void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
  return sent_locked(r,
                     zoo_aset(s->zh, path, data, len, -1, zkl__on_stat, r));
}

int zkl__io_sync_locked(zkl_session *s, int kind, const char *path,
                        const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  return sent_locked(r, zoo_async(s->zh, path, zkl__on_value, r));
}

int zkl__io_order_locked(zkl_session *s, int kind, const zkl_io_ops *ops,
                         void *owner, unsigned round) {
  zoo_op_t op; /* serialized by the call; only the result outlives it */
  zkl_req *r = new_req_locked(s, kind, "/", ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
  zoo_check_op_init(&op, "/", -1);
  return sent_locked(r, zkl__safe_amulti(s->zh, 1, &op, &r->one_result,
                                         zkl__on_void, r));
}

int zkl__io_delete_locked(zkl_session *s, int kind, const char *path,
                          const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
  return sent_locked(r, zoo_adelete(s->zh, path, -1, zkl__on_void, r));
}
