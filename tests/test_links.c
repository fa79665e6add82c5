/* SPDX-License-Identifier: Apache-2.0 */
/* test_links.c - the links between the servers of an ensemble, cut, made
 * one-way, delayed and made to flap (zkserver start --netns: each server in
 * a network namespace of its own), each shown to do what it says against a
 * real 3-server ensemble, and shown to leave nothing behind on every way
 * out: stop, the owner's death (the watchdog), a start that fails.
 *
 * tickTime is zkserver's 200 ms and syncLimit 5: a server that hears nothing
 * from its leader for 1 s (or a leader from a follower) gives up on it.
 * Timings are printed, never asserted beyond generous bounds: what is
 * asserted is what ZooKeeper does, not how fast. Needs root (exit 77
 * without). */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zktest.h"

#define N 3
#define T_DROP 10000  /* a server cut off stops serving (1 s expected) */
#define T_ELECT 15000 /* a new leader is elected */
#define T_REJOIN                                                               \
  30000 /* a healed server serves again: its election's                        \
           notification interval doubles while it is cut                       \
           off, so this grows with the cut */
#define DELAY_MS 300

/* --------------------------------------------------------------- helpers */

/* A session to one server only (a plain handle): when that server stops
 * serving, the session is disconnected, and stays so until it serves. */
typedef struct {
  zhandle_t *zh;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  bool connected;
  int losses;      /* connected -> not connected */
  int64_t lost_at; /* zkt_now_ms() of the latest loss */
} pinned;

static void pinned_watcher(zhandle_t *zh, int type, int state, const char *path,
                           void *ctx) {
  pinned *p = ctx;
  (void)zh;
  (void)path;
  if (type != ZOO_SESSION_EVENT)
    return;
  pthread_mutex_lock(&p->mu);
  bool now = state == ZOO_CONNECTED_STATE;
  if (p->connected && !now) {
    p->losses++;
    p->lost_at = zkt_now_ms();
  }
  p->connected = now;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->mu);
}

static void discard_log(const char *line) { (void)line; }

/* Waits until p's connection is (want) up or, for want false, until it has
 * been lost at least `losses` times; true if so within timeout_ms. */
static bool pinned_wait(pinned *p, bool want, int losses, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  bool ok;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    ok = want ? p->connected : p->losses >= losses;
    if (ok || zkt_now_ms() >= deadline)
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&p->cond, &p->mu, &ts);
  }
  pthread_mutex_unlock(&p->mu);
  return ok;
}

static void pinned_open(pinned *p, int id) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cond, NULL);
  p->zh = zookeeper_init2(zkt_server_hosts(id), pinned_watcher, 20000, NULL, p,
                          0, discard_log);
  CU_ASSERT_FATAL(p->zh != NULL);
  zkt_check(pinned_wait(p, true, 0, ZKT_WAIT),
            "a session to server %d alone connects", id);
}

static void pinned_close(pinned *p) {
  if (p->zh)
    zookeeper_close(p->zh);
  p->zh = NULL;
}

/* Waits until server id's mode satisfies ok(); the ms it took, or -1. */
static int64_t wait_mode(int id, bool (*ok)(zkt_mode), int timeout_ms) {
  int64_t start = zkt_now_ms();
  for (;;) {
    if (ok(zkt_server_mode(id)))
      return zkt_now_ms() - start;
    if (zkt_now_ms() - start >= timeout_ms)
      return -1;
    /* an answer takes a round trip; elections take ticks of 200 ms */
    usleep(20 * 1000);
  }
}

static bool is_out(zkt_mode m) {
  return m == ZKT_MODE_NOT_SERVING || m == ZKT_MODE_NONE;
}
static bool is_follower(zkt_mode m) { return m == ZKT_MODE_FOLLOWER; }

/* Every server serves, exactly one as the leader: its id, or -1 when that
 * is not so within timeout_ms. */
static int wait_all_serving(int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  for (;;) {
    int id, leaders = 0, followers = 0, leader = -1;
    for (id = 1; id <= N; id++) {
      zkt_mode m = zkt_server_mode(id);
      if (m == ZKT_MODE_LEADER) {
        leaders++;
        leader = id;
      } else if (m == ZKT_MODE_FOLLOWER) {
        followers++;
      }
    }
    if (leaders == 1 && followers == N - 1)
      return leader;
    if (zkt_now_ms() >= deadline)
      return -1;
    usleep(20 * 1000);
  }
}

