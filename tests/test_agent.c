/* SPDX-License-Identifier: Apache-2.0 */
/* test_agent.c - sessions through zklockd, the host's lock agent, against a
 * real ZooKeeper and a real agent (tests/agentctl): every kind through it,
 * both APIs; a client's locks freed the moment its connection closes (a
 * SIGKILLed process's included), with no session expiry involved; every
 * client told at once when the agent dies; holds lost by the client's own
 * clock when the agent freezes, before the agent's session can expire and
 * before anyone else is granted; the policy's refusals; a stop that
 * releases everything. Every test checks that nothing is left behind. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentctl.h"
#include "internal.h" /* zkl__test_agent_hold_reads */
#include "wire.h"     /* ZKL_WIRE_MAX */
#include "zktest.h"

#define T_SESSION 10000

static zkl_session *open_agent(const agentctl *a) {
  zkl_session_options o;
  zkl_session *s = NULL;
  int rc;
  zkl_session_options_init(&o);
  o.agent = a->sock;
  rc = zkl_session_open(&s, &o);
  CU_ASSERT_EQUAL(rc, ZKL_OK);
  if (rc != ZKL_OK)
    printf("open through the agent: %s\n", zkl_strerror(rc));
  return rc == ZKL_OK ? s : NULL;
}

/* The lock's parent path (one of 4 static buffers). */
static const char *parent_of(const char *name) {
  static char buf[4][ZKL_PATH_MAX];
  static int next;
  char *b = buf[next++ % 4];
  zkt_parent(b, ZKL_PATH_MAX, name);
  return b;
}

static bool node_exists(const char *path) {
  struct Stat st;
  return zoo_exists(zkt_observer(), path, 0, &st) == ZOK;
}

/* --------------------------------------------------------------- kinds */

static void test_kinds(void) {
  agentctl ag;
  zkl_session *s1, *s2;
  zkl_lock *m1, *m2, *sem[3], *e1, *e2, *multi, *part;
  zkl_rwlock *rw1, *rw2;
  char name[64], sname[64], ename[64], mname[2][64], path[ZKL_PATH_MAX];
  char paths[2 * ZKL_PATH_MAX];
  const char *names[2];
  int64_t t1 = 0, t2 = 0;
  zkt_rec got;
  int i;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s1 = open_agent(&ag);
  s2 = open_agent(&ag);
  CU_ASSERT_FATAL(s1 && s2);
  CU_ASSERT(zkl_session_timeout(s1) > 0);
  CU_ASSERT_PTR_NULL(zkl_session_handle(s1));

  /* A mutex: held by one client, the other waits, then is granted with a
   * higher token; the node is the agent's, and really on the server. */
  zkt_name(name, sizeof name, "agent-mutex");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&m1, s1, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&m2, s2, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(m1, -1, &t1), ZKL_OK);
  CU_ASSERT(t1 > 0);
  CU_ASSERT_EQUAL(zkl_lock_token(m1), t1);
  CU_ASSERT(zkl_session_lease_deadline(s1) > 0);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(m1, path, sizeof path), ZKL_OK);
  CU_ASSERT(node_exists(path));
  CU_ASSERT_EQUAL(zkl_lock_acquire(m2, 0, NULL), ZKL_EBUSY);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(m2, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(m2, -1, zkt_on_acquired, &got),
                  ZKL_EINPROGRESS);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_lock_release(m1), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(m1), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_OK);
  t2 = got.token;
  CU_ASSERT(t2 > t1);
  CU_ASSERT_PTR_EQUAL(got.lock, m2);
  CU_ASSERT_EQUAL(zkl_lock_release(m2), ZKL_OK);
  zkl_lock_free(m1);
  zkl_lock_free(m2);
  zkt_assert_parent_empty(name);

  /* A read/write lock: two readers share, a writer waits for both. */
  zkt_name(name, sizeof name, "agent-rw");
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw1, s1, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw2, s2, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_read(rw1), -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_read(rw2), 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_write(rw2), 0, NULL),
                  ZKL_EUPGRADE);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_read(rw2)), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_write(rw2), 0, NULL),
                  ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_read(rw1)), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_write(rw2), 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_read(rw1), 0, NULL),
                  ZKL_EBUSY);
  zkl_rwlock_free(rw2); /* a held write side goes with its object */
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_read(rw1), ZKT_WAIT, NULL),
                  ZKL_OK);
  zkl_rwlock_free(rw1);
  zkt_assert_parent_empty(name);

  /* A semaphore of 2: the third waits. */
  zkt_name(sname, sizeof sname, "agent-sem");
  for (i = 0; i < 3; i++)
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_new_semaphore(&sem[i], i == 1 ? s2 : s1, sname, 2), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(sem[0], -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(sem[1], -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(sem[2], 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_release(sem[1]), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(sem[2], ZKT_WAIT, NULL), ZKL_OK);
  for (i = 0; i < 3; i++)
    zkl_lock_free(sem[i]);
  zkt_assert_no_contender(sname);

  /* An election: the first leads; the leader's id is its. */
  zkt_name(ename, sizeof ename, "agent-elect");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&e1, s1, ename, "host-a"),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&e2, s2, ename, "host-b"),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(e1, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(e2, 0, NULL), ZKL_EBUSY);
  zkl_lock_free(e1);
  CU_ASSERT_EQUAL(zkl_lock_acquire(e2, ZKT_WAIT, NULL), ZKL_OK);
  zkl_lock_free(e2);
  zkt_assert_parent_empty(ename);

  /* A multi-lock of two names, against a mutex on the second. */
  zkt_name(mname[0], sizeof mname[0], "agent-multi-a");
  zkt_name(mname[1], sizeof mname[1], "agent-multi-b");
  names[0] = mname[0];
  names[1] = mname[1];
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_multi(&multi, s1, names, 2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&part, s2, mname[1]), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(part, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(multi, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_release(part), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(multi, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_paths(multi, paths, sizeof paths),
                  ZKL_OK);
  CU_ASSERT_PTR_NOT_NULL(strchr(paths, ' ')); /* two nodes */
  CU_ASSERT_EQUAL(zkl_lock_acquire(part, 0, NULL), ZKL_EBUSY);
  zkl_lock_free(multi);
  zkl_lock_free(part);
  zkt_assert_parent_empty(mname[0]);
  zkt_assert_parent_empty(mname[1]);

  /* What the agent does not serve says so, and changes nothing. */
  CU_ASSERT_EQUAL(zkl_session_set_lease_margin(s1, 500), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_close(s1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(s2, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
}

/* Bad input never reaches the agent, and the agent's own refusal of a
 * name arrives as the acquire's answer. */
static void test_bad_input(void) {
  agentctl ag;
  zkl_session *s;
  zkl_session_options o;
  zkl_lock *l;
  const char *dup[2] = {"agent-dup", "agent-dup"};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  zkl_session_options_init(&o);
  o.agent = ag.sock;
  o.hosts = zkt_hosts();
  CU_ASSERT_EQUAL(zkl_session_open(&s, &o), ZKL_EINVAL); /* both */
  o.hosts = NULL;
  o.session_timeout_ms = 5000;
  CU_ASSERT_EQUAL(zkl_session_open(&s, &o), ZKL_EINVAL); /* the agent's */
  o.session_timeout_ms = 0;
  o.agent = "/nonexistent/zklockd.sock";
  CU_ASSERT_EQUAL(zkl_session_open(&s, &o), ZKL_EAGENT);
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(zkl_lock_new(&l, s, "a//b"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new(&l, s, "/zookeeper/x"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_semaphore(&l, s, "agent-sem-0", 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_multi(&l, s, dup, 2), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_election(&l, s, "agent-e", ""), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new(&l, s, "agent-ok"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, -1), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_EIDLE);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty("agent-ok");
}

/* ------------------------------------------- a client's connection ends */

/* A child process holds NAME through the agent and tells the parent so on
 * a pipe; then the parent SIGKILLs it. */
static pid_t child_holds(const agentctl *ag, const char *name, int *ready_fd) {
  int p[2];
  pid_t pid;
  if (pipe(p) != 0)
    return -1;
  fflush(stdout);
  if ((pid = fork()) == 0) {
    zkl_session_options o;
    zkl_session *s;
    zkl_lock *l;
    int64_t token;
    char ok = 1;
    close(p[0]);
    zkl_session_options_init(&o);
    o.agent = ag->sock;
    if (zkl_session_open(&s, &o) != ZKL_OK || zkl_lock_new(&l, s, name) ||
        zkl_lock_acquire(l, -1, &token) != ZKL_OK)
      _exit(1);
    if (write(p[1], &ok, 1) != 1)
      _exit(1);
    for (;;)
      pause(); /* until SIGKILL */
  }
  close(p[1]);
  *ready_fd = p[0];
  return pid;
}

static void test_killed_client(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l;
  zkt_rec got;
  char name[64], ok;
  int ready = -1, status;
  pid_t pid;
  /* A session of 10 minutes: only the connection's end can free the
   * lock within the test's bounds. */
  const char *const extra[] = {"-t", "600s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  zkt_name(name, sizeof name, "agent-killed");
  pid = child_holds(&ag, name, &ready);
  CU_ASSERT_FATAL(pid > 0);
  CU_ASSERT_EQUAL_FATAL(read(ready, &ok, 1), 1);
  close(ready);
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, 200), ZKT_NO_CALL); /* still held */
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_children(parent_of(name)), 1);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* A client that closes its session, or frees its lock, with a call in
 * flight: the acquire completes with ZKL_ECLOSED, its node goes. */
static void test_close_in_flight(void) {
  agentctl ag;
  zkl_session *s, *holder;
  zkl_lock *l, *h;
  zkt_rec got;
  char name[64];
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  holder = open_agent(&ag);
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s && holder);
  zkt_name(name, sizeof name, "agent-inflight");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&h, holder, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 1, ZKT_WAIT), 1);
  /* The same, by closing the session. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_ECLOSED);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 1, ZKT_WAIT), 1);
  zkl_lock_free(h);
  CU_ASSERT_EQUAL(zkl_session_close(holder, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}


/* A client frozen (SIGSTOP) while it holds: the agent, not hearing from it
 * for a session timeout, stops extending its lease and frees its lock once
 * the last deadline it relayed has passed, so the next waiter is granted,
 * as after the expiry of a frozen process's own session; resumed, the
 * client finds its hold lost by its own clock. Without the agent's rule
 * the waiter would wait for as long as the client stays frozen. */
static void test_frozen_client(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l;
  zkt_rec got;
  char name[64], ok = 0;
  int to_child[2], from_child[2], status = -1;
  pid_t pid;
  const char *const extra[] = {"-t", "3s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  zkt_name(name, sizeof name, "agent-frozen-client");
  CU_ASSERT_FATAL(pipe(to_child) == 0 && pipe(from_child) == 0);
  fflush(stdout);
  if ((pid = fork()) == 0) {
    zkl_session_options o;
    zkl_session *cs;
    zkl_lock *cl;
    zkt_rec lost;
    char go, verdict;
    close(to_child[1]);
    close(from_child[0]);
    zkl_session_options_init(&o);
    o.agent = ag.sock;
    if (zkl_session_open(&cs, &o) != ZKL_OK || zkl_lock_new(&cl, cs, name))
      _exit(2);
    zkt_rec_init(&lost);
    zkl_lock_on_lost(cl, zkt_on_lost, &lost);
    if (zkl_lock_acquire(cl, -1, NULL) != ZKL_OK)
      _exit(3);
    verdict = 1;
    if (write(from_child[1], &verdict, 1) != 1 ||
        read(to_child[0], &go, 1) != 1) /* frozen in here */
      _exit(4);
    /* Resumed: told, and the hold is gone for good. */
    verdict = zkt_rec_wait(&lost, 1, ZKT_WAIT) == ZKL_LOST_LEASE_EXPIRED &&
              zkl_lock_token(cl) == 0 && zkl_lock_release(cl) == ZKL_ELOST;
    _exit(verdict ? 0 : 5);
  }
  close(to_child[0]);
  close(from_child[1]);
  CU_ASSERT_EQUAL_FATAL(read(from_child[0], &ok, 1), 1);
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  kill(pid, SIGSTOP);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, 2 * ZKT_WAIT), ZKL_OK);
  kill(pid, SIGCONT);
  CU_ASSERT_EQUAL(write(to_child[1], &ok, 1), 1);
  waitpid(pid, &status, 0);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("the frozen client's status: %d\n", status);
    agentctl_print_log(&ag);
  }
  close(to_child[1]);
  close(from_child[0]);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------ the agent goes away */

static zkt_rec state_rec;
static void on_state(zkl_session *s, zkl_state state, void *arg) {
  (void)s;
  (void)arg;
  if (state == ZKL_STATE_EXPIRED) {
    pthread_mutex_lock(&state_rec.calls.mu);
    state_rec.rc = state;
    pthread_mutex_unlock(&state_rec.calls.mu);
    zkt_counter_add(&state_rec.calls, 1);
  }
}

static void test_agent_killed(void) {
  agentctl ag;
  zkl_session *s;
  zkl_session_options o;
  zkl_lock *l, *w;
  zkt_rec lost, got;
  char name[64];
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  zkt_rec_init(&state_rec);
  zkl_session_options_init(&o);
  o.agent = ag.sock;
  o.on_state = on_state;
  CU_ASSERT_EQUAL_FATAL(zkl_session_open(&s, &o), ZKL_OK);
  zkt_name(name, sizeof name, "agent-dies");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, s, name), ZKL_OK);
  zkt_rec_init(&lost);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(w, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  agentctl_kill(&ag);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_AGENT);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_EAGENT);
  CU_ASSERT_EQUAL(zkt_rec_wait(&state_rec, 1, ZKT_WAIT), ZKL_STATE_EXPIRED);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EAGENT);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  zkl_lock_free(l);
  zkl_lock_free(w);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  /* The agent's session ends by expiry: its nodes go then. */
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 0, 2 * ZKT_WAIT), 0);
}

