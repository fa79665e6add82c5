/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zklock-bench - how fast libzklock's mutex is, against the floor of what
 * the raw ZooKeeper C client can do on the same server and against peer
 * libraries. See usage() and docs/performance.md.
 *
 * The driver builds a plan (groups of contestants, the targets), then for
 * every round runs every contestant of every group once, in the group's
 * order (floor, libzklock, peers), so that the ratios compare runs made
 * seconds apart on one warmed server. Workload 6 runs afterwards, in rounds
 * of its own, on a second server started without fsync.
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plan.h"
#include "zklock.h"

static void usage(FILE *out) {
  fprintf(out,
"usage: zklock-bench [OPTIONS]\n"
"Measures libzklock's mutex against the raw ZooKeeper C client's floor on\n"
"the same server, in interleaved rounds, and prints a table.\n"
"\n"
"  -s HOSTS          server for workloads 1-4 and 7 (default: a throwaway\n"
"                    one, fsync on, started with tests/zkserver)\n"
"  -S HOSTS          server without fsync for workload 6 (default: a\n"
"                    throwaway one, forceSync=no; with -s alone: -s's)\n"
"  -w LIST           workloads, e.g. 1,2 (default 1,2,3,4,6,7,8):\n"
"                      1 uncontended: one session, one lock, cycles/s\n"
"                      2 contended: N sessions, one thread each, one lock\n"
"                      3 many locks: one session, K locks, async API\n"
"                      4 long queue: W waiters on one lock vs a short queue\n"
"                      5 the floors (raw C client): always run beside 1-3\n"
"                      6 client cost: 1 and 2 (N=8) without fsync, CPU/op\n"
"                      7 multi-lock: one session, a multi-lock of N names,\n"
"                        uncontended, cycles/s\n"
"                      8 the agent: the zklock command directly and through\n"
"                        zklockd: runs/s (N=4 at a time), writes per run,\n"
"                        and ms from a SIGKILLed holder to the next grant\n"
"  -r ROUNDS         interleaved rounds (default 5)\n"
"  -t SECONDS        measured window of each run (default 3)\n"
"  --warm SECONDS    warm-up of each run before its window (default 1)\n"
"  -n LIST           N for workload 2 (default 2,8,32,128)\n"
"  --multi-names LIST  N (names per multi-lock) for workload 7 (default\n"
"                    1,2,4,8)\n"
"  --locks K         workload 3: locks, and the floor's cycles in flight\n"
"                    (default 1000)\n"
"  --waiters W       workload 4: the long queue (default 1000)\n"
"  --short-queue W   workload 4: the queue it is compared with (default 8)\n"
"  --queue-sessions S  workload 4: sessions the waiters share (default 8)\n"
"  --peer NAME=CMD   also run a peer benchmark in workloads 1, 2 and 6 (see\n"
"                    bench/compare); NAME curator gets the issue's targets,\n"
"                    and is the only peer of workload 7 (MODE multi)\n"
"  --csv FILE        also write every run and the medians as CSV (- for\n"
"                    stdout, the table then goes to stderr)\n"
"  --session-ms MS   session timeout of every client (default 10000)\n""  --floor-resolve MS  host resolution window of the floors' handles\n"
"                    (zoo_set_servers_resolution_delay; default 1000; 0: the\n"
"                    client's default, a resolution at every poll of its\n"
"                    socket, which workloads 1 and 6 also show as a row)\n"
"  --smoke           a few seconds in all, small sizes, one round (make\n"
"                    check); exits 1 on any overlap or a zero rate\n"
"  --build NAME=PATH another build's zklock-bench (PATH) as a row of every\n"
"                    workload, run through --as-peer: what a change to the\n"
"                    library buys, measured in the same rounds\n"
"  --as-peer HOSTS MODE N WARM SECONDS\n"
"                    be a peer of another zklock-bench: this build's\n"
"                    libzklock behind the peer protocol (MODE uncontended,\n"
"                    contended, many, queue-SESSIONS, multi)\n"
"  -h, --help\n");
}

/* ----------------------------------------------------------- the plan */

