/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commit.c - a client's guarded write (ZKL_MSG_COMMIT; its fields: wire.h):
 * the frame read into zoo_op_t's with everything they point to owned by
 * one record, and the results written back as the C client left them.
 *
 * The record outlives the frame (the frame's bytes are the client's
 * buffer, reused by its next frame) and the client: it is the library's
 * until its callback runs, whether or not anyone is left to answer.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "agent.h"

/* What a created path can take beyond the path asked for: a sequential
 * create appends 10 digits. A buffer this much longer than the path holds
 * any created path whole, so a caller's bigger buffer need not be. */
#define CREATED_SLACK 16

/* The smallest an ACL entry takes on the wire: i32 perms and two empty
 * strs. Bounds what a count may ask before it is read. */
#define ACL_WIRE_MIN 12

void commit_free(commit_call *cc) {
  int i;
  if (!cc)
    return;
  for (i = 0; i < cc->count; i++) {
    free(cc->bufs[i]);
    free(cc->acls[i].data);
  }
  free(cc->ops);
  free(cc->results);
  free(cc->stats);
  free(cc->acls);
  free(cc->bufs);
  free(cc->buf_asked);
  free(cc->paths);
  free(cc->arena);
  free(cc);
}

/* A pointer into the frame's strings, moved into the record's copy. */
static const char *rebase(const commit_call *cc, const zkl_rframe *f,
                          const char *p) {
  return p ? cc->arena + (p - f->strings) : NULL;
}

/* A create's or a setData's data: NULL when datalen < 0 (-1, as the C
 * client takes it); else its bytes, as many as datalen says. The readers
 * below return false with f->bad set for a malformed field, without it
 * when out of memory. */
static bool read_data(zkl_rframe *f, const char **data, int *datalen) {
  uint32_t n;
  const char *p;
  *datalen = zkl__wire_get_i32(f);
  p = zkl__wire_get_bytes(f, &n);
  *data = *datalen < 0 ? NULL : p;
  if (*datalen < 0 ? n != 0 || *datalen != -1 : (uint32_t)*datalen != n)
    f->bad = true;
  return !f->bad;
}

static bool read_acl(zkl_rframe *f, struct ACL_vector *acl, bool *null) {
  int32_t n = zkl__wire_get_i32(f), i;
  *null = n < 0;
  if (n < -1 || (n > 0 && (size_t)n > (size_t)(f->end - f->p) / ACL_WIRE_MIN))
    f->bad = true;
  if (n < 0 || f->bad)
    return !f->bad;
  acl->count = n;
  if (n > 0 && !(acl->data = calloc((size_t)n, sizeof *acl->data)))
    return false;
  for (i = 0; i < n; i++) {
    acl->data[i].perms = zkl__wire_get_i32(f);
    acl->data[i].id.scheme = (char *)zkl__wire_get_str(f);
    acl->data[i].id.id = (char *)zkl__wire_get_str(f);
  }
  return !f->bad;
}

/* One op into cc->ops[i]; its strings still point into f->strings. */
static bool read_op(commit_call *cc, zkl_rframe *f, int i, bool *null_acl) {
  zoo_op_t *op = &cc->ops[i];
  int type = zkl__wire_get_i32(f);
  const char *path = zkl__wire_get_str(f);
  int version = zkl__wire_get_i32(f);
  const char *data;
  int datalen, flags, asked;
  int64_t ttl;
  null_acl[i] = true;
  switch (type) {
  case ZOO_CREATE_OP:
  case ZOO_CREATE2_OP:
  case ZOO_CREATE_CONTAINER_OP:
  case ZOO_CREATE_TTL_OP:
    if (!read_data(f, &data, &datalen))
      return false;
    flags = zkl__wire_get_i32(f);
    ttl = zkl__wire_get_i64(f);
    if (!read_acl(f, &cc->acls[i], &null_acl[i]))
      return false;
    asked = zkl__wire_get_i32(f);
    if (asked < 0)
      f->bad = true;
    if (f->bad)
      return false;
    cc->buf_asked[i] = asked;
    if (asked > 0) {
      size_t room = strlen(path) + CREATED_SLACK;
      int len = (size_t)asked < room ? asked : (int)room;
      if (!(cc->bufs[i] = calloc(1, (size_t)len)))
        return false;
      cc->buf_len[i] = len;
    }
    zoo_create_op_init(op, path, data, datalen, NULL, flags, cc->bufs[i],
                       cc->bufs[i] ? cc->buf_len[i] : 0);
    op->type = type;
    op->create_op.ttl = ttl;
    break;
  case ZOO_SETDATA_OP:
    if (!read_data(f, &data, &datalen))
      return false;
    zoo_set_op_init(op, path, data, datalen, version,
                    zkl__wire_get_i32(f) ? &cc->stats[i] : NULL);
    break;
  case ZOO_DELETE_OP:
    zoo_delete_op_init(op, path, version);
    break;
  case ZOO_CHECK_OP:
    zoo_check_op_init(op, path, version);
    break;
  default:
    f->bad = true; /* the client sends only these */
    return false;
  }
  cc->paths[i] = path;
  return !f->bad;
}

