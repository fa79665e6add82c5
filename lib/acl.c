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
 *
 * ZKL_ACL_PRIVATE takes READ away from everyone else too: nobody without
 * the creator's credentials lists a lock's contenders or reads who holds
 * it. Every contender must then show those credentials (a waiter reads its
 * predecessor): the deployment it is for is zklockd's, where every host's
 * agent authenticates as one identity and local users lock only through
 * their agent (docs/agent.md, "Who may do what").
 */
#include "config.h"

#include "common.h"

static struct ACL creator_acl[2];
static struct ACL_vector creator_vector = {2, creator_acl};
/* The first of creator_acl alone. */
static struct ACL_vector private_vector = {1, creator_acl};
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
  if (mode != ZKL_ACL_CREATOR && mode != ZKL_ACL_PRIVATE)
    return &ZOO_OPEN_ACL_UNSAFE;
  pthread_once(&creator_once, init_creator_acl);
  return mode == ZKL_ACL_PRIVATE ? &private_vector : &creator_vector;
}