/* The leader of a healthy ensemble, and its two followers. */
static int roles(int *f1, int *f2) {
  int l = wait_all_serving(T_REJOIN);
  CU_ASSERT_FATAL(l > 0);
  *f1 = l % N + 1;
  *f2 = *f1 % N + 1;
  CU_ASSERT_FATAL(zkt_leader() == l);
  return l;
}

static void print_modes(const char *when) {
  int id;
  printf("    %s:", when);
  for (id = 1; id <= N; id++)
    printf(" %d %s%s", id, zkt_mode_name(zkt_server_mode(id)),
           id < N ? "," : "\n");
}

/* Ends a test's shapes whatever happened, and waits until the ensemble is
 * whole again, so that the next test starts from there. */
static void heal_and_settle(void) {
  CU_ASSERT_EQUAL(zkt_heal(), 0);
  if (!zkt_check(wait_all_serving(T_REJOIN) > 0,
                 "all serve again with one leader after heal"))
    print_modes("not settled");
}

/* A path of server id's DIR (zkserver's state: DIR/ID/server.log ...). */
static void server_file(char *buf, size_t len, int id, const char *name) {
  snprintf(buf, len, "%s/%d/%s", zkt_zkdir(), id, name);
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* Lines of path from byte `from` on that contain needle. */
static int count_lines_from(const char *path, long from, const char *needle) {
  char line[4096];
  int n = 0;
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  if (fseek(f, from, SEEK_SET) == 0)
    while (fgets(line, sizeof line, f))
      n += strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

/* Processes (other than this one) whose command line names `what`. */
static int processes_naming(const char *what, char *first, size_t len) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  int n = 0;
  if (first && len)
    first[0] = '\0';
  if (!d)
    return -1;
  while ((e = readdir(d)) != NULL) {
    char path[300], args[4096];
    long pid = strtol(e->d_name, NULL, 10);
    ssize_t got;
    int fd;
    if (pid <= 0 || pid == (long)getpid())
      continue;
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    fd = open(path, O_RDONLY);
    if (fd < 0)
      continue;
    got = read(fd, args, sizeof args - 1);
    close(fd);
    if (got <= 0)
      continue;
    for (ssize_t i = 0; i < got; i++)
      if (args[i] == '\0')
        args[i] = ' ';
    args[got] = '\0';
    if (strstr(args, what)) {
      if (n == 0 && first && len)
        snprintf(first, len, "%ld %.400s", pid, args);
      n++;
    }
  }
  closedir(d);
  return n;
}

/* The names a netns slot gives its network (zkserver: zklKbr, zklKsID,
 * zklKvID): how many of them exist, as namespaces (/run/netns) or links
 * (/sys/class/net); the first found into first. */
static int slot_leftovers(int slot, char *first, size_t len) {
  static const char *const dirs[] = {"/run/netns", "/sys/class/net"};
  char prefix[32];
  int n = 0, i;
  first[0] = '\0';
  snprintf(prefix, sizeof prefix, "zkl%d", slot);
  for (i = 0; i < 2; i++) {
    DIR *d = opendir(dirs[i]);
    struct dirent *e;
    if (!d)
      continue;
    while ((e = readdir(d)) != NULL) {
      size_t pl = strlen(prefix);
      /* zkl1 must not take zkl12's names: the next letter is s, v or b */
      if (strncmp(e->d_name, prefix, pl) != 0 ||
          !strchr("svb", e->d_name[pl]) || e->d_name[pl] == '\0')
        continue;
      if (n++ == 0)
        snprintf(first, len, "%s/%s", dirs[i], e->d_name);
    }
    closedir(d);
  }
  return n;
}

static int read_slot(const char *dir) {
  char path[600];
  int slot = -1;
  FILE *f;
  snprintf(path, sizeof path, "%s/netns", dir);
  f = fopen(path, "r");
  if (f) {
    if (fscanf(f, "%d", &slot) != 1)
      slot = -1;
    fclose(f);
  }
  return slot;
}

/* The owner of slot `slot`'s bridge (its alias, "zkserver:DIR") into dir;
 * false if there is no such bridge. */
static bool bridge_owner(int slot, char *dir, size_t len) {
  char path[128], alias[600] = "";
  FILE *f;
  snprintf(path, sizeof path, "/sys/class/net/zkl%dbr/ifalias", slot);
  f = fopen(path, "r");
  if (!f)
    return false;
  if (!fgets(alias, sizeof alias, f))
    alias[0] = '\0';
  fclose(f);
  alias[strcspn(alias, "\n")] = '\0';
  snprintf(dir, len, "%s",
           strncmp(alias, "zkserver:", 9) == 0 ? alias + 9 : "");
  return true;
}

/* Pieces of the network of a netns ensemble that no live ensemble owns: a
 * namespace or veth (zklKs*, zklKv*) whose slot has no bridge, or a bridge
 * whose DIR is gone, or one that names `dir`. Other test programs' ensembles
 * may come and go meanwhile: theirs always have a bridge (made first,
 * removed last) whose DIR exists (removed after it). */
static int orphans(const char *dir, char *first, size_t len) {
  static const char *const dirs[] = {"/run/netns", "/sys/class/net"};
  int n = 0, i;
  first[0] = '\0';
  for (i = 0; i < 2; i++) {
    DIR *d = opendir(dirs[i]);
    struct dirent *e;
    if (!d)
      continue;
    while ((e = readdir(d)) != NULL) {
      char owner[600], kind = 0;
      int slot, used = 0;
      if (sscanf(e->d_name, "zkl%d%c%n", &slot, &kind, &used) != 2 ||
          !strchr("svb", kind))
        continue;
      bool orphan = !bridge_owner(slot, owner, sizeof owner) ||
                    strcmp(owner, dir) == 0 ||
                    (owner[0] && access(owner, F_OK) != 0);
      if (orphan && n++ == 0)
        snprintf(first, len, "%s/%s", dirs[i], e->d_name);
    }
    closedir(d);
  }
  return n;
}

/* Asserts that nothing of the ensemble of DIR, slot `slot`, is left. */
static void assert_nothing_left(const char *dir, int slot, const char *how) {
  char first[600];
  int n = slot_leftovers(slot, first, sizeof first);
  zkt_check(n == 0, "%s: no namespace, bridge or veth of slot %d left (%d, %s)",
            how, slot, n, first);
  n = orphans(dir, first, sizeof first);
  zkt_check(n == 0,
            "%s: no namespace, bridge or veth that no ensemble owns "
            "(%d, %s)",
            how, n, first);
  n = processes_naming(dir, first, sizeof first);
  zkt_check(n == 0, "%s: no process of %s left (%d: %s)", how, dir, n, first);
  zkt_check(access(dir, F_OK) != 0, "%s: %s is gone", how, dir);
}

/* The times of WRITES writes, sorted: [0] the shortest, [WRITES / 2] the
 * median, [WRITES - 1] the longest. */
#define WRITES 5
typedef struct {
  int64_t ms[WRITES];
} write_times;

static int cmp_ms(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* setData of path through zh, WRITES times, one after another. */
static void timed_writes(zhandle_t *zh, const char *path, write_times *t) {
  int i;
  for (i = 0; i < WRITES; i++) {
    int64_t t0 = zkt_now_ms();
    int rc = zoo_set(zh, path, "x", 1, -1);
    t->ms[i] = zkt_now_ms() - t0;
    zkt_check(rc == ZOK, "write %d to %s: %s", i, path, zerror(rc));
  }
  qsort(t->ms, WRITES, sizeof t->ms[0], cmp_ms);
}

/* ----------------------------------------------------------------- tests */

static void test_isolate_follower(void) {
  int f, other, l = roles(&f, &other);
  pinned p;
  pinned_open(&p, f);
  printf("\n    leader %d; isolating follower %d\n", l, f);

  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL_FATAL(zkt_isolate(f), 0);
  int64_t applied = zkt_now_ms() - t0;
  int64_t out = wait_mode(f, is_out, T_DROP);
  zkt_check(out >= 0, "the isolated follower %d stops serving", f);
  zkt_check(pinned_wait(&p, false, 1, T_DROP),
            "a session to follower %d alone loses its connection", f);
  pthread_mutex_lock(&p.mu);
  int64_t lost = p.lost_at - t0;
  pthread_mutex_unlock(&p.mu);
  /* the other two keep their leader, and serve */
  zkt_check(zkt_server_mode(l) == ZKT_MODE_LEADER, "%d still leads", l);
  zkt_check(zkt_server_mode(other) == ZKT_MODE_FOLLOWER, "%d still follows",
            other);
  zkt_check(zkt_leader() == l, "one leader, %d", l);
  zkt_print_links();
  printf("    isolate took %lld ms; follower %d not serving after %lld ms, "
         "its session lost after %lld ms\n",
         (long long)applied, f, (long long)(out + applied), (long long)lost);

  t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkt_heal(), 0);
  int64_t back = wait_mode(f, is_follower, T_REJOIN);
  zkt_check(back >= 0, "healed, follower %d serves again", f);
  zkt_check(pinned_wait(&p, true, 0, T_REJOIN),
            "the session to %d connects again", f);
  printf("    healed: %d follows again after %lld ms, its session back "
         "after %lld ms\n",
         f, (long long)back, (long long)(zkt_now_ms() - t0));
  zkt_check(zkt_leader() == l, "the leader is still %d", l);
  pinned_close(&p);
  heal_and_settle();
}

static void test_isolate_leader(void) {
  int f1, f2, l = roles(&f1, &f2);
  printf("\n    isolating leader %d\n", l);
  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL_FATAL(zkt_isolate(l), 0);
  int64_t out = wait_mode(l, is_out, T_DROP);
  zkt_check(out >= 0, "the isolated leader %d stops serving", l);
  /* the two others elect one of themselves */
  int64_t deadline = t0 + T_ELECT, elected = -1;
  int nl = -1;
  while (zkt_now_ms() < deadline) {
    bool a = zkt_server_mode(f1) == ZKT_MODE_LEADER;
    bool b = zkt_server_mode(f2) == ZKT_MODE_LEADER;
    if (a != b) {
      nl = a ? f1 : f2;
      int other = a ? f2 : f1;
      if (zkt_server_mode(other) == ZKT_MODE_FOLLOWER) {
        elected = zkt_now_ms() - t0;
        break;
      }
    }
    usleep(20 * 1000);
  }
  zkt_check(elected >= 0, "the two others elect a new leader (%d)", nl);
  zkt_check(is_out(zkt_server_mode(l)), "the old leader %d does not serve", l);
  zkt_print_links();
  printf("    old leader %d not serving after %lld ms; %d leads, elected "
         "after %lld ms\n",
         l, (long long)out, nl, (long long)elected);

  t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkt_heal(), 0);
  int back = wait_all_serving(T_REJOIN);
  int64_t back_ms = zkt_now_ms() - t0;
  zkt_check(back > 0, "healed: one leader and every server serves");
  zkt_check(back == nl, "the new leader %d stays (leader %d)", nl, back);
  zkt_check(zkt_server_mode(l) == ZKT_MODE_FOLLOWER, "%d follows", l);
  printf("    healed: all serve, %d leading, after %lld ms\n", back,
         (long long)back_ms);
  heal_and_settle();
}

