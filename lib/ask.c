/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ask.c - a question of a user's thread: requests sent back to back with
 * s->mu held, then one wait for all their answers. ZooKeeper answers a
 * session's requests in order and the client sends them without waiting,
 * so a batch costs one round trip however many it holds. Every request
 * sent is answered, by the server or by the client (a lost connection, the
 * handle's close): the wait always ends, and nothing writes into the
 * asker's data after it.
 */
#include "config.h"

#include "ask.h"

int zkl__ask_enter(zkl_session *s) {
  int rc;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK; /* the answers would come on this very thread */
  pthread_mutex_lock(&s->mu);
  rc = zkl__session_usable_locked(s);
  if (rc != ZKL_OK)
    pthread_mutex_unlock(&s->mu);
  return rc;
}

void zkl__ask_leave(zkl_session *s) { zkl__unlock(s); }

int zkl__ask_init(zkl_ask *a, zkl_session *s,
                  void (*replied_locked)(zkl_ask *a, int index,
                                         const zkl_reply *rp)) {
  a->s = s;
  a->pending = 0;
  a->rc = ZKL_OK;
  a->replied_locked = replied_locked;
  return pthread_cond_init(&a->cond, NULL) == 0 ? ZKL_OK : ZKL_ESYSTEM;
}

void zkl__ask_destroy(zkl_ask *a) { pthread_cond_destroy(&a->cond); }

static void answered_locked(void *owner, const zkl_reply *rp) {
  zkl_ask *a = owner;
  a->replied_locked(a, (int)rp->round, rp);
  if (--a->pending == 0)
    pthread_cond_signal(&a->cond);
}

static const zkl_io_ops ask_ops = {answered_locked};

int zkl__ask_send_locked(zkl_ask *a, int op, const char *path,
                         const char *data, int len, int index) {
  zkl_session *s = a->s;
  unsigned round = (unsigned)index;
  int rc;
  switch (op) {
  case ZKL_ASK_LIST:
    rc = zkl__io_list_locked(s, ZKL_RQ_QUERY, path, &ask_ops, a, round);
    break;
  case ZKL_ASK_GET:
    rc = zkl__io_get_locked(s, ZKL_RQ_QUERY, path, &ask_ops, a, round);
    break;
  case ZKL_ASK_SYNC:
    rc = zkl__io_sync_locked(s, ZKL_RQ_QUERY, path, &ask_ops, a, round);
    break;
  default:
    rc = zkl__io_set_locked(s, ZKL_RQ_QUERY, path, data, len, &ask_ops, a,
                            round);
  }
  if (rc != ZKL_OK) {
    if (a->rc == ZKL_OK)
      a->rc = rc;
    return rc;
  }
  a->pending++;
  return ZKL_OK;
}

int zkl__ask_wait_locked(zkl_ask *a) {
  while (a->pending > 0)
    pthread_cond_wait(&a->cond, &a->s->mu);
  return a->rc;
}

int zkl__ask_code(int rc) {
  return zkl__is_session_over(rc) ? ZKL_EEXPIRED : rc;
}

void zkl__ask_retry_init_locked(const zkl_session *s, zkl_ask_retry *t) {
  int timeout = s->negotiated_timeout_ms > 0 ? s->negotiated_timeout_ms
                                             : s->requested_timeout_ms;
  t->deadline = zkl__now_ms() + timeout;
}

bool zkl__ask_again_locked(zkl_session *s, zkl_ask_retry *t, int *rc) {
  if (!zkl__is_connection_loss(*rc))
    return false;
  for (;;) {
    int usable = zkl__session_usable_locked(s);
    if (usable != ZKL_OK) {
      *rc = usable; /* expired or closed while we waited */
      return false;
    }
    if (zkl__now_ms() >= t->deadline)
      return false;
    /* Disconnected (a session event said so): wait for the reconnect,
     * which s->cond hears (events.c). Still connected as far as the events
     * go: a move can close the socket under the client's I/O thread, which
     * then fails what was sent with no "connecting" event, and says only
     * "connected" when it is back (docs/ensemble.md); what is asked
     * meanwhile it holds until then (engine.c and leader.c resume the
     * same way). */
    if (s->connected)
      return true;
    zkl__cond_wait_until(&s->cond, &s->mu, t->deadline);
  }
}