static plan P;

static bench_result *new_results(int rounds) {
  bench_result *r = calloc((size_t)rounds, sizeof *r);
  if (!r) {
    fprintf(stderr, "zklock-bench: out of memory\n");
    exit(1);
  }
  return r;
}

static group *add_group(int workload, const char *unit, int n, bool no_fsync,
                        const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static group *add_group(int workload, const char *unit, int n, bool no_fsync,
                        const char *fmt, ...) {
  group *g;
  va_list ap;
  if (P.ngroups == MAX_GROUPS) {
    fprintf(stderr, "zklock-bench: too many groups\n");
    exit(2);
  }
  g = &P.groups[P.ngroups++];
  memset(g, 0, sizeof *g);
  g->workload = workload;
  g->unit = unit;
  g->n = n;
  g->no_fsync = no_fsync;
  g->floor = -1;
  va_start(ap, fmt);
  vsnprintf(g->title, sizeof g->title, fmt, ap);
  va_end(ap);
  return g;
}

static int add_row(group *g, const char *name, row_kind kind, int n) {
  row *r;
  if (g->nrows == MAX_ROWS) {
    fprintf(stderr, "zklock-bench: too many rows in one group\n");
    exit(2);
  }
  r = &g->rows[g->nrows];
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->kind = kind;
  r->n = n;
  r->res = new_results(P.rounds);
  return g->nrows++;
}

/* Adds a row per peer; builds_only: only the other zklock-bench builds,
 * which alone know the async workloads' modes; and_named: that peer too
 * (NULL: none), the one other peer that knows the mode. */
static void add_peer_rows_of(group *g, const peer *peers, int npeers,
                             const char *mode, int n, bool builds_only,
                             const char *and_named) {
  int i;
  for (i = 0; i < npeers; i++) {
    char name[64];
    int k;
    if (builds_only && !peers[i].build &&
        !(and_named && strcmp(peers[i].name, and_named) == 0))
      continue;
    if (strncmp(mode, "queue-", 6) == 0)
      snprintf(name, sizeof name, "%s %d waiters", peers[i].name, n);
    else
      snprintf(name, sizeof name, "%s", peers[i].name);
    k = add_row(g, name, K_PEER, n);
    g->rows[k].build = peers[i].build;
    g->rows[k].peer_cmd = peers[i].cmd;
    g->rows[k].peer_mode = mode;
  }
}

static void add_peer_rows(group *g, const peer *peers, int npeers,
                          const char *mode, int n, bool builds_only) {
  add_peer_rows_of(g, peers, npeers, mode, n, builds_only, NULL);
}

static void add_target(int gi, int num, int den, metric m, bool at_most,
                       double threshold, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 7, 8)))
#endif
    ;

static void add_target(int gi, int num, int den, metric m, bool at_most,
                       double threshold, const char *fmt, ...) {
  target *t;
  va_list ap;
  if (P.ntargets == MAX_TARGETS)
    return;
  t = &P.targets[P.ntargets++];
  t->group = gi;
  t->num = num;
  t->den = den;
  t->m = m;
  t->at_most = at_most;
  t->threshold = threshold;
  va_start(ap, fmt);
  vsnprintf(t->text, sizeof t->text, fmt, ap);
  va_end(ap);
}

/* A ratio of two rows shown beside the targets, without one of its own. */
#define add_ratio(gi, num, den, m, ...)                                       \
  add_target(gi, num, den, m, false, NAN, __VA_ARGS__)

/* The floor once more with the client's default host resolution (at every
 * poll): what that default costs, beside what the floor costs. */
static void add_defaults_row(group *g) {
  int k;
  if (P.ctx.resolve_delay_ms == 0)
    return; /* the floor already is that */
  k = add_row(g, "raw (host re-resolving)", K_RAW_CD, 1);
  g->rows[k].client_defaults = true;
}

/* The row of a peer named name in group g, or -1. */
static int peer_row(const group *g, const char *name) {
  int i;
  for (i = 0; i < g->nrows; i++)
    if (g->rows[i].kind == K_PEER && strcmp(g->rows[i].name, name) == 0)
      return i;
  return -1;
}

