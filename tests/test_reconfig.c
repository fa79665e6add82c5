/* SPDX-License-Identifier: Apache-2.0 */
/* test_reconfig.c - the ensemble changes under the sessions: they follow its
 * configuration to new servers (zkt_open()). An ensemble of 3 that
 * can change its members grows to 5, then loses its original 3, while one
 * session holds a lock and another waits for it; and a session opened with
 * ZKL_OPEN_NO_FOLLOW_CONFIG keeps its list. Plus the parsing of the
 * configuration, without a server. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "zktest.h"

#define T_SESSION 15000 /* generous: moving costs a reconnect or two */
#define T_WAIT 30000    /* bound of each wait for a change to arrive */

/* ------------------------------------------------------------- parsing */

static void expect_parse(const char *data, int want_rc, const char *want,
                         int64_t want_version) {
  char out[ZKL_SERVERS_MAX];
  int64_t version = -2;
  int rc = zkl__config_servers(data, (int)strlen(data), out, sizeof out,
                               &version);
  zkt_check(rc == want_rc, "parse %s: rc %d, want %d", data, rc, want_rc);
  if (rc == 1 && want)
    zkt_check(strcmp(out, want) == 0, "parse %s: %s, want %s", data, out,
              want);
  if (want_version != -2)
    zkt_check(version == want_version, "parse %s: version %llx, want %llx",
              data, (long long)version, (long long)want_version);
}

static void test_parse(void) {
  char big[16384];
  size_t used = 0;
  int i;
  expect_parse("server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n"
               "server.2=127.0.0.1:2889:3889:participant;127.0.0.1:2182\n"
               "server.3=127.0.0.1:2890:3890:observer;127.0.0.1:2183\n"
               "version=100000004",
               1, "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183", 0x100000004);
  /* a wildcard or missing client host: the server's own host (Curator) */
  expect_parse("server.1=zk1:2888:3888:participant;0.0.0.0:2181\n"
               "server.2=zk2:2888:3888;2181\n"
               "server.3=[::1]:2888:3888:participant;[::]:2181\n",
               1, "zk1:2181,zk2:2181,::1:2181", -1);
  /* IPv6 client hosts lose their brackets (the C client splits at the
   * last colon and resolves the rest); blanks and CRLF are tolerated */
  expect_parse("  server.7 = [fe80::1]:1:2:participant;[fe80::2]:2181 \r\n"
               "version=a\r\n",
               1, "fe80::2:2181", 0xa);
  /* several quorum addresses: the first one's host */
  expect_parse("server.1=a:1:2|b:3:4;2181\n", 1, "a:2181", -1);
  /* nothing to follow: no server line, or one without a client address
   * (a static clientPort), or an empty configuration (standalone) */
  expect_parse("", 0, NULL, -1);
  expect_parse("version=0", 0, NULL, 0);
  expect_parse("server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n"
               "server.2=127.0.0.1:2889:3889:participant\n",
               0, NULL, -2);
  /* malformed */
  expect_parse("server.1=h:1:2;h:notaport\n", -1, NULL, -2);
  expect_parse("server.1=h:1:2;h:0\n", -1, NULL, -2);
  expect_parse("server.1=h:1:2;h:65536\n", -1, NULL, -2);
  expect_parse("server.1\n", -1, NULL, -2);
  expect_parse("version=xyz\n", -1, NULL, -2);
  /* a list that does not fit */
  for (i = 0; i < 100 && used < sizeof big - 200; i++)
    used += (size_t)snprintf(big + used, sizeof big - used,
                             "server.%d=%0200d:1:2;%0200d:2181\n", i + 1, i,
                             i);
  expect_parse(big, -1, NULL, -2);

  CU_ASSERT(zkl__servers_same("a:1,b:2", "b:2,a:1"));
  CU_ASSERT(zkl__servers_same("a:1, b:2", "b:2,a:1"));
  CU_ASSERT(!zkl__servers_same("a:1,b:2", "a:1"));
  CU_ASSERT(!zkl__servers_same("a:1,b:2", "a:1,b:3"));
  CU_ASSERT(!zkl__servers_same("a:1", "a:1,a:1"));
}

/* ------------------------------------------------ what a session hears */

typedef struct {
  zkt_counter servers;  /* ZKL_EVENT_SERVERS */
  zkt_counter queued;   /* ZKL_EVENT_QUEUED */
  zkt_counter over;     /* ZKL_STATE_EXPIRED or _AUTH_FAILED */
  zkt_counter lost;     /* ZKL_EVENT_LOST */
  pthread_mutex_t mu;
  char last[ZKL_SERVERS_MAX]; /* the latest SERVERS event's string */
} heard;

