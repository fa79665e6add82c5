/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recipes.h - the recipes, one file each, and what they share with each
 * other and the tests: the rule several recipes use, and the descriptors
 * other files name. The engine (engine.c, engine.h) names none of them.
 *
 *   mutex.c      the mutex (its rule is the first-goes rule below)
 *   rwlock.c     a read/write lock: two recipes, read and write, on one
 *                queue; the downgrade
 *   semaphore.c  a lease queue behind a gate: the gate is a part of the
 *                contender, driven through the prepare hooks
 *   election.c   a candidate (the leader is the first); leader.c tells
 *                anyone who leads
 *   multilock.c  a whole whose parts, one mutex contender per
 *                name, are enqueued by one transaction
 */
#ifndef ZKL_RECIPES_H
#define ZKL_RECIPES_H

#include "engine.h"

/* mutex.c: the mutex's rule, shared by the recipes that queue the same way
 * (elections, a read/write lock's writers, a semaphore's gate, a
 * multi-lock's parts): the first goes, every other waits for its immediate
 * predecessor. */
void zkl__first_goes(const zkl_queue *q, const void *arg, zkl_verdict *out);

extern const zkl_recipe zkl__recipe_mutex; /* mutex.c */
extern const zkl_recipe zkl__recipe_mutex_kazoo; /* mutex.c: kazoo's layout */
extern const zkl_recipe zkl__recipe_latch; /* election.c */
/* rwlock.c: the two sides; their arg is the zkl_rwlock */
extern const zkl_recipe zkl__recipe_read;
extern const zkl_recipe zkl__recipe_write;
/* semaphore.c: the lease queue's rule; its arg is the limit, an intptr_t */
extern const zkl_recipe zkl__recipe_lease;
/* together.c: what the engine's states do for nodes made together (a
 * multi-lock's recipe names it: zkl_recipe.together) */
extern const struct zkl_together_ops zkl__together_ops;

#endif /* ZKL_RECIPES_H */