/* The agent frozen (SIGSTOP): the client hears nothing, and loses its hold
 * by its own clock at the deadline the agent relayed, while the agent's
 * node is still on the server, so before a contender elsewhere can be
 * granted; that contender is granted only after the agent's session
 * expired. */
static void test_agent_frozen(void) {
  agentctl ag;
  zkl_session *s, *direct;
  zkl_lock *l, *other;
  zkt_rec lost, got;
  char name[64], path[ZKL_PATH_MAX];
  int64_t deadline, lost_at;
  bool node_there_when_lost;
  const char *const extra[] = {"-t", "4s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-frozen");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkt_rec_init(&lost);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  direct = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&other, direct, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(other, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  agentctl_freeze(&ag, true);
  deadline = zkl_session_lease_deadline(s);
  CU_ASSERT(deadline > 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_LEASE_EXPIRED);
  lost_at = lost.at_ms;
  node_there_when_lost = node_exists(path);
  CU_ASSERT(node_there_when_lost);
  CU_ASSERT(lost_at >= deadline);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  /* The agent's session expires while it is frozen; only then is the
   * other contender granted. */
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, 4 * ZKT_WAIT), ZKL_OK);
  CU_ASSERT(got.at_ms > lost_at);
  agentctl_freeze(&ag, false);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  zkl_lock_free(l);
  zkl_lock_free(other);
  zkl_session_close(s, NULL);
  zkl_session_close(direct, NULL);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}


/* A waiter through a frozen agent hears nothing from it: the client takes
 * the agent for gone once a PING goes unanswered for a session timeout,
 * so its call ends (ZKL_EAGENT) instead of waiting for ever. */
static void test_waiter_agent_frozen(void) {
  agentctl ag;
  zkl_session *s, *direct;
  zkl_lock *l, *holder;
  zkt_rec got;
  char name[64];
  int64_t frozen_at;
  const char *const extra[] = {"-t", "3s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-frozen-waiter");
  direct = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&holder, direct, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(holder, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  agentctl_freeze(&ag, true);
  frozen_at = zkt_now_ms();
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, 4 * ZKT_WAIT), ZKL_EAGENT);
  CU_ASSERT(got.at_ms - frozen_at >= 3000); /* a whole timeout unanswered */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EAGENT);
  agentctl_freeze(&ag, false);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkl_lock_release(holder), ZKL_OK);
  zkl_lock_free(holder);
  zkl_session_close(direct, NULL);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------ a callback that blocks */

/* An acquire callback the test holds on to: it says it entered (and on
 * which thread), then waits until the test opens the gate. The bound of a
 * minute is only there so that a failing test cannot hang the program. */
typedef struct gate {
  zkt_counter entered, opened, left;
  pthread_t thread;
  int rc;
} gate;

static void gate_init(gate *g) {
  memset(g, 0, sizeof *g);
  zkt_counter_init(&g->entered);
  zkt_counter_init(&g->opened);
  zkt_counter_init(&g->left);
}

static void on_acquired_gated(zkl_lock *l, int rc, int64_t token, void *arg) {
  gate *g = arg;
  (void)l;
  (void)token;
  pthread_mutex_lock(&g->entered.mu);
  g->thread = pthread_self();
  g->rc = rc;
  pthread_mutex_unlock(&g->entered.mu);
  zkt_counter_add(&g->entered, 1);
  zkt_counter_wait(&g->opened, 1, 60000);
  zkt_counter_add(&g->left, 1);
}

/* A callback that closes its session (arg: a closer), as a program may,
 * and records how the close went. */
typedef struct closer {
  zkl_session *s;
  zkt_rec rec;
  int how;
} closer;

static void close_from_callback(closer *c, zkl_lock *l, int rc) {
  zkl_close_outcome how = ZKL_CLOSE_DONE;
  int closed = zkl_session_close(c->s, &how);
  pthread_mutex_lock(&c->rec.calls.mu);
  c->how = closed == ZKL_OK ? (int)how : closed;
  pthread_mutex_unlock(&c->rec.calls.mu);
  zkt_on_acquired(l, rc, 0, &c->rec);
}

static void on_released_close(zkl_lock *l, int rc, void *arg) {
  close_from_callback(arg, l, rc);
}

static void on_lost_close(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  close_from_callback(arg, l, reason);
}

/* A lost callback that tries a blocking call (arg: a zkt_rec, whose token
 * gets that call's rc), then records the loss. */
static void on_lost_blocking(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  zkt_on_acquired(l, reason, zkl_lock_acquire(l, 0, NULL), arg);
}

/* Waits (bounded) until l holds by its client's count (its token): a
 * grant whose callback waits behind a busy one shows nowhere else. */
static bool wait_token(zkl_lock *l, int timeout_ms) {
  int64_t end = zkt_now_ms() + timeout_ms;
  while (zkl_lock_token(l) == 0) {
    if (zkt_now_ms() >= end)
      return false;
    usleep(10 * 1000);
  }
  return true;
}

/* A client that holds X and then spends longer than the session timeout in
 * one of its own callbacks keeps X: its pings do not wait behind the
 * callback, so the agent keeps hearing it and keeps its lease, and a direct
 * contender is not granted meanwhile. With one thread for the socket and
 * the callbacks the client fell silent, the agent freed X (at +4.5 to
 * +4.9 s of a 4 s session, issue 33) and cut the client off. */
static void test_busy_callback(void) {
  agentctl ag;
  zkl_session *s, *direct;
  zkl_lock *l, *busy, *other;
  zkt_rec lost, got;
  gate g;
  closer shut;
  char name[64], bname[64];
  int64_t token = 0;
  int timeout;
  const char *const extra[] = {"-t", "4s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  timeout = zkl_session_timeout(s);
  CU_ASSERT_EQUAL(timeout, 4000);
  zkt_name(name, sizeof name, "agent-busy");
  zkt_name(bname, sizeof bname, "agent-busy-cb");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkt_rec_init(&lost);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, &token), ZKL_OK);
  direct = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&other, direct, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(other, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  /* Another lock's acquire callback, stuck until the test lets it go. */
  gate_init(&g);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&busy, s, bname), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(busy, -1, on_acquired_gated, &g),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&g.entered, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(g.rc, ZKL_OK);
  /* Twice the session timeout in the callback: nobody else is granted X,
   * and the holder is told nothing. */
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, 2 * timeout), ZKT_NO_CALL);
  CU_ASSERT_EQUAL(zkt_counter_get(&g.left), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_token(l), token);
  zkt_counter_add(&g.opened, 1);
  CU_ASSERT_EQUAL(zkt_counter_wait(&g.left, 1, ZKT_WAIT), 1);
  /* Still X's holder: its release is the one that lets the other in. */
  CU_ASSERT_EQUAL(zkl_lock_token(l), token);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 0);
  if (zkt_counter_get(&lost.calls) != 0 || got.at_ms == 0)
    agentctl_print_log(&ag);
  CU_ASSERT_EQUAL(zkl_lock_release(other), ZKL_OK);
  zkl_lock_free(other);
  /* Closed from the callback thread: it ends in the background, after
   * the callback (the callback thread joins the others, and frees). */
  shut.s = s;
  zkt_rec_init(&shut.rec);
  CU_ASSERT_EQUAL(zkl_lock_release_async(busy, on_released_close, &shut),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&shut.rec, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(shut.how, ZKL_CLOSE_BACKGROUND);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_ECLOSED);
  zkl_lock_free(busy);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(direct, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
  zkt_assert_parent_empty(bname);
}

/* The agent frozen while the client's callbacks are stuck in one of its
 * own: the lost notice comes at the relayed deadline all the same, on
 * another thread, while that callback is still blocked, and before the
 * direct waiter is granted (after the agent's session expired). That
 * thread is a completion thread too: a blocking call there says
 * ZKL_EDEADLK, and a close from there ends in the background. A grant
 * whose callback waited behind the busy one and was lost meanwhile (Z) is
 * told ZKL_ELOST when its callback runs, after its lost notice, as direct.
 * With one thread the lost notices waited for the busy callback (+3.1 to
 * +3.5 s after the other's grant in issue 33), and Z's callback said
 * ZKL_OK for a hold already gone. */
