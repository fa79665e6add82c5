/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queues.c - which queues (parent paths) a contender uses, and which a
 * contender of a name may use: zkl_lock_get_queues(), zkl_name_get_queues().
 * The places are the registry's (kinds.h, zkl__places); a contender's are
 * the queues it and its parts were made for (a semaphore's leases and its
 * gate, a multi-lock's names).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "kinds.h"
#include "agent.h"

/* Appends queue to buf (used bytes so far), one space before it unless
 * first, and skips it when buf already has it. ZKL_EINVAL when it does not
 * fit. */
static int append_queue(char *buf, size_t len, size_t *used,
                        const char *queue) {
  size_t n = strlen(queue), at = 0;
  while (at < *used) { /* already there? */
    size_t end = at;
    while (end < *used && buf[end] != ' ')
      end++;
    if (end - at == n && memcmp(buf + at, queue, n) == 0)
      return ZKL_OK;
    at = end + 1;
  }
  if (*used + (*used ? 1 : 0) + n + 1 > len)
    return ZKL_EINVAL;
  if (*used)
    buf[(*used)++] = ' ';
  memcpy(buf + *used, queue, n + 1);
  *used += n;
  return ZKL_OK;
}

int zkl_lock_get_queues(const zkl_lock *l, char *buf, size_t len) {
  if (l && buf && ZKL_REMOTE_LOCK(l))
    return zkl__remote_is_multi(l)
               ? zkl__remote_unsupported("zkl_lock_get_queues of a multi-lock")
               : zkl_name_get_queues(l->name, buf, len);
  size_t used = 0;
  int rc = ZKL_OK, i;
  if (!l || !buf || len == 0)
    return ZKL_EINVAL;
  /* queue and parts are fixed when the contender is made: no lock needed */
  if (l->recipe->make != ZKL_MAKE_PARTS_TOGETHER)
    rc = append_queue(buf, len, &used, l->queue);
  for (i = 0; i < l->n_parts && rc == ZKL_OK; i++)
    rc = append_queue(buf, len, &used, l->parts[i]->queue);
  if (rc != ZKL_OK)
    buf[0] = '\0';
  return rc;
}

int zkl_name_get_queues(const char *name, char *buf, size_t len) {
  char queue[ZKL_PATH_MAX];
  size_t used = 0;
  int rc = ZKL_OK, k;
  if (!buf || len == 0 || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  buf[0] = '\0';
  for (k = 0; k < ZKL_PLACE_COUNT && rc == ZKL_OK; k++) {
    const char *dir = zkl__place_dir(zkl__place_listed(k));
    zkl__name_path(queue, sizeof queue, name, dir);
    rc = append_queue(buf, len, &used, queue);
  }
  if (rc != ZKL_OK)
    buf[0] = '\0';
  return rc;
}
