/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io.h - the engine's requests (io.c). Each zkl__io_* sends one request for
 * an owner and a round and returns ZKL_OK, or a refusal at the call (then
 * no reply comes): ZKL_ENOMEM, ZKL_EEXPIRED (a dead handle) or the client's
 * code. Every request sent gets exactly one reply, through ops.
 */
#ifndef ZKL_IO_H
#define ZKL_IO_H

#include "session.h"

typedef struct zkl_reply {
  int kind;      /* ZKL_RQ_* of the request */
  unsigned round;
  int rc;
  const char *path;  /* the request's path */
  const char *value; /* create: the path made; get: the data */
  int len;           /* get: the data's length */
  const struct Stat *stat;                /* create, get */
  const struct String_vector *children;   /* list */
} zkl_reply;

typedef struct zkl_io_ops {
  void (*replied_locked)(void *owner, const zkl_reply *rp);
} zkl_io_ops;

/* zoo_acreate2: mode ZOO_CONTAINER (parents) or ZOO_EPHEMERAL_SEQUENTIAL. */
int zkl__io_create_locked(zkl_session *s, int kind, const char *path,
                          const char *data, int len,
                          const struct ACL_vector *acl, int mode,
                          const zkl_io_ops *ops, void *owner, unsigned round);
/* zoo_aget_children, no watch; kind ZKL_RQ_LIST or ZKL_RQ_KIND_CHECK. */
int zkl__io_list_locked(zkl_session *s, int kind, const char *path,
                        const zkl_io_ops *ops, void *owner, unsigned round);
/* zoo_aget, no watch. */
int zkl__io_get_locked(zkl_session *s, int kind, const char *path,
                       const zkl_io_ops *ops, void *owner, unsigned round);
/* zoo_aset, any version (the reply's stat, when ZOK). */
int zkl__io_set_locked(zkl_session *s, int kind, const char *path,
                       const char *data, int len, const zkl_io_ops *ops,
                       void *owner, unsigned round);
/* zoo_async ("sync"): answered once the server has caught up with the
 * leader; a session's later reads are served after it. */
int zkl__io_sync_locked(zkl_session *s, int kind, const char *path,
                        const zkl_io_ops *ops, void *owner, unsigned round);
/* A write that changes nothing (a transaction of one check of "/"): the
 * requests sent after it are answered from a state that holds every write
 * of the session the leader prepared before it; see together.c's
 * together_recover_locked for why a lost create is then either there or
 * never applied. Its answer says nothing else. */
int zkl__io_order_locked(zkl_session *s, int kind, const zkl_io_ops *ops,
                         void *owner, unsigned round);
/* zoo_adelete, any version. */
int zkl__io_delete_locked(zkl_session *s, int kind, const char *path,
                          const zkl_io_ops *ops, void *owner, unsigned round);

#endif /* ZKL_IO_H */
