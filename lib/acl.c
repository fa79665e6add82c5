/*
 * acl.c - who may touch the nodes a lock creates, and the credentials a
 * session shows.
 *
 * In ZooKeeper, deleting a node needs DELETE on its parent, and changing its
 * data needs WRITE on the node. So "nobody deletes your lock" means: the
 * lock's parents grant CREATE/DELETE only to the creator's credentials, and
 * its nodes grant WRITE only to them too. Everyone keeps READ, which waiters
 * need to watch their predecessor (getData) and `zklock --list` to read the
 * owner description. /locks itself, shared by all locks, stays open.
 */
#include "config.h"

#include <string.h>

#include "internal.h"

static struct ACL creator_acl[2];
static struct ACL_vector creator_vector = {2, creator_acl};
static pthread_once_t creator_once = PTHREAD_ONCE_INIT;

static void init_creator_acl(void) {
  /* ZOO_PERM_* are extern const ints, not constant expressions. */
  creator_acl[0].perms = ZOO_PERM_ALL;
  creator_acl[0].id.scheme = "auth"; /* whoever authenticated the create */
  creator_acl[0].id.id = "";
  creator_acl[1].perms = ZOO_PERM_READ;
  creator_acl[1].id.scheme = "world";
  creator_acl[1].id.id = "anyone";
}

const struct ACL_vector *zkl__acl(int mode) {
  if (mode != ZKL_ACL_CREATOR)
    return &ZOO_OPEN_ACL_UNSAFE;
  pthread_once(&creator_once, init_creator_acl);
  return &creator_vector;
}

typedef struct auth_wait {
  zkl_session *s;
  pthread_cond_t cond;
  bool done;
  int rc;
} auth_wait;

/* The client calls this from its I/O thread, not the completion thread:
 * only hand the verdict over, never run queued callbacks from here. */
static void auth_done(int rc, const void *data) {
  auth_wait *w = (auth_wait *)data;
  zkl_session *s = w->s;
  pthread_mutex_lock(&s->mu);
  w->rc = rc;
  w->done = true;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&s->mu);
}

int zkl_session_add_auth(zkl_session *s, const char *scheme,
                         const char *credentials, int len) {
  auth_wait w;
  int rc;
  if (!s || !scheme || !*scheme || !credentials || len < 0)
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  memset(&w, 0, sizeof w);
  w.s = s;
  if (pthread_cond_init(&w.cond, NULL) != 0)
    return ZKL_ESYSTEM;
  pthread_mutex_lock(&s->mu);
  rc = zkl__session_usable_locked(s);
  if (rc == ZKL_OK) {
    /* The client keeps the credentials and shows them again on every
     * reconnect; the completion reports the server's first verdict. It
     * always runs (the server answers, or the connection is lost). */
    rc = zoo_add_auth(s->zh, scheme, credentials, len, auth_done, &w);
    if (rc == ZOK) {
      while (!w.done)
        pthread_cond_wait(&w.cond, &s->mu);
      rc = w.rc;
    } else {
      /* The client refuses while between connections (state 0) too. */
      if (rc == ZINVALIDSTATE)
        rc = is_unrecoverable(s->zh) ? ZKL_EEXPIRED : ZCONNECTIONLOSS;
    }
  }
  pthread_mutex_unlock(&s->mu);
  pthread_cond_destroy(&w.cond);
  return rc;
}