typedef struct config {
  bool w[9];
  int ns[16], nn;
  int multi[16], nmulti; /* workload 7: names per multi-lock */
  int locks, waiters, short_queue, queue_sessions;
  peer peers[MAX_PEERS];
  int npeers;
} config;

static char *cf_queue_mode; /* "queue-S" for the builds' rows */

static void build_plan(const config *cf) {
  int i, gi;
  group *g;
  if (cf->w[1]) {
    int lib, rwl, sem;
    g = add_group(1, "cycles/s", 1, false, "uncontended: one session and one lock");
    g->floor = add_row(g, "raw create+delete", K_RAW_CD, 1);
    add_defaults_row(g);
    lib = add_row(g, "libzklock", K_LIB_BLOCK, 1);
    /* the same cycles from the completion thread: what the blocking
     * caller's wake-up costs */
    add_row(g, "libzklock async API", K_LIB_MANY, 1);
    /* what the own-node watch costs a cycle when armed at every grant */
    add_row(g, "libzklock watch_after 0", K_LIB_WATCHED, 1);
    rwl = add_row(g, "libzklock rwlock (write)", K_LIB_RW, 1);
    sem = add_row(g, "libzklock semaphore (1)", K_LIB_SEM, 1);
    add_peer_rows(g, cf->peers, cf->npeers, "uncontended", 1, false);
    gi = P.ngroups - 1;
    add_target(gi, lib, g->floor, M_RATE, false, 0.95,
               "1  uncontended cycles >= 0.95 x raw create+delete");
    add_target(gi, rwl, g->floor, M_RATE, false, 0.95,
               "1  rwlock (write) uncontended >= 0.95 x raw");
    add_target(gi, sem, g->floor, M_RATE, false, 0.85,
               "1  semaphore (1) uncontended >= 0.85 x raw");
  }
  if (cf->w[2]) {
    for (i = 0; i < cf->nn; i++) {
      int n = cf->ns[i], lib, rwl, sem, cur;
      g = add_group(2, "handoffs/s", n, false,
                    "contended: N=%d sessions on one lock", n);
      g->floor = add_row(g, "raw-call recipe", K_RAW_RECIPE, n);
      lib = add_row(g, "libzklock", K_LIB_BLOCK, n);
      rwl = add_row(g, "libzklock rwlock (write)", K_LIB_RW, n);
      sem = add_row(g, "libzklock semaphore (1)", K_LIB_SEM, n);
      add_peer_rows(g, cf->peers, cf->npeers, "contended", n, false);
      gi = P.ngroups - 1;
      if (n != 8 && n != 32)
        continue;
      add_target(gi, lib, g->floor, M_RATE, false, 1.0,
                 "2  N=%d handoffs >= 1.0 x raw-call recipe", n);
      add_target(gi, rwl, g->floor, M_RATE, false, 1.0,
                 "2  N=%d rwlock (write) >= 1.0 x raw-call recipe", n);
      /* no target of its own: Curator's layout waits at the gate and
       * then for the lease, two queues (docs/performance.md) */
      add_ratio(gi, sem, g->floor, M_RATE,
                "2  N=%d semaphore (1) x raw-call recipe", n);
      if ((cur = peer_row(g, "curator")) >= 0) {
        add_target(gi, lib, cur, M_RATE, false, 1.15,
                   "2  N=%d handoffs >= 1.15 x Curator", n);
        add_target(gi, lib, cur, M_P99, true, 0.4,
                   "2  N=%d acquire p99 <= 0.4 x Curator's", n);
      }
    }
  }
  if (cf->w[3]) {
    int lib, shaped;
    g = add_group(3, "cycles/s", cf->locks, false,
                  "many locks: %d locks on one session (async)", cf->locks);
    g->floor = add_row(g, "raw pipelined", K_RAW_PIPE, cf->locks);
    snprintf(g->rows[g->floor].name, sizeof g->rows[0].name,
             "raw pipelined (%d)", cf->locks);
    shaped = add_row(g, "raw create+list+delete", K_RAW_PIPE_LOCK,
                     cf->locks);
    lib = add_row(g, "libzklock", K_LIB_MANY, cf->locks);
    add_peer_rows(g, cf->peers, cf->npeers, "many", cf->locks, true);
    add_target(P.ngroups - 1, lib, g->floor, M_RATE, false, 0.8,
               "3  many locks >= 0.8 x raw pipelined create+delete");
    /* the least a lock recipe sends: what the target above cannot pass */
    add_ratio(P.ngroups - 1, shaped, g->floor, M_RATE,
              "3  raw create+list+delete x raw pipelined create+delete");
    add_ratio(P.ngroups - 1, lib, shaped, M_RATE,
              "3  many locks x raw create+list+delete");
  }
  if (cf->w[4]) {
    int lng;
    char name[48];
    g = add_group(4, "handoffs/s", cf->waiters, false,
                  "long queue: one lock over %d sessions (async)",
                  cf->queue_sessions);
    snprintf(name, sizeof name, "libzklock %d waiters", cf->short_queue);
    g->floor = add_row(g, name, K_LIB_QUEUE, cf->short_queue);
    snprintf(name, sizeof name, "libzklock %d waiters", cf->waiters);
    lng = add_row(g, name, K_LIB_QUEUE, cf->waiters);
    g->rows[g->floor].sessions = g->rows[lng].sessions = cf->queue_sessions;
    snprintf(name, sizeof name, "queue-%d", cf->queue_sessions);
    cf_queue_mode = strdup(name);
    add_peer_rows(g, cf->peers, cf->npeers, cf_queue_mode, cf->short_queue,
                  true);
    add_peer_rows(g, cf->peers, cf->npeers, cf_queue_mode, cf->waiters, true);
    add_target(P.ngroups - 1, lng, g->floor, M_RATE, false, 0.85,
               "4  %d waiters >= 0.85 x %d waiters", cf->waiters,
               cf->short_queue);
  }
  if (cf->w[6]) {
    int lib, k;
    g = add_group(6, "cycles/s", 1, true, "no fsync: uncontended");
    g->floor = add_row(g, "raw create+delete", K_RAW_CD, 1);
    add_defaults_row(g);
    lib = add_row(g, "libzklock", K_LIB_BLOCK, 1);
    add_row(g, "libzklock async API", K_LIB_MANY, 1);
    add_peer_rows(g, cf->peers, cf->npeers, "uncontended", 1, false);
    gi = P.ngroups - 1;
    add_target(gi, lib, g->floor, M_RATE, false, 0.8,
               "6  no fsync: cycles >= 0.8 x raw C client");
    for (k = 0; k < g->nrows; k++)
      if (g->rows[k].kind == K_PEER && !g->rows[k].build)
        add_target(gi, lib, k, M_CPU, true, 0.25,
                   "6  no fsync: CPU per cycle <= 0.25 x %s's",
                   g->rows[k].name);
    g = add_group(6, "handoffs/s", 8, true, "no fsync: contended N=8");
    g->floor = add_row(g, "raw-call recipe", K_RAW_RECIPE, 8);
    add_row(g, "libzklock", K_LIB_BLOCK, 8);
    add_peer_rows(g, cf->peers, cf->npeers, "contended", 8, false);
  }
  if (cf->w[7]) {
    /* No target: the issue asks for the figures. Only Curator among the
     * peers has a multi-lock (InterProcessMultiLock); kazoo has none. */
    for (i = 0; i < cf->nmulti; i++) {
      int n = cf->multi[i], lib, cur;
      g = add_group(7, "cycles/s", n, false,
                    "multi-lock: N=%d names on one session", n);
      g->floor = add_row(g, "raw multi create+delete", K_RAW_MULTI, n);
      lib = add_row(g, "libzklock multi-lock", K_LIB_MULTI, n);
      add_peer_rows_of(g, cf->peers, cf->npeers, "multi", n, true, "curator");
      gi = P.ngroups - 1; /* the ratio to the floor is the table's */
      if ((cur = peer_row(g, "curator")) >= 0)
        add_ratio(gi, lib, cur, M_RATE,
                  "7  N=%d multi-lock cycles / Curator's InterProcessMultiLock",
                  n);
    }
  }
  if (cf->w[8]) {
    /* The targets (27): through the agent, >= 5 x the direct
     * rate with half the writes, and a dead holder's lock to the next in
     * < 200 ms instead of the session timeout T. */
    int d, a;
    g = add_group(8, "runs/s", 4, false,
                  "zklock -- true: N=4 at a time");
    g->floor = d = add_row(g, "zklock (own session)", K_CLI_RUNS, 4);
    a = add_row(g, "zklock --agent", K_CLI_RUNS, 4);
    g->rows[a].agent = true;
    add_target(P.ngroups - 1, a, d, M_RATE, false, 5.0,
               "8  zklock -- true through the agent >= 5 x direct");
    g = add_group(8, "writes/run", 1, false,
                  "ZooKeeper writes per zklock -- true");
    g->floor = d = add_row(g, "zklock (own session)", K_CLI_WRITES, 20);
    a = add_row(g, "zklock --agent", K_CLI_WRITES, 20);
    g->rows[a].agent = true;
    add_target(P.ngroups - 1, a, d, M_RATE, true, 0.5,
               "8  writes per run through the agent <= 0.5 x direct");
    g = add_group(8, "ms", 1, false,
                  "a SIGKILLed holder to the next grant");
    g->floor = d = add_row(g, "zklock (own session)", K_DEAD_HOLDER, 1);
    a = add_row(g, "zklock --agent", K_DEAD_HOLDER, 1);
    g->rows[a].agent = true;
    /* 200 ms of the default T = 10 s */
    add_target(P.ngroups - 1, a, d, M_RATE, true, 0.02,
               "8  dead holder to next grant through the agent <= 0.02 x "
               "direct (T)");
  }
}