/* One direction of a leader-follower link dropped. TCP needs both: the
 * side whose packets pass never sees its data acknowledged, so the stream
 * stalls both ways and the follower drops out whichever way the loss is.
 * What differs is what gets through before the stall: with the packets
 * from the leader to the follower dropped, the follower's election
 * notifications (it is looking) still reach the leader, which logs them;
 * with the packets from the follower to the leader dropped, the leader
 * hears nothing from it at all. */
static void oneway_case(bool leader_to_follower) {
  int f, other, l = roles(&f, &other);
  int from = leader_to_follower ? l : f, to = leader_to_follower ? f : l;
  char log[600], needle[128];
  server_file(log, sizeof log, l, "server.log");
  snprintf(needle, sizeof needle, "my state:LEADING; n.sid:%d, n.state:LOOKING",
           f);
  long mark = file_size(log);
  printf("\n    leader %d, follower %d: dropping the packets from %d to %d\n",
         l, f, from, to);

  CU_ASSERT_EQUAL_FATAL(zkt_link(from, to, "oneway"), 0);
  int64_t out = wait_mode(f, is_out, T_DROP);
  zkt_check(out >= 0, "follower %d stops serving", f);
  zkt_check(zkt_leader() == l, "%d still leads", l);
  zkt_check(zkt_server_mode(other) == ZKT_MODE_FOLLOWER, "%d still follows",
            other);
  /* The notification comes within a few hundred ms of the follower going
   * looking (its first round); 3 s is the window in which the leader does
   * or does not hear it. */
  int64_t heard_by = zkt_now_ms() + 3000;
  int heard = 0;
  while ((heard = count_lines_from(log, mark, needle)) == 0 &&
         zkt_now_ms() < heard_by)
    usleep(50 * 1000);
  zkt_print_links();
  printf("    follower %d not serving after %lld ms; the leader logged %d "
         "notification(s) from it\n",
         f, (long long)out, heard);
  if (leader_to_follower)
    zkt_check(heard > 0,
              "with %d->%d dropped, the leader still hears %d's election "
              "notifications",
              from, to, f);
  else
    zkt_check(heard == 0,
              "with %d->%d dropped, the leader hears nothing from %d (%d "
              "notifications)",
              from, to, f, heard);

  CU_ASSERT_EQUAL(zkt_link(from, to, "heal"), 0);
  int64_t back = wait_mode(f, is_follower, T_REJOIN);
  zkt_check(back >= 0, "healed, %d follows again", f);
  printf("    healed: %d follows after %lld ms\n", f, (long long)back);
  heal_and_settle();
}