static void test_lost_while_busy(void) {
  agentctl ag;
  zkl_session *s, *direct;
  zkl_lock *l, *busy, *z, *other;
  zkt_rec lost, zgot, got;
  closer shut;
  gate g;
  char name[64], bname[64], zname[64], path[ZKL_PATH_MAX];
  int64_t deadline, lost_at = 0;
  bool still_busy = false, node_there_when_lost;
  const char *const extra[] = {"-t", "4s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-lost-busy");
  zkt_name(bname, sizeof bname, "agent-lost-busy-cb");
  zkt_name(zname, sizeof zname, "agent-lost-busy-z");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkt_rec_init(&lost);
  zkl_lock_on_lost(l, on_lost_blocking, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  direct = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&other, direct, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(other, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  gate_init(&g);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&busy, s, bname), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(busy, -1, on_acquired_gated, &g),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&g.entered, 1, ZKT_WAIT), 1);
  /* Z is granted while the callbacks are stuck: its callback waits. Its
   * loss closes the session. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&z, s, zname), ZKL_OK);
  shut.s = s;
  zkt_rec_init(&shut.rec);
  zkt_rec_init(&zgot);
  zkl_lock_on_lost(z, on_lost_close, &shut);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(z, -1, zkt_on_acquired, &zgot),
                  ZKL_OK);
  CU_ASSERT(wait_token(z, ZKT_WAIT));
  CU_ASSERT_EQUAL(zkt_counter_get(&zgot.calls), 0);
  agentctl_freeze(&ag, true);
  deadline = zkl_session_lease_deadline(s);
  CU_ASSERT(deadline > 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_LEASE_EXPIRED);
  still_busy = zkt_counter_get(&g.left) == 0;
  node_there_when_lost = node_exists(path);
  lost_at = lost.at_ms;
  CU_ASSERT(still_busy);
  CU_ASSERT(node_there_when_lost);
  CU_ASSERT(lost_at >= deadline);
  CU_ASSERT(!pthread_equal(lost.thread, g.thread));
  CU_ASSERT_EQUAL(lost.token, ZKL_EDEADLK);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&shut.rec, 1, ZKT_WAIT),
                  ZKL_LOST_LEASE_EXPIRED);
  CU_ASSERT_EQUAL(shut.how, ZKL_CLOSE_BACKGROUND);
  CU_ASSERT_EQUAL(zkt_counter_get(&zgot.calls), 0);
  /* The agent's session expires while it is frozen; only then is the
   * direct contender granted. */
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, 4 * ZKT_WAIT), ZKL_OK);
  CU_ASSERT(got.at_ms > lost_at);
  CU_ASSERT_EQUAL(zkt_counter_get(&g.left), 0);
  zkt_counter_add(&g.opened, 1);
  CU_ASSERT_EQUAL(zkt_counter_wait(&g.left, 1, ZKT_WAIT), 1);
  /* Z's grant, told after its loss (and the close), is no hold. */
  CU_ASSERT_EQUAL(zkt_rec_wait(&zgot, 1, ZKT_WAIT), ZKL_ELOST);
  CU_ASSERT_EQUAL(zgot.token, 0);
  agentctl_freeze(&ag, false);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_ECLOSED);
  zkl_lock_free(l);
  zkl_lock_free(z);
  zkl_lock_free(busy);
  CU_ASSERT_EQUAL(zkl_lock_release(other), ZKL_OK);
  zkl_lock_free(other);
  zkl_session_close(direct, NULL);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
  zkt_assert_parent_empty(bname);
  zkt_assert_parent_empty(zname);
}

/* A bounded hold through the agent: its end is told to the client, and the
 * node stays until the client releases (here, a while after it was told):
 * the next contender is not granted before the client heard. Without the
 * agent's longer grace the node went as the LOST frame left the agent. */
static void test_max_hold(void) {
  agentctl ag;
  zkl_session *s1, *s2;
  zkl_lock *l, *w;
  zkt_rec lost, got;
  char name[64];
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s1 = open_agent(&ag);
  s2 = open_agent(&ag);
  CU_ASSERT_FATAL(s1 && s2);
  zkt_name(name, sizeof name, "agent-max-hold");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s1, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, 300), ZKL_OK);
  zkt_rec_init(&lost);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, s2, name), ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(w, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_MAX_HOLD);
  /* told, not yet released: the node stays, nobody else holds */
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, 500), ZKT_NO_CALL);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(got.at_ms > lost.at_ms);
  zkl_lock_free(l);
  zkl_lock_free(w);
  CU_ASSERT_EQUAL(zkl_session_close(s1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(s2, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------------------- policy */

static int commit_create(zkl_lock *l, const char *path);

static void test_policy(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l;
  char conf[256], target[64];
  FILE *f;
  const char *extra[] = {"--config", conf, NULL};
  snprintf(conf, sizeof conf, "/tmp/zklockd-test-%ld.conf", (long)getpid());
  f = fopen(conf, "w");
  CU_ASSERT_FATAL(f != NULL);
  fprintf(f, "# jobs/ for root, builds/ for nobody here\n"
             "lock agent-jobs/ uid:0\n"
             "lock agent-builds/ uid:12345 group:nogroup\n");
  fclose(f);
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, "agent-builds/x"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EDENIED);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkt_children(ZKL_ROOT "/agent-builds"), -1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, "agent-other"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EDENIED);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, "agent-jobs/x"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  /* a file with no write rule lets nobody write, the agent's user too */
  snprintf(target, sizeof target, "/agent-nowrite-%ld", (long)getpid());
  CU_ASSERT_EQUAL(commit_create(l, target), ZKL_EDENIED);
  CU_ASSERT(!node_exists(target));
  zkl_lock_free(l);
  /* A reload that does not parse keeps the old policy. */
  f = fopen(conf, "w");
  CU_ASSERT_FATAL(f != NULL);
  fprintf(f, "lokc agent-jobs/ *\n");
  fclose(f);
  agentctl_signal(&ag, SIGHUP);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, "agent-jobs/y"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  unlink(conf);
  zkt_assert_parent_empty("agent-jobs/x");
  zkt_assert_parent_empty("agent-jobs/y");
}

/* A stop (SIGTERM) tells every holder first (ZKL_LOST_AGENT), and deletes
 * a held node only once its holder let go: a holder whose work takes a
 * while to stop keeps its node until it releases, so nobody else is
 * granted meanwhile. A waiter through the agent is told ZKL_EAGENT. The
 * agent used to delete every node in the step that told the holders. */
static void test_stop_waits(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_lock *l, *w, *dl;
  zkt_rec lost, waited, direct;
  char name[64];
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  d = zkt_session(T_SESSION);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-stop");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&dl, d, name), ZKL_OK);
  zkt_rec_init(&lost);
  zkt_rec_init(&waited);
  zkt_rec_init(&direct);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(w, -1, zkt_on_acquired, &waited),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(dl, -1, zkt_on_acquired, &direct),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 3, ZKT_WAIT), 3);
  agentctl_signal(&ag, SIGTERM);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_AGENT);
  CU_ASSERT_EQUAL(zkt_rec_wait(&waited, 1, ZKT_WAIT), ZKL_EAGENT);
  /* Told, not yet let go: the holder's node is there (the waiter's is
   * gone), and the direct contender still waits. */
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  CU_ASSERT(agentctl_log_has(&ag, "stopping:", NULL, ZKT_WAIT));
  CU_ASSERT_EQUAL(zkt_children(parent_of(name)), 2);
  CU_ASSERT_EQUAL(zkt_rec_wait(&direct, 1, 0), ZKT_NO_CALL);
  /* Let go: the node goes, the agent ends, the direct one is granted. */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkt_rec_wait(&direct, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkl_lock_free(l);
  zkl_lock_free(w);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  zkl_lock_free(dl);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  zkt_assert_parent_empty(name);
}

/* A holder that never lets go (its process frozen) does not hold a stop
 * up for ever: its node goes once the last deadline it was told has run
 * out by the margin, when its own clock has ended its hold. */
static void test_stop_lease(void) {
  agentctl ag;
  zkl_session *d;
  zkl_lock *dl;
  zkt_rec direct;
  char name[64], ok;
  int ready = -1, status;
  pid_t pid;
  const char *const extra[] = {"-t", "3s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  zkt_name(name, sizeof name, "agent-stop-lease");
  pid = child_holds(&ag, name, &ready);
  CU_ASSERT_FATAL(pid > 0);
  CU_ASSERT_EQUAL_FATAL(read(ready, &ok, 1), 1);
  close(ready);
  d = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&dl, d, name), ZKL_OK);
  zkt_rec_init(&direct);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(dl, -1, zkt_on_acquired, &direct),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  kill(pid, SIGSTOP);
  agentctl_signal(&ag, SIGTERM);
  CU_ASSERT(agentctl_log_has(&ag, "did not let go before its lease ran out", NULL,
                    ZKT_WAIT));
  CU_ASSERT_EQUAL(zkt_rec_wait(&direct, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  zkl_lock_free(dl);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------ the processes behind a connection */

/* A child holds NAME through the agent after forking a process of its own
 * (fork without exec, as a program forks a helper), which inherits the
 * agent's socket; the helper's pid comes back on a pipe once the child
 * holds. With worker, the child names the helper a worker first
 * (zkl_session_add_worker). The helper pauses until killed. */
static pid_t child_forks_and_holds(const agentctl *ag, const char *name,
                                   bool worker, int *ready_fd) {
  int p[2];
  pid_t pid;
  if (pipe(p) != 0)
    return -1;
  fflush(stdout);
  if ((pid = fork()) == 0) {
    zkl_session_options o;
    zkl_session *s;
    zkl_lock *l;
    pid_t h;
    close(p[0]);
    zkl_session_options_init(&o);
    o.agent = ag->sock;
    if (zkl_session_open(&s, &o) != ZKL_OK || zkl_lock_new(&l, s, name))
      _exit(1);
    if ((h = fork()) == 0) {
      for (;;)
        pause(); /* the socket stays open here, until SIGKILL */
    }
    if (h < 0 || (worker && zkl_session_add_worker(s, h) != ZKL_OK) ||
        zkl_lock_acquire(l, -1, NULL) != ZKL_OK)
      _exit(2);
    if (write(p[1], &h, sizeof h) != sizeof h)
      _exit(3);
    for (;;)
      pause(); /* until SIGKILL */
  }
  close(p[1]);
  *ready_fd = p[0];
  return pid;
}

/* One case of a forked holder: its agent (session timeout t), the holder
 * and its helper, and a direct contender queued behind it. */
typedef struct forked {
  agentctl ag;
  zkl_session *d;
  zkl_lock *dl;
  zkt_rec direct;
  char name[64];
  pid_t pid, helper;
} forked;

static void forked_begin(forked *f, const char *tag, const char *t,
                         bool worker) {
  const char *const extra[] = {"-t", t, NULL};
  int ready = -1;
  memset(f, 0, sizeof *f);
  CU_ASSERT_FATAL(agentctl_start(&f->ag, zkt_hosts(), extra));
  zkt_name(f->name, sizeof f->name, tag);
  f->pid = child_forks_and_holds(&f->ag, f->name, worker, &ready);
  CU_ASSERT_FATAL(f->pid > 0);
  CU_ASSERT_EQUAL_FATAL(read(ready, &f->helper, sizeof f->helper),
                        (ssize_t)sizeof f->helper);
  close(ready);
  f->d = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&f->dl, f->d, f->name), ZKL_OK);
  zkt_rec_init(&f->direct);
  CU_ASSERT_EQUAL(
      zkl_lock_acquire_async(f->dl, -1, zkt_on_acquired, &f->direct), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(f->name), 2, ZKT_WAIT), 2);
}

