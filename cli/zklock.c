/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zklock - run a command while holding a ZooKeeper lock (see zklock(1)).
 *
 *   zklock [OPTIONS] [--read | --write | --limit N | --elect ID] NAME --
 *          COMMAND [ARG...]
 *   zklock [-H] [-s HOSTS] [-t MS] [--auth S:C] --list NAME
 *   zklock [-H] [--format F] [--watch] ... --list PREFIX/
 *   zklock [-s HOSTS] [-t MS] [--auth S:C] --leader NAME | --revoke NAME
 *   zklock [-s HOSTS] [-t MS] [--auth S:C] --break NAME [--grace SECONDS]
 *
 * main() only dispatches: the keeper (the same binary, run again by
 * keeper.c), a question (--list, --leader, --revoke: queue.c; --list
 * PREFIX/, --format, --watch: overview.c), a break (--break: break.c), or
 * a run (run.c). cli.h lists the files.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* A closed standard descriptor would be taken by the next open, say the
 * ZooKeeper connection, and the command would inherit it as its stdin,
 * stdout or stderr. */
static void open_standard_fds(void) {
  int fd;
  for (fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) == -1 && open("/dev/null", O_RDWR) != fd)
      exit(EXIT_CANNOT_RUN);
}

/* --list, --leader, --revoke: one question, and the session closed. */
static int run_question(const options *o) {
  char path[ZKL_PATH_MAX];
  zkl_session *s;
  int rc;
  /* a scrape that cannot reach ZooKeeper still says so: zklock_up 0 */
  if (o->action == ACT_LIST && !o->watch && o->format == FORMAT_PROMETHEUS)
    format_prometheus_arm(o);
  s = connect_or_exit(o, o->connect_ms);
  if (o->action == ACT_BREAK) { /* it says what happened itself */
    rc = break_holders(s, o->target, o->break_grace_ms, o->quiet);
    zkl_session_close(s, NULL);
    return rc;
  }
  switch (o->action) {
  case ACT_LIST:
    if (o->watch)
      rc = overview_watch(s, o);
    else if (o->prefix || o->format_set)
      rc = overview_list(s, o);
    else
      rc = queue_list(s, o->target, o->no_header);
    /* --list deploy while deploy/web is held: say where the locks are
     * (not for Prometheus: a scrape asked for this one lock's series) */
    if (rc == ZKL_OK && !o->watch && o->format != FORMAT_PROMETHEUS)
      overview_say_under(s, o);
    break;
  case ACT_LEADER:
    rc = o->watch ? overview_leader_watch(s, o) : queue_leader(s, o->target);
    break;
  default:
    rc = queue_revoke(s, o->target);
    break;
  }
  zkl_session_close(s, NULL);
  if (o->prefix) /* --list PREFIX/ */
    names_prefix_parent(path, sizeof path, o->prefix);
  else
    names_parent(path, sizeof path, o->target);
  if (rc == ZKL_ENOTHELD) { /* nobody leads, nobody to ask */
    if (!o->quiet)
      cli_error(o->action == ACT_LEADER ? "nobody leads %s"
                                        : "nobody holds %s: nobody to ask",
                path);
    return 1;
  }
  if (rc != ZKL_OK) {
    cli_error("cannot %s %s: %s%s",
              o->action == ACT_LIST     ? "list"
              : o->action == ACT_LEADER ? "learn the leader of"
                                        : "revoke",
              path, zkl_strerror(rc),
              rc == ZNOAUTH ? " (the lock's nodes belong to other "
                              "credentials: see --auth)"
                            : "");
    return EXIT_ZOOKEEPER;
  }
  return 0;
}

int main(int argc, char **argv) {
  options o;
  int rc;
  if (argc > 1 && strcmp(argv[1], KEEPER_ARG) == 0)
    return keeper_main(argc, argv); /* before anything opens a descriptor */
  open_standard_fds();
  child_note_inherited_fds(); /* before anything else opens one */
  options_parse(argc, argv, &o);
  rc = o.action == ACT_RUN ? run_lock(&o) : run_question(&o);
  free(o.auth);
  free(o.names);
  return rc;
}
