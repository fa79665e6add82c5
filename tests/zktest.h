/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zktest.h - what the test programs share: a real ZooKeeper server to talk
 * to, an observer handle to look at the tree, bounded waits, and a CUnit
 * runner.
 *
 * Each integration test program starts its own throwaway server with
 * tests/zkserver (or uses ZKL_TEST_HOSTS when set), so it can also be run by
 * hand: ./tests/test_lock. The server is stopped at exit, on SIGINT/SIGTERM,
 * and, should the program be killed outright, by zkserver's watchdog.
 */
#ifndef ZKTEST_H
#define ZKTEST_H

#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "proxyctl.h"
#include "zklock.h"

/* Connect string of the test server, started on first use. Aborts the
 * program (exit 99, a hard error for automake) if no server can be had. */
const char *zkt_hosts(void);
/* zkserver's state dir, for kill/restart (NULL with ZKL_TEST_HOSTS). */
const char *zkt_zkdir(void);
/* Runs `tests/zkserver ARGS` and returns its exit status. */
int zkt_zkserver(const char *args);
/* Starts the server as an ensemble of n (call before zkt_hosts()). */
void zkt_use_ensemble(int n);
/* The same, as an ensemble whose members can change while it runs
 * (zkserver start --reconfig; then zkserver add and reconfig). */
void zkt_use_reconfig_ensemble(int n);
/* Extra JVM flags for the server (call before zkt_hosts()). */
void zkt_server_java_opts(const char *opts);
/* Runs hook (async-signal-safe calls only) when SIGINT, SIGTERM or SIGHUP
 * ends the test program, which exits without running atexit handlers. */
void zkt_on_exit_signal(void (*hook)(void));
/* Starts the server as an ensemble of n, each server in a network namespace
 * of its own (zkserver start --netns), so that the links between servers
 * can be cut, delayed or made to flap (zkt_link()); the test stays in the
 * root namespace and reaches each server at its own address. Call before
 * zkt_hosts(). Needs root: without it the program exits here with 77
 * (skipped) and says why. As root it must work: a start that fails is a
 * hard error (99), never a skip, so that CI, which runs as root, cannot
 * pass a test that did not run. */
void zkt_use_netns_ensemble(int n);
/* Whether this process may start a netns ensemble (it is root). */
bool zkt_netns_available(void);

/* Per server, by id (1..n, as zkserver numbers them). */
/* "ADDR:PORT" of server id alone, for a session pinned to it. */
const char *zkt_server_hosts(int id);
/* Server id's answer to a four-letter word (its client port, a 2 s bound)
 * into buf, NUL-terminated: its length, or -1 if it did not answer. */
int zkt_4lw(int id, const char *word, char *buf, size_t len);
/* What server id says it is (srvr): ZKT_MODE_NONE when it does not answer,
 * ZKT_MODE_NOT_SERVING when it answers that it does not serve (a server
 * without a quorum: looking for a leader). */
typedef enum {
  ZKT_MODE_NONE,
  ZKT_MODE_NOT_SERVING,
  ZKT_MODE_STANDALONE,
  ZKT_MODE_LEADER,
  ZKT_MODE_FOLLOWER,
  ZKT_MODE_OBSERVER
} zkt_mode;
zkt_mode zkt_server_mode(int id);
const char *zkt_mode_name(zkt_mode m);
/* The id of the leader once exactly one server answers as leader (a
 * standalone server: 1), waiting up to ZKT_WAIT ms; -1 if none by then. */
int zkt_leader(void);
/* The links between servers of a netns ensemble (zkserver link, isolate,
 * heal), in force when they return: zkt_link(a, b, how) with how "cut",
 * "oneway" (packets from a to b dropped), "delay MS", "flap UP_MS DOWN_MS"
 * or "heal"; zkt_isolate(id) cuts every link of server id (its clients
 * still reach it); zkt_heal() heals every link. Each returns zkserver's
 * exit status: 0 when done. */
int zkt_link(int a, int b, const char *how);
int zkt_isolate(int id);
int zkt_heal(void);
/* Prints the links' state (zkserver links) on stdout, for the test's log. */
void zkt_print_links(void);
/* Stops the servers now (as at exit), closing the observer first: for a
 * test of what stopping leaves behind. */
void zkt_stop_servers(void);

/* A plain ZooKeeper handle of the test itself, connected; closed at exit. */
zhandle_t *zkt_observer(void);

/* The observer helpers below look at the tree through zkt_observer(). An
 * error of that connection is not an answer: it fails the calling test,
 * with what failed and the caller's file and line, and the helper returns
 * ZKT_OBSERVER_ERROR, which no count and no "gone" (-1) equals. The waits
 * ride out a connection loss of the observer (a test that restarts the
 * server) until their bound, and fail if it lasts to the end. They are
 * macros, for the caller's file and line; the _at functions take them. */