/* ------------------------------------------------------------ running */

static void run_row(const bench_ctx *ctx, row *rw, bench_result *r) {
  bench_ctx defaults = *ctx;
  const bench_ctx *c = ctx;
  if (rw->client_defaults) {
    defaults.resolve_delay_ms = 0;
    c = &defaults;
  }
  memset(r, 0, sizeof *r);
  r->p50_ms = r->p99_ms = NAN;
  switch (rw->kind) {
  case K_RAW_CD:
    raw_create_delete(c, r);
    break;
  case K_RAW_PIPE:
    raw_pipelined(c, rw->n, r);
    break;
  case K_RAW_PIPE_LOCK:
    raw_pipelined_locks(c, rw->n, r);
    break;
  case K_RAW_RECIPE:
    raw_recipe(c, rw->n, r);
    break;
  case K_LIB_BLOCK:
    lib_blocking(c, rw->n, r);
    break;
  case K_LIB_RW:
    lib_blocking_kind(c, rw->n, BENCH_RW_WRITE, r);
    break;
  case K_LIB_SEM:
    lib_blocking_kind(c, rw->n, BENCH_SEMAPHORE, r);
    break;
  case K_LIB_WATCHED:
    lib_blocking_kind(c, rw->n, BENCH_WATCHED, r);
    break;
  case K_LIB_MANY:
    lib_many_locks(c, rw->n, r);
    break;
  case K_LIB_QUEUE:
    lib_long_queue(c, rw->sessions, rw->n, r);
    break;
  case K_RAW_MULTI:
    raw_multi(c, rw->n, r);
    break;
  case K_LIB_MULTI:
    lib_multilock(c, rw->n, r);
    break;
  case K_PEER:
    peer_run(c, rw->peer_cmd, rw->peer_mode, rw->n, r);
    break;
  case K_CLI_RUNS:
    bench_cli_runs(c, rw->agent, rw->n, r);
    break;
  case K_CLI_WRITES:
    bench_cli_writes(c, rw->agent, rw->n, r);
    break;
  case K_DEAD_HOLDER:
    bench_dead_holder(c, rw->agent, r);
    break;
  }
}