/* The holder SIGKILLed (and reaped): its helper lives on. */
static void forked_kill_holder(forked *f) {
  int status;
  kill(f->pid, SIGKILL);
  waitpid(f->pid, &status, 0);
}

static void forked_end(forked *f) {
  kill(f->helper, SIGKILL); /* not ours to reap: init's */
  zkl_lock_free(f->dl);
  CU_ASSERT_EQUAL(zkl_session_close(f->d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&f->ag), 0);
  zkt_assert_parent_empty(f->name);
}

/* The holder forked a helper that keeps the agent's socket open, and was
 * SIGKILLed: its process is gone, which the agent sees by its pidfd, and
 * frees its lock at once, socket or not. It used to wait until the
 * connection fell silent (a session timeout: 10 minutes here). */
static void test_forked_holder(void) {
  forked f;
  forked_begin(&f, "agent-forked", "600s", false);
  forked_kill_holder(&f);
  CU_ASSERT_EQUAL(zkt_rec_wait(&f.direct, 1, ZKT_WAIT), ZKL_OK);
  forked_end(&f);
}

/* The same holder, with the helper named a worker: the lock waits for the
 * helper, and goes the moment it is gone. */
static void test_worker_waits(void) {
  forked f;
  char want[64];
  forked_begin(&f, "agent-worker", "600s", true);
  forked_kill_holder(&f);
  /* The agent saw the holder go and kept its node for the worker. */
  snprintf(want, sizeof want, "pid %ld ", (long)f.pid);
  CU_ASSERT(agentctl_log_has(&f.ag, want, "held nodes wait", ZKT_WAIT));
  CU_ASSERT_EQUAL(zkt_children(parent_of(f.name)), 2);
  CU_ASSERT_EQUAL(zkt_rec_wait(&f.direct, 1, 0), ZKT_NO_CALL);
  kill(f.helper, SIGKILL);
  CU_ASSERT_EQUAL(zkt_rec_wait(&f.direct, 1, ZKT_WAIT), ZKL_OK);
  forked_end(&f);
}

/* A worker that is never stopped keeps the lock only until the lease last
 * relayed to its client runs out by the margin: nothing may act under the
 * lock after that (zklock's keeper kills by then), and the lock passes. */
