/*
 * zklock - run a command while holding a ZooKeeper lock (see zklock(1)).
 *
 *   zklock [OPTIONS] NAME -- COMMAND [ARG...]
 *   zklock [-H] [-s HOSTS] [-t MS] [--auth S:C] --list NAME
 *
 * main() only dispatches: the watchdog (the same binary, run again by
 * watchdog.c), --list, or a run (run.c). cli.h lists the files.
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

static int run_list(const options *o) {
  char path[ZKL_PATH_MAX];
  zkl_session *s = connect_or_exit(o, o->connect_ms);
  int rc = queue_list(s, o->list_name, o->no_header);
  zkl_session_close(s);
  if (rc != ZKL_OK) {
    names_parent(path, sizeof path, o->list_name);
    cli_error("cannot list %s: %s", path, zkl_strerror(rc));
    return EXIT_ZOOKEEPER;
  }
  return 0;
}

int main(int argc, char **argv) {
  options o;
  int rc;
  if (argc == 2 && strcmp(argv[1], WATCHDOG_ARG) == 0)
    return wd_main(); /* before anything opens a descriptor */
  open_standard_fds();
  child_note_inherited_fds(); /* before anything else opens one */
  options_parse(argc, argv, &o);
  rc = o.list_name ? run_list(&o) : run_lock(&o);
  free(o.auth);
  return rc;
}
