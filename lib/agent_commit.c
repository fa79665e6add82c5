/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_commit.c - a guarded write's ops as ZKL_MSG_COMMIT's fields, and
 * its reply's results back into the caller's arrays (wire.h has the
 * layout; agent.c sends the call and waits for it). The agent runs the
 * ops with the C client on buffers of its own and tells what the C client
 * left in each result; this fills the caller's as the C client would have
 * filled them on a direct session: a created path in the op's own buffer,
 * a setData's Stat in the op's own struct.
 */
#include "config.h"

#include <string.h>

#include "agent.h"

/* A result's fields on the wire, the created path's aside: err, value
 * set, the path's length, valuelen, stat set, and the Stat's 7 i64s and 4
 * i32s. */
#define RESULT_WIRE_FIXED (5 * 4 + 7 * 8 + 4 * 4)

static bool is_create(int type) {
  return type == ZOO_CREATE_OP || type == ZOO_CREATE2_OP ||
         type == ZOO_CREATE_CONTAINER_OP || type == ZOO_CREATE_TTL_OP;
}

static const char *op_path(const zoo_op_t *op) {
  switch (op->type) {
  case ZOO_SETDATA_OP:
    return op->set_op.path;
  case ZOO_DELETE_OP:
    return op->delete_op.path;
  case ZOO_CHECK_OP:
    return op->check_op.path;
  default:
    return is_create(op->type) ? op->create_op.path : NULL;
  }
}

static void put_data(zkl_wbuf *b, const char *data, int datalen) {
  zkl__wire_i32(b, data && datalen >= 0 ? datalen : -1);
  zkl__wire_bytes(b, data, data && datalen > 0 ? (size_t)datalen : 0);
}

int zkl__commit_check(int count, const zoo_op_t *ops) {
  size_t reply = 4 + ZKL_WIRE_HEADER + 8;
  int i;
  for (i = 0; i < count; i++) {
    const zoo_op_t *op = &ops[i];
    const char *path = op_path(op);
    /* The agent cannot be handed what the C client would refuse or crash
     * on: no path (ZooKeeper's ZBADARGUMENTS, as a direct session says),
     * an op of another type, data said to be there and not. */
    if (!path)
      return ZBADARGUMENTS;
    if ((op->type == ZOO_SETDATA_OP && !op->set_op.data &&
         op->set_op.datalen > 0) ||
        (is_create(op->type) && !op->create_op.data &&
         op->create_op.datalen > 0))
      return ZBADARGUMENTS;
    if (is_create(op->type) && op->create_op.acl &&
        op->create_op.acl->count > 0 && !op->create_op.acl->data)
      return ZBADARGUMENTS;
    reply += RESULT_WIRE_FIXED;
    if (is_create(op->type) && op->create_op.buf && op->create_op.buflen > 0) {
      /* a created path: the one asked for, 10 digits more at most */
      size_t len = strlen(path) + 10;
      reply += len < (size_t)op->create_op.buflen
                   ? len
                   : (size_t)op->create_op.buflen;
    }
  }
  /* Its reply must fit in a frame too, else the agent could only say
   * ZKL_ENOMEM after the write, which the caller could not tell from one
   * never made. */
  return reply > ZKL_WIRE_MAX ? ZKL_EINVAL : ZKL_OK;
}

void zkl__commit_put(zkl_wbuf *b, int32_t handle, int count,
                     const zoo_op_t *ops) {
  int i, j;
  zkl__wire_i32(b, handle);
  zkl__wire_i32(b, count);
  for (i = 0; i < count; i++) {
    const zoo_op_t *op = &ops[i];
    zkl__wire_i32(b, op->type);
    zkl__wire_str(b, op_path(op));
    switch (op->type) {
    case ZOO_SETDATA_OP:
      zkl__wire_i32(b, op->set_op.version);
      put_data(b, op->set_op.data, op->set_op.datalen);
      zkl__wire_i32(b, op->set_op.stat != NULL);
      break;
    case ZOO_DELETE_OP:
      zkl__wire_i32(b, op->delete_op.version);
      break;
    case ZOO_CHECK_OP:
      zkl__wire_i32(b, op->check_op.version);
      break;
    default: { /* a create (zkl__commit_check let no other through) */
      const struct ACL_vector *acl = op->create_op.acl;
      zkl__wire_i32(b, -1); /* the version: a create has none */
      put_data(b, op->create_op.data, op->create_op.datalen);
      zkl__wire_i32(b, op->create_op.flags);
      zkl__wire_i64(b, op->create_op.ttl);
      zkl__wire_i32(b, acl ? (acl->count > 0 ? acl->count : 0) : -1);
      for (j = 0; acl && j < acl->count; j++) {
        zkl__wire_i32(b, acl->data[j].perms);
        zkl__wire_str(b, acl->data[j].id.scheme);
        zkl__wire_str(b, acl->data[j].id.id);
      }
      zkl__wire_i32(b, op->create_op.buf && op->create_op.buflen > 0
                           ? op->create_op.buflen
                           : 0);
    }
    }
  }
}

bool zkl__commit_parse(zkl_rframe *f, int rc, void *out) {
  zkl_commit_out *o = out;
  int32_t n = zkl__wire_get_i32(f), i;
  (void)rc;
  if (f->bad || (n != 0 && n != o->count))
    return false;
  for (i = 0; i < n; i++) {
    const zoo_op_t *op = &o->ops[i];
    zoo_op_result_t *r = &o->results[i];
    struct Stat st;
    int32_t has_value, has_stat;
    const char *value;
    r->err = zkl__wire_get_i32(f);
    has_value = zkl__wire_get_i32(f);
    value = zkl__wire_get_str(f);
    r->valuelen = zkl__wire_get_i32(f);
    has_stat = zkl__wire_get_i32(f);
    st.czxid = zkl__wire_get_i64(f);
    st.mzxid = zkl__wire_get_i64(f);
    st.ctime = zkl__wire_get_i64(f);
    st.mtime = zkl__wire_get_i64(f);
    st.version = zkl__wire_get_i32(f);
    st.cversion = zkl__wire_get_i32(f);
    st.aversion = zkl__wire_get_i32(f);
    st.ephemeralOwner = zkl__wire_get_i64(f);
    st.dataLength = zkl__wire_get_i32(f);
    st.numChildren = zkl__wire_get_i32(f);
    st.pzxid = zkl__wire_get_i64(f);
    if (f->bad)
      return false;
    r->value = NULL;
    r->stat = NULL;
    /* Into the caller's own buffer and struct, as the C client writes
     * them; never past what the caller gave, whatever the agent says. */
    if (has_value && is_create(op->type) && op->create_op.buf &&
        op->create_op.buflen > 0) {
      size_t len = strlen(value);
      if (len >= (size_t)op->create_op.buflen)
        len = (size_t)op->create_op.buflen - 1;
      memcpy(op->create_op.buf, value, len);
      op->create_op.buf[len] = 0;
      r->value = op->create_op.buf;
    }
    if (has_stat && op->type == ZOO_SETDATA_OP && op->set_op.stat) {
      *op->set_op.stat = st;
      r->stat = op->set_op.stat;
    }
  }
  return zkl__wire_done(f);
}