static void heard_init(heard *h) {
  memset(h, 0, sizeof *h);
  zkt_counter_init(&h->servers);
  zkt_counter_init(&h->queued);
  zkt_counter_init(&h->over);
  zkt_counter_init(&h->lost);
  pthread_mutex_init(&h->mu, NULL);
}

static void on_event(zkl_session *s, const zkl_event *ev, void *arg) {
  heard *h = arg;
  (void)s;
  switch (ev->type) {
  case ZKL_EVENT_SERVERS:
    zkt_check(ev->servers != NULL && ev->lock == NULL,
              "a SERVERS event carries the servers and no lock");
    pthread_mutex_lock(&h->mu);
    snprintf(h->last, sizeof h->last, "%s", ev->servers ? ev->servers : "");
    pthread_mutex_unlock(&h->mu);
    zkt_counter_add(&h->servers, 1);
    break;
  case ZKL_EVENT_QUEUED:
    zkt_counter_add(&h->queued, 1);
    break;
  case ZKL_EVENT_LOST:
    zkt_counter_add(&h->lost, 1);
    break;
  case ZKL_EVENT_SESSION:
    if (ev->reason == ZKL_STATE_EXPIRED || ev->reason == ZKL_STATE_AUTH_FAILED)
      zkt_counter_add(&h->over, 1);
    break;
  default:
    break;
  }
}

static zkl_session *open_heard(const char *hosts, int flags, heard *h) {
  zkl_session *s = NULL;
  int rc = zkt_open(&s, hosts, T_SESSION, T_WAIT, flags);
  zkt_check(rc == ZKL_OK, "open %s: %s", hosts, zkl_strerror(rc));
  CU_ASSERT_FATAL(rc == ZKL_OK);
  heard_init(h);
  CU_ASSERT_EQUAL(zkl_session_on_event(s, on_event, h), ZKL_OK);
  return s;
}

/* ------------------------------------------------------------ servers */

/* The client port of server id, or -1. */
static int server_port(int id) {
  char cmd[1024], line[64];
  FILE *p;
  int port = -1;
  snprintf(cmd, sizeof cmd, "'%s/tests/zkserver' port '%s' %d",
           ZKL_TEST_SRCDIR, zkt_zkdir(), id);
  p = popen(cmd, "r");
  if (!p)
    return -1;
  if (fgets(line, sizeof line, p))
    port = atoi(line);
  if (pclose(p) != 0)
    port = -1;
  return port;
}

/* "127.0.0.1:P,..." for the servers ids[0..n), then suffix. */
static void hosts_of(char *buf, size_t len, const int *ids, int n,
                     const char *suffix) {
  size_t used = 0;
  int i;
  buf[0] = '\0';
  for (i = 0; i < n; i++) {
    int port = server_port(ids[i]);
    zkt_check(port > 0, "server %d has a port", ids[i]);
    used += (size_t)snprintf(buf + used, len - used, "%s127.0.0.1:%d",
                             i ? "," : "", port);
  }
  snprintf(buf + used, len - used, "%s", suffix);
}

/* Whether two connect strings name the same servers and chroot. */
static bool same_servers(const char *a, const char *b) {
  const char *ca = strchr(a, '/'), *cb = strchr(b, '/');
  char xa[ZKL_SERVERS_MAX], xb[ZKL_SERVERS_MAX];
  if (strcmp(ca ? ca : "", cb ? cb : "") != 0)
    return false;
  snprintf(xa, sizeof xa, "%.*s", (int)(ca ? ca - a : (long)strlen(a)), a);
  snprintf(xb, sizeof xb, "%.*s", (int)(cb ? cb - b : (long)strlen(b)), b);
  return zkl__servers_same(xa, xb);
}

/* Waits (bounded, on the session's SERVERS events) until s uses the
 * servers of want; asserts it, saying what it uses instead. */