static void test_worker_lease(void) {
  forked f;
  forked_begin(&f, "agent-worker-lease", "3s", true);
  forked_kill_holder(&f);
  CU_ASSERT_EQUAL(zkt_rec_wait(&f.direct, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(agentctl_log_has(&f.ag, "its lease has run out", NULL, ZKT_WAIT));
  forked_end(&f);
}

/* zkl_session_add_worker's refusals, through the agent and direct alike:
 * no such process, another user's (named by a client of uid 65534), a
 * NULL session. Nothing changes on the server. */
static void test_worker_bad_input(void) {
  agentctl ag;
  zkl_session *s, *d;
  int p[2], status = -1;
  pid_t pid, gone;
  int8_t rcs[2] = {0, 0};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  /* The children first, before this process has sessions of its own for
   * them to inherit (under valgrind a child's exit checks for leaks, and
   * an inherited session counts as one). A pid that was a process once,
   * and is no more: */
  if ((gone = fork()) == 0)
    _exit(0);
  waitpid(gone, &status, 0);
  /* Root's clients may name anyone's process; another user may not name
   * root's (pid 1's): a client of uid 65534. */
  CU_ASSERT_FATAL(pipe(p) == 0);
  fflush(stdout);
  if ((pid = fork()) == 0) {
    zkl_session_options o;
    zkl_session *c = NULL, *dc = NULL;
    int8_t out[2] = {1, 1};
    close(p[0]);
    if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
      _exit(1);
    zkl_session_options_init(&o);
    o.agent = ag.sock;
    if (zkl_session_open(&c, &o) == ZKL_OK)
      out[0] = (int8_t)(zkl_session_add_worker(c, 1) == ZKL_EDENIED);
    o.agent = NULL;
    o.hosts = zkt_hosts();
    if (zkl_session_open(&dc, &o) == ZKL_OK)
      out[1] = (int8_t)(zkl_session_add_worker(dc, 1) == ZKL_EDENIED);
    if (c)
      zkl_session_close(c, NULL);
    if (dc)
      zkl_session_close(dc, NULL);
    if (write(p[1], out, sizeof out) != sizeof out)
      _exit(2);
    _exit(0);
  }
  close(p[1]);
  CU_ASSERT_EQUAL(read(p[0], rcs, sizeof rcs), (ssize_t)sizeof rcs);
  close(p[0]);
  waitpid(pid, &status, 0);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CU_ASSERT_EQUAL(rcs[0], 1); /* through the agent: ZKL_EDENIED */
  CU_ASSERT_EQUAL(rcs[1], 1); /* direct: ZKL_EDENIED */
  s = open_agent(&ag);
  d = zkt_session(T_SESSION);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(zkl_session_add_worker(NULL, getpid()), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_add_worker(s, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_add_worker(s, gone), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_add_worker(d, gone), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_add_worker(s, getpid()), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_add_worker(d, getpid()), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
}

/* A holder through the agent tells a break's mark from a plain request
 * (zkl_lock_break_mark(), REVOKED's field from protocol revision 3) and
 * lets go for the break only: its node goes within the grace, by its
 * release, and the break finds nothing left to delete. */
typedef struct {
  zkt_counter asked, marks;
} agent_marks;

static void on_revoke_break_only(zkl_lock *l, void *arg) {
  agent_marks *m = arg;
  bool marked = zkl_lock_break_mark(l);
  zkt_counter_add(&m->asked, 1);
  if (marked) {
    zkt_counter_add(&m->marks, 1);
    zkl_lock_release_async(l, NULL, NULL);
  }
}

static void test_break_mark(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_lock *l;
  agent_marks m;
  zkt_rec lost;
  char name[64];
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  d = zkt_session(T_SESSION);
  zkt_name(name, sizeof name, "agent-break-mark");
  zkt_counter_init(&m.asked);
  zkt_counter_init(&m.marks);
  zkt_rec_init(&lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkl_lock_on_revoke(l, on_revoke_break_only, &m);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  /* asked from the first moment of the hold */
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(l, 0), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT(!zkl_lock_break_mark(l));
  CU_ASSERT_EQUAL(zkl_name_revoke(d, name, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&m.asked, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zkt_counter_get(&m.marks), 0);
  CU_ASSERT(zkl_lock_token(l) > 0);
  CU_ASSERT_EQUAL(zkl_name_break(d, name, NULL, 120000, NULL, NULL),
                  ZKL_ENOTHELD); /* it let go within the grace */
  CU_ASSERT_EQUAL(zkt_counter_get(&m.marks), 1);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 0);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------- the blocking calls */

static void on_revoke_count(zkl_lock *l, void *arg) {
  (void)l;
  zkt_counter_add(arg, 1);
}

/* What zkl_name_break told its callback. */
typedef struct break_seen {
  int n, rc;
  char node[ZKL_PATH_MAX];
} break_seen;

static void on_break_seen(zkl_session *s, int rc, const char *node,
                          void *arg) {
  break_seen *b = arg;
  (void)s;
  b->n++;
  b->rc = rc;
  snprintf(b->node, sizeof b->node, "%s", node);
}

/* A blocking call on the agent session's callback thread. */
static int list_rc_on_thread = ZKT_NO_CALL;
static zkl_session *list_session;
static void acquired_then_list(zkl_lock *l, int rc, int64_t token,
                               void *arg) {
  zkl_participant *list = NULL;
  int count;
  (void)rc;
  (void)token;
  (void)l;
  list_rc_on_thread = zkl_name_list(list_session, "agent-any", &list, &count);
  zkt_counter_add(arg, 1);
}

static void assert_same_list(const zkl_participant *x, int nx,
                             const zkl_participant *y, int ny) {
  int i;
  CU_ASSERT_EQUAL_FATAL(nx, ny);
  for (i = 0; i < nx; i++) {
    CU_ASSERT_STRING_EQUAL(x[i].node, y[i].node);
    CU_ASSERT_EQUAL(x[i].token, y[i].token);
    CU_ASSERT_EQUAL(x[i].queued_ms, y[i].queued_ms);
    CU_ASSERT_STRING_EQUAL(x[i].host, y[i].host);
    CU_ASSERT_EQUAL(x[i].pid, y[i].pid);
    CU_ASSERT_EQUAL(x[i].started_ms, y[i].started_ms);
    CU_ASSERT_STRING_EQUAL(x[i].info, y[i].info);
    CU_ASSERT_STRING_EQUAL(x[i].kind, y[i].kind);
    CU_ASSERT_EQUAL(x[i].holds, y[i].holds);
    CU_ASSERT_EQUAL(x[i].limit, y[i].limit);
    CU_ASSERT_STRING_EQUAL(x[i].lock, y[i].lock);
    CU_ASSERT_EQUAL(x[i].repeated, y[i].repeated);
  }
}

/* zkl_name_list, _find and _get_leader through the agent answer what the
 * same calls on a direct session answer, in the structures the free
 * functions free; on the agent session's callback thread they refuse to
 * block (ZKL_EDEADLK). */
static void test_list_find_leader(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_lock *held, *waiting, *cand, *l;
  zkl_participant *la = NULL, *ld = NULL;
  char **fa = NULL, **fd = NULL;
  char name[64], ename[64], id_a[64], id_d[64];
  int na = 0, nd = 0, i;
  int64_t ta = 0, td = 0;
  bool tra = true, trd = true;
  zkt_rec got;
  zkt_counter called;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  d = zkt_session(T_SESSION);
  zkt_name(name, sizeof name, "agent-list");
  zkt_name(ename, sizeof ename, "agent-leader");

  /* One holder on the direct session, one waiter through the agent. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&held, d, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_owner_info(held, "the direct one"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(held, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&waiting, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_owner_info(waiting, "through the agent"),
                  ZKL_OK);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(waiting, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL_FATAL(zkl_name_list(s, name, &la, &na), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_name_list(d, name, &ld, &nd), ZKL_OK);
  CU_ASSERT_EQUAL(na, 2);
  assert_same_list(la, na, ld, nd);
  if (na == 2) {
    CU_ASSERT(la[0].holds && !la[1].holds);
    CU_ASSERT_STRING_EQUAL(la[1].info, "through the agent");
  }
  zkl_name_list_free(la);
  zkl_name_list_free(ld);
  /* A name nobody uses: an empty list, as directly. */
  CU_ASSERT_EQUAL(zkl_name_list(s, "agent-nobody-here", &la, &na), ZKL_OK);
  CU_ASSERT_EQUAL(na, 0);
  zkl_name_list_free(la);
  CU_ASSERT_EQUAL(zkl_name_list(s, "bad//name", &la, &na), ZKL_EINVAL);

  /* find: the same names, the same truncation. */
  CU_ASSERT_EQUAL(zkl_name_find(s, name, 100, &fa, &na, &tra), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_find(d, name, 100, &fd, &nd, &trd), ZKL_OK);
  CU_ASSERT_EQUAL(na, nd);
  CU_ASSERT_EQUAL(tra, trd);
  CU_ASSERT(na >= 1);
  for (i = 0; i < na && i < nd; i++)
    CU_ASSERT_STRING_EQUAL(fa[i], fd[i]);
  zkl_name_find_free(fa, na);
  zkl_name_find_free(fd, nd);
  /* A walk cut short says so alike. */
  CU_ASSERT_EQUAL(zkl_name_find(s, "", 1, &fa, &na, &tra), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_find(d, "", 1, &fd, &nd, &trd), ZKL_OK);
  CU_ASSERT_EQUAL(tra, trd);
  CU_ASSERT_EQUAL(na, nd);
  zkl_name_find_free(fa, na);
  zkl_name_find_free(fd, nd);
  CU_ASSERT_EQUAL(zkl_name_find(s, name, 0, &fa, &na, &tra), ZKL_EINVAL);

  /* get_leader: nobody, then the direct session's candidate. */
  CU_ASSERT_EQUAL(zkl_name_get_leader(s, ename, id_a, sizeof id_a, &ta),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_name_get_leader(d, ename, id_d, sizeof id_d, &td),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&cand, d, ename, "leader-one"),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(cand, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_get_leader(s, ename, id_a, sizeof id_a, &ta),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_get_leader(d, ename, id_d, sizeof id_d, &td),
                  ZKL_OK);
  CU_ASSERT_STRING_EQUAL(id_a, "leader-one");
  CU_ASSERT_STRING_EQUAL(id_a, id_d);
  CU_ASSERT_EQUAL(ta, td);
  CU_ASSERT(ta > 0);
  CU_ASSERT_EQUAL(zkl_name_get_leader(s, ename, NULL, 0, NULL), ZKL_OK);

  /* On the agent session's callback thread: ZKL_EDEADLK, not a hang. */
  zkt_counter_init(&called);
  zkt_name(ename, sizeof ename, "agent-deadlk");
  list_session = s;
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, ename), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, acquired_then_list, &called),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&called, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(list_rc_on_thread, ZKL_EDEADLK);
  zkl_lock_free(l);

  zkl_lock_free(cand);
  zkl_lock_free(held);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_OK);
  zkl_lock_free(waiting);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
  zkt_assert_parent_empty(ename);
}

/* zkl_name_revoke and zkl_name_break through the agent reach a holder on
 * a direct session as they would from one: its revoke callback, then its
 * loss (ZKL_LOST_BROKEN); the break's report comes on the calling thread;
 * a second break finds nothing, as a direct one does. */
static void test_revoke_break(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_lock *held;
  zkt_counter revoked;
  zkt_rec lost;
  break_seen seen = {0, 0, ""};
  char name[64], path[ZKL_PATH_MAX];
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  d = zkt_session(T_SESSION);
  zkt_name(name, sizeof name, "agent-break");
  CU_ASSERT_EQUAL(zkl_name_revoke(s, name, NULL), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_name_revoke(d, name, NULL), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&held, d, name), ZKL_OK);
  zkt_counter_init(&revoked);
  zkt_rec_init(&lost);
  zkl_lock_on_revoke(held, on_revoke_count, &revoked);
  zkl_lock_on_lost(held, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_acquire(held, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(held, path, sizeof path), ZKL_OK);

  CU_ASSERT_EQUAL(zkl_name_revoke(s, name, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&revoked, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zkl_name_revoke(s, name, "not-a-node"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, NULL, -1, NULL, NULL), ZKL_EINVAL);

  CU_ASSERT_EQUAL(zkl_name_break(s, name, NULL, 0, on_break_seen, &seen),
                  ZKL_OK);
  CU_ASSERT_EQUAL(seen.n, 1);
  CU_ASSERT_EQUAL(seen.rc, ZKL_OK);
  CU_ASSERT_STRING_EQUAL(seen.node, path);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_BROKEN);
  CU_ASSERT_EQUAL(zkl_name_break(s, name, NULL, 0, on_break_seen, &seen),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_name_break(d, name, NULL, 0, NULL, NULL),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(seen.n, 1);
  zkl_lock_free(held);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* The policy on the blocking calls: list, find and get_leader need "list"
 * on the name (find: on its prefix), revoke and break need "break", except
 * on the caller's own node. */
static void test_admin_policy(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_lock *other, *own;
  zkl_participant *list = NULL;
  char **names = NULL;
  char conf[256], path[ZKL_PATH_MAX], id[64];
  const char *node;
  int n = 0;
  bool tr;
  zkt_counter revoked;
  zkt_rec lost;
  FILE *f;
  const char *extra[] = {"--config", conf, NULL};
  snprintf(conf, sizeof conf, "/tmp/zklockd-admin-%ld.conf", (long)getpid());
  f = fopen(conf, "w");
  CU_ASSERT_FATAL(f != NULL);
  fprintf(f, "lock agent-adm/ *\n"
             "list agent-adm/pub *\n"
             "break agent-adm/ uid:12345\n");
  fclose(f);
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  d = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL(zkl_name_list(s, "agent-adm/priv", &list, &n), ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkl_name_list(s, "agent-adm/pub/x", &list, &n), ZKL_OK);
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL(zkl_name_find(s, "", 10, &names, &n, &tr), ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkl_name_find(s, "agent-adm", 10, &names, &n, &tr),
                  ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkl_name_find(s, "agent-adm/pub", 10, &names, &n, &tr),
                  ZKL_OK);
  zkl_name_find_free(names, n);
  CU_ASSERT_EQUAL(zkl_name_get_leader(s, "agent-adm/priv", id, sizeof id,
                                      NULL),
                  ZKL_EDENIED);

  /* Somebody else's hold: neither revoked nor broken. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&other, d, "agent-adm/x"), ZKL_OK);
  zkt_counter_init(&revoked);
  zkl_lock_on_revoke(other, on_revoke_count, &revoked);
  CU_ASSERT_EQUAL(zkl_lock_acquire(other, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(other, path, sizeof path), ZKL_OK);
  node = strrchr(path, '/') + 1;
  CU_ASSERT_EQUAL(zkl_name_revoke(s, "agent-adm/x", NULL), ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkl_name_revoke(s, "agent-adm/x", node), ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkl_name_break(s, "agent-adm/x", node, 0, NULL, NULL),
                  ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkt_counter_get(&revoked), 0);
  CU_ASSERT_EQUAL(zkt_children(parent_of("agent-adm/x")), 1);
  zkl_lock_free(other);

  /* Its own node: allowed, as freeing the lock would be. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&own, s, "agent-adm/own"), ZKL_OK);
  zkt_rec_init(&lost);
  zkl_lock_on_revoke(own, on_revoke_count, &revoked);
  zkl_lock_on_lost(own, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_acquire(own, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(own, path, sizeof path), ZKL_OK);
  node = strrchr(path, '/') + 1;
  /* Its node's name under another name of its own is not its node. */
  CU_ASSERT_EQUAL(zkl_name_revoke(s, "agent-adm/x", node), ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkl_name_revoke(s, "agent-adm/own", NULL), ZKL_EDENIED);
  CU_ASSERT_EQUAL(zkl_name_revoke(s, "agent-adm/own", node), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&revoked, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zkl_name_break(s, "agent-adm/own", node, 0, NULL, NULL),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_BROKEN);
  zkl_lock_free(own);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  unlink(conf);
  zkt_assert_parent_empty("agent-adm/x");
  zkt_assert_parent_empty("agent-adm/own");
}

/* A client killed while its break waits out its grace on the agent's
 * worker: the agent goes on serving, drops the reply when the break ends
 * (its holder let go), and stops cleanly (it waits for its workers before
 * it closes the session they use). */
static void test_gone_while_blocking(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_lock *held;
  zkl_participant *list = NULL;
  zkt_counter revoked;
  char name[64];
  int n = -1, status;
  pid_t pid;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  d = zkt_session(T_SESSION);
  zkt_name(name, sizeof name, "agent-gone");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&held, d, name), ZKL_OK);
  zkt_counter_init(&revoked);
  zkl_lock_on_revoke(held, on_revoke_count, &revoked);
  CU_ASSERT_EQUAL(zkl_lock_acquire(held, -1, NULL), ZKL_OK);
  fflush(stdout);
  if ((pid = fork()) == 0) {
    zkl_session_options o;
    zkl_session *c;
    zkl_session_options_init(&o);
    o.agent = ag.sock;
    if (zkl_session_open(&c, &o) != ZKL_OK)
      _exit(1);
    zkl_name_break(c, name, NULL, 600000, NULL, NULL); /* until killed */
    _exit(2);
  }
  CU_ASSERT_FATAL(pid > 0);
  /* The mark reached the holder: the break waits out its grace. */
  CU_ASSERT_EQUAL(zkt_counter_wait(&revoked, 1, ZKT_WAIT), 1);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  CU_ASSERT(WIFSIGNALED(status));
  /* The agent serves on; the holder lets go, which ends the break. */
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL(zkl_name_list(s, name, &list, &n), ZKL_OK);
  CU_ASSERT_EQUAL(n, 1);
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL(zkl_lock_release(held), ZKL_OK);
  zkl_lock_free(held);
  CU_ASSERT_EQUAL(zkl_name_list(s, name, &list, &n), ZKL_OK);
  CU_ASSERT_EQUAL(n, 0);
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------------ leader watches */

typedef struct leader_seen {
  zkt_counter calls;
  pthread_mutex_t mu;
  int rc;
  char id[64];
  int64_t token;
} leader_seen;

static void on_leader_seen(zkl_leader_watch *w, int rc, const char *id,
                           int64_t token, void *arg) {
  leader_seen *x = arg;
  (void)w;
  pthread_mutex_lock(&x->mu);
  x->rc = rc;
  snprintf(x->id, sizeof x->id, "%s", rc == ZKL_OK ? id : "");
  x->token = token;
  pthread_mutex_unlock(&x->mu);
  zkt_counter_add(&x->calls, 1);
}

static void leader_seen_init(leader_seen *x) {
  memset(x, 0, sizeof *x);
  zkt_counter_init(&x->calls);
  pthread_mutex_init(&x->mu, NULL);
}

/* A leader watch through the agent hears what one on a direct session
 * hears: nobody, then the leader with its token, then nobody; a policy
 * refusal ends it (ZKL_EDENIED); the session's close ends it with
 * ZKL_ECLOSED, and nothing comes after its free. */
static void test_leader_watch(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_leader_watch *wa, *wd, *wx;
  zkl_lock *cand;
  leader_seen a, b, x;
  char ename[64], conf[256];
  FILE *f;
  const char *extra[] = {"--config", conf, NULL};
  snprintf(conf, sizeof conf, "/tmp/zklockd-watch-%ld.conf", (long)getpid());
  f = fopen(conf, "w");
  CU_ASSERT_FATAL(f != NULL);
  fprintf(f, "lock agent-lw *\nlist agent-lw *\n");
  fclose(f);
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  d = zkt_session(T_SESSION);
  zkt_name(ename, sizeof ename, "agent-lw");
  leader_seen_init(&a);
  leader_seen_init(&b);
  leader_seen_init(&x);
  CU_ASSERT_EQUAL_FATAL(zkl_leader_watch_new(&wa, s, ename, on_leader_seen,
                                             &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_leader_watch_new(&wd, d, ename, on_leader_seen,
                                             &b),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zkt_counter_wait(&b.calls, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(b.rc, ZKL_ENOTHELD);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&cand, d, ename, "watched"),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(cand, -1, NULL), ZKL_OK);
  CU_ASSERT(zkt_counter_wait(&a.calls, 2, ZKT_WAIT) >= 2);
  CU_ASSERT(zkt_counter_wait(&b.calls, 2, ZKT_WAIT) >= 2);
  pthread_mutex_lock(&a.mu);
  pthread_mutex_lock(&b.mu);
  CU_ASSERT_EQUAL(a.rc, ZKL_OK);
  CU_ASSERT_STRING_EQUAL(a.id, "watched");
  CU_ASSERT_STRING_EQUAL(a.id, b.id);
  CU_ASSERT_EQUAL(a.token, b.token);
  pthread_mutex_unlock(&b.mu);
  pthread_mutex_unlock(&a.mu);
  /* Refused by the policy: the watch ends with ZKL_EDENIED. */
  CU_ASSERT_EQUAL_FATAL(zkl_leader_watch_new(&wx, s, "agent-other",
                                             on_leader_seen, &x),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&x.calls, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(x.rc, ZKL_EDENIED);
  zkl_leader_watch_free(wx);
  zkl_leader_watch_free(wd);
  /* The close ends the agent's watch, then it is freed. */
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(a.rc, ZKL_ECLOSED);
  zkl_leader_watch_free(wa);
  zkl_lock_free(cand);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  unlink(conf);
  zkt_assert_parent_empty(ename);
}

/* A client killed with a leader watch on: the agent frees the watch with
 * the connection, and a later change of leader reaches nobody gone (the
 * agent serves on and stops cleanly). */
static void test_leader_watch_gone(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_lock *cand;
  zkl_leader_watch *w;
  leader_seen a;
  char ename[64], ok;
  int p[2], status;
  pid_t pid;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  d = zkt_session(T_SESSION);
  zkt_name(ename, sizeof ename, "agent-lw-gone");
  CU_ASSERT_FATAL(pipe(p) == 0);
  fflush(stdout);
  if ((pid = fork()) == 0) {
    zkl_session_options o;
    zkl_session *c;
    zkl_leader_watch *cw;
    leader_seen seen;
    close(p[0]);
    leader_seen_init(&seen);
    zkl_session_options_init(&o);
    o.agent = ag.sock;
    ok = 1;
    if (zkl_session_open(&c, &o) != ZKL_OK ||
        zkl_leader_watch_new(&cw, c, ename, on_leader_seen, &seen) != ZKL_OK ||
        zkt_counter_wait(&seen.calls, 1, ZKT_WAIT) != 1 ||
        write(p[1], &ok, 1) != 1)
      _exit(1);
    for (;;)
      pause(); /* until SIGKILL */
  }
  close(p[1]);
  CU_ASSERT_FATAL(pid > 0);
  CU_ASSERT_EQUAL(read(p[0], &ok, 1), 1); /* its watch heard "nobody" */
  close(p[0]);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  /* Another client's watch: it hears the new leader, so the agent has
   * been through its callbacks for that change. */
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  leader_seen_init(&a);
  CU_ASSERT_EQUAL_FATAL(zkl_leader_watch_new(&w, s, ename, on_leader_seen,
                                             &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&cand, d, ename, "after"),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(cand, -1, NULL), ZKL_OK);
  CU_ASSERT(zkt_counter_wait(&a.calls, 2, ZKT_WAIT) >= 2);
  zkl_lock_free(cand);
  CU_ASSERT(zkt_counter_wait(&a.calls, 3, ZKT_WAIT) >= 3);
  zkl_leader_watch_free(w);
  /* By now (three news later) the agent has dropped the killed client,
   * and said what went with it. */
  {
    char line[512], want[64];
    bool seen = false;
    FILE *log = fopen(ag.log, "r");
    snprintf(want, sizeof want, "pid %ld ", (long)pid);
    CU_ASSERT_FATAL(log != NULL);
    while (fgets(line, sizeof line, log))
      if (strstr(line, want) && strstr(line, "0 locks and 1 leader watch "))
        seen = true;
    fclose(log);
    CU_ASSERT(seen);
  }
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(ename);
}

/* ---------------------------------------------- events, counters, servers */

/* The event hook through the agent tells what it tells direct, each once:
 * the session's state, the queueing only the agent sees, the ends of
 * attempts, a loss; the counters are the agent's session's with this
 * process's own locks; the servers are those the agent's session uses. */
static void test_events_stats_servers(void) {
  agentctl ag;
  zkl_session_options o;
  zkl_session *s = NULL, *other;
  zkl_lock *l, *h;
  zkl_session_stats st;
  char name[64], path[ZKL_PATH_MAX], servers[ZKL_SERVERS_MAX];
  int64_t token = 0;
  zkt_rec rec;
  zkt_events lg, lg_open;
  int i;
  zkt_events_init(&lg);
  zkt_events_init(&lg_open);
  zkt_rec_init(&rec);
  zkt_name(name, sizeof name, "agent-events");
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  /* a hook from the open on: told the session's CONNECTED */
  zkl_session_options_init(&o);
  o.agent = ag.sock;
  o.on_event = zkt_on_event;
  o.event_arg = &lg_open;
  CU_ASSERT_EQUAL_FATAL(zkl_session_open(&other, &o), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg_open.count, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(lg_open.ev[0].type, ZKL_EVENT_SESSION);
  CU_ASSERT_EQUAL(lg_open.ev[0].reason, ZKL_STATE_CONNECTED);
  CU_ASSERT_PTR_NULL(lg_open.ev[0].lock);
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  /* the servers: the agent's session's, never a blocking call */
  CU_ASSERT_EQUAL(zkl_session_get_servers(s, servers, sizeof servers), ZKL_OK);
  CU_ASSERT(strstr(servers, "127.0.0.1:") != NULL);
  CU_ASSERT_EQUAL(zkl_session_get_servers(s, servers, 3), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_on_event(s, zkt_on_event, &lg), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&h, other, name), ZKL_OK);
  /* granted with its token and node, released */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, 0, &token), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_get_stats(s, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.locks_held, 1);
  CU_ASSERT_EQUAL(st.locks_waiting, 0);
  CU_ASSERT(st.requests >= 2); /* the agent's: its create and listing */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 2, ZKT_WAIT), 2);
  i = zkt_events_last(&lg, ZKL_EVENT_GRANTED);
  CU_ASSERT_FATAL(i >= 0);
  CU_ASSERT_EQUAL(lg.ev[i].token, token);
  CU_ASSERT_PTR_EQUAL(lg.ev[i].lock, l);
  CU_ASSERT_STRING_EQUAL(lg.name[i], name);
  CU_ASSERT_STRING_EQUAL(lg.node[i], strrchr(path, '/') + 1);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_RELEASED, NULL), 1);
  /* another holds: a try-once fails, a timed acquire queues (the agent's
   * news) and times out, an async one queues and is canceled */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 300, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  /* QUEUED is the agent's news, so it is what this waits for */
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 6, ZKT_WAIT), 6);
  CU_ASSERT_EQUAL(zkl_session_get_stats(s, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.locks_held, 0);
  CU_ASSERT_EQUAL(st.locks_waiting, 1);
  /* a waiter knows its node, as direct (the agent's news carry it) */
  i = zkt_events_last(&lg, ZKL_EVENT_QUEUED);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT(i >= 0 && strcmp(strrchr(path, '/') + 1, lg.node[i]) == 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECANCELED);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 7, ZKT_WAIT), 7);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_FAILED, NULL), 1);
  i = zkt_events_last(&lg, ZKL_EVENT_FAILED);
  CU_ASSERT(i >= 0 && lg.ev[i].reason == ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_QUEUED, NULL), 2);
  i = zkt_events_last(&lg, ZKL_EVENT_QUEUED);
  CU_ASSERT_FATAL(i >= 0);
  CU_ASSERT_EQUAL(lg.ev[i].position, 1);
  CU_ASSERT_PTR_EQUAL(lg.ev[i].lock, l);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_TIMED_OUT, NULL), 1);
  i = zkt_events_last(&lg, ZKL_EVENT_TIMED_OUT);
  CU_ASSERT(i >= 0 && lg.ev[i].wait_ms >= 300);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_CANCELED, NULL), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(h), ZKL_OK);
  /* lost: someone deletes the holder's node */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), path, -1), ZOK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 9, ZKT_WAIT), 9);
  i = zkt_events_last(&lg, ZKL_EVENT_LOST);
  CU_ASSERT_FATAL(i >= 0);
  CU_ASSERT_EQUAL(lg.ev[i].reason, ZKL_LOST_NODE_DELETED);
  CU_ASSERT_STRING_EQUAL(lg.node[i], strrchr(path, '/') + 1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  /* the hook off: nothing more is told */
  CU_ASSERT_EQUAL(zkl_session_on_event(s, NULL, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkl_lock_free(h);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_get(&lg.count), 9); /* each once */
  CU_ASSERT_EQUAL(zkt_events_count(&lg_open, ZKL_EVENT_GRANTED, NULL), 1); /* h's */
  CU_ASSERT_EQUAL(zkl_session_close(other, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------------- guarded writes */

/* A znode of the test's own (one of 4 static buffers). */
static const char *znode(const char *name, const char *what) {
  static char buf[4][ZKL_PATH_MAX];
  static int next;
  char *b = buf[next++ % 4];
  snprintf(b, ZKL_PATH_MAX, "/agent-commit-%s%s", name, what);
  return b;
}

/* What a guarded write left: the ops' results, their buffers, the Stat. */
typedef struct commit_seen {
  int rc;
  zoo_op_result_t results[5];
  char created[64], seq[12];
  struct Stat stat;
} commit_seen;

/* One commit of every op kind, under base (created by the caller, with
 * base/set and base/gone in it): a create with data holding a NUL and
 * its path asked back, a setData with its Stat, a delete, a check of the
 * new node, and a sequential create whose path is cut to a small
 * buffer. */
static void commit_every_kind(zkl_lock *l, const char *base,
                              commit_seen *out) {
  char a[4][ZKL_PATH_MAX];
  zoo_op_t ops[5];
  memset(out, 0, sizeof *out);
  snprintf(a[0], sizeof a[0], "%s/new", base);
  snprintf(a[1], sizeof a[1], "%s/set", base);
  snprintf(a[2], sizeof a[2], "%s/gone", base);
  snprintf(a[3], sizeof a[3], "%s/seq-", base);
  zoo_create_op_init(&ops[0], a[0], "x\0y", 3, &ZOO_OPEN_ACL_UNSAFE, 0,
                     out->created, sizeof out->created);
  zoo_set_op_init(&ops[1], a[1], "2", 1, 0, &out->stat);
  zoo_delete_op_init(&ops[2], a[2], -1);
  zoo_check_op_init(&ops[3], a[0], 0);
  zoo_create_op_init(&ops[4], a[3], NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                     ZOO_PERSISTENT_SEQUENTIAL, out->seq, sizeof out->seq);
  out->rc = zkl_lock_commit(l, 5, ops, out->results);
}

/* base with base/set and base/gone in it, on the observer. */
static void make_base(const char *base) {
  char p[ZKL_PATH_MAX];
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), base, NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                  ZOK);
  snprintf(p, sizeof p, "%s/set", base);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), p, "1", 1, &ZOO_OPEN_ACL_UNSAFE,
                             0, NULL, 0),
                  ZOK);
  snprintf(p, sizeof p, "%s/gone", base);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), p, NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                  ZOK);
}

