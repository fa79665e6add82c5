/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.h - what the files of zklock-bench share.
 *
 * The benchmark measures one "contestant" at a time (a floor written with
 * the raw ZooKeeper C client, libzklock, or a peer library in a child
 * process) for a fixed window, and the driver (main.c) interleaves the
 * contestants of each workload round after round on one warmed server, so
 * that the ratios it reports compare runs made a few seconds apart.
 *
 * Every in-process contestant follows the same shape (measure.c): its
 * threads or callbacks loop until the window's phase says stop; the driver
 * warms up, opens the window, closes it, and reads the counters and the
 * process's CPU time at both ends.
 */
#ifndef ZKL_BENCH_H
#define ZKL_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>

/* ------------------------------------------------------------- results */

/* One contestant's run in one round. Rates are per second of the measured
 * window; latencies in milliseconds (NAN when not measured); cpu_s is the
 * CPU time (user + system) of the client process over the window. */
typedef struct bench_result {
  bool ok;           /* false: the run failed; why is in error */
  char error[160];
  double seconds;    /* length of the measured window */
  uint64_t ops;      /* cycles or handoffs completed in the window */
  double rate;       /* ops / seconds */
  double p50_ms, p99_ms;
  uint64_t overlaps; /* two holders at once: must stay 0 */
  uint64_t errors;   /* failed calls (timeouts, connection loss...) */
  double cpu_s;
} bench_result;

/* ------------------------------------------------------------- measure.c */

double bench_now(void); /* CLOCK_MONOTONIC, seconds */
/* Process CPU time (user + system, all threads), seconds. */
double bench_cpu_self(void);

/* Acquire latencies, one recorder per thread (or per completion thread),
 * merged at the end of a run. */
typedef struct bench_lat {
  float *ms;
  size_t n, cap;
} bench_lat;
void bench_lat_add(bench_lat *l, double ms);
void bench_lat_merge(bench_lat *into, bench_lat *from); /* empties from */
void bench_lat_free(bench_lat *l);
/* The p-quantile (0..1) of the samples, NAN when there are none. Sorts. */
double bench_lat_quantile(bench_lat *l, double p);

/* The measuring window every in-process contestant shares with the driver.
 * Phases: WARM (running, not counted), MEASURE (counted), STOP (finish the
 * current cycle, then stop). */
enum { BENCH_WARM = 0, BENCH_MEASURE = 1, BENCH_STOP = 2 };
typedef struct bench_window {
  atomic_int phase;
  atomic_uint_fast64_t ops;      /* completed cycles or handoffs, all phases */
  atomic_uint_fast64_t errors;
  atomic_uint_fast64_t overlaps;
  atomic_int inside;             /* holders right now (exclusion check) */
  atomic_uint_fast64_t ops_target; /* bench_window_wait_ops() waits for it */
  /* a run's threads report readiness and completion through these */
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int ready;   /* threads (or slots) that finished their setup */
  int done;    /* threads (or slots) that stopped */
  int failed;  /* threads whose setup failed */
  char error[160];
} bench_window;