static FILE *progress; /* where each run is announced: stderr */

/* A few seconds of cycles that count for nothing: the server's JIT, its
 * caches and the disk's first allocations are warm before round 1. */
static void warm_server(const bench_ctx *c) {
  bench_ctx w = *c;
  bench_result r;
  w.warm_s = 0;
  w.secs = c->secs > 2 ? c->secs : 2;
  memset(&r, 0, sizeof r);
  raw_create_delete(&w, &r);
  memset(&r, 0, sizeof r);
  lib_blocking(&w, 8, &r);
}

static void run_phase(bool no_fsync, const char *hosts) {
  bench_ctx c = P.ctx;
  int round, gi, ri;
  bool any = false;
  for (gi = 0; gi < P.ngroups; gi++)
    any |= P.groups[gi].no_fsync == no_fsync;
  if (!any)
    return;
  c.hosts = hosts;
  if (progress)
    fprintf(progress, "zklock-bench: warming up %s\n", hosts);
  warm_server(&c);
  for (round = 0; round < P.rounds; round++) {
    for (gi = 0; gi < P.ngroups; gi++) {
      group *g = &P.groups[gi];
      if (g->no_fsync != no_fsync)
        continue;
      for (ri = 0; ri < g->nrows; ri++) {
        bench_result *r = &g->rows[ri].res[round];
        run_row(&c, &g->rows[ri], r);
        if (!progress)
          continue;
        if (r->ok)
          fprintf(progress,
                  "round %d/%d  %d. %-40s %-24s %8.0f %s%s\n", round + 1,
                  P.rounds, g->workload, g->title, g->rows[ri].name, r->rate,
                  g->unit, r->overlaps ? "  OVERLAPS" : "");
        else
          fprintf(progress, "round %d/%d  %d. %-40s %-24s failed: %s\n",
                  round + 1, P.rounds, g->workload, g->title,
                  g->rows[ri].name, r->error);
      }
    }
  }
}

