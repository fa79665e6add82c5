/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keeper.h - the page zklock and its keeper share (keeper.c is zklock's
 * end, keeper_main.c the keeper's): one memfd both map.
 *
 * The word: a state in its two low bits, a time (monotonic ms) above them:
 *   ARMED  time = when the keeper sends SIGTERM unless zklock has moved it
 *          forward by then (keeper_renew): the lease deadline D plus a
 *          quarter of the margin
 *   FIRED  the keeper began the stop on its own (zklock did not renew, or
 *          is gone); time = when SIGKILL is due
 *   LOST   zklock asked for the stop (a loss); time = when SIGKILL is due
 * Every change is a compare-and-swap of the word, so that exactly one of
 * the two begins the stop, and a renewal that comes as the time passes
 * either lands first (no stop) or fails (zklock then finds FIRED).
 *
 * hard: H = D plus half the margin, the latest D zklock gave. No SIGKILL
 * comes after it, whatever -k says: before D plus the margin neither
 * ZooKeeper (a direct session) nor zklockd (a client's node kept for its
 * keeper) lets the lock go.
 *
 * The rest is one writer's each: zklock writes go and sigs, the keeper the
 * command's pid, its start and its exit. Each side wakes the other with a
 * byte on a pipe (zklock to keeper: wake_fd; keeper to zklock: tell_fd,
 * the descriptors' numbers in the keeper), whose end of file also says the
 * writer is gone.
 */
#ifndef ZKLOCK_CLI_KEEPER_H
#define ZKLOCK_CLI_KEEPER_H

#include <stdatomic.h>

#include "cli.h"

/* Shared between two processes: the atomics must be lock-free (and so
 * address-free). */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics are not lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "int atomics are not lock-free");

enum { KEEPER_ARMED = 0, KEEPER_FIRED = 1, KEEPER_LOST = 2 };
#define KEEPER_WORD(time, state) (((long long)(time) << 2) | (state))
#define KEEPER_STATE(word) ((int)((word)&3))
#define KEEPER_TIME(word) ((int64_t)((word) >> 2))

/* go */
enum { KEEPER_WAIT = 0, KEEPER_RUN = 1, KEEPER_QUIT = 2 };

/* start_err: zklock's word came after the lease deadline (zklock was
 * stopped or slow between the grant and its word): the command must not
 * start without the lock. */
#define KEEPER_LATE (-1)

#define KEEPER_MAGIC 0x7a6b6b70u /* "zkkp" */
#define KEEPER_VERSION 1

struct keeper_page {
  unsigned magic, version;
  int zklock_pid;
  int zklock_pgid; /* the command's group when it shares zklock's */
  int grace_ms;
  int margin_ms;   /* m: the deadline D is hard - m/2 */
  int own_group;   /* the command leads a process group of its own */
  int verbose;     /* -v */
  int wake_fd, tell_fd;
  char what[ZKL_PATH_MAX]; /* "lock /locks/NAME", for its messages */
  _Atomic long long word;
  _Atomic long long hard;
  _Atomic int go;
  _Atomic unsigned long long sigs; /* to pass on: bit sig - 1 */
  _Atomic int started;  /* 1: command and start_err say how it went */
  _Atomic int command;  /* its pid; 0: not forked */
  _Atomic int start_err; /* errno of the fork or the exec; 0: running;
                            KEEPER_LATE: not started, D had passed */
  _Atomic int exited;   /* 1: the command was reaped, with status */
  _Atomic int status;
};

#endif