/* base and everything under it (one level), on the observer. */
static void remove_base(const char *base) {
  struct String_vector kids;
  char p[ZKL_PATH_MAX];
  int i;
  if (zoo_get_children(zkt_observer(), base, 0, &kids) == ZOK) {
    for (i = 0; i < kids.count; i++) {
      snprintf(p, sizeof p, "%s/%s", base, kids.data[i]);
      zoo_delete(zkt_observer(), p, -1);
    }
    deallocate_String_vector(&kids);
  }
  zoo_delete(zkt_observer(), base, -1);
}

/* A guarded write through the agent writes what it does on a direct
 * session, and fills the caller's results as a direct session does: the
 * same ops run both ways, and their results are compared field by field
 * (the paths differ by their base only). */
static void test_commit(void) {
  agentctl ag;
  zkl_session *s, *d;
  zkl_lock *l, *dl;
  commit_seen via, direct;
  char name[64], data[8], base[128], dbase[128], want[ZKL_PATH_MAX];
  int len = sizeof data, i;
  struct Stat st;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  d = zkt_session(T_SESSION);
  zkt_name(name, sizeof name, "agent-commit");
  snprintf(base, sizeof base, "/agent-commit-%s", name);
  snprintf(dbase, sizeof dbase, "/agent-commit-%s-direct", name);
  make_base(base);
  make_base(dbase);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  /* not held: nothing sent */
  commit_every_kind(l, base, &via);
  CU_ASSERT_EQUAL(via.rc, ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  commit_every_kind(l, base, &via);
  CU_ASSERT_EQUAL(via.rc, ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&dl, d, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(dl, -1, NULL), ZKL_OK);
  commit_every_kind(dl, dbase, &direct);
  CU_ASSERT_EQUAL(direct.rc, ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(dl), ZKL_OK);
  /* written: the data with its NUL, the new version, the delete */
  snprintf(want, sizeof want, "%s/new", base);
  CU_ASSERT_EQUAL(zoo_get(zkt_observer(), want, 0, data, &len, &st), ZOK);
  CU_ASSERT_EQUAL(len, 3);
  CU_ASSERT(memcmp(data, "x\0y", 3) == 0);
  CU_ASSERT_STRING_EQUAL(via.created, want);
  snprintf(want, sizeof want, "%s/set", base);
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), want, 0, &st), ZOK);
  CU_ASSERT_EQUAL(st.version, 1);
  snprintf(want, sizeof want, "%s/gone", base);
  CU_ASSERT(!node_exists(want));
  /* the caller's results, as a direct session fills them */
  for (i = 0; i < 5; i++) {
    CU_ASSERT_EQUAL(via.results[i].err, ZOK);
    CU_ASSERT_EQUAL(via.results[i].err, direct.results[i].err);
    CU_ASSERT_EQUAL(via.results[i].valuelen, direct.results[i].valuelen);
    CU_ASSERT_EQUAL(via.results[i].value == NULL,
                    direct.results[i].value == NULL);
    CU_ASSERT_EQUAL(via.results[i].stat == NULL,
                    direct.results[i].stat == NULL);
  }
  CU_ASSERT_PTR_EQUAL(via.results[0].value, via.created);
  CU_ASSERT_PTR_EQUAL(via.results[1].stat, &via.stat);
  CU_ASSERT_PTR_EQUAL(via.results[4].value, via.seq);
  CU_ASSERT_EQUAL(via.stat.version, 1);
  CU_ASSERT_EQUAL(via.stat.version, direct.stat.version);
  CU_ASSERT_EQUAL(via.stat.dataLength, direct.stat.dataLength);
  CU_ASSERT_EQUAL(via.stat.czxid, st.czxid);
  CU_ASSERT_EQUAL(via.stat.mzxid, st.mzxid);
  /* the sequential path cut to its 12 bytes, as the C client cuts it */
  CU_ASSERT_EQUAL(strlen(via.seq), sizeof via.seq - 1);
  CU_ASSERT_EQUAL(strlen(direct.seq), sizeof direct.seq - 1);
  CU_ASSERT(strncmp(via.seq, base, sizeof via.seq - 1) == 0);
  zkl_lock_free(l);
  zkl_lock_free(dl);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  remove_base(base);
  remove_base(dbase);
  zkt_assert_parent_empty(name);
}

