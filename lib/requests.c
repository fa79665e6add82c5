/* SPDX-License-Identifier: Apache-2.0 */
/* requests.c - the one frame every request's completion runs in, and the
 * client's completion shapes that lead into it (see zkl_answered_fn in
 * session.h). A sender sets r->answered_locked and hands the client the
 * zkl__on_* of its call's shape. Also zoo_amulti, made safe to call. */
#include "config.h"

#include <string.h>

#include "session.h"

static void answered(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  zkl_answer got = *a;
  /* A write that succeeded may prove the lease (lease.c); a request the
   * client gave up after a move to other servers reads as a lost
   * connection. */
  got.rc = zkl__enter_req_locked(r, a->rc);
  r->answered_locked(r, &got);
  zkl__req_done_locked(r);
  zkl__leave(s); /* runs queued user callbacks, unlocked */
}

void zkl__on_string(int rc, const char *value, const struct Stat *stat,
                    const void *data) {
  zkl_answer a = {.rc = rc, .value = value, .stat = stat};
  answered((zkl_req *)data, &a);
}

void zkl__on_strings(int rc, const struct String_vector *children,
                     const void *data) {
  zkl_answer a = {.rc = rc, .children = children};
  answered((zkl_req *)data, &a);
}

void zkl__on_data(int rc, const char *value, int len, const struct Stat *stat,
                  const void *data) {
  zkl_answer a = {.rc = rc, .value = value, .len = len, .stat = stat};
  answered((zkl_req *)data, &a);
}

void zkl__on_stat(int rc, const struct Stat *stat, const void *data) {
  zkl_answer a = {.rc = rc, .stat = stat};
  answered((zkl_req *)data, &a);
}

void zkl__on_void(int rc, const void *data) {
  zkl_answer a = {.rc = rc};
  answered((zkl_req *)data, &a);
}

void zkl__on_value(int rc, const char *value, const void *data) {
  zkl_answer a = {.rc = rc, .value = value};
  answered((zkl_req *)data, &a);
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

int zkl__safe_amulti(zhandle_t *zh, int count, const zoo_op_t *ops,
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