commit_call *commit_read(zkl_rframe *f) {
  commit_call *cc = calloc(1, sizeof *cc);
  bool *null_acl = NULL;
  int i;
  if (!cc)
    return NULL;
  cc->handle = zkl__wire_get_i32(f);
  cc->count = zkl__wire_get_i32(f);
  if (f->bad || cc->count < 1 || cc->count > ZKL_COMMIT_OPS_MAX) {
    f->bad = true; /* the client checks the count as the library does */
    cc->count = 0;
    commit_free(cc);
    return NULL;
  }
  cc->ops = calloc((size_t)cc->count, sizeof *cc->ops);
  cc->results = calloc((size_t)cc->count, sizeof *cc->results);
  cc->stats = calloc((size_t)cc->count, sizeof *cc->stats);
  cc->acls = calloc((size_t)cc->count, sizeof *cc->acls);
  cc->bufs = calloc((size_t)cc->count, sizeof *cc->bufs);
  cc->buf_asked = calloc((size_t)cc->count, 2 * sizeof *cc->buf_asked);
  cc->paths = calloc((size_t)cc->count, sizeof *cc->paths);
  null_acl = calloc((size_t)cc->count, sizeof *null_acl);
  if (!cc->ops || !cc->results || !cc->stats || !cc->acls || !cc->bufs ||
      !cc->buf_asked || !cc->paths || !null_acl)
    goto fail;
  cc->buf_len = cc->buf_asked + cc->count;
  for (i = 0; i < cc->count; i++)
    if (!read_op(cc, f, i, null_acl))
      goto fail; /* f->bad tells malformed from out of memory */
  if (!zkl__wire_done(f)) {
    f->bad = true;
    goto fail;
  }
  /* Everything read: the strings move into the record. */
  if (!(cc->arena = malloc(f->used ? f->used : 1)))
    goto fail;
  memcpy(cc->arena, f->strings, f->used);
  for (i = 0; i < cc->count; i++) {
    zoo_op_t *op = &cc->ops[i];
    int j;
    cc->paths[i] = rebase(cc, f, cc->paths[i]);
    switch (op->type) {
    case ZOO_SETDATA_OP:
      op->set_op.path = cc->paths[i];
      op->set_op.data = rebase(cc, f, op->set_op.data);
      break;
    case ZOO_DELETE_OP:
      op->delete_op.path = cc->paths[i];
      break;
    case ZOO_CHECK_OP:
      op->check_op.path = cc->paths[i];
      break;
    default: /* the creates */
      op->create_op.path = cc->paths[i];
      op->create_op.data = rebase(cc, f, op->create_op.data);
      for (j = 0; j < cc->acls[i].count; j++) {
        struct Id *id = &cc->acls[i].data[j].id;
        id->scheme = (char *)rebase(cc, f, id->scheme);
        id->id = (char *)rebase(cc, f, id->id);
      }
      op->create_op.acl = null_acl[i] ? NULL : &cc->acls[i];
    }
  }
  free(null_acl);
  return cc;
fail:
  free(null_acl);
  commit_free(cc);
  return NULL;
}

void commit_reply(const commit_call *cc, uint32_t req, int rc, bool ran,
                  zkl_wbuf *b) {
  int i;
  zkl__wire_begin(b, ZKL_MSG_REPLY, req);
  zkl__wire_i32(b, rc);
  zkl__wire_i32(b, ran ? cc->count : 0);
  for (i = 0; ran && i < cc->count; i++) {
    const zoo_op_result_t *r = &cc->results[i];
    const struct Stat *st = r->stat;
    int valuelen = r->valuelen;
    /* The agent's buffer may be shorter than the caller's (it holds the
     * created path whole all the same): the C client's valuelen is the
     * buffer's size, so the caller's is told. */
    if (cc->bufs[i] && valuelen == cc->buf_len[i])
      valuelen = cc->buf_asked[i];
    zkl__wire_i32(b, r->err);
    zkl__wire_i32(b, r->value != NULL);
    zkl__wire_str(b, r->value);
    zkl__wire_i32(b, valuelen);
    zkl__wire_i32(b, st != NULL);
    zkl__wire_i64(b, st ? st->czxid : 0);
    zkl__wire_i64(b, st ? st->mzxid : 0);
    zkl__wire_i64(b, st ? st->ctime : 0);
    zkl__wire_i64(b, st ? st->mtime : 0);
    zkl__wire_i32(b, st ? st->version : 0);
    zkl__wire_i32(b, st ? st->cversion : 0);
    zkl__wire_i32(b, st ? st->aversion : 0);
    zkl__wire_i64(b, st ? st->ephemeralOwner : 0);
    zkl__wire_i32(b, st ? st->dataLength : 0);
    zkl__wire_i32(b, st ? st->numChildren : 0);
    zkl__wire_i64(b, st ? st->pzxid : 0);
  }
  if (b->failed || b->len - 4 > ZKL_WIRE_MAX) {
    /* The client bounds what it asks so that this never happens; should
     * it, the caller hears ENOMEM, as for an outsized list. */
    zkl__wire_free(b);
    zkl__wire_begin(b, ZKL_MSG_REPLY, req);
    zkl__wire_i32(b, ZKL_ENOMEM);
    zkl__wire_i32(b, 0);
  }
}