static void test_oneway_leader_to_follower(void) { oneway_case(true); }
static void test_oneway_follower_to_leader(void) { oneway_case(false); }

static void test_delay(void) {
  int f, healthy, l = roles(&f, &healthy);
  char path[64], how[32];
  write_times before_f, before_h, during_f, during_h, after_f;
  pinned pf, ph;
  snprintf(path, sizeof path, "/links-delay-%ld", (long)getpid());
  pinned_open(&pf, f);
  pinned_open(&ph, healthy);
  int rc = zoo_create(ph.zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);

  timed_writes(pf.zh, path, &before_f);
  timed_writes(ph.zh, path, &before_h);
  snprintf(how, sizeof how, "delay %d", DELAY_MS);
  CU_ASSERT_EQUAL_FATAL(zkt_link(l, f, how), 0);
  zkt_check(zkt_server_mode(f) == ZKT_MODE_FOLLOWER,
            "a follower %d ms away still follows", DELAY_MS);
  timed_writes(pf.zh, path, &during_f);
  timed_writes(ph.zh, path, &during_h);
  zkt_print_links();
  printf("\n    leader %d; writes through %d, its link to the leader "
         "delayed %d ms each way: %lld..%lld ms (before: %lld..%lld); "
         "through %d: %lld..%lld ms (before: %lld..%lld)\n",
         l, f, DELAY_MS, (long long)during_f.ms[0],
         (long long)during_f.ms[WRITES - 1], (long long)before_f.ms[0],
         (long long)before_f.ms[WRITES - 1], healthy, (long long)during_h.ms[0],
         (long long)during_h.ms[WRITES - 1], (long long)before_h.ms[0],
         (long long)before_h.ms[WRITES - 1]);
  /* The write goes to the leader and its commit comes back: two delays.
   * Asserted: the quickest takes one delay more than a healthy write
   * usually does (the median: one slow healthy write proves nothing). */
  zkt_check(during_f.ms[0] >= before_f.ms[WRITES / 2] + DELAY_MS,
            "a write through the delayed follower takes >= %d ms more "
            "(the quickest %lld ms, healthy %lld ms)",
            DELAY_MS, (long long)during_f.ms[0],
            (long long)before_f.ms[WRITES / 2]);

  CU_ASSERT_EQUAL(zkt_link(l, f, "heal"), 0);
  char dir_marker[600], first[600];
  snprintf(dir_marker, sizeof dir_marker, "--while %s/.zkserver", zkt_zkdir());
  zkt_check(processes_naming(dir_marker, first, sizeof first) == 0,
            "healed: no linkdelay left (%s)", first);
  timed_writes(pf.zh, path, &after_f);
  printf("    healed: writes through %d: %lld..%lld ms\n", f,
         (long long)after_f.ms[0], (long long)after_f.ms[WRITES - 1]);
  zkt_check(after_f.ms[0] < DELAY_MS,
            "healed: a write through %d is not delayed (%lld ms)", f,
            (long long)after_f.ms[0]);
  zoo_delete(ph.zh, path, -1);
  pinned_close(&pf);
  pinned_close(&ph);
  heal_and_settle();
}