#define wait_servers(s, h, want) wait_servers_at(s, h, want, __LINE__)
static bool wait_servers_at(zkl_session *s, heard *h, const char *want,
                            int line) {
  int64_t deadline = zkt_now_ms() + T_WAIT;
  char now[ZKL_SERVERS_MAX] = "";
  for (;;) {
    int seen = zkt_counter_get(&h->servers);
    int left = (int)(deadline - zkt_now_ms());
    if (zkl_session_get_servers(s, now, sizeof now) == ZKL_OK &&
        same_servers(now, want))
      return zkt_check_at(true, __FILE__, line, "servers");
    if (left <= 0)
      break;
    zkt_counter_wait(&h->servers, seen + 1, left);
  }
  return zkt_check_at(false, __FILE__, line,
                      "the session follows to %s within %d ms (it uses %s)",
                      want, T_WAIT, now);
}

/* Runs `zkserver CMD DIR ARGS` and asserts it succeeded; says how long it
 * took. */
static void zkserver_ok(const char *cmd, const char *args) {
  char line[1200];
  int64_t t0 = zkt_now_ms();
  int rc;
  snprintf(line, sizeof line, "%s '%s' %s >/dev/null", cmd, zkt_zkdir(),
           args);
  rc = zkt_zkserver(line);
  printf("\n  [zkserver %s %s: %.1f s] ", cmd, args,
         (double)(zkt_now_ms() - t0) / 1000);
  zkt_check(rc == 0, "zkserver %s %s exits 0 (got %d)", cmd, args, rc);
  CU_ASSERT_FATAL(rc == 0);
}

/* ----------------------------------------------------------- the test */

static char chroot_path[64];

/* Ensemble {1,2,3} grows to {1..5}, then {4,5}; servers 1, 2, 3 stopped.
 * a holds the lock, b waits for it; both opened with a chroot. c keeps
 * its list (ZKL_OPEN_NO_FOLLOW_CONFIG), and loses the ensemble when 1, 2
 * and 3 stop. d was given one server and follows to the whole ensemble on
 * its first reading. */
static void test_grow_and_replace(void) {
  static const int first3[] = {1, 2, 3}, all5[] = {1, 2, 3, 4, 5},
                   last2[] = {4, 5};
  char hosts3[ZKL_SERVERS_MAX], chrooted[ZKL_SERVERS_MAX],
      want[ZKL_SERVERS_MAX], one[64], now[ZKL_SERVERS_MAX];
  heard ha, hb, hc, hd;
  zkt_rec lost_a, lost_b, got_b;
  zkl_session *a, *b, *c, *d, *boot;
  zkl_lock *la, *lb;
  char name[128];
  int64_t token_a = 0, token_b;
  int rc, i, port1;

  hosts_of(hosts3, sizeof hosts3, first3, 3, "");
  CU_ASSERT_FATAL(same_servers(hosts3, zkt_hosts()));
  snprintf(chroot_path, sizeof chroot_path, "/zkt-reconfig-%ld",
           (long)getpid());
  snprintf(chrooted, sizeof chrooted, "%s%s", zkt_hosts(), chroot_path);
  /* the chroot must exist for the locks under it */
  boot = zkt_session(T_SESSION);
  rc = zoo_create(zkl_session_handle(boot), chroot_path, NULL, -1,
                  &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_FATAL(rc == ZOK || rc == ZNODEEXISTS);
  zkl_session_close(boot, NULL);

  a = open_heard(chrooted, 0, &ha);
  b = open_heard(chrooted, 0, &hb);
  c = open_heard(zkt_hosts(), ZKL_OPEN_NO_FOLLOW_CONFIG, &hc);
  port1 = server_port(1);
  snprintf(one, sizeof one, "127.0.0.1:%d", port1);
  d = open_heard(one, 0, &hd);

  /* Nothing to change yet (a, b), nothing to follow (c); d read the
   * ensemble's three servers, perhaps before its hook was set. */
  CU_ASSERT_EQUAL(zkl_session_get_servers(a, now, sizeof now), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(now, chrooted);
  wait_servers(d, &hd, hosts3);

  zkt_rec_init(&lost_a);
  zkt_rec_init(&lost_b);
  zkt_rec_init(&got_b);
  zkt_name(name, sizeof name, "reconfig");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&la, a, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&lb, b, name), ZKL_OK);
  zkl_lock_on_lost(la, zkt_on_lost, &lost_a);
  zkl_lock_on_lost(lb, zkt_on_lost, &lost_b);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(la, T_WAIT, &token_a), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(lb, -1, zkt_on_acquired, &got_b), ZKL_OK);
  CU_ASSERT_FATAL(zkt_counter_wait(&hb.queued, 1, T_WAIT) >= 1);

  /* Grow: two servers join, then become members. */
  zkserver_ok("add", "2");
  zkserver_ok("reconfig", "--add 4,5");
  hosts_of(want, sizeof want, all5, 5, chroot_path);
  wait_servers(a, &ha, want);
  wait_servers(b, &hb, want);
  hosts_of(want, sizeof want, all5, 5, "");
  wait_servers(d, &hd, want);

  /* Replace: the original three leave, and stop. */
  zkserver_ok("reconfig", "--remove 1,2,3");
  hosts_of(want, sizeof want, last2, 2, chroot_path);
  wait_servers(a, &ha, want);
  wait_servers(b, &hb, want);
  hosts_of(want, sizeof want, last2, 2, "");
  wait_servers(d, &hd, want);
  /* c never moved: its list is the one it was given */
  CU_ASSERT_EQUAL(zkl_session_get_servers(c, now, sizeof now), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(now, zkt_hosts());
  CU_ASSERT_EQUAL(zkt_counter_get(&hc.servers), 0);
  for (i = 1; i <= 3; i++) {
    char args[32];
    snprintf(args, sizeof args, "%d TERM", i);
    zkserver_ok("kill", args);
  }
  /* which loses the ensemble with them, as the issue says it would */
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(c, false, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_close_how(c), ZKL_CLOSE_UNREACHED);

  /* The holder still holds, with its token, and nothing was lost; the
   * waiter is granted when it lets go. Both through servers 4 and 5. */
  CU_ASSERT_EQUAL(zkl_lock_token(la), token_a);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost_a.calls), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&ha.lost), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&got_b.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(la), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got_b, 1, T_WAIT), ZKL_OK);
  token_b = zkl_lock_token(lb);
  CU_ASSERT(token_b > token_a);
  CU_ASSERT_EQUAL(zkl_lock_release(lb), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost_b.calls), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&hb.lost), 0);
  /* No session expired; each SERVERS event told the list it now uses. */
  CU_ASSERT_EQUAL(zkt_counter_get(&ha.over), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&hb.over), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&hd.over), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&ha.servers), 2);
  CU_ASSERT_EQUAL(zkl_session_get_servers(a, now, sizeof now), ZKL_OK);
  pthread_mutex_lock(&ha.mu);
  CU_ASSERT_STRING_EQUAL(ha.last, now);
  pthread_mutex_unlock(&ha.mu);

  zkl_lock_free(la);
  zkl_lock_free(lb);
  zkt_assert_quiet(a);
  zkt_assert_quiet(b);
  CU_ASSERT_EQUAL(zkt_close_how(a), ZKL_CLOSE_DONE);
  CU_ASSERT_EQUAL(zkt_close_how(b), ZKL_CLOSE_DONE);
  CU_ASSERT_EQUAL(zkt_close_how(d), ZKL_CLOSE_DONE);
}

