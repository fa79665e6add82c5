/* SPDX-License-Identifier: Apache-2.0 */
/* requests.c - the one frame every request's completion runs in, and the
 * client's completion shapes that lead into it (see zkl_answered_fn in
 * session.h). A sender sets r->answered_locked and hands the client the
 * zkl__on_* of its call's shape. */
#include "config.h"

#include "session.h"

static void answered(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  zkl_answer got = *a;
  /* An answer moves the lease's clock; a request the client gave up after
   * a move to other servers reads as a lost connection. */
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