/* The flapper's state file: "up|down CYCLE EPOCH_MS". */
static bool read_phase(const char *path, char *phase, int *cycle) {
  FILE *f = fopen(path, "r");
  bool ok = false;
  if (f) {
    ok = fscanf(f, "%7s %d", phase, cycle) == 2;
    fclose(f);
  }
  return ok;
}

static void test_flap(void) {
  int f, other, l = roles(&f, &other);
  char phase_file[600], phase[8], flapper[600], first[600];
  int cycle = -1, changes = 0, last_cycle = -1, drops = 0, rejoins = 0;
  char last_phase[8] = "";
  int lo = l < f ? l : f, hi = l < f ? f : l;
  snprintf(phase_file, sizeof phase_file, "%s/net/flap.%d-%d.phase",
           zkt_zkdir(), lo, hi);
  snprintf(flapper, sizeof flapper, "__flap %s ", zkt_zkdir());
  /* down 2000 ms, twice syncLimit x tick (1000 ms): the follower drops
   * out in every down phase; up 2000 ms lets it back in */
  printf("\n    leader %d, follower %d: flap 2000 2000\n", l, f);
  int64_t t0 = zkt_now_ms();
  CU_ASSERT_EQUAL_FATAL(zkt_link(l, f, "flap 2000 2000"), 0);
  /* (its command substitutions are copies of it for a moment: >= 1) */
  zkt_check(processes_naming(flapper, first, sizeof first) >= 1,
            "a flapper runs");
  /* Out, in, out again: the link went down, up and down. */
  bool out = false;
  int64_t deadline = t0 + 25000;
  while (drops < 2 && zkt_now_ms() < deadline) {
    bool now_out = is_out(zkt_server_mode(f));
    if (now_out != out) {
      printf("    %lld ms: follower %d %s\n", (long long)(zkt_now_ms() - t0), f,
             now_out ? "out" : "back");
      if (now_out)
        drops++;
      else
        rejoins++;
      out = now_out;
    }
    if (read_phase(phase_file, phase, &cycle) &&
        (strcmp(phase, last_phase) != 0 || cycle != last_cycle)) {
      changes += last_phase[0] != '\0';
      snprintf(last_phase, sizeof last_phase, "%s", phase);
      last_cycle = cycle;
    }
    usleep(20 * 1000);
  }
  zkt_print_links();
  zkt_check(drops == 2 && rejoins >= 1,
            "the follower drops out, comes back, drops out again (%d drops, "
            "%d rejoins)",
            drops, rejoins);
  zkt_check(changes >= 3, "the link's phase changed %d times (>= 3)", changes);
  zkt_check(zkt_leader() == l, "%d leads throughout", l);

  CU_ASSERT_EQUAL(zkt_link(l, f, "heal"), 0);
  zkt_check(processes_naming(flapper, first, sizeof first) == 0,
            "healed: no flapper left (%s)", first);
  zkt_check(access(phase_file, F_OK) != 0, "healed: no phase file left");
  int64_t back = wait_mode(f, is_follower, T_REJOIN);
  zkt_check(back >= 0, "healed: %d follows", f);
  heal_and_settle();
}

