/* SPDX-License-Identifier: Apache-2.0 */
/*
 * break.c - zklock --break NAME [--grace SECONDS]: a stuck lock's holders
 * broken with zkl_name_break(), which picks them (the holder of a mutex, the
 * readers sharing a read/write lock, the leader of an election, every lease
 * of a semaphore), asks them to let go, and deletes their nodes once the
 * grace is over. A zklock holding one of them loses it, stops its command
 * and exits 4, saying it was broken (run.c).
 *
 * stdout: the node of each holder broken, one a line (as --revoke prints
 * those it asked). stderr: the holders that let go in their grace, and why
 * nothing was broken.
 */
#include "config.h"

#include <stdio.h>

#include "cli.h"

typedef struct {
  bool quiet;
  int picked;
} tally;

static void on_node(zkl_session *s, int rc, const char *node, void *arg) {
  tally *t = arg;
  (void)s;
  t->picked++;
  if (rc == ZKL_OK)
    printf("%s\n", node);
  else if (rc == ZKL_ENOTHELD && !t->quiet)
    cli_error("%s let go within the grace: not broken", node);
  /* an error: break_holders() says it */
}

int break_holders(zkl_session *s, const char *name, int grace_ms,
                  bool quiet) {
  char path[ZKL_PATH_MAX];
  tally t = {quiet, 0};
  int rc;
  names_parent(path, sizeof path, name);
  cli_verbose_msg("breaking the holders of %s after a grace of %s", path,
                  cli_duration(grace_ms));
  rc = zkl_name_break(s, name, NULL, grace_ms, on_node, &t);
  if (fflush(stdout) != 0 && rc == ZKL_OK)
    rc = ZKL_ESYSTEM;
  if (rc == ZKL_OK)
    return 0;
  if (rc == ZKL_ENOTHELD) {
    if (!quiet && t.picked == 0)
      cli_error("nobody holds %s: nothing to break", path);
    return 1;
  }
  cli_error("cannot break %s: %s%s", path, zkl_strerror(rc),
            rc == ZNOAUTH ? " (the lock's nodes belong to other "
                            "credentials: see --auth)"
                          : "");
  return EXIT_ZOOKEEPER;
}
