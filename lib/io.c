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
  return sent_locked(r,
                     zoo_aset(s->zh, path, data, len, -1, zkl__on_stat, r));
}

int zkl__io_delete_locked(zkl_session *s, int kind, const char *path,
                          const zkl_io_ops *ops, void *owner, unsigned round) {
  zkl_req *r = new_req_locked(s, kind, path, ops, owner, round);
  if (!r)
    return ZKL_ENOMEM;
  return sent_locked(r, zoo_adelete(s->zh, path, -1, zkl__on_void, r));
}

/* ------------------------------------------------------------ zoo_amulti */

/* The C client's zoo_amulti (3.8, and upstream as of 2026) serialises the
 * ops in turn; once one fails its checks (ZINVALIDSTATE: the session is
 * over; ZBADARGUMENTS: a bad path), it skips the checks of every later op
 * but still frees each later op's request path, which was never set: a
 * stale stack value, often the path of an earlier op, and so a double or
 * an invalid free (ASan caught it in CI, a guarded write on a just-expired
 * session). So nothing goes to zoo_amulti that it would refuse: the same
 * checks first, here. What remains is a session that ends between this
 * check and the client's own, a window of a few instructions. */

/* A path as the client accepts it, or stricter: "/" or '/'-separated
 * non-empty segments, none "." or "..", no control character; a trailing
 * '/' or "."/".." as the last segment only for a sequential create (the
 * server appends the number). */
static bool path_ok(const char *path, bool sequential) {
  size_t i, len, seg = 1;
  if (!path || path[0] != '/')
    return false;
  len = strlen(path);
  if (len == 1)
    return true;
  for (i = 1; i <= len; i++) {
    unsigned char c = (unsigned char)path[i];
    if (c == '/' || c == '\0') {
      size_t n = i - seg;
      bool last = c == '\0';
      if (n == 0 && !(last && sequential))
        return false; /* "//", or a trailing '/' */
      if ((n == 1 && path[seg] == '.') ||
          (n == 2 && path[seg] == '.' && path[seg + 1] == '.'))
        if (!(last && sequential))
          return false;
      seg = i + 1;
    } else if (c < 0x20 || c == 0x7f) {
      return false;
    }
  }
  return true;
}

static bool op_ok(const zoo_op_t *op) {
  switch (op->type) {
  case ZOO_CREATE_OP:
  case ZOO_CREATE2_OP:
  case ZOO_CREATE_CONTAINER_OP:
  case ZOO_CREATE_TTL_OP:
    return path_ok(op->create_op.path,
                   op->create_op.flags == ZOO_PERSISTENT_SEQUENTIAL ||
                       op->create_op.flags == ZOO_EPHEMERAL_SEQUENTIAL ||
                       op->create_op.flags ==
                           ZOO_PERSISTENT_SEQUENTIAL_WITH_TTL);
  case ZOO_DELETE_OP:
    return path_ok(op->delete_op.path, false);
  case ZOO_SETDATA_OP:
    return path_ok(op->set_op.path, false);
  case ZOO_CHECK_OP:
    return path_ok(op->check_op.path, false);
  default:
    return true; /* refused by the client before any path is freed */
  }
}

int zkl__io_amulti(zhandle_t *zh, int count, const zoo_op_t *ops,
                   zoo_op_result_t *results, void_completion_t done,
                   const void *data) {
  int i;
  for (i = 0; i < count; i++)
    if (!op_ok(&ops[i]))
      return ZBADARGUMENTS;
  if (is_unrecoverable(zh))
    return ZINVALIDSTATE;
  return zoo_amulti(zh, count, ops, results, done, data);
}