void bench_window_init(bench_window *w);
void bench_window_destroy(bench_window *w);
/* Called by a contestant's thread or slot. */
void bench_window_ready(bench_window *w);
void bench_window_fail(bench_window *w, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void bench_window_done(bench_window *w);
/* Waits (bounded) until ready + failed reaches n; false on timeout or when
 * any failed (the error is then in w->error). */
bool bench_window_wait_ready(bench_window *w, int n, double timeout_s);
/* Waits (bounded) until done reaches n. */
bool bench_window_wait_done(bench_window *w, int n, double timeout_s);
/* Waits (bounded) until w->ops reaches want: the warm-up of workloads that
 * must have cycled through every waiter once before they are steady. */
bool bench_window_wait_ops(bench_window *w, uint64_t want, double timeout_s);
/* Enters the grant's critical section and leaves it: counts an overlap if
 * another holder is inside, and the op. Called by every contestant right
 * after a grant, before its release. */
void bench_window_hold(bench_window *w);

/* Runs the window: warm for c->warm_s, call c->before_window if set,
 * measure for c->secs, then set STOP. Fills seconds, ops, rate and cpu_s
 * of r. */
struct bench_ctx;
void bench_window_run(bench_window *w, const struct bench_ctx *c,
                      bench_result *r);
/* Copies the counters that are not per-window (overlaps, errors) into r. */
void bench_window_totals(bench_window *w, bench_result *r);

/* Runs a thread-per-client contestant: n threads running fn, the i-th on
 * (char *)args + i * sz; waits (bounded) until all are ready, runs the
 * window, sets STOP and joins them. Fills r (rate, CPU, overlaps, errors;
 * latencies are the caller's). Returns false, with r->error set, when the
 * setup failed. */
bool bench_run_threads(const struct bench_ctx *c, bench_window *w, int n,
                       void *(*fn)(void *), void *args, size_t sz,
                       bench_result *r);

/* Sleeps until an absolute CLOCK_MONOTONIC time (seconds): the length of a
 * measured window, never a synchronisation. */
void bench_sleep_until(double t);

/* ------------------------------------------------------------ workloads */

/* What every contestant is told. */
typedef struct bench_ctx {
  const char *hosts;
  double warm_s;         /* warm-up before each window */
  double secs;           /* the window */
  int session_ms;        /* session timeout for every client */
  unsigned run_id;       /* makes node paths unique to this run */
  /* zoo_set_servers_resolution_delay() of the floors' handles: 0 is the
   * client's default (resolve at every poll) */
  int resolve_delay_ms;
  /* Called once the warm-up is over, right before the window opens (the
   * peer protocol's "ready"/"go" in --as-peer mode); NULL: nothing. */
  void (*before_window)(void);
} bench_ctx;

/* raw.c: the floors, written with the raw C client. */
/* create (ephemeral sequential) + delete, one at a time, one session */
void raw_create_delete(const bench_ctx *c, bench_result *r);
/* the same pipelined: `inflight` cycles in flight at once, one session */
void raw_pipelined(const bench_ctx *c, int inflight, bench_result *r);
/* The same shaped as a lock: one parent per cycle in flight, each cycle a
 * create and a listing sent back to back, then the delete. */
void raw_pipelined_locks(const bench_ctx *c, int inflight, bench_result *r);
/* the raw-call contended recipe: n sessions, one thread each, one lock */
void raw_recipe(const bench_ctx *c, int n, bench_result *r);
/* one session: one zoo_multi of `names` ephemeral sequential creates (one
 * under each of `names` parents), then one zoo_multi of their deletes */
void raw_multi(const bench_ctx *c, int names, bench_result *r);

/* lib_blocking.c: libzklock's blocking API; n sessions, one thread each,
 * one lock (n = 1: the uncontended workload). */
void lib_blocking(const bench_ctx *c, int n, bench_result *r);
/* The same with another exclusive recipe. */
typedef enum {
  BENCH_MUTEX,
  BENCH_RW_WRITE, /* the write side of a read/write lock */
  BENCH_SEMAPHORE, /* a semaphore of one lease */
  BENCH_WATCHED,   /* a mutex watching its own node from the grant
                      (zkl_lock_set_watch_after(l, 0)) */
  BENCH_MULTI      /* a multi-lock (lib_multilock) */
} bench_lock_kind;
void lib_blocking_kind(const bench_ctx *c, int n, bench_lock_kind kind,
                       bench_result *r);
/* One session, one thread: a multi-lock of `names` names
 * (zkl_lock_new_multi), uncontended. */
void lib_multilock(const bench_ctx *c, int names, bench_result *r);
/* agent.c: workload 8, through the zklock command, directly or through
 * zklockd (started once, on first use; NULL when it would not start). */
const char *bench_agent_start(const char *hosts);
void bench_cli_runs(const bench_ctx *c, bool through_agent, int n,
                    bench_result *r);
/* rate: writes per run, over runs runs */
void bench_cli_writes(const bench_ctx *c, bool through_agent, int runs,
                      bench_result *r);
/* rate and p50: ms from the kill to the next grant */
void bench_dead_holder(const bench_ctx *c, bool through_agent,
                       bench_result *r);

/* lib_async.c: libzklock's async API. */
/* many locks: one session, `locks` different locks, each cycling */
void lib_many_locks(const bench_ctx *c, int locks, bench_result *r);
/* long queue: `waiters` contenders for one lock spread over `sessions`
 * sessions; each re-queues after its release */
void lib_long_queue(const bench_ctx *c, int sessions, int waiters,
                    bench_result *r);

/* peer.c: a peer library's benchmark in a child process (see peer.c for
 * the protocol): COMMAND HOSTS MODE N WARM SECONDS, MODE uncontended,
 * contended or multi (N names). */
void peer_run(const bench_ctx *c, const char *command, const char *mode,
              int n, bench_result *r);
/* The peer process running now (0: none), for a signal handler to kill. */
extern volatile pid_t peer_child;

/* as_peer.c: zklock-bench --as-peer HOSTS MODE N WARM SECONDS (the
 * arguments after the option); returns the exit status. */
int as_peer_main(int argc, char **argv);

/* --------------------------------------------------------------- server.c */

/* A session on hosts with the given session timeout, every other option at
 * its default (zklock-bench and zklock-requests both open theirs so). */
struct zkl_session;
int bench_open_session(struct zkl_session **s, const char *hosts,
                       int session_ms);

/* Starts a throwaway standalone server with tests/zkserver (fsync on, or
 * off with no_fsync); returns its connect string, or NULL (and says why on
 * stderr). The server is stopped by server_stop_all(), which runs at exit
 * and on SIGINT/SIGTERM/SIGHUP; zkserver's watchdog stops it should this
 * process be killed outright. */
const char *server_start(bool no_fsync);
void server_stop_all(void);

/* ------------------------------------------------------------- helpers */

/* A ZooKeeper handle for the floors and for setup, connected (bounded
 * wait) to ctx->hosts with ctx->session_ms, its log discarded, its host
 * resolution window ctx->resolve_delay_ms. NULL on failure, with a message
 * in err. */
zhandle_t *bench_zk_connect(const struct bench_ctx *ctx, char *err,
                            size_t errlen);
void bench_zk_close(zhandle_t *zh);
/* Creates path and its missing parents as persistent nodes (ZNODEEXISTS is
 * fine). Returns a ZooKeeper code. */
int bench_zk_mkdirs(zhandle_t *zh, const char *path);
/* Deletes path's children and path, best effort (for the floors' parents). */
void bench_zk_rmtree(zhandle_t *zh, const char *path);

/* Formats "%s: %s" into r->error and marks r failed. */
void bench_fail(bench_result *r, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* ZKL_BENCH_H */