/* One create of path, guarded by l. */
static int commit_create(zkl_lock *l, const char *path) {
  zoo_op_t op;
  zoo_op_result_t result;
  zoo_create_op_init(&op, path, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  return zkl_lock_commit(l, 1, &op, &result);
}

/* A holder whose node was deleted under it (by an observer) commits
 * nothing: ZKL_ELOST, as direct; a multi-lock too, one of its nodes
 * gone. */
static void test_commit_lost(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l;
  char name[64], node[ZKL_PATH_MAX];
  const char *target;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-commit-lost");
  target = znode(name, "");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), node, -1), ZOK);
  CU_ASSERT_EQUAL(commit_create(l, target), ZKL_ELOST);
  CU_ASSERT(!node_exists(target));
  CU_ASSERT_EQUAL(commit_create(l, target), ZKL_ELOST);
  CU_ASSERT(!node_exists(target));
  zkl_lock_free(l);
  /* a multi-lock: a guard on each of its nodes, so one node gone is
   * enough to commit nothing */
  {
    char mname[2][64], paths[2 * ZKL_PATH_MAX];
    const char *names[2];
    zkl_lock *multi;
    zkt_name(mname[0], sizeof mname[0], "agent-commit-multi-a");
    zkt_name(mname[1], sizeof mname[1], "agent-commit-multi-b");
    names[0] = mname[0];
    names[1] = mname[1];
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_multi(&multi, s, names, 2), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire(multi, -1, NULL), ZKL_OK);
    CU_ASSERT_EQUAL(commit_create(multi, target), ZKL_OK);
    CU_ASSERT(node_exists(target));
    CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), target, -1), ZOK);
    CU_ASSERT_EQUAL(zkl_lock_get_node_paths(multi, paths, sizeof paths),
                    ZKL_OK);
    *strchr(paths, ' ') = 0; /* the first name's node */
    CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), paths, -1), ZOK);
    CU_ASSERT_EQUAL(commit_create(multi, target), ZKL_ELOST);
    CU_ASSERT(!node_exists(target));
    zkl_lock_free(multi);
    zkt_assert_parent_empty(mname[0]);
    zkt_assert_parent_empty(mname[1]);
  }
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

/* The policy's write rule: a commit with one op outside it is refused as
 * a whole (ZKL_EDENIED, nothing written); a rule covers its path and what
 * is below it, never a sibling that only starts alike. */
static void test_commit_policy(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l;
  char conf[256], name[64], ok[128], okx[128], below[ZKL_PATH_MAX];
  char node[ZKL_PATH_MAX];
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  FILE *f;
  const char *extra[] = {"--config", conf, NULL};
  zkt_name(name, sizeof name, "agent-commit-pol");
  snprintf(ok, sizeof ok, "/agent-commit-%s", name);
  snprintf(okx, sizeof okx, "/agent-commit-%sx", name);
  snprintf(below, sizeof below, "%s/below", ok);
  snprintf(conf, sizeof conf, "/tmp/zklockd-test-%ld.conf", (long)getpid());
  f = fopen(conf, "w");
  CU_ASSERT_FATAL(f != NULL);
  fprintf(f, "lock * *\nwrite %s uid:%ld\nwrite " ZKL_ROOT " uid:%ld\n", ok,
          (long)getuid(), (long)getuid());
  fclose(f);
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  /* the sibling okx only starts like ok: refused, and so is the good op
   * with it */
  zoo_create_op_init(&ops[0], ok, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  zoo_create_op_init(&ops[1], okx, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, ops, results), ZKL_EDENIED);
  CU_ASSERT(!node_exists(ok));
  CU_ASSERT(!node_exists(okx));
  CU_ASSERT_EQUAL(commit_create(l, okx), ZKL_EDENIED);
  CU_ASSERT(!node_exists(okx));
  /* the lock tree is nobody's to write, whatever the rules say: a client
   * could delete another's node there */
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
  zoo_delete_op_init(&ops[0], node, -1);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 1, ops, results), ZKL_EDENIED);
  CU_ASSERT(node_exists(node));
  /* the rule's own path and what is below it */
  zoo_create_op_init(&ops[0], ok, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  zoo_create_op_init(&ops[1], below, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                     0);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, ops, results), ZKL_OK);
  CU_ASSERT(node_exists(ok));
  CU_ASSERT(node_exists(below));
  /* still held after a refusal: the client was not cut off */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  unlink(conf);
  remove_base(ok);
  zkt_assert_parent_empty(name);
}

/* Bad input gets the error a direct session gives, and writes nothing;
 * what is too big for the agent's frames is refused before anything is
 * sent, with ZKL_EINVAL. */