#define ZKT_OBSERVER_ERROR (-2)
/* Children of path right now: count, or -1 when path does not exist. */
#define zkt_children(path) zkt_children_at((path), __FILE__, __LINE__)
int zkt_children_at(const char *path, const char *file, int line);
/* Waits (bounded) until path has `want` children (-1: path gone); uses a
 * child watch, not sleeps. Returns the final count (-1: gone), whatever it
 * is when the bound passes. */
#define zkt_wait_children(path, want, timeout_ms)                              \
  zkt_wait_children_at((path), (want), (timeout_ms), __FILE__, __LINE__)
int zkt_wait_children_at(const char *path, int want, int timeout_ms,
                         const char *file, int line);
/* Waits (bounded, with a watch) until path does not exist: 0, or -1 when
 * it still exists at the bound. */
#define zkt_wait_absent(path, timeout_ms)                                      \
  zkt_wait_absent_at((path), (timeout_ms), __FILE__, __LINE__)
int zkt_wait_absent_at(const char *path, int timeout_ms, const char *file,
                       int line);
/* Asserts, in the calling test, that the lock NAME left no node behind: its
 * parent has no child, or is gone (a container the server reaped), within
 * ZKT_WAIT ms. An error of the observer's own connection fails the test
 * too: a check that cannot see cannot pass. */
#define ZKT_WAIT 15000
#define zkt_assert_parent_empty(name)                                          \
  zkt_assert_parent_empty_at((name), __FILE__, __LINE__)
void zkt_assert_parent_empty_at(const char *name, const char *file, int line);
/* The same for every kind of lock: no contender node is left under the
 * name, nor in a semaphore's places there (NAME/locks, NAME/leases), which
 * may stay as empty containers until the server reaps them. */
#define zkt_assert_no_contender(name)                                          \
  zkt_assert_no_contender_at((name), __FILE__, __LINE__)
void zkt_assert_no_contender_at(const char *name, const char *file, int line);
/* Asserts that s holds nothing any more (no watch record, cleanup, request,
 * suspended attempt or queued callback) within ZKT_WAIT ms, and says what
 * it still holds when it does. */
#define zkt_assert_quiet(s) zkt_assert_quiet_at((s), __FILE__, __LINE__)
void zkt_assert_quiet_at(zkl_session *s, const char *file, int line);

/* An assertion with a message of its own (printf format): passes or fails
 * the running test at the caller's file and line, and returns ok. CUnit
 * assertions belong on the test's thread: called on any other thread, this
 * one prints the failure and keeps it for the end of the running test,
 * which it then fails; outside a test run (a child process) it only
 * prints. */
