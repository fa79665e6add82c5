/* SPDX-License-Identifier: Apache-2.0 */
/*
 * as_peer.c - zklock-bench --as-peer: libzklock behind the peer protocol
 * (see peer.c), so that one zklock-bench can run another build of the
 * library as a peer, interleaved with its own rows: the way to measure what
 * a change to the library buys, build against build, in the same rounds.
 *
 *   zklock-bench --as-peer HOSTS MODE N WARM SECONDS
 *
 * MODE uncontended runs workload 1 (blocking, one session), contended
 * workload 2 with N sessions, many workload 3 with N locks, queue-S
 * workload 4 with N waiters over S sessions (the last two only between
 * zklock-bench builds: see --build), multi workload 7 with a multi-lock of
 * N names. The result line also carries cpu=, the
 * process's own CPU time over the window (getrusage): its result is printed
 * only after its threads have stopped, so the parent's /proc reading would
 * also count the drain of the queue.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static void ready_go(void) {
  char line[64];
  printf("ready\n");
  fflush(stdout);
  if (!fgets(line, sizeof line, stdin) || strncmp(line, "go", 2) != 0)
    _exit(1); /* the bench went away */
}

int as_peer_main(int argc, char **argv) {
  bench_ctx c;
  bench_result r;
  const char *mode;
  int n, sessions = 0;
  if (argc != 5) {
    fprintf(stderr, "usage: zklock-bench --as-peer HOSTS MODE N WARM "
                    "SECONDS\n");
    return 2;
  }
  memset(&c, 0, sizeof c);
  memset(&r, 0, sizeof r);
  c.hosts = argv[0];
  mode = argv[1];
  n = strcmp(mode, "uncontended") == 0 ? 1 : atoi(argv[2]);
  if (strncmp(mode, "queue-", 6) == 0)
    sessions = atoi(mode + 6);
  c.warm_s = atof(argv[3]);
  c.secs = atof(argv[4]);
  c.session_ms = 10000;
  c.run_id = (unsigned)getpid() ^ (unsigned)time(NULL);
  c.before_window = ready_go;
  if (n < 1 || !(c.secs > 0)) {
    fprintf(stderr, "zklock-bench --as-peer: bad N or SECONDS\n");
    return 2;
  }
  r.p50_ms = r.p99_ms = NAN;
  if (strcmp(mode, "many") == 0) {
    lib_many_locks(&c, n, &r);
  } else if (sessions > 0) {
    lib_long_queue(&c, sessions, n, &r);
  } else if (strcmp(mode, "multi") == 0) {
    lib_multilock(&c, n, &r);
  } else if (strcmp(mode, "uncontended") == 0 ||
             strcmp(mode, "contended") == 0) {
    lib_blocking(&c, n, &r);
  } else {
    fprintf(stderr, "zklock-bench --as-peer: unknown mode %s\n", mode);
    return 2;
  }
  if (!r.ok) {
    fprintf(stderr, "zklock-bench --as-peer: %s\n", r.error);
    return 1;
  }
  printf("result ops=%llu seconds=%.6f p50_ms=%.3f p99_ms=%.3f overlaps=%llu "
         "errors=%llu cpu=%.6f\n",
         (unsigned long long)r.ops, r.seconds, r.p50_ms, r.p99_ms,
         (unsigned long long)r.overlaps, (unsigned long long)r.errors,
         r.cpu_s);
  fflush(stdout);
  while (fgetc(stdin) != EOF) /* until the bench closes our stdin */
    ;
  return 0;
}