/* One more server joins the ensemble {4,5}: a session that follows moves
 * to {4,5,6}, one opened with ZKL_OPEN_NO_FOLLOW_CONFIG keeps {4,5}. */
static void test_no_follow(void) {
  static const int two[] = {4, 5}, three[] = {4, 5, 6};
  char hosts2[ZKL_SERVERS_MAX], want[ZKL_SERVERS_MAX], now[ZKL_SERVERS_MAX];
  heard hf, hn;
  zkl_session *f, *n;
  zkl_debug_counts cn;
  hosts_of(hosts2, sizeof hosts2, two, 2, "");
  f = open_heard(hosts2, 0, &hf);
  n = open_heard(hosts2, ZKL_OPEN_NO_FOLLOW_CONFIG, &hn);
  zkserver_ok("add", "1");
  zkserver_ok("reconfig", "--add 6");
  hosts_of(want, sizeof want, three, 3, "");
  wait_servers(f, &hf, want);
  CU_ASSERT_EQUAL(zkt_counter_get(&hf.servers), 1);
  /* n reads nothing at all, and its list stays */
  CU_ASSERT_EQUAL(zkl_session_get_servers(n, now, sizeof now), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(now, hosts2);
  CU_ASSERT_EQUAL(zkt_counter_get(&hn.servers), 0);
  zkl__debug_counts(n, &cn);
  CU_ASSERT_EQUAL(cn.sent[ZKL_RQ_CONFIG], 0);
  CU_ASSERT_EQUAL(zkt_close_how(f), ZKL_CLOSE_DONE);
  CU_ASSERT_EQUAL(zkt_close_how(n), ZKL_CLOSE_DONE);
}

/* zklock follows too, and -v says so: given one server of {4,5,6}, it
 * moves to all three; with --no-follow-config it keeps to the one. */
static void zklock_v(const char *extra, const char *hosts, char *out,
                     size_t len) {
  char cmd[1024], name[64];
  size_t used = 0;
  FILE *p;
  int status;
  zkt_name(name, sizeof name, "zklock-reconfig");
  snprintf(cmd, sizeof cmd, "'%s/cli/zklock' -v -q %s -s '%s' %s -- true 2>&1",
           ZKL_TEST_BUILDDIR, extra, hosts, name);
  out[0] = '\0';
  p = popen(cmd, "r");
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  while (used + 1 < len && fgets(out + used, (int)(len - used), p))
    used += strlen(out + used);
  status = pclose(p);
  zkt_check(status == 0, "%s exits 0 (%d): %s", cmd, status, out);
}

static void test_zklock_follows(void) {
  static const int three[] = {4, 5, 6};
  char one[64], want[ZKL_SERVERS_MAX], line[ZKL_SERVERS_MAX + 100],
      out[16384];
  snprintf(one, sizeof one, "127.0.0.1:%d", server_port(4));
  hosts_of(want, sizeof want, three, 3, "");
  zklock_v("", one, out, sizeof out);
  snprintf(line, sizeof line,
           "the ensemble's servers changed: the session follows them to "
           "'%s'",
           want);
  zkt_check(strstr(out, line) != NULL, "zklock -v says '%s' in:\n%s", line,
            out);
  zklock_v("--no-follow-config", one, out, sizeof out);
  zkt_check(strstr(out, "servers changed") == NULL,
            "zklock --no-follow-config -v says nothing of servers in:\n%s",
            out);
}

/* The first line `zkserver CMD DIR ARGS` prints, into out; its status. */
static int zkserver_line(const char *cmd, const char *args, char *out,
                         size_t len) {
  char line[1200];
  FILE *p;
  snprintf(line, sizeof line, "'%s/tests/zkserver' %s '%s' %s", ZKL_TEST_SRCDIR,
           cmd, zkt_zkdir(), args);
  out[0] = '\0';
  if (!(p = popen(line, "r")))
    return -1;
  if (fgets(out, (int)len, p))
    out[strcspn(out, "\n")] = '\0';
  return pclose(p);
}

/* A session given one server that serves but is not a member: it reads
 * the configuration as it connects, and moves to the members at once,
 * dropping its first connection. */
static zkl_session *open_moving(const char *one) {
  zkl_session *s = NULL;
  int rc = zkt_open(&s, one, T_SESSION, T_WAIT, 0);
  zkt_check(rc == ZKL_OK, "open %s: %s", one, zkl_strerror(rc));
  CU_ASSERT_FATAL(rc == ZKL_OK);
  return s;
}

/* Runs zklock with args: its status; its stdout in out. */
static int zklock_run(const char *args, char *out, size_t len) {
  char cmd[1024];
  size_t used = 0;
  FILE *p;
  snprintf(cmd, sizeof cmd, "'%s/cli/zklock' %s 2>&1", ZKL_TEST_BUILDDIR, args);
  out[0] = '\0';
  if (!(p = popen(cmd, "r")))
    return -1;
  while (used + 1 < len && fgets(out + used, (int)(len - used), p))
    used += strlen(out + used);
  return WEXITSTATUS(pclose(p));
}

/* One-shot questions right after the session opened, while it moves to
 * the ensemble's servers under them (issue 24 item 9: "cannot list ...:
 * connection loss", exit 3): each asks again once connected on the new
 * server, within the session timeout. zkl_name_list(),
 * zkl_name_get_leader(), zkl_name_find(), zkl_name_revoke() and zkl_name_break(), each
 * on a session of its own, a few times over; and zklock --list, --list
 * PREFIX/ and --leader, given that server alone. */
#define ONE_SHOT_ROUNDS 3
static void test_one_shot_after_move(void) {
  char id[32], one[64], members[ZKL_SERVERS_MAX], base[64], name[128],
      elect[128], got[64], out[8192], args[1024], want[256];
  zkl_session *h, *q;
  zkl_lock *l, *e;
  zkl_participant *list;
  zkt_rec lost;
  char **names;
  int rc, n, round, status;
  int64_t token = 0, epoch = 0, t;
  CU_ASSERT_EQUAL_FATAL(zkserver_line("add", "1", id, sizeof id), 0);
  snprintf(one, sizeof one, "127.0.0.1:%d", server_port(atoi(id)));
  CU_ASSERT_EQUAL_FATAL(zkserver_line("hosts", "", members, sizeof members), 0);
  zkt_name(base, sizeof base, "one-shot");
  snprintf(name, sizeof name, "%s/m", base);
  snprintf(elect, sizeof elect, "%s/e", base);
  zkt_rec_init(&lost);
  rc = zkt_open(&h, members, T_SESSION, T_WAIT,
                         ZKL_OPEN_NO_FOLLOW_CONFIG);
  CU_ASSERT_EQUAL_FATAL(rc, ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, h, name), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(l, 0), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, T_WAIT, &token), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&e, h, elect, "leader-id"), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(e, T_WAIT, &epoch), ZKL_OK);

  for (round = 0; round < ONE_SHOT_ROUNDS; round++) {
    q = open_moving(one);
    rc = zkl_name_list(q, name, &list, &n);
    zkt_check(rc == ZKL_OK, "round %d: zkl_name_list: %s", round,
              zkl_strerror(rc));
    if (rc == ZKL_OK) {
      CU_ASSERT(n == 1 && list[0].token == token);
      zkl_name_list_free(list);
    }
    zkl_session_close(q, NULL);

    q = open_moving(one);
    rc = zkl_name_get_leader(q, elect, got, sizeof got, &t);
    zkt_check(rc == ZKL_OK, "round %d: zkl_name_get_leader: %s", round,
              zkl_strerror(rc));
    CU_ASSERT(rc != ZKL_OK || (strcmp(got, "leader-id") == 0 && t == epoch));
    zkl_session_close(q, NULL);

    q = open_moving(one);
    rc = zkl_name_find(q, base, 100, &names, &n, NULL);
    zkt_check(rc == ZKL_OK, "round %d: zkl_name_find: %s", round,
              zkl_strerror(rc));
    if (rc == ZKL_OK) {
      CU_ASSERT_EQUAL(n, 2);
      zkl_name_find_free(names, n);
    }
    zkl_session_close(q, NULL);

    q = open_moving(one);
    rc = zkl_name_revoke(q, name, NULL);
    zkt_check(rc == ZKL_OK, "round %d: zkl_name_revoke: %s", round,
              zkl_strerror(rc));
    zkl_session_close(q, NULL);

    snprintf(args, sizeof args, "-s '%s' -H --list '%s'", one, name);
    status = zklock_run(args, out, sizeof out);
    zkt_check(status == 0 && strstr(out, "\tlock\n") != NULL,
              "round %d: zklock %s: %d: %s", round, args, status, out);
    snprintf(args, sizeof args, "-s '%s' -H --list '%s/'", one, base);
    status = zklock_run(args, out, sizeof out);
    zkt_check(status == 0 && strstr(out, name) != NULL,
              "round %d: zklock %s: %d: %s", round, args, status, out);
    snprintf(args, sizeof args, "-s '%s' --leader '%s'", one, elect);
    status = zklock_run(args, out, sizeof out);
    snprintf(want, sizeof want, "leader-id\t%lld\n", (long long)epoch);
    zkt_check(status == 0 && strcmp(out, want) == 0,
              "round %d: zklock %s: %d: %s", round, args, status, out);
  }
  /* the break, last: it ends the hold */
  q = open_moving(one);
  rc = zkl_name_break(q, name, NULL, 0, NULL, NULL);
  zkt_check(rc == ZKL_OK, "zkl_name_break: %s", zkl_strerror(rc));
  zkl_session_close(q, NULL);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, T_WAIT), ZKL_LOST_BROKEN);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkl_lock_release(e), ZKL_OK);
  zkl_lock_free(l);
  zkl_lock_free(e);
  CU_ASSERT_EQUAL(zkt_close_how(h), ZKL_CLOSE_DONE);
}

int main(void) {
  static const zkt_test tests[] = {
      {"the configuration's servers, parsed", test_parse},
      {"grow 3 to 5, remove the 3: held and awaited locks follow",
       test_grow_and_replace},
      {"ZKL_OPEN_NO_FOLLOW_CONFIG keeps the list", test_no_follow},
      {"zklock follows too, and -v says so", test_zklock_follows},
      {"one-shot questions ask again when the session moves under them",
       test_one_shot_after_move},
      {NULL, NULL}};
  zkt_use_reconfig_ensemble(3);
  return zkt_main("reconfig", tests);
}