#define zkt_check(ok, ...) zkt_check_at((ok), __FILE__, __LINE__, __VA_ARGS__)
bool zkt_check_at(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Lock-parent path of a lock name. */
void zkt_parent(char *buf, size_t len, const char *name);
/* A lock name unique to this run and test: "<base>-<pid>-<n>". */
void zkt_name(char *buf, size_t len, const char *base);

/* Opens a session or fails the current test. */
zkl_session *zkt_session(int timeout_ms);
/* zkl_session_open() on hosts with these options (0: the default), the
 * others at their defaults: what zkl_session_open(), _open2() and _open3()
 * took as arguments before 1.0. */
int zkt_open(zkl_session **out, const char *hosts, int session_ms,
             int connect_ms, unsigned flags);
/* zkl_session_open() on the application's handle zh (was
 * zkl_session_wrap() before 1.0). */
int zkt_wrap(zkl_session **out, zhandle_t *zh);
/* zkl_session_close(s, &how), asserting that it returned ZKL_OK: how. */
zkl_close_outcome zkt_close_how(zkl_session *s);
/* Ends s's session on the server the way the ZooKeeper FAQ suggests: a
 * second handle with the same id and password connects and closes (retried
 * until the session is seen gone). The victim then learns of it from the
 * server in whatever order the server sends: possibly the deletion of its
 * nodes first. Returns 0 when the session is gone. */
int zkt_expire(zkl_session *s);

/* A lock held by the test on a direct session of its own (10 s): acquired
 * within ZKT_WAIT (or the test fails), its token kept. zkt_unhold()
 * asserts that the holder did not lose its lock (the release succeeds, or
 * finds it already released by the test), that the session is quiet, and
 * closes it. */
typedef struct zkt_holder {
  zkl_session *s;
  zkl_lock *l;
  int64_t token;
} zkt_holder;
void zkt_hold(zkt_holder *h, const char *name);
void zkt_unhold(zkt_holder *h);

/* A session through a tests/faultproxy of its own, which a test steers
 * (proxyctl.h): zkt_proxied_open() fails the test when either cannot be
 * had; zkt_proxied_close() closes the session, then stops the proxy. */
typedef struct zkt_proxied {
  proxyctl *px;
  zkl_session *s;
} zkt_proxied;
void zkt_proxied_open(zkt_proxied *p, int session_ms);
void zkt_proxied_close(zkt_proxied *p);

/* Sends one faultproxy command (proxyctl_cmd, at most 5 s) and, when it
 * fails, prints the command and the proxy's answer on stderr.  Returns
 * proxyctl_cmd's result: 0 on "ok". */
int zkt_proxy_cmd(proxyctl *px, const char *c);

/* A counter with a condition variable, for callbacks to signal progress. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int value;
} zkt_counter;
void zkt_counter_init(zkt_counter *c);
void zkt_counter_add(zkt_counter *c, int n);
int zkt_counter_get(zkt_counter *c);
/* Waits until value >= want or timeout; returns the value seen. */
int zkt_counter_wait(zkt_counter *c, int want, int timeout_ms);

/* What callbacks report: they record, the test thread asserts. Every
 * field is written under calls.mu before calls counts the call, so the test
 * thread may read them once zkt_rec_wait() (or zkt_counter_wait() on calls)
 * has seen that call. */
typedef struct zkt_rec {
  zkt_counter calls;
  int rc;           /* the status (a lost callback's reason); ZKT_NO_CALL
                       until the first call */
  int64_t token;    /* the token of an acquire callback */
  int64_t at_ms;    /* zkt_now_ms() at the latest call */
  pthread_t thread; /* the thread of the latest call */
  zkl_lock *lock;   /* the lock of the latest call */
} zkt_rec;
#define ZKT_NO_CALL 123456 /* zkt_rec_wait: no call within the bound */
void zkt_rec_init(zkt_rec *r);
/* zkl_acquire_cb, zkl_release_cb and zkl_lost_cb that record into the
 * zkt_rec arg (the lost reason as rc). */
void zkt_on_acquired(zkl_lock *l, int rc, int64_t token, void *arg);
void zkt_on_released(zkl_lock *l, int rc, void *arg);
void zkt_on_lost(zkl_lock *l, zkl_lost_reason reason, void *arg);
/* Waits until r has seen n calls; returns the latest rc, or ZKT_NO_CALL. */
int zkt_rec_wait(zkt_rec *r, int n, int timeout_ms);

/* What a session's event hook was told: zkt_on_event (arg: a zkt_events)
 * keeps the first ZKT_EVENTS_MAX events with their strings; count says how
 * many came in all. The kept zkl_event's own string pointers are the
 * hook's, gone after it returned: read the copies beside them. */
#define ZKT_EVENTS_MAX 64
typedef struct zkt_events {
  pthread_mutex_t mu;
  zkt_counter count;
  int n;
  zkl_event ev[ZKT_EVENTS_MAX];
  char name[ZKT_EVENTS_MAX][80];
  char node[ZKT_EVENTS_MAX][160];
  char waiting_for[ZKT_EVENTS_MAX][160];
} zkt_events;
void zkt_events_init(zkt_events *e);
void zkt_on_event(zkl_session *s, const zkl_event *ev, void *arg);
/* How many kept events are of type (and of lock name, unless NULL). */
int zkt_events_count(zkt_events *e, int type, const char *name);
/* The index of the last kept event of type, or -1. */
int zkt_events_last(zkt_events *e, int type);

/* Waits (bounded) until s has lost its connection more than `before` times
 * (zkl_session_stats.disconnects): 0 once it has, -1 if not in time. A
 * connection that is lost and made again at once can come and go between
 * two looks at the session's state; the count cannot be missed. */
int zkt_wait_disconnects(zkl_session *s, uint64_t before, int timeout_ms);
/* s's disconnects so far (0 if the stats cannot be read). */
uint64_t zkt_disconnects(zkl_session *s);

/* Asserts that s sent exactly want[k] requests of each kind k (the
 * library's ZKL_RQ_ kinds) since `before` (an array of ZKL_RQ_KINDS counts
 * taken with zkl__debug_counts), naming each kind that differs. The
 * lease's beats are left out: they run on a timer of their own whenever one
 * falls due, lock or no lock (a CI run saw one inside a cycle's window). */
#define zkt_assert_sent(before, now, want)                                     \
  zkt_assert_sent_at((before), (now), (want), __FILE__, __LINE__)
void zkt_assert_sent_at(const unsigned long *before, const unsigned long *now,
                        const unsigned *want, const char *file, int line);

int64_t zkt_now_ms(void);
/* Threads of this process right now (from /proc/self/task). */
int zkt_thread_count(void);

typedef struct {
  const char *name;
  void (*fn)(void);
} zkt_test;
/* Runs the tests as one CUnit suite in basic mode; returns the exit status
 * for automake: 0 all passed, 1 a failure. */
int zkt_main(const char *suite, const zkt_test *tests);

#endif