static void test_commit_bad_input(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l;
  char name[64];
  const char *target;
  zoo_op_t op, two[2];
  zoo_op_result_t result, res2[2];
  char *big;
  zkt_rec rec;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-commit-bad");
  target = znode(name, "");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  zoo_create_op_init(&op, target, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 0, &op, &result), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, ZKL_COMMIT_OPS_MAX + 1, &op, &result),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 1, NULL, &result), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 1, &op, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(l, 1, &op, &result, NULL, NULL),
                  ZKL_EINVAL);
  /* a NULL path, and one ZooKeeper refuses, before a good op */
  two[1] = op;
  zoo_create_op_init(&two[0], NULL, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, two, res2), ZBADARGUMENTS);
  zoo_delete_op_init(&two[0], "/a//b", -1);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, two, res2), ZBADARGUMENTS);
  /* data past a frame: ZKL_EINVAL, nothing sent */
  big = calloc(1, ZKL_WIRE_MAX + 1);
  CU_ASSERT_FATAL(big != NULL);
  zoo_create_op_init(&two[0], target, big, ZKL_WIRE_MAX + 1,
                     &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, two, res2), ZKL_EINVAL);
  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(l, 2, two, res2, zkt_on_released,
                                        &rec),
                  ZKL_EINVAL);
  free(big);
  CU_ASSERT(!node_exists(target));
  /* ops that fit in a frame, whose results would not: 1024 creates of a
   * 940-byte path, their paths asked back (1,032,212 bytes asked, 1,067,028
   * answered). The agent could only say ZKL_ENOMEM after the write: the
   * client refuses them first. */
  {
    zoo_op_t *many = calloc(ZKL_COMMIT_OPS_MAX, sizeof *many);
    zoo_op_result_t *res = calloc(ZKL_COMMIT_OPS_MAX, sizeof *res);
    char *path = malloc(941), *back = malloc(1024);
    int i;
    CU_ASSERT_FATAL(many && res && path && back);
    memset(path, 'a', 940);
    path[0] = '/';
    path[940] = 0;
    for (i = 0; i < ZKL_COMMIT_OPS_MAX; i++)
      zoo_create_op_init(&many[i], path, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0,
                         back, 1024);
    CU_ASSERT_EQUAL(zkl_lock_commit(l, ZKL_COMMIT_OPS_MAX, many, res),
                    ZKL_EINVAL);
    /* without the paths asked back, the same ops go (and fail in
     * ZooKeeper: the first creates the node, the second finds it) */
    for (i = 0; i < ZKL_COMMIT_OPS_MAX; i++)
      many[i].create_op.buf = NULL;
    CU_ASSERT_EQUAL(zkl_lock_commit(l, ZKL_COMMIT_OPS_MAX, many, res),
                    ZNODEEXISTS);
    CU_ASSERT(!node_exists(path));
    free(many);
    free(res);
    free(path);
    free(back);
  }
  /* the session is as good as before */
  CU_ASSERT_EQUAL(commit_create(l, target), ZKL_OK);
  CU_ASSERT(node_exists(target));
  CU_ASSERT_EQUAL(zkt_counter_get(&rec.calls), 0);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), target, -1), ZOK);
  zkt_assert_parent_empty(name);
}

/* The async form: the callback runs once, on the session's callback
 * thread, with the results filled; a commit in flight when its lock is
 * freed or its session closed ends with ZKL_ECLOSED, and the agent, which
 * still runs it in ZooKeeper, frees it when ZooKeeper answers: it serves
 * on and stops cleanly (under ASan: with nothing leaked). */
static void test_commit_async(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l;
  char name[64], created[ZKL_PATH_MAX];
  const char *target, *t2, *t3;
  zoo_op_t op;
  zoo_op_result_t result;
  zkt_rec rec;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-commit-async");
  target = znode(name, "");
  t2 = znode(name, "-2");
  t3 = znode(name, "-3");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  zoo_create_op_init(&op, target, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, created,
                     sizeof created);
  memset(&result, 0, sizeof result);
  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(l, 1, &op, &result, zkt_on_released,
                                        &rec),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_PTR_EQUAL(rec.lock, l);
  CU_ASSERT(!pthread_equal(rec.thread, pthread_self()));
  CU_ASSERT_EQUAL(result.err, ZOK);
  CU_ASSERT_PTR_EQUAL(result.value, created);
  CU_ASSERT_STRING_EQUAL(created, target);
  CU_ASSERT(node_exists(target));
  CU_ASSERT_EQUAL(commit_create(l, t2), ZKL_OK);
  /* freed with a commit in flight: ZKL_ECLOSED, once */
  zoo_create_op_init(&op, t3, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(l, 1, &op, &result, zkt_on_released,
                                        &rec),
                  ZKL_OK);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECLOSED);
  /* a session closed with one in flight: the same */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(l, 1, &op, &result, zkt_on_released,
                                        &rec),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECLOSED);
  zkl_lock_free(l);
  /* the agent serves on */
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  zoo_delete_op_init(&op, target, -1);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 1, &op, &result), ZKL_OK);
  CU_ASSERT(!node_exists(target));
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zoo_delete(zkt_observer(), t2, -1);
  zoo_delete(zkt_observer(), t3, -1); /* it may have committed */
  zkt_assert_parent_empty(name);
}

/* Blocking from the callback thread: ZKL_EDEADLK, as direct. */
typedef struct deadlk_try {
  zkl_lock *l;
  const char *target;
  zkt_counter done;
  int rc;
} deadlk_try;

static void on_acquired_try_commit(zkl_lock *l, int rc, int64_t token,
                                   void *arg) {
  deadlk_try *t = arg;
  (void)token;
  t->rc = rc == ZKL_OK ? commit_create(l, t->target) : rc;
  zkt_counter_add(&t->done, 1);
}

/* The agent dies with a commit on its way (frozen, so it never read it):
 * the caller hears ZKL_EAGENT, and nothing was written; from a callback
 * the blocking form says ZKL_EDEADLK. */
static void test_commit_agent_gone(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l;
  char name[64];
  const char *target;
  zoo_op_t op;
  zoo_op_result_t result;
  zkt_rec rec;
  deadlk_try t;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-commit-gone");
  target = znode(name, "");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  memset(&t, 0, sizeof t);
  zkt_counter_init(&t.done);
  t.target = target;
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, on_acquired_try_commit, &t),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&t.done, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(t.rc, ZKL_EDEADLK);
  CU_ASSERT(!node_exists(target));
  agentctl_freeze(&ag, true);
  zoo_create_op_init(&op, target, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(l, 1, &op, &result, zkt_on_released,
                                        &rec),
                  ZKL_OK);
  agentctl_kill(&ag);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_EAGENT);
  CU_ASSERT_EQUAL(commit_create(l, target), ZKL_EAGENT);
  CU_ASSERT(!node_exists(target));
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  /* the killed agent's session ends by its timeout: its node with it */
  CU_ASSERT_EQUAL(zkt_wait_children(parent_of(name), 0, 2 * ZKT_WAIT), 0);
}

/* The agent's answer to a guarded write crosses the client's FREE of its
 * lock: the client ended the call with ZKL_ECLOSED, and the answer that
 * comes after finds nothing waiting. It must not end the session (it
 * did: a REPLY to no pending call was taken for a broken agent). */
static void test_commit_answer_after_free(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *l, *m;
  char name[64], mname[64], parent[128], child[ZKL_PATH_MAX];
  zoo_op_t op;
  zoo_op_result_t result;
  zkt_rec rec;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  zkt_name(name, sizeof name, "agent-commit-cross");
  zkt_name(mname, sizeof mname, "agent-commit-cross-m");
  snprintf(parent, sizeof parent, "/agent-commit-%s", name);
  snprintf(child, sizeof child, "%s/x", parent);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), parent, NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0),
                  ZOK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&m, s, mname), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(m, -1, NULL), ZKL_OK);
  /* Nothing the agent sends is read until the test says so. (A callback
   * that kept the callback thread did it when that thread read the
   * socket too; the I/O thread reads on through any callback now.) */
  zkl__test_agent_hold_reads(s, true);
  zoo_create_op_init(&op, child, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(l, 1, &op, &result, zkt_on_released,
                                        &rec),
                  ZKL_OK);
  /* committed: the agent's answer is on its way, before the FREE */
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 1, ZKT_WAIT), 1);
  zkl_lock_free(l);
  zkl__test_agent_hold_reads(s, false);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECLOSED);
  /* the session serves on: m's hold is still there, and good */
  CU_ASSERT_EQUAL(zkl_lock_release(m), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(m, -1, NULL), ZKL_OK);
  zkl_lock_free(m);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), child, -1), ZOK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), parent, -1), ZOK);
  zkt_assert_parent_empty(name);
  zkt_assert_parent_empty(mname);
}

int main(void) {
  static const zkt_test tests[] = {
      {"every kind through the agent", test_kinds},
      {"bad input through the agent", test_bad_input},
      {"a SIGKILLed client's lock is freed at once", test_killed_client},
      {"a free or a close with an acquire in flight", test_close_in_flight},
      {"a frozen client's lock goes after its lease, and it is told",
       test_frozen_client},
      {"the agent killed: every client told at once", test_agent_killed},
      {"the agent frozen: lost by the client's clock, before anyone else",
       test_agent_frozen},
      {"a waiter through a frozen agent: its call ends after a timeout",
       test_waiter_agent_frozen},
      {"a busy callback through the agent keeps the hold", test_busy_callback},
      {"a lost notice while a callback is busy", test_lost_while_busy},
      {"a bounded hold: nobody is granted before the client heard",
       test_max_hold},
      {"the policy refuses, and a bad reload keeps it", test_policy},
      {"a stop tells the holders and waits for their release",
       test_stop_waits},
      {"a stop: a holder that never lets go, until its lease runs out",
       test_stop_lease},
      {"a forked holder SIGKILLed: its lock is freed at once",
       test_forked_holder},
      {"a worker keeps a killed client's lock until it exits",
       test_worker_waits},
      {"a worker never stopped: the lock goes when the lease runs out",
       test_worker_lease},
      {"zkl_session_add_worker's refusals", test_worker_bad_input},
      {"list, find and get_leader through the agent", test_list_find_leader},
      {"revoke and break through the agent", test_revoke_break},
      {"a break's mark told apart from a request, through the agent",
       test_break_mark},
      {"the policy on list, find, leader, revoke and break",
       test_admin_policy},
      {"a client gone while its break runs on the agent",
       test_gone_while_blocking},
      {"a leader watch through the agent", test_leader_watch},
      {"a client killed with a leader watch on", test_leader_watch_gone},
      {"events, counters and servers through the agent",
       test_events_stats_servers},
      {"a guarded write through the agent, as direct", test_commit},
      {"a guarded write after the hold was lost", test_commit_lost},
      {"the policy's write rule", test_commit_policy},
      {"bad input to a guarded write through the agent",
       test_commit_bad_input},
      {"an async guarded write, and one left in flight", test_commit_async},
      {"the agent gone with a guarded write on its way",
       test_commit_agent_gone},
      {"a guarded write's answer after its lock was freed",
       test_commit_answer_after_free},
      {NULL, NULL}};
  return zkt_main("agent", tests);
}
