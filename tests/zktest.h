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
/* Extra JVM flags for the server (call before zkt_hosts()). */
void zkt_server_java_opts(const char *opts);

/* A plain ZooKeeper handle of the test itself, connected; closed at exit. */
zhandle_t *zkt_observer(void);
/* Children of path right now: count, or -1 when path does not exist. */
int zkt_children(const char *path);
/* Waits (bounded) until path has `want` children (-1: path gone); uses a
 * child watch, not sleeps. Returns the final count. */
int zkt_wait_children(const char *path, int want, int timeout_ms);
/* Waits (bounded, with a watch) until path does not exist: 0, or -1. */
int zkt_wait_absent(const char *path, int timeout_ms);
/* Lock-parent path of a lock name. */
void zkt_parent(char *buf, size_t len, const char *name);
/* A lock name unique to this run and test: "<base>-<pid>-<n>". */
void zkt_name(char *buf, size_t len, const char *base);

/* Opens a session or fails the current test. */
zkl_session *zkt_session(int timeout_ms);
/* Ends s's session on the server the way the ZooKeeper FAQ suggests: a
 * second handle with the same id and password connects and closes (retried
 * until the session is seen gone). The victim then learns of it from the
 * server in whatever order the server sends: possibly the deletion of its
 * nodes first. Returns 0 when the session is gone. */
int zkt_expire(zkl_session *s);

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
