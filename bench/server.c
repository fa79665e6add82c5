/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server.c - the throwaway ZooKeeper servers the benchmark runs against
 * when it is given none: tests/zkserver starts them on 127.0.0.1 with a
 * watchdog tied to this process (--owner), so they are stopped at exit, on
 * a signal (the handler exits, the watchdog sees it), and even if this
 * process is killed outright.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "zklock.h"

#ifndef ZKL_BENCH_SRCDIR
#error "ZKL_BENCH_SRCDIR must name the source tree (for tests/zkserver)"
#endif

#define MAX_SERVERS 4

static struct {
  char dir[256];
  char hosts[256];
} servers[MAX_SERVERS];
static int nservers;
static bool registered;

const char *server_start(bool no_fsync) {
  char cmd[1024];
  FILE *p;
  int slot = nservers, status;
  if (slot == MAX_SERVERS) {
    fprintf(stderr, "zklock-bench: too many servers\n");
    return NULL;
  }
  snprintf(servers[slot].dir, sizeof servers[slot].dir,
           "%s/zklock-bench-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(servers[slot].dir)) {
    perror("zklock-bench: mkdtemp");
    return NULL;
  }
  if (!registered) {
    atexit(server_stop_all);
    registered = true;
  }
  nservers++; /* from here on, stop_all removes the directory */
  snprintf(cmd, sizeof cmd, "'%s/tests/zkserver' start %s--owner %ld '%s'",
           ZKL_BENCH_SRCDIR, no_fsync ? "--no-fsync " : "", (long)getpid(),
           servers[slot].dir);
  fflush(NULL);
  p = popen(cmd, "r");
  if (!p) {
    perror("zklock-bench: popen");
    return NULL;
  }
  if (!fgets(servers[slot].hosts, sizeof servers[slot].hosts, p))
    servers[slot].hosts[0] = '\0';
  status = pclose(p);
  servers[slot].hosts[strcspn(servers[slot].hosts, "\r\n")] = '\0';
  if (status != 0 || !servers[slot].hosts[0]) {
    fprintf(stderr, "zklock-bench: could not start ZooKeeper with: %s\n",
            cmd);
    return NULL;
  }
  return servers[slot].hosts;
}

void server_stop_all(void) {
  char cmd[1024];
  while (nservers > 0) {
    nservers--;
    snprintf(cmd, sizeof cmd, "'%s/tests/zkserver' stop '%s'",
             ZKL_BENCH_SRCDIR, servers[nservers].dir);
    fflush(NULL);
    if (system(cmd) != 0)
      fprintf(stderr, "zklock-bench: stopping the server in %s failed\n",
              servers[nservers].dir);
  }
}

/* A session on hosts with the given session timeout (zkl_session_options'
 * other fields at their defaults). */
int bench_open_session(zkl_session **s, const char *hosts, int session_ms) {
  zkl_session_options o;
  zkl_session_options_init(&o);
  o.hosts = hosts;
  o.session_timeout_ms = session_ms;
  return zkl_session_open(s, &o);
}