/* A netns ensemble of two started here, owned by a child process that the
 * test then kills: zkserver's watchdog must take everything down. */
static void test_owner_dies(void) {
  char dir[512], cmd[1400], first[600];
  int pipefd[2];
  snprintf(dir, sizeof dir, "%s/zklock-links-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
  CU_ASSERT_FATAL(pipe(pipefd) == 0);
  pid_t owner = fork();
  CU_ASSERT_FATAL(owner >= 0);
  if (owner == 0) {
    char c;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(pipefd[1]);
    /* until the test closes its end (or dies) */
    while (read(pipefd[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  close(pipefd[0]);
  snprintf(cmd, sizeof cmd,
           "start --netns --no-fsync --servers 2 --owner %ld '%s' >/dev/null",
           (long)owner, dir);
  int rc = zkt_zkserver(cmd);
  zkt_check(rc == 0, "a second netns ensemble starts (%d)", rc);
  int slot = read_slot(dir);
  zkt_check(slot >= 0, "it has a slot");
  snprintf(cmd, sizeof cmd, "link '%s' 1 2 delay 50", dir);
  zkt_check(zkt_zkserver(cmd) == 0, "a delay on its link");
  zkt_check(processes_naming(dir, first, sizeof first) >= 4,
            "servers, watchdog and linkdelays run");
  zkt_check(slot_leftovers(slot, first, sizeof first) == 5,
            "its bridge, 2 namespaces and 2 veths exist (and so the check "
            "sees them)");

  close(pipefd[1]); /* the owner exits */
  waitpid(owner, NULL, 0);
  int64_t t0 = zkt_now_ms();
  while (access(dir, F_OK) == 0 && zkt_now_ms() - t0 < 30000)
    usleep(50 * 1000);
  /* the watchdog removes DIR last; it may still be on its way out */
  while (processes_naming(dir, NULL, 0) > 0 && zkt_now_ms() - t0 < 30000)
    usleep(50 * 1000);
  printf("\n    the owner died; all gone after %lld ms\n",
         (long long)(zkt_now_ms() - t0));
  if (slot >= 0)
    assert_nothing_left(dir, slot, "the owner died");
  /* should it have failed: take it down anyway */
  snprintf(cmd, sizeof cmd, "stop '%s'", dir);
  zkt_zkserver(cmd);
}

/* A start that fails after its network is made (a JVM that cannot start)
 * removes the network too. */
static void test_failed_start(void) {
  char dir[512], cmd[1400], first[600];
  snprintf(dir, sizeof dir, "%s/zklock-links-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
  snprintf(cmd, sizeof cmd,
           "start --netns --servers 2 --owner %ld '%s' >/dev/null 2>&1",
           (long)getpid(), dir);
  setenv("ZKSERVER_JAVA_OPTS", "-Xmx1k", 1);
  int rc = zkt_zkserver(cmd);
  unsetenv("ZKSERVER_JAVA_OPTS");
  zkt_check(rc == 1, "a start whose servers cannot run fails (%d)", rc);
  /* its slot is not known (it is gone with DIR): nothing may be left
   * that no ensemble owns */
  int n = orphans(dir, first, sizeof first);
  zkt_check(n == 0, "no namespace, bridge or veth left (%d, %s)", n, first);
  zkt_check(processes_naming(dir, first, sizeof first) == 0,
            "no process left (%s)", first);
  zkt_check(access(dir, F_OK) != 0, "%s is gone", dir);
  if (rc == 0) {
    snprintf(cmd, sizeof cmd, "stop '%s'", dir);
    zkt_zkserver(cmd);
  }
}

/* Last: the test's own ensemble, with a delay and a flap running, stopped
 * as at exit. */
static void test_stop_leaves_nothing(void) {
  char dir[512], first[600];
  snprintf(dir, sizeof dir, "%s", zkt_zkdir());
  int slot = read_slot(dir);
  CU_ASSERT_FATAL(slot >= 0);
  CU_ASSERT_EQUAL(zkt_link(1, 2, "delay 50"), 0);
  CU_ASSERT_EQUAL(zkt_link(2, 3, "flap 300 300"), 0);
  zkt_check(slot_leftovers(slot, first, sizeof first) == 7,
            "bridge, 3 namespaces and 3 veths exist (and so the check sees "
            "them)");
  zkt_check(processes_naming(dir, first, sizeof first) >= 6,
            "servers, linkdelays, flapper and watchdog run");
  zkt_print_links();
  int64_t t0 = zkt_now_ms();
  zkt_stop_servers();
  /* servers this program did not start (zkserver run): stopped here too,
   * as `run` would (stop is idempotent) */
  if (access(dir, F_OK) == 0) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "stop '%s'", dir);
    CU_ASSERT_EQUAL(zkt_zkserver(cmd), 0);
  }
  printf("\n    stopped in %lld ms\n", (long long)(zkt_now_ms() - t0));
  assert_nothing_left(dir, slot, "stop");
}

int main(void) {
  static const zkt_test tests[] = {
      {"isolate a follower: it stops serving, the others go on; healed, it "
       "serves",
       test_isolate_follower},
      {"isolate the leader: the others elect one; healed, one leader",
       test_isolate_leader},
      {"oneway leader->follower: it drops out; the leader hears it",
       test_oneway_leader_to_follower},
      {"oneway follower->leader: it drops out; the leader hears nothing",
       test_oneway_follower_to_leader},
      {"delay: writes through the delayed follower take the delay longer",
       test_delay},
      {"flap: the link goes down and up, the follower out and in", test_flap},
      {"the owner dies: the watchdog leaves nothing behind", test_owner_dies},
      {"a start that fails leaves nothing behind", test_failed_start},
      {"stop leaves nothing behind", test_stop_leaves_nothing},
      {NULL, NULL}};
  zkt_use_netns_ensemble(N);
  return zkt_main("links", tests);
}
