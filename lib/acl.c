/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl.c - who may touch the nodes a lock creates.
 *
 * In ZooKeeper, deleting a node needs DELETE on its parent, and changing its
 * data needs WRITE on the node. So "nobody deletes your lock" means: the
 * lock's parents grant CREATE/DELETE only to the creator's credentials, and
 * its nodes grant WRITE only to them too. Everyone keeps READ, which waiters
 * need to watch their predecessor (getData) and `zklock --list` to read the
 * owner description. /locks itself, shared by all locks, stays open.
 * (The credentials a session shows are added in open.c.)
 */
#include "config.h"

#include "common.h"

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