/* ------------------------------------------------------------ signals */

static void on_signal(int sig) {
  /* The peer dies with us anyway (PR_SET_PDEATHSIG), the servers through
   * zkserver's watchdog, which sees this process go. */
  if (peer_child > 0)
    kill(peer_child, SIGKILL);
  _exit(128 + sig);
}

/* ------------------------------------------------------------- options */

static int parse_list(const char *s, int *out, int max) {
  int n = 0;
  char *end;
  while (*s && n < max) {
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > 100000)
      return -1;
    out[n++] = (int)v;
    s = end;
    if (*s == ',')
      s++;
    else if (*s)
      return -1;
  }
  return n;
}

static double parse_secs(const char *s, const char *what) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !(v > 0) || v > 3600) {
    fprintf(stderr, "zklock-bench: %s: bad number of seconds '%s'\n", what, s);
    exit(2);
  }
  return v;
}

static int parse_int(const char *s, const char *what, int min, int max) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end || v < min || v > max) {
    fprintf(stderr, "zklock-bench: %s: expected %d..%d, got '%s'\n", what,
            min, max, s);
    exit(2);
  }
  return (int)v;
}

int main(int argc, char **argv) {
  enum {
    O_WARM = 256, O_LOCKS, O_WAITERS, O_SHORT, O_QSESS, O_PEER, O_CSV,
    O_SESSION, O_SMOKE, O_BUILD, O_RESOLVE, O_MULTI
  };
  static const struct option longopts[] = {
      {"warm", required_argument, NULL, O_WARM},
      {"locks", required_argument, NULL, O_LOCKS},
      {"waiters", required_argument, NULL, O_WAITERS},
      {"short-queue", required_argument, NULL, O_SHORT},
      {"queue-sessions", required_argument, NULL, O_QSESS},
      {"peer", required_argument, NULL, O_PEER},
      {"csv", required_argument, NULL, O_CSV},
      {"session-ms", required_argument, NULL, O_SESSION},
      {"smoke", no_argument, NULL, O_SMOKE},
      {"build", required_argument, NULL, O_BUILD},
      {"floor-resolve", required_argument, NULL, O_RESOLVE},
      {"multi-names", required_argument, NULL, O_MULTI},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  static config cf; /* static: what --build allocates stays reachable */
  const char *hosts = NULL, *hosts_nofsync = NULL, *csv = NULL;
  int ws[9], nw = 0, opt, i;
  bool smoke = false, ok;
  FILE *table = stdout;

  if (argc >= 2 && strcmp(argv[1], "--as-peer") == 0)
    return as_peer_main(argc - 2, argv + 2);
  memset(&cf, 0, sizeof cf);
  cf.nn = 4;
  cf.ns[0] = 2, cf.ns[1] = 8, cf.ns[2] = 32, cf.ns[3] = 128;
  cf.nmulti = 4;
  cf.multi[0] = 1, cf.multi[1] = 2, cf.multi[2] = 4, cf.multi[3] = 8;
  cf.locks = 1000;
  cf.waiters = 1000;
  cf.short_queue = 8;
  cf.queue_sessions = 8;
  P.rounds = 5;
  P.ctx.secs = 3;
  P.ctx.warm_s = 1;
  P.ctx.session_ms = 10000;
  P.ctx.resolve_delay_ms = 1000;
  while ((opt = getopt_long(argc, argv, "s:S:w:r:t:n:h", longopts, NULL)) !=
         -1) {
    switch (opt) {
    case 's':
      hosts = optarg;
      break;
    case 'S':
      hosts_nofsync = optarg;
      break;
    case 'w':
      if ((nw = parse_list(optarg, ws, 9)) <= 0) {
        fprintf(stderr, "zklock-bench: -w: bad list '%s'\n", optarg);
        return 2;
      }
      for (i = 0; i < nw; i++)
        if (ws[i] > 8) {
          fprintf(stderr, "zklock-bench: -w: no workload %d\n", ws[i]);
          return 2;
        }
      break;
    case 'r':
      P.rounds = parse_int(optarg, "-r", 1, 100);
      break;
    case 't':
      P.ctx.secs = parse_secs(optarg, "-t");
      break;
    case 'n':
      if ((cf.nn = parse_list(optarg, cf.ns, 16)) <= 0) {
        fprintf(stderr, "zklock-bench: -n: bad list '%s'\n", optarg);
        return 2;
      }
      break;
    case O_MULTI:
      if ((cf.nmulti = parse_list(optarg, cf.multi, 16)) <= 0) {
        fprintf(stderr, "zklock-bench: --multi-names: bad list '%s'\n",
                optarg);
        return 2;
      }
      for (i = 0; i < cf.nmulti; i++)
        if (cf.multi[i] > ZKL_MULTI_NAMES_MAX) {
          fprintf(stderr, "zklock-bench: --multi-names: at most %d\n",
                  ZKL_MULTI_NAMES_MAX);
          return 2;
        }
      break;
    case O_WARM:
      P.ctx.warm_s = parse_secs(optarg, "--warm");
      break;
    case O_LOCKS:
      cf.locks = parse_int(optarg, "--locks", 1, 100000);
      break;
    case O_WAITERS:
      cf.waiters = parse_int(optarg, "--waiters", 1, 100000);
      break;
    case O_SHORT:
      cf.short_queue = parse_int(optarg, "--short-queue", 1, 100000);
      break;
    case O_QSESS:
      cf.queue_sessions = parse_int(optarg, "--queue-sessions", 1, 1000);
      break;
    case O_PEER:
    case O_BUILD: {
      const char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg || !eq[1] || cf.npeers == MAX_PEERS ||
          (size_t)(eq - optarg) >= sizeof cf.peers[0].name) {
        fprintf(stderr, "zklock-bench: --peer NAME=COMMAND, --build "
                        "NAME=PATH (at most %d in all)\n", MAX_PEERS);
        return 2;
      }
      snprintf(cf.peers[cf.npeers].name, sizeof cf.peers[0].name, "%.*s",
               (int)(eq - optarg), optarg);
      if (opt == O_BUILD) {
        size_t len = strlen(eq + 1) + 32;
        char *cmd = malloc(len);
        if (!cmd)
          return 1;
        snprintf(cmd, len, "'%s' --as-peer", eq + 1);
        cf.peers[cf.npeers].cmd = cmd;
        cf.peers[cf.npeers++].build = true;
      } else {
        cf.peers[cf.npeers++].cmd = eq + 1;
      }
      break;
    }
    case O_CSV:
      csv = optarg;
      break;
    case O_SESSION:
      P.ctx.session_ms = parse_int(optarg, "--session-ms", 1000, 600000);
      break;
    case O_SMOKE:
      smoke = true;
      break;
    case O_RESOLVE:
      P.ctx.resolve_delay_ms = parse_int(optarg, "--floor-resolve", -1, 3600000);
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  if (smoke) {
    /* Small and short: it proves the benchmark runs and that exclusion
     * holds, not how fast anything is. */
    P.rounds = 1;
    P.ctx.secs = 0.25;
    P.ctx.warm_s = 0.1;
    cf.nn = 1;
    cf.ns[0] = 4;
    cf.nmulti = 1;
    cf.multi[0] = 4;
    cf.locks = 50;
    cf.waiters = 40;
    cf.short_queue = 4;
    cf.queue_sessions = 2;
  }
  if (nw == 0) {
    ws[0] = 1, ws[1] = 2, ws[2] = 3, ws[3] = 4, ws[4] = 6, ws[5] = 7;
    ws[6] = 8;
    nw = 7;
  }
  for (i = 0; i < nw; i++)
    cf.w[ws[i]] = true;
  P.ctx.run_id = (unsigned)getpid() ^ (unsigned)time(NULL);
  build_plan(&cf);

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);
  signal(SIGPIPE, SIG_IGN); /* a peer that dies mid-write is an error */
  progress = stderr;
  if (csv && strcmp(csv, "-") == 0)
    table = stderr;

  /* Workloads 1-4 and 7 on the fsync'd server, then 6 on the other. */
  P.hosts_given = hosts != NULL;
  P.nofsync_given = hosts_nofsync != NULL || hosts != NULL;
  for (i = 0; i < P.ngroups; i++)
    if (!P.groups[i].no_fsync)
      break;
  if (i < P.ngroups) {
    if (!hosts && !(hosts = server_start(false)))
      return 99;
    snprintf(P.hosts, sizeof P.hosts, "%s", hosts);
    run_phase(false, hosts);
    if (!P.hosts_given)
      server_stop_all();
  }
  for (i = 0; i < P.ngroups; i++)
    if (P.groups[i].no_fsync)
      break;
  if (i < P.ngroups) {
    if (!hosts_nofsync)
      hosts_nofsync = P.hosts_given ? hosts : server_start(true);
    if (!hosts_nofsync)
      return 99;
    snprintf(P.hosts_nofsync, sizeof P.hosts_nofsync, "%s", hosts_nofsync);
    run_phase(true, hosts_nofsync);
    server_stop_all();
  }

  report_table(&P, table);
  if (csv) {
    FILE *f = strcmp(csv, "-") == 0 ? stdout : fopen(csv, "w");
    if (!f) {
      perror(csv);
      return 1;
    }
    report_csv(&P, f);
    if (f != stdout)
      fclose(f);
  }
  ok = report_no_overlaps(&P);
  if (!ok)
    fprintf(table, "\nOVERLAPS: two holders at once were seen: the lock "
                   "failed to exclude.\n");
  if (smoke) {
    int gi, ri;
    for (gi = 0; gi < P.ngroups; gi++)
      for (ri = 0; ri < P.groups[gi].nrows; ri++) {
        const bench_result *r = &P.groups[gi].rows[ri].res[0];
        if (!r->ok || r->ops == 0) {
          fprintf(table, "smoke: %d. %s: %s: %s\n", P.groups[gi].workload,
                  P.groups[gi].title, P.groups[gi].rows[ri].name,
                  r->ok ? "no cycle in the window" : r->error);
          ok = false;
        }
      }
  }
  return ok ? 0 : 1;
}
