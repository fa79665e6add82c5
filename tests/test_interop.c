/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_interop.c - our recipes queueing beside Curator's (Java) and kazoo's
 * (Python) on one path, at the same time, against a real ZooKeeper.
 *
 * The peers are real: Debian's libcurator-recipes-java driven by
 * tests/interop/CuratorInterop.java (compiled here with javac), and Debian's
 * python3-kazoo driven by tests/interop/kazoo_interop.py. Missing either is a
 * failure, not a skip (scripts/deps installs them).
 *
 * Every holder, ours and theirs, logs its own critical sections: the
 * monotonic time just after it was granted and just before it let go.
 * CLOCK_MONOTONIC is one clock for every process of the machine (Java's
 * System.nanoTime() and Python's time.monotonic_ns() read it), and each
 * peer's first line carries a stamp that must fall between the test's
 * stamps before it started the peer and after it read the line, so a peer
 * on another clock fails the test. The rule of each recipe is then checked
 * on the merged sections, here on the test thread: no two mutex holders at
 * once, writers alone, readers only with readers (and readers of both
 * sides really sharing), at most N semaphore holders (and N reached), one
 * leader at a time, whose id every side reports.
 *
 * One peer per pairing: Curator orders kazoo's nodes as text after its own,
 * so Curator and kazoo do not exclude each other on one path. Every pairing
 * prints an INTEROP line with its counts: docs/interop.md's table comes from
 * them.
 *
 * Through the agent (issue 27): a pairing whose run says `agent` opens its
 * C contenders' sessions through a zklockd of its own (tests/agentctl.h,
 * on the same servers), so that the nodes are the agent's session's and
 * the peer queues beside them; the same checks, and kazoo's unpatterned
 * Lock as the control that overlaps still show through the agent.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agentctl.h"
#include "internal.h"
#include "peerctl.h"
#include "zktest.h"

#define T_SESSION 10000
#define ACQ_MS 15000   /* one acquire of a C contender */
#define HELLO_MS 60000 /* a JVM starting on a busy machine */
#define RUN_MS 90000   /* one pairing, once started */
#define END_MS 15000   /* a peer's exit after STOP or EOF */
#define LINE_MAX_ 512
#define ERR_MAX (LINE_MAX_ + 100)
#define MAX_C 4

#define JAVA "/usr/bin/java"
#define JAVAC "/usr/bin/javac"
#define PYTHON "/usr/bin/python3"
#define ZKLOCK ZKL_TEST_BUILDDIR "/cli/zklock"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The work a holder does: its section lasts this long. */
static void hold_us(int us) {
  struct timespec ts;
  int64_t until = now_ns() + (int64_t)us * 1000;
  ts.tv_sec = (time_t)(until / 1000000000);
  ts.tv_nsec = (long)(until % 1000000000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* ------------------------------------------------------------- the peers */

/* Debian's jars of Curator and what it needs, in /usr/share/java. */
static const char *const curator_jars[] = {
    "curator-client", "curator-framework", "curator-recipes", "zookeeper",
    "zookeeper-jute", "guava", "slf4j-api", "slf4j-nop", "netty-handler",
    "netty-common", "netty-buffer", "netty-transport", "netty-codec",
    "netty-resolver", "netty-transport-native-epoll",
    "netty-transport-native-unix-common", "metrics-core", "commons-io", NULL};

static char classpath[4096]; /* the jars, then our classes */
static int java_state;       /* 0 not tried, 1 ready, -1 failed */

/* Compiles CuratorInterop.java with javac into the build directory, once per
 * run of this program. false (said why on stderr) when Java or Curator is
 * missing or javac fails. */
static bool java_ready(void) {
  char jars[3500] = "", classes[512], log[512], line[LINE_MAX_];
  size_t used = 0;
  peer p;
  int rc;
  if (java_state)
    return java_state > 0;
  java_state = -1;
  for (int i = 0; curator_jars[i]; i++) {
    char jar[256];
    snprintf(jar, sizeof jar, "/usr/share/java/%s.jar", curator_jars[i]);
    if (access(jar, R_OK) != 0) {
      fprintf(stderr, "interop: %s is missing: install libcurator-recipes-java "
              "(scripts/deps)\n", jar);
      return false;
    }
    used += (size_t)snprintf(jars + used, sizeof jars - used, "%s%s",
                             used ? ":" : "", jar);
  }
  if (access(JAVAC, X_OK) != 0 || access(JAVA, X_OK) != 0) {
    fprintf(stderr, "interop: no %s or %s: install default-jdk-headless "
            "(scripts/deps)\n", JAVAC, JAVA);
    return false;
  }
  snprintf(classes, sizeof classes, "%s/tests/interop-java", ZKL_TEST_BUILDDIR);
  if (mkdir(classes, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "interop: mkdir %s: %s\n", classes, strerror(errno));
    return false;
  }
  snprintf(log, sizeof log, "%s/tests/interop-javac.log", ZKL_TEST_BUILDDIR);
  {
    char src[512];
    snprintf(src, sizeof src, "%s/tests/interop/CuratorInterop.java",
             ZKL_TEST_SRCDIR);
    char *argv[] = {JAVAC, "-nowarn", "-d", classes, "-cp", jars, src, NULL};
    if (peer_start(&p, argv, log) != 0)
      return false;
  }
  /* javac says nothing on stdout: this waits, bounded, for its exit. */
  while ((rc = peer_line(&p, line, sizeof line, zkt_now_ms() + 120000)) == 0)
    ;
  rc = peer_end(&p, 5000);
  if (rc != 0) {
    fprintf(stderr, "interop: javac failed (%d)\n", rc);
    peer_show_log(&p);
    return false;
  }
  snprintf(classpath, sizeof classpath, "%s:%s", classes, jars);
  java_state = 1;
  return true;
}

/* Starts a peer and reads its HELLO: its clock must be ours. On failure
 * nothing runs any more. The kazoo version goes to version if not NULL. */
static bool peer_open(peer *p, const char *tag, char *const argv[],
                      char *version, size_t vlen) {
  char log[512], line[LINE_MAX_], ver[64] = "";
  long long hello = 0;
  int64_t t0, t1;
  int rc;
  snprintf(log, sizeof log, "%s/tests/interop-%s.log", ZKL_TEST_BUILDDIR, tag);
  t0 = now_ns();
  if (peer_start(p, argv, log) != 0)
    return false;
  rc = peer_line(p, line, sizeof line, zkt_now_ms() + HELLO_MS);
  t1 = now_ns();
  if (rc != 0 || sscanf(line, "HELLO %lld %63s", &hello, ver) < 1) {
    fprintf(stderr, "interop: %s did not start: %s\n", tag,
            rc == -1 ? "no HELLO in time" : rc == -2 ? "it exited" : line);
    peer_end(p, END_MS);
    peer_show_log(p);
    return false;
  }
  if (hello < t0 || hello > t1) {
    fprintf(stderr, "interop: %s's monotonic clock is not ours: %lld is "
            "not within [%lld, %lld]\n", tag, hello, (long long)t0,
            (long long)t1);
    peer_end(p, END_MS);
    return false;
  }
  if (version)
    snprintf(version, vlen, "%s", ver);
  return true;
}

static bool curator_open(peer *p, const char *tag, const char *mode,
                         const char *path, const char *a1, const char *a2,
                         const char *a3, const char *a4) {
  if (!java_ready())
    return false;
  char *argv[] = {JAVA, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                  "-XX:-UsePerfData", "-Xmx192m",
                  "-Djava.net.preferIPv4Stack=true", "-cp", classpath,
                  "CuratorInterop", (char *)zkt_hosts(), (char *)mode,
                  (char *)path, (char *)a1, (char *)a2, (char *)a3,
                  (char *)a4, NULL};
  return peer_open(p, tag, argv, NULL, 0);
}

static bool kazoo_open(peer *p, const char *tag, const char *mode,
                       const char *path, const char *a1, const char *a2,
                       const char *a3, char *version, size_t vlen) {
  char script[512];
  snprintf(script, sizeof script, "%s/tests/interop/kazoo_interop.py",
           ZKL_TEST_SRCDIR);
  if (access(PYTHON, X_OK) != 0) {
    fprintf(stderr, "interop: no %s\n", PYTHON);
    return false;
  }
  char *argv[] = {PYTHON, "-I", script, (char *)zkt_hosts(), (char *)mode,
                  (char *)path, (char *)a1, (char *)a2, (char *)a3, NULL};
  if (!peer_open(p, tag, argv, version, vlen)) {
    fprintf(stderr, "interop: is python3-kazoo installed? (scripts/deps)\n");
    return false;
  }
  return true;
}

/* ----------------------------------------------------------- sections */

enum { SIDE_C = 0, SIDE_PEER = 1 };

typedef struct sect {
  int side;
  char kind; /* M mutex, R reader, W writer, L lease */
  int who;
  int64_t s, e;
} sect;

enum { C_MUTEX, C_RW, C_SEM };

typedef struct run run;

typedef struct cworker {
  run *r;
  int index;
  zkl_session *s;
  zkl_lock *l;    /* mutex or semaphore */
  zkl_rwlock *rw; /* read/write */
  pthread_t th;
  bool running;
  int err;
  char what[200];
} cworker;

struct run {
  /* what runs */
  const char *title;
  int kind;
  int limit;    /* semaphore */
  int every;    /* read/write: every EVERY-th section writes; 0: none */
  int hold_us;  /* mutex, lease, writer */
  int read_us;  /* reader */
  int nc;       /* C contenders */
  int min_each; /* sections of each side before STOP */
  bool full;    /* the name is a full path outside /locks, as theirs are */
  bool agent;   /* the C contenders lock through a zklockd (ag) */
  int layout;   /* zkl_lock_set_layout() of each C mutex (ZKL_LAYOUT_*) */
  bool cli;     /* the C side is zklock runs, one at a time per worker,
                   each in --layout LAYOUT, holding cli_hold_us */
  int cli_hold_us;
  agentctl ag;
  char name[64];
  /* what happened */
  atomic_int stop;
  pthread_mutex_t mu;
  sect *v;
  int n, cap;
  int count[2];
  cworker w[MAX_C];
  bool peer_done;
  int peer_status;
  char peer_error[ERR_MAX];
  double secs;
};

static void record(run *r, int side, char kind, int who, int64_t s,
                   int64_t e) {
  pthread_mutex_lock(&r->mu);
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 1024;
    sect *v = realloc(r->v, sizeof *v * (size_t)cap);
    if (!v) {
      pthread_mutex_unlock(&r->mu);
      abort();
    }
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = (sect){side, kind, who, s, e};
  r->count[side]++;
  pthread_mutex_unlock(&r->mu);
}

static int counted(run *r, int side) {
  int n;
  pthread_mutex_lock(&r->mu);
  n = r->count[side];
  pthread_mutex_unlock(&r->mu);
  return n;
}

/* Semaphore runs: whether some section was granted while limit - 1
 * others held (judge()'s max_holders reached the limit). A slow side (the
 * C contenders under valgrind) may take longer to get there than to reach
 * its count: the run goes on until then, within RUN_MS. */
static bool limit_reached(run *r) {
  bool reached = false;
  pthread_mutex_lock(&r->mu);
  for (int i = 0; i < r->n && !reached; i++) {
    int holders = 1;
    for (int j = 0; j < r->n; j++)
      if (j != i && r->v[j].s <= r->v[i].s && r->v[j].e > r->v[i].s &&
          (r->v[j].s < r->v[i].s || j < i))
        holders++;
    reached = holders >= r->limit;
  }
  pthread_mutex_unlock(&r->mu);
  return reached;
}

static void cli_work(cworker *w);

static void *work(void *arg) {
  cworker *w = arg;
  run *r = w->r;
  if (r->cli) {
    cli_work(w);
    return NULL;
  }
  for (int k = 0; !atomic_load(&r->stop); k++) {
    bool write = r->kind == C_RW && r->every > 0 &&
                 (k + w->index) % r->every == 0;
    zkl_lock *l = r->kind != C_RW ? w->l
                  : write         ? zkl_rwlock_write(w->rw)
                                  : zkl_rwlock_read(w->rw);
    char kind = r->kind == C_MUTEX ? 'M' : r->kind == C_SEM ? 'L'
                : write            ? 'W'
                                   : 'R';
    int64_t s, e;
    int rc = zkl_lock_acquire(l, ACQ_MS, NULL);
    if (rc != ZKL_OK) {
      if (!(rc == ZKL_ECANCELED && atomic_load(&r->stop))) {
        w->err = rc;
        snprintf(w->what, sizeof w->what, "C%d: %c acquire: %s", w->index,
                 kind, zkl_strerror(rc));
        atomic_store(&r->stop, 1);
      }
      break;
    }
    s = now_ns();
    hold_us(kind == 'R' ? r->read_us : r->hold_us);
    e = now_ns();
    rc = zkl_lock_release(l);
    record(r, SIDE_C, kind, w->index, s, e);
    if (rc != ZKL_OK) {
      w->err = rc;
      snprintf(w->what, sizeof w->what, "C%d: %c release: %s", w->index,
               kind, zkl_strerror(rc));
      atomic_store(&r->stop, 1);
      break;
    }
  }
  return NULL;
}

/* Opens the C contenders' sessions and objects. false on failure (what is
 * open stays for run_close). */
static bool run_open(run *r) {
  pthread_mutex_init(&r->mu, NULL);
  if (r->full) { /* /app-PID-N/jobs/TITLE: a path their code already has */
    char top[32];
    zkt_name(top, sizeof top, "/app");
    snprintf(r->name, sizeof r->name, "%s/jobs/%s", top, r->title);
  } else {
    zkt_name(r->name, sizeof r->name, r->title);
  }
  if (r->agent && !agentctl_start(&r->ag, zkt_hosts(), NULL))
    return false;
  for (int i = 0; i < r->nc; i++) {
    cworker *w = &r->w[i];
    int rc;
    w->r = r;
    w->index = i;
    if (r->cli)
      continue; /* each zklock run opens its own session */
    if (r->agent) {
      zkl_session_options o;
      zkl_session_options_init(&o);
      o.agent = r->ag.sock;
      rc = zkl_session_open(&w->s, &o);
    } else {
      rc = zkt_open(&w->s, zkt_hosts(), T_SESSION, 0, 0);
    }
    if (rc != ZKL_OK) {
      fprintf(stderr, "interop: session: %s\n", zkl_strerror(rc));
      w->s = NULL;
      return false;
    }
    rc = r->kind == C_MUTEX ? zkl_lock_new(&w->l, w->s, r->name)
         : r->kind == C_SEM
             ? zkl_lock_new_semaphore(&w->l, w->s, r->name, r->limit)
             : zkl_rwlock_new(&w->rw, w->s, r->name);
    if (rc == ZKL_OK && r->layout != ZKL_LAYOUT_CURATOR)
      rc = zkl_lock_set_layout(w->l, (zkl_layout)r->layout);
    if (rc != ZKL_OK) {
      fprintf(stderr, "interop: new: %s\n", zkl_strerror(rc));
      return false;
    }
  }
  return true;
}

static void run_close(run *r) {
  for (int i = 0; i < r->nc; i++) {
    cworker *w = &r->w[i];
    zkl_lock_free(w->l);
    zkl_rwlock_free(w->rw);
    if (w->s)
      zkl_session_close(w->s, NULL);
  }
  if (r->agent && r->ag.pid > 0)
    CU_ASSERT_EQUAL(agentctl_stop(&r->ag), 0);
  free(r->v);
  pthread_mutex_destroy(&r->mu);
}

/* Reads one "S who kind start end" line into the run. */
static bool take_section(run *r, const char *line) {
  char who[32], kind;
  long long s, e;
  if (sscanf(line, "S %31s %c %lld %lld", who, &kind, &s, &e) != 4 ||
      e < s)
    return false;
  record(r, SIDE_PEER, kind, atoi(who + 1), s, e);
  return true;
}

/* Runs the C contenders and the started peer together until each side had
 * min_each sections (and a semaphore had its limit of holders at once),
 * then stops both; the peer is ended and reaped on
 * every path. The outcome is in r, for the test thread to assert. */
static void run_contenders(run *r, peer *p) {
  char line[LINE_MAX_];
  int64_t t0 = now_ns(), deadline = zkt_now_ms() + RUN_MS;
  bool stop_sent = false;
  if (peer_send(p, "GO") != 0)
    snprintf(r->peer_error, sizeof r->peer_error, "could not send GO");
  for (int i = 0; i < r->nc && !r->peer_error[0]; i++) {
    r->w[i].running = pthread_create(&r->w[i].th, NULL, work, &r->w[i]) == 0;
    if (!r->w[i].running)
      snprintf(r->peer_error, sizeof r->peer_error, "pthread_create failed");
  }
  while (!r->peer_error[0]) {
    /* Short slices, to see the C side reach its count too. */
    int64_t slice = zkt_now_ms() + 100;
    int rc = peer_line(p, line, sizeof line,
                       slice < deadline ? slice : deadline);
    if (rc == 0) {
      if (line[0] == 'S') {
        if (!take_section(r, line))
          snprintf(r->peer_error, sizeof r->peer_error, "bad line: %s", line);
      } else if (strncmp(line, "DONE", 4) == 0) {
        r->peer_done = true;
        break;
      } else {
        snprintf(r->peer_error, sizeof r->peer_error, "%s", line);
      }
    } else if (rc == -2) {
      snprintf(r->peer_error, sizeof r->peer_error, "exited without DONE");
    } else if (zkt_now_ms() >= deadline) {
      snprintf(r->peer_error, sizeof r->peer_error,
               "no DONE within %d ms (C %d, peer %d sections)", RUN_MS,
               counted(r, SIDE_C), counted(r, SIDE_PEER));
    }
    if (!stop_sent &&
        (atomic_load(&r->stop) ||
         (counted(r, SIDE_C) >= r->min_each &&
          counted(r, SIDE_PEER) >= r->min_each &&
          (r->kind != C_SEM || limit_reached(r))))) {
      atomic_store(&r->stop, 1);
      stop_sent = true;
      if (peer_send(p, "STOP") != 0)
        snprintf(r->peer_error, sizeof r->peer_error, "could not send STOP");
    }
  }
  atomic_store(&r->stop, 1);
  if (!r->peer_done) {
    /* Wake C contenders that wait, perhaps for a wedged peer. */
    for (int i = 0; i < r->nc && !r->cli; i++) {
      zkl_lock_cancel(r->w[i].l ? r->w[i].l : zkl_rwlock_read(r->w[i].rw));
      if (r->w[i].rw)
        zkl_lock_cancel(zkl_rwlock_write(r->w[i].rw));
    }
  }
  r->peer_status = peer_end(p, END_MS);
  for (int i = 0; i < r->nc; i++)
    if (r->w[i].running)
      pthread_join(r->w[i].th, NULL);
  r->secs = (double)(now_ns() - t0) / 1e9;
  if (r->peer_error[0] || r->peer_status != 0)
    peer_show_log(p);
}

/* ------------------------------------------------------------- verdicts */

typedef struct verdict {
  int n[2];          /* sections per side */
  int writes[2];     /* of them, writers */
  int violations;    /* pairs of sections that broke the rule */
  char first[300];   /* the first one */
  int handoffs;      /* neighbours in time of different sides */
  int reader_pairs;  /* readers that overlapped */
  int c_joined_peer; /* C readers granted while a peer reader held */
  int peer_joined_c; /* and the reverse */
  int max_holders;   /* semaphore: most at once */
  int mixed;         /* semaphore: grants with both sides among holders */
} verdict;

static int by_start(const void *a, const void *b) {
  const sect *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s;
}

static const char *side_name(int side) { return side == SIDE_C ? "C" : "peer"; }

static void judge(run *r, verdict *v) {
  sect *s = r->v;
  memset(v, 0, sizeof *v);
  qsort(s, (size_t)r->n, sizeof *s, by_start);
  for (int i = 0; i < r->n; i++) {
    v->n[s[i].side]++;
    v->writes[s[i].side] += s[i].kind == 'W';
    if (i > 0 && s[i].side != s[i - 1].side)
      v->handoffs++;
    if (r->kind == C_SEM) {
      /* who holds as s[i] is granted */
      int holders = 1, sides = 1 << s[i].side;
      for (int j = 0; j < i; j++)
        if (s[j].e > s[i].s) {
          holders++;
          sides |= 1 << s[j].side;
        }
      if (holders > v->max_holders)
        v->max_holders = holders;
      if (sides == 3)
        v->mixed++;
      if (holders > r->limit && v->violations++ == 0)
        snprintf(v->first, sizeof v->first,
                 "%d holders at once when %s%d was granted at %lld",
                 holders, side_name(s[i].side), s[i].who,
                 (long long)s[i].s);
      continue;
    }
    /* sections after s[i] that began before it ended overlap it */
    for (int j = i + 1; j < r->n && s[j].s < s[i].e; j++) {
      bool readers = s[i].kind == 'R' && s[j].kind == 'R';
      if (!readers) {
        if (v->violations++ == 0)
          snprintf(v->first, sizeof v->first,
                   "%s%d %c [%lld, %lld] overlaps %s%d %c [%lld, %lld]",
                   side_name(s[i].side), s[i].who, s[i].kind,
                   (long long)s[i].s, (long long)s[i].e,
                   side_name(s[j].side), s[j].who, s[j].kind,
                   (long long)s[j].s, (long long)s[j].e);
        continue;
      }
      v->reader_pairs++;
      if (s[i].side != s[j].side) {
        if (s[j].side == SIDE_C)
          v->c_joined_peer++;
        else
          v->peer_joined_c++;
      }
    }
  }
}

/* The pairing's line for docs/interop.md's table. */
static void report(const char *title, run *r, const verdict *v) {
  printf("\nINTEROP %s: C %d sections (%d writes), peer %d (%d writes), "
         "handoffs between sides %d, violations %d",
         title, v->n[SIDE_C], v->writes[SIDE_C], v->n[SIDE_PEER],
         v->writes[SIDE_PEER], v->handoffs, v->violations);
  if (r->kind == C_RW)
    printf(", overlapping reader pairs %d (C joined peer %d, peer joined C "
           "%d)", v->reader_pairs, v->c_joined_peer, v->peer_joined_c);
  if (r->kind == C_SEM)
    printf(", most holders %d of %d, grants with both sides holding %d",
           v->max_holders, r->limit, v->mixed);
  printf(", %.1f s\n", r->secs);
  if (v->violations)
    printf("INTEROP %s: first violation: %s\n", title, v->first);
}

/* What every run must show: both sides ran to their count without error. */
static void assert_ran(run *r) {
  if (r->peer_error[0])
    fprintf(stderr, "interop %s: peer: %s\n", r->title, r->peer_error);
  if (r->peer_status != 0)
    fprintf(stderr, "interop %s: the peer exited with %d\n", r->title,
            r->peer_status);
  CU_ASSERT_STRING_EQUAL(r->peer_error, "");
  CU_ASSERT(r->peer_done);
  CU_ASSERT_EQUAL(r->peer_status, 0);
  for (int i = 0; i < r->nc; i++) {
    if (r->w[i].err)
      fprintf(stderr, "interop %s: %s\n", r->title, r->w[i].what);
    CU_ASSERT_EQUAL(r->w[i].err, 0);
  }
  CU_ASSERT(r->count[SIDE_C] >= r->min_each);
  CU_ASSERT(r->count[SIDE_PEER] >= r->min_each);
}

/* Runs one pairing of C contenders (r) with a peer started by start();
 * the caller asserts on the verdict. false when it could not run at all
 * (then it has failed the test already). */
typedef bool (*peer_starter)(peer *p, run *r, const char *path);

static bool pairing(run *r, peer_starter start, verdict *v) {
  char path[512];
  peer p;
  bool ok = run_open(r);
  CU_ASSERT(ok);
  zkt_parent(path, sizeof path, r->name);
  if (ok) {
    ok = start(&p, r, path);
    CU_ASSERT(ok);
  }
  if (ok) {
    run_contenders(r, &p);
    assert_ran(r);
    judge(r, v);
    report(r->title, r, v);
  }
  run_close(r);
  return ok;
}

/* ------------------------------------------------------ Curator pairings */

static char *itoa_(char *buf, int v) {
  sprintf(buf, "%d", v);
  return buf;
}

static bool start_curator_mutex(peer *p, run *r, const char *path) {
  char n[16], h[16];
  return curator_open(p, "curator-mutex", "mutex", path, itoa_(n, 2),
                      itoa_(h, r->hold_us), NULL, NULL);
}

/* Curator's InterProcessMutex and our zkl_lock on one path: one holder at
 * a time. */
static void test_curator_mutex(void) {
  run r = {.title = "curator-mutex", .kind = C_MUTEX, .hold_us = 1000,
           .nc = 2, .min_each = 200};
  verdict v;
  if (!pairing(&r, start_curator_mutex, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

/* The same on a full path outside /locks, which Curator's code names and
 * our name starting with '/' names too. */
static void test_curator_mutex_full_path(void) {
  run r = {.title = "curator-mutex-full-path", .kind = C_MUTEX,
           .hold_us = 1000, .nc = 2, .min_each = 100, .full = true};
  verdict v;
  if (!pairing(&r, start_curator_mutex, &v))
    return;
  CU_ASSERT(strncmp(r.name, "/app-", 5) == 0);
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 25);
  zkt_assert_parent_empty(r.name);
}

static bool start_curator_rw(peer *p, run *r, const char *path) {
  char n[16], ru[16], wu[16], ev[16];
  return curator_open(p, "curator-rwlock", "rwlock", path, itoa_(n, 3),
                      itoa_(ru, r->read_us), itoa_(wu, r->hold_us),
                      itoa_(ev, r->every));
}

/* Both sides of Curator's InterProcessReadWriteLock and of our zkl_rwlock
 * on one path: writers alone, readers only with readers, and readers of
 * each side granted while a reader of the other holds. */
static void test_curator_rwlock(void) {
  run r = {.title = "curator-rwlock", .kind = C_RW, .every = 3,
           .hold_us = 1000, .read_us = 4000, .nc = 3, .min_each = 200};
  verdict v;
  if (!pairing(&r, start_curator_rw, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.writes[SIDE_C] >= 20 && v.writes[SIDE_PEER] >= 20);
  CU_ASSERT(v.reader_pairs > 0);
  CU_ASSERT(v.c_joined_peer > 0);
  CU_ASSERT(v.peer_joined_c > 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

static bool start_curator_sem(peer *p, run *r, const char *path) {
  char n[16], lim[16], h[16];
  return curator_open(p, "curator-semaphore", "semaphore", path, itoa_(n, 3),
                      itoa_(lim, r->limit), itoa_(h, r->hold_us), NULL);
}

/* Curator's InterProcessSemaphoreV2 and our zkl_semaphore, limit 3 both:
 * at most 3 holders at any moment, 3 reached, with both sides holding. */
static void test_curator_semaphore(void) {
  run r = {.title = "curator-semaphore", .kind = C_SEM, .limit = 3,
           .hold_us = 4000, .nc = 3, .min_each = 200};
  verdict v;
  char sub[128];
  if (!pairing(&r, start_curator_sem, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.max_holders <= r.limit);
  CU_ASSERT_EQUAL(v.max_holders, r.limit);
  CU_ASSERT(v.mixed > 0);
  CU_ASSERT(v.handoffs >= 50);
  snprintf(sub, sizeof sub, "%s/locks", r.name);
  zkt_assert_parent_empty(sub);
  snprintf(sub, sizeof sub, "%s/leases", r.name);
  zkt_assert_parent_empty(sub);
}

/* The same pairings with our contenders locking through zklockd. */
static void test_curator_mutex_agent(void) {
  run r = {.title = "curator-mutex-agent", .kind = C_MUTEX, .hold_us = 1000,
           .nc = 2, .min_each = 200, .agent = true};
  verdict v;
  if (!pairing(&r, start_curator_mutex, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

static void test_curator_rwlock_agent(void) {
  run r = {.title = "curator-rwlock-agent", .kind = C_RW, .every = 3,
           .hold_us = 1000, .read_us = 4000, .nc = 3, .min_each = 200,
           .agent = true};
  verdict v;
  if (!pairing(&r, start_curator_rw, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.writes[SIDE_C] >= 20 && v.writes[SIDE_PEER] >= 20);
  CU_ASSERT(v.c_joined_peer > 0);
  CU_ASSERT(v.peer_joined_c > 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

/* ------------------------------------------------ Curator's LeaderLatch */

#define MAX_TERMS 4096
#define MAX_OBS 8192

typedef struct term {
  int side;
  char id[32];
  int64_t s, e;
  int64_t token;     /* its node's czxid */
  char seen[64];     /* the leader its own library named during the term */
  int64_t seen_token; /* C only */
} term;

typedef struct sighting {
  int side;
  int64_t t0, t1; /* the question was asked within [t0, t1] */
  char id[32];
  int64_t token; /* C only */
} sighting;

typedef struct election {
  pthread_mutex_t mu;
  char name[64];
  term terms[MAX_TERMS];
  int nterms, count[2];
  sighting seen[MAX_OBS];
  int nseen;
  int watch_end; /* a leader watch's last call: its code */
  atomic_int stop;
  int hold_us;
  struct ecand {
    struct election *el;
    int index;
    zkl_session *s;
    pthread_t th;
    bool running;
    int err;
    char what[200];
  } c[2];
} election;

static void add_term(election *el, const term *t) {
  pthread_mutex_lock(&el->mu);
  if (el->nterms < MAX_TERMS) {
    el->terms[el->nterms++] = *t;
    el->count[t->side]++;
  }
  pthread_mutex_unlock(&el->mu);
}

static void add_sighting(election *el, const sighting *g) {
  pthread_mutex_lock(&el->mu);
  if (el->nseen < MAX_OBS)
    el->seen[el->nseen++] = *g;
  pthread_mutex_unlock(&el->mu);
}

/* Our leader watch: records whom it names, when. */
static void on_leader(zkl_leader_watch *w, int rc, const char *id,
                      int64_t token, void *arg) {
  election *el = arg;
  sighting g = {SIDE_C, now_ns(), 0, "", token};
  (void)w;
  g.t1 = g.t0;
  if (rc == ZKL_OK) {
    snprintf(g.id, sizeof g.id, "%s", id);
    add_sighting(el, &g);
  } else if (rc != ZKL_ENOTHELD) {
    pthread_mutex_lock(&el->mu);
    el->watch_end = rc;
    pthread_mutex_unlock(&el->mu);
  }
}

/* One C candidate: stands, leads for hold_us, resigns, stands again. */
static void *candidate(void *arg) {
  struct ecand *c = arg;
  election *el = c->el;
  for (int t = 0; !atomic_load(&el->stop); t++) {
    term tm = {.side = SIDE_C};
    zkl_lock *l;
    int rc;
    snprintf(tm.id, sizeof tm.id, "C%d-%d", c->index, t);
    rc = zkl_lock_new_election(&l, c->s, el->name, tm.id);
    if (rc == ZKL_OK) {
      rc = zkl_lock_acquire(l, ACQ_MS, &tm.token);
      if (rc == ZKL_OK) {
        tm.s = now_ns();
        rc = zkl_name_get_leader(c->s, el->name, tm.seen, sizeof tm.seen,
                                 &tm.seen_token);
        hold_us(el->hold_us);
        tm.e = now_ns();
        int rrc = zkl_lock_release(l);
        if (rc == ZKL_OK)
          rc = rrc;
        add_term(el, &tm);
      }
      zkl_lock_free(l);
    }
    if (rc != ZKL_OK) {
      c->err = rc;
      snprintf(c->what, sizeof c->what, "%s: %s", tm.id, zkl_strerror(rc));
      atomic_store(&el->stop, 1);
      break;
    }
  }
  return NULL;
}

static int term_of(const election *el, const char *id) {
  for (int k = 0; k < el->nterms; k++)
    if (strcmp(el->terms[k].id, id) == 0)
      return k;
  return -1;
}

static int by_term_start(const void *a, const void *b) {
  const term *x = a, *y = b;
  return x->s < y->s ? -1 : x->s > y->s;
}

/* Curator's LeaderLatch and our zkl_election in one election, taking turns
 * (each leader resigns after a short term and stands again): never two
 * leaders that both believe it at once; successive leaders' tokens (their
 * nodes' czxids) increase; the leader each side's library names (Curator's
 * getLeader(), our zkl_name_get_leader() and zkl_leader_watch) is one who
 * actually led at that moment. */
static void test_curator_latch(void) {
  election *el = calloc(1, sizeof *el);
  char path[512], line[LINE_MAX_], n[16], h[16];
  zkl_session *obs_s = NULL;
  zkl_leader_watch *watch = NULL;
  peer p;
  bool started = false, done = false;
  int status = -1, min_each = 150;
  char error[ERR_MAX] = "";
  int64_t t0, deadline;
  CU_ASSERT_PTR_NOT_NULL_FATAL(el);
  pthread_mutex_init(&el->mu, NULL);
  el->hold_us = 1000;
  zkt_name(el->name, sizeof el->name, "curator-latch");
  zkt_parent(path, sizeof path, el->name);
  bool ok = zkt_open(&obs_s, zkt_hosts(), T_SESSION, 0, 0) == ZKL_OK;
  for (int i = 0; i < 2 && ok; i++) {
    el->c[i].el = el;
    el->c[i].index = i;
    ok = zkt_open(&el->c[i].s, zkt_hosts(), T_SESSION, 0, 0) == ZKL_OK;
  }
  ok = ok && zkl_leader_watch_new(&watch, obs_s, el->name, on_leader, el) ==
                 ZKL_OK;
  CU_ASSERT(ok);
  if (ok) {
    started = curator_open(&p, "curator-latch", "latch", path, itoa_(n, 2),
                           itoa_(h, el->hold_us), NULL, NULL);
    CU_ASSERT(started);
  }
  t0 = now_ns();
  deadline = zkt_now_ms() + RUN_MS;
  if (started && peer_send(&p, "GO") != 0)
    snprintf(error, sizeof error, "could not send GO");
  for (int i = 0; i < 2 && started && !error[0]; i++)
    el->c[i].running =
        pthread_create(&el->c[i].th, NULL, candidate, &el->c[i]) == 0;
  bool stop_sent = false;
  while (started && !error[0]) {
    int64_t slice = zkt_now_ms() + 100;
    int rc = peer_line(&p, line, sizeof line,
                       slice < deadline ? slice : deadline);
    if (rc == 0) {
      term tm = {.side = SIDE_PEER};
      sighting g = {.side = SIDE_PEER};
      long long s, e, tok, a, b;
      if (sscanf(line, "T %31s %lld %lld %lld %63s", tm.id, &s, &e, &tok,
                 tm.seen) == 5) {
        tm.s = s;
        tm.e = e;
        tm.token = tok;
        add_term(el, &tm);
      } else if (sscanf(line, "O %lld %lld %31s", &a, &b, g.id) == 3) {
        g.t0 = a;
        g.t1 = b;
        if (strcmp(g.id, "-") != 0)
          add_sighting(el, &g);
      } else if (strncmp(line, "DONE", 4) == 0) {
        done = true;
        break;
      } else {
        snprintf(error, sizeof error, "%s", line);
      }
    } else if (rc == -2) {
      snprintf(error, sizeof error, "exited without DONE");
    } else if (zkt_now_ms() >= deadline) {
      snprintf(error, sizeof error, "no DONE in time");
    }
    pthread_mutex_lock(&el->mu);
    bool enough = el->count[SIDE_C] >= min_each &&
                  el->count[SIDE_PEER] >= min_each;
    pthread_mutex_unlock(&el->mu);
    if (!stop_sent && (enough || atomic_load(&el->stop))) {
      atomic_store(&el->stop, 1);
      stop_sent = true;
      if (peer_send(&p, "STOP") != 0)
        snprintf(error, sizeof error, "could not send STOP");
    }
  }
  atomic_store(&el->stop, 1);
  if (started) {
    status = peer_end(&p, END_MS);
    if (error[0] || status != 0)
      peer_show_log(&p);
  }
  for (int i = 0; i < 2; i++)
    if (el->c[i].running)
      pthread_join(el->c[i].th, NULL);
  double secs = (double)(now_ns() - t0) / 1e9;
  /* Let the watch see the end (nobody leads) before it goes. */
  zkt_assert_parent_empty(el->name);
  zkl_leader_watch_free(watch);

  if (started) {
    int overlaps = 0, tokens_down = 0, self_wrong = 0, handoffs = 0;
    int java_ok = 0, java_bad = 0, java_named_c = 0;
    int watch_ok = 0, watch_bad = 0, watch_named_j = 0, last_k = -1;
    char first[300] = "";
    if (error[0] || status != 0)
      fprintf(stderr, "interop curator-latch: peer: %s (exited with %d)\n",
              error, status);
    CU_ASSERT_STRING_EQUAL(error, "");
    CU_ASSERT(done);
    CU_ASSERT_EQUAL(status, 0);
    for (int i = 0; i < 2; i++) {
      if (el->c[i].err)
        fprintf(stderr, "interop curator-latch: %s\n", el->c[i].what);
      CU_ASSERT_EQUAL(el->c[i].err, 0);
    }
    CU_ASSERT(el->count[SIDE_C] >= min_each);
    CU_ASSERT(el->count[SIDE_PEER] >= min_each);
    qsort(el->terms, (size_t)el->nterms, sizeof el->terms[0], by_term_start);
    for (int k = 0; k < el->nterms; k++) {
      term *t = &el->terms[k];
      for (int j = k + 1; j < el->nterms && el->terms[j].s < t->e; j++)
        if (overlaps++ == 0)
          snprintf(first, sizeof first, "%s [%lld, %lld] and %s [%lld, %lld]",
                   t->id, (long long)t->s, (long long)t->e, el->terms[j].id,
                   (long long)el->terms[j].s, (long long)el->terms[j].e);
      if (k > 0) {
        tokens_down += t->token <= el->terms[k - 1].token;
        handoffs += t->side != el->terms[k - 1].side;
      }
      self_wrong += strcmp(t->seen, t->id) != 0 ||
                    (t->side == SIDE_C && t->seen_token != t->token);
    }
    /* A leader named within [t0, t1] led at some moment of it: its term
     * k led from after term k-1 ended to before term k+1 began. */
    for (int i = 0; i < el->nseen; i++) {
      sighting *g = &el->seen[i];
      int k = term_of(el, g->id);
      bool fits = k >= 0 && (k == 0 || el->terms[k - 1].e < g->t1) &&
                  (k == el->nterms - 1 || g->t0 < el->terms[k + 1].s);
      if (g->side == SIDE_PEER) {
        java_ok += fits;
        java_bad += !fits;
        java_named_c += fits && g->id[0] == 'C';
        continue;
      }
      /* Our watch: the real term, its token, in the order of the terms,
       * told after that term's predecessor ended (the callback may come
       * after the term itself ended: no upper bound). */
      fits = k >= 0 && (k == 0 || el->terms[k - 1].e < g->t0) &&
             g->token == el->terms[k].token && k > last_k;
      if (fits)
        last_k = k;
      watch_ok += fits;
      watch_bad += !fits;
      watch_named_j += fits && g->id[0] == 'J';
      if (!fits && !first[0])
        snprintf(first, sizeof first, "our watch named %s (term %d, after "
                 "term %d) at %lld", g->id, k, last_k, (long long)g->t0);
    }
    printf("\nINTEROP curator-latch: terms C %d, peer %d, handoffs between "
           "sides %d, overlapping terms %d, tokens not increasing %d, "
           "leader named wrongly by its own library during a term %d; "
           "Curator's getLeader() while waiting: %d right (%d naming a C "
           "leader), %d wrong; our leader watch: %d right (%d naming a "
           "Curator leader), %d wrong, %.1f s\n",
           el->count[SIDE_C], el->count[SIDE_PEER], handoffs, overlaps,
           tokens_down, self_wrong, java_ok, java_named_c, java_bad,
           watch_ok, watch_named_j, watch_bad, secs);
    if (first[0])
      printf("INTEROP curator-latch: first problem: %s\n", first);
    CU_ASSERT_EQUAL(overlaps, 0);
    CU_ASSERT_EQUAL(tokens_down, 0);
    CU_ASSERT_EQUAL(self_wrong, 0);
    CU_ASSERT(handoffs >= 50);
    CU_ASSERT_EQUAL(java_bad, 0);
    CU_ASSERT(java_named_c > 0);
    CU_ASSERT_EQUAL(watch_bad, 0);
    CU_ASSERT(watch_named_j > 0);
    CU_ASSERT_EQUAL(el->watch_end, 0);
  }
  for (int i = 0; i < 2; i++)
    if (el->c[i].s)
      zkl_session_close(el->c[i].s, NULL);
  if (obs_s)
    zkl_session_close(obs_s, NULL);
  pthread_mutex_destroy(&el->mu);
  free(el);
}

/* ---------------------------------------------------- Curator revocation */

typedef struct revoked {
  zkt_counter calls;
  int64_t at;
} revoked;

static void on_revoke(zkl_lock *l, void *arg) {
  revoked *rv = arg;
  (void)l;
  rv->at = now_ns();
  zkt_counter_add(&rv->calls, 1);
}

/* Reads lines until one starts with want (bounded); others are errors. */
static bool expect_line(peer *p, const char *want, char *line, size_t cap,
                        char *error, size_t elen) {
  int rc = peer_line(p, line, cap, zkt_now_ms() + ZKT_WAIT);
  if (rc == 0 && strncmp(line, want, strlen(want)) == 0)
    return true;
  snprintf(error, elen, "waiting for %s: %s", want,
           rc == -1 ? "nothing in time" : rc == -2 ? "the peer exited" : line);
  return false;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

#define ROUNDS 100

/* Revocation both ways, with one lock passed back and forth by it: Curator's
 * Revoker.attemptRevoke on our holder's node reaches our zkl_lock_on_revoke
 * callback (which releases), and our zkl_name_revoke() reaches the listener of a
 * Curator InterProcessMutex made revocable (which releases). */
static void test_curator_revoke(void) {
  run r = {.title = "curator-revoke", .kind = C_MUTEX, .nc = 1};
  int64_t lat_c[ROUNDS], lat_j[ROUNDS];
  char path[512], node[ZKL_PATH_MAX], line[LINE_MAX_], msg[LINE_MAX_ + 16];
  char error[ERR_MAX] = "";
  revoked rv;
  peer p;
  int round = 0, status = -1;
  int64_t t0;
  zkt_counter_init(&rv.calls);
  bool ok = run_open(&r);
  CU_ASSERT(ok);
  zkt_parent(path, sizeof path, r.name);
  if (ok) {
    ok = curator_open(&p, "curator-revoke", "revoke", path, NULL, NULL, NULL,
                      NULL);
    CU_ASSERT(ok);
  }
  if (!ok) {
    run_close(&r);
    return;
  }
  zkl_lock *l = r.w[0].l;
  zkl_lock_on_revoke(l, on_revoke, &rv);
  t0 = now_ns();
  if (peer_send(&p, "GO") != 0)
    snprintf(error, sizeof error, "could not send GO");
  for (; round < ROUNDS && !error[0]; round++) {
    long long asked, s, e, when;
    int64_t cs, ce, ask;
    int rc = zkl_lock_acquire(l, ACQ_MS, NULL);
    if (rc != ZKL_OK) {
      snprintf(error, sizeof error, "round %d: acquire: %s", round,
               zkl_strerror(rc));
      break;
    }
    cs = now_ns();
    if (zkl_lock_get_node_path(l, node, sizeof node) != ZKL_OK) {
      snprintf(error, sizeof error, "no node path");
      break;
    }
    snprintf(msg, sizeof msg, "HELD %s", strrchr(node, '/') + 1);
    if (peer_send(&p, msg) != 0 ||
        !expect_line(&p, "ASKED ", line, sizeof line, error, sizeof error))
      break;
    sscanf(line, "ASKED %lld", &asked);
    /* Curator asks us: our callback hears it, and we let go. */
    if (zkt_counter_wait(&rv.calls, round + 1, ZKT_WAIT) < round + 1) {
      snprintf(error, sizeof error, "round %d: Curator's request did not "
               "reach our revoke callback", round);
      break;
    }
    ce = now_ns();
    lat_c[round] = rv.at - asked;
    rc = zkl_lock_release(l);
    record(&r, SIDE_C, 'M', 0, cs, ce);
    if (rc != ZKL_OK) {
      snprintf(error, sizeof error, "release: %s", zkl_strerror(rc));
      break;
    }
    /* Curator holds; we ask it, and it lets go. */
    if (!expect_line(&p, "JHELD ", line, sizeof line, error, sizeof error))
      break;
    ask = now_ns();
    rc = zkl_name_revoke(r.w[0].s, r.name, NULL);
    if (rc != ZKL_OK) {
      snprintf(error, sizeof error, "zkl_name_revoke: %s", zkl_strerror(rc));
      break;
    }
    if (!expect_line(&p, "REVOKED ", line, sizeof line, error, sizeof error))
      break;
    sscanf(line, "REVOKED %lld", &when);
    lat_j[round] = when - ask;
    if (!expect_line(&p, "S ", line, sizeof line, error, sizeof error))
      break;
    if (sscanf(line, "S J0 M %lld %lld", &s, &e) != 2) {
      snprintf(error, sizeof error, "bad line %s", line);
      break;
    }
    record(&r, SIDE_PEER, 'M', 0, s, e);
  }
  if (!error[0] && peer_send(&p, "STOP") != 0)
    snprintf(error, sizeof error, "could not send STOP");
  if (!error[0] && expect_line(&p, "DONE", line, sizeof line, error,
                               sizeof error))
    r.peer_done = true;
  status = peer_end(&p, END_MS);
  if (error[0] || status != 0) {
    fprintf(stderr, "interop curator-revoke: round %d: %s (the peer exited "
            "with %d)\n", round, error, status);
    peer_show_log(&p);
  }
  r.secs = (double)(now_ns() - t0) / 1e9;
  CU_ASSERT_STRING_EQUAL(error, "");
  CU_ASSERT_EQUAL(status, 0);
  CU_ASSERT(r.peer_done);
  CU_ASSERT_EQUAL(round, ROUNDS);
  if (round == ROUNDS) {
    verdict v;
    judge(&r, &v);
    qsort(lat_c, ROUNDS, sizeof lat_c[0], cmp_i64);
    qsort(lat_j, ROUNDS, sizeof lat_j[0], cmp_i64);
    printf("\nINTEROP curator-revoke: %d rounds: Curator's Revoker reached "
           "our callback %d times (median %.2f ms, max %.2f ms), our "
           "zkl_name_revoke() reached Curator's listener %d times (median %.2f "
           "ms, max %.2f ms); sections C %d, peer %d, violations %d, %.1f s\n",
           ROUNDS, zkt_counter_get(&rv.calls), lat_c[ROUNDS / 2] / 1e6,
           lat_c[ROUNDS - 1] / 1e6, ROUNDS, lat_j[ROUNDS / 2] / 1e6,
           lat_j[ROUNDS - 1] / 1e6, v.n[SIDE_C], v.n[SIDE_PEER], v.violations,
           r.secs);
    CU_ASSERT_EQUAL(v.violations, 0);
    CU_ASSERT_EQUAL(zkt_counter_get(&rv.calls), ROUNDS);
    CU_ASSERT(lat_c[0] > 0 && lat_j[0] > 0);
  }
  run_close(&r);
  zkt_assert_parent_empty(r.name);
}

/* -------------------------------------------------------- kazoo pairings */

static bool start_kazoo(peer *p, const char *tag, const char *mode,
                        const char *path, int clients, int hold,
                        const char *patterns) {
  char n[16], h[16];
  return kazoo_open(p, tag, mode, path, itoa_(n, clients), itoa_(h, hold),
                    patterns, NULL, 0);
}

static bool start_kazoo_lock(peer *p, run *r, const char *path) {
  return start_kazoo(p, "kazoo-lock", "lock", path, 2, r->hold_us, "-lock-");
}

/* kazoo's Lock, told our node names (extra_lock_patterns=["-lock-"]), and
 * our zkl_lock on one path: one holder at a time. */
static void test_kazoo_lock(void) {
  run r = {.title = "kazoo-lock", .kind = C_MUTEX, .hold_us = 1000,
           .nc = 2, .min_each = 200};
  verdict v;
  if (!pairing(&r, start_kazoo_lock, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

/* The same on a full path outside /locks, as kazoo's code names it. */
static void test_kazoo_lock_full_path(void) {
  run r = {.title = "kazoo-lock-full-path", .kind = C_MUTEX, .hold_us = 1000,
           .nc = 2, .min_each = 100, .full = true};
  verdict v;
  if (!pairing(&r, start_kazoo_lock, &v))
    return;
  CU_ASSERT(strncmp(r.name, "/app-", 5) == 0);
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 25);
  zkt_assert_parent_empty(r.name);
}

static bool start_kazoo_plain(peer *p, run *r, const char *path) {
  return start_kazoo(p, "kazoo-lock-plain", "lock", path, 2, r->hold_us, "-");
}

/* The check sees overlaps when there are some: kazoo's Lock without
 * extra_lock_patterns ignores our nodes (we see its __lock__ nodes, it does
 * not see ours), so it is granted while we hold. Not a way to use it: the
 * control that the method can fail. */
static void test_kazoo_lock_unpatterned(void) {
  run r = {.title = "kazoo-lock-unpatterned", .kind = C_MUTEX,
           .hold_us = 1000, .nc = 2, .min_each = 100};
  verdict v;
  if (!pairing(&r, start_kazoo_plain, &v))
    return;
  CU_ASSERT(v.violations > 0);
  zkt_assert_parent_empty(r.name);
}

static bool start_kazoo_write(peer *p, run *r, const char *path) {
  return start_kazoo(p, "kazoo-write", "write", path, 2, r->hold_us,
                     "__READ__,__WRIT__");
}

/* kazoo's WriteLock (extra_lock_patterns=["__READ__", "__WRIT__"]) beside
 * both sides of our zkl_rwlock: writers alone, readers only with readers. */
static void test_kazoo_writelock(void) {
  run r = {.title = "kazoo-writelock", .kind = C_RW, .every = 3,
           .hold_us = 1000, .read_us = 4000, .nc = 3, .min_each = 200};
  verdict v;
  if (!pairing(&r, start_kazoo_write, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.writes[SIDE_C] >= 20);
  CU_ASSERT(v.reader_pairs > 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

static bool start_kazoo_read(peer *p, run *r, const char *path) {
  return start_kazoo(p, "kazoo-read", "read", path, 2, r->read_us,
                     "__WRIT__");
}

/* kazoo's ReadLock (extra_lock_patterns=["__WRIT__"]: only writers exclude
 * a reader) beside our readers: both sides' readers share, each granted
 * while one of the other side holds. (With writers, see the next test.) */
static void test_kazoo_readlock_shares(void) {
  run r = {.title = "kazoo-readlock", .kind = C_RW, .every = 0,
           .read_us = 4000, .nc = 2, .min_each = 200};
  verdict v;
  if (!pairing(&r, start_kazoo_read, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.c_joined_peer > 0);
  CU_ASSERT(v.peer_joined_c > 0);
  zkt_assert_parent_empty(r.name);
}

/* kazoo's Lock and WriteLock beside our contenders locking through
 * zklockd, and the control: kazoo's Lock without patterns overlaps them. */
static void test_kazoo_lock_agent(void) {
  run r = {.title = "kazoo-lock-agent", .kind = C_MUTEX, .hold_us = 1000,
           .nc = 2, .min_each = 200, .agent = true};
  verdict v;
  if (!pairing(&r, start_kazoo_lock, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

static void test_kazoo_writelock_agent(void) {
  run r = {.title = "kazoo-writelock-agent", .kind = C_RW, .every = 3,
           .hold_us = 1000, .read_us = 4000, .nc = 3, .min_each = 200,
           .agent = true};
  verdict v;
  if (!pairing(&r, start_kazoo_write, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.writes[SIDE_C] >= 20);
  CU_ASSERT(v.reader_pairs > 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

static void test_kazoo_lock_unpatterned_agent(void) {
  run r = {.title = "kazoo-lock-unpatterned-agent", .kind = C_MUTEX,
           .hold_us = 1000, .nc = 2, .min_each = 100, .agent = true};
  verdict v;
  if (!pairing(&r, start_kazoo_plain, &v))
    return;
  CU_ASSERT(v.violations > 0);
  zkt_assert_parent_empty(r.name);
}

/* ------------------------------------------------ layouts (zklock, kazoo) */

/* The command zklock runs under the lock: it stamps CLOCK_MONOTONIC (as
 * now_ns() and the peers do) once in the lock, holds argv[1] us, stamps
 * again and prints its section. The stamps are the command's own, inside
 * zklock's hold: what the lock protects. */
static const char cli_section_py[] =
    "import sys, time\n"
    "s = time.monotonic_ns()\n"
    "until = s + int(sys.argv[1]) * 1000\n"
    "while time.monotonic_ns() < until:\n"
    "    time.sleep(max(0, until - time.monotonic_ns()) / 1e9)\n"
    "print('S %d %d' % (s, time.monotonic_ns()), flush=True)\n";

/* One zklock run in r->layout: its section recorded as the C side's, or
 * false with w->what said. Bounded: zklock waits 20 s at most (-w), and the
 * test kills it 10 s after that. */
static bool cli_section(cworker *w) {
  run *r = w->r;
  char hold[16], out[LINE_MAX_] = "", *line;
  int fd[2], status = -1;
  size_t got = 0;
  long long s = 0, e = 0;
  int64_t deadline = zkt_now_ms() + 30000;
  const char *layout = r->layout == ZKL_LAYOUT_KAZOO ? "kazoo" : "curator";
  pid_t pid;
  snprintf(hold, sizeof hold, "%d", r->cli_hold_us);
  if (pipe2(fd, O_CLOEXEC) != 0) {
    snprintf(w->what, sizeof w->what, "Z%d: pipe: %s", w->index,
             strerror(errno));
    return false;
  }
  pid = fork();
  if (pid == 0) {
    const char *argv[] = {"zklock", "-q", "-w", "20",
                          r->agent ? "--agent" : "-s",
                          r->agent ? r->ag.sock : zkt_hosts(),
                          "--layout", layout, r->name, PYTHON, "-I", "-c",
                          cli_section_py, hold, NULL};
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(fd[1], 1) < 0)
      _exit(127);
    execv(ZKLOCK, (char *const *)argv);
    _exit(127);
  }
  close(fd[1]);
  if (pid < 0) {
    close(fd[0]);
    snprintf(w->what, sizeof w->what, "Z%d: fork: %s", w->index,
             strerror(errno));
    return false;
  }
  for (;;) {
    struct pollfd pf = {fd[0], POLLIN, 0};
    int64_t left = deadline - zkt_now_ms();
    ssize_t n;
    if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
      break;
    n = read(fd[0], out + got, sizeof out - 1 - got);
    if (n <= 0)
      break;
    got += (size_t)n;
    if (got == sizeof out - 1)
      break;
  }
  out[got] = '\0';
  close(fd[0]);
  if (zkt_now_ms() >= deadline)
    kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  line = strstr(out, "S ");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !line ||
      sscanf(line, "S %lld %lld", &s, &e) != 2 || e < s) {
    snprintf(w->what, sizeof w->what,
             "Z%d: zklock --layout %s exited with %d, stdout: %.100s",
             w->index, layout,
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
    return false;
  }
  record(r, SIDE_C, 'M', w->index, s, e);
  return true;
}

static void cli_work(cworker *w) {
  while (!atomic_load(&w->r->stop))
    if (!cli_section(w)) {
      w->err = ZKL_ESYSTEM;
      atomic_store(&w->r->stop, 1);
      return;
    }
}

/* kazoo's plain Lock (no extra_lock_patterns) and our mutex in kazoo's
 * layout on one path (issue 34 item 4): one holder at a time. The control
 * above shows the same Lock overlapping our default layout. */
static void test_kazoo_plain_layout(void) {
  run r = {.title = "kazoo-plain-layout", .kind = C_MUTEX, .hold_us = 1000,
           .nc = 2, .min_each = 200, .layout = ZKL_LAYOUT_KAZOO};
  verdict v;
  if (!pairing(&r, start_kazoo_plain, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

static void test_kazoo_plain_layout_agent(void) {
  run r = {.title = "kazoo-plain-layout-agent", .kind = C_MUTEX,
           .hold_us = 1000, .nc = 2, .min_each = 200,
           .layout = ZKL_LAYOUT_KAZOO, .agent = true};
  verdict v;
  if (!pairing(&r, start_kazoo_plain, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 50);
  zkt_assert_parent_empty(r.name);
}

/* The same with `zklock --layout kazoo` as our side: one zklock run after
 * another, each holding 20 ms, beside kazoo's two plain Lock clients. */
static void cli_layout(bool agent) {
  run r = {.title = agent ? "kazoo-plain-zklock-layout-agent"
                          : "kazoo-plain-zklock-layout",
           .kind = C_MUTEX, .hold_us = 1000, .nc = 1, .min_each = 25,
           .layout = ZKL_LAYOUT_KAZOO, .cli = true, .cli_hold_us = 20000,
           .agent = agent};
  verdict v;
  if (!pairing(&r, start_kazoo_plain, &v))
    return;
  CU_ASSERT_EQUAL(v.violations, 0);
  CU_ASSERT(v.handoffs >= 10);
  zkt_assert_parent_empty(r.name);
}

static void test_kazoo_plain_zklock_layout(void) { cli_layout(false); }
static void test_kazoo_plain_zklock_layout_agent(void) { cli_layout(true); }

typedef struct stamped {
  zkt_counter calls;
  int rc;
  int64_t at;
} stamped;

static void on_stamped(zkl_lock *l, int rc, int64_t token, void *arg) {
  stamped *x = arg;
  (void)l;
  (void)token;
  x->rc = rc;
  x->at = now_ns();
  zkt_counter_add(&x->calls, 1);
}

static void stamped_init(stamped *x) {
  memset(x, 0, sizeof *x);
  zkt_counter_init(&x->calls);
}

/* kazoo's ReadLock one step at a time, beside our writers and a reader.
 *  A. A kazoo reader queued behind our writer is granted when it leaves, at
 *     the same time as our reader queued there too; our writer queued
 *     behind the kazoo reader waits for it.
 *  B. kazoo #649 (fixed in kazoo 2.9): a kazoo reader queued behind our
 *     writer W1, with our writer W2 queued behind it. W1 leaves: the reader
 *     should be granted; kazoo 2.8 instead waits for the last writer in the
 *     queue, W2, which waits for the reader: both wait until the reader's
 *     timeout (kazoo's own WriteLock behind it does the same). Checked here:
 *     W2 never jumps ahead of the reader; with kazoo 2.8, that the reader
 *     times out (what docs/interop.md says). */
static void test_kazoo_readlock_steps(void) {
  char name[64], parent[512], line[LINE_MAX_], version[64] = "";
  char error[ERR_MAX] = "";
  zkl_session *sa = NULL, *sb = NULL, *sc = NULL;
  zkl_rwlock *a = NULL, *b = NULL, *c = NULL;
  stamped rr, w2;
  peer p;
  int status;
  long long got = 0, rel = 0;
  bool timed_out = false, granted = false;
  int64_t t_w1;
  zkt_name(name, sizeof name, "kazoo-readlock-steps");
  zkt_parent(parent, sizeof parent, name);
  bool ok = zkt_open(&sa, zkt_hosts(), T_SESSION, 0, 0) == ZKL_OK &&
            zkt_open(&sb, zkt_hosts(), T_SESSION, 0, 0) == ZKL_OK &&
            zkt_open(&sc, zkt_hosts(), T_SESSION, 0, 0) == ZKL_OK &&
            zkl_rwlock_new(&a, sa, name) == ZKL_OK &&
            zkl_rwlock_new(&b, sb, name) == ZKL_OK &&
            zkl_rwlock_new(&c, sc, name) == ZKL_OK;
  CU_ASSERT(ok);
  if (ok) {
    ok = kazoo_open(&p, "kazoo-readlock-steps", "probe", parent, "read",
                    "__WRIT__", NULL, version, sizeof version);
    CU_ASSERT(ok);
  }
  if (!ok)
    goto out;
  if (peer_send(&p, "GO") != 0) {
    snprintf(error, sizeof error, "could not send GO");
    goto end;
  }

  /* A */
  stamped_init(&rr);
  stamped_init(&w2);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_write(a), 0, NULL), ZKL_OK);
  peer_send(&p, "ACQ 20");
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(zkl_rwlock_read(c), ACQ_MS,
                                         on_stamped, &rr), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 3, ZKT_WAIT), 3);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(sc, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&rr.calls), 0); /* waits for W1 */
  t_w1 = now_ns();
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(a)), ZKL_OK);
  if (!expect_line(&p, "GOT ", line, sizeof line, error, sizeof error))
    goto end;
  sscanf(line, "GOT %lld", &got);
  CU_ASSERT(got > t_w1); /* kazoo's reader waited for our writer */
  CU_ASSERT_EQUAL(zkt_counter_wait(&rr.calls, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(rr.rc, ZKL_OK);
  CU_ASSERT(rr.at > t_w1); /* both readers hold now */
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(zkl_rwlock_write(b), ACQ_MS,
                                         on_stamped, &w2), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 3, ZKT_WAIT), 3);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_read(c)), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(sb, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&w2.calls), 0); /* waits for kazoo's */
  peer_send(&p, "REL");
  if (!expect_line(&p, "RELEASED ", line, sizeof line, error, sizeof error))
    goto end;
  sscanf(line, "RELEASED %lld", &rel);
  CU_ASSERT_EQUAL(zkt_counter_wait(&w2.calls, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(w2.rc, ZKL_OK);
  CU_ASSERT(w2.at > rel);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(b)), ZKL_OK);

  /* B: kazoo #649 */
  stamped_init(&w2);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_write(a), 0, NULL), ZKL_OK);
  peer_send(&p, "ACQ 3");
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(zkl_rwlock_write(b), ACQ_MS,
                                         on_stamped, &w2), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 3, ZKT_WAIT), 3);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(sb, ZKT_WAIT), 0);
  t_w1 = now_ns();
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(a)), ZKL_OK);
  if (peer_line(&p, line, sizeof line, zkt_now_ms() + 3000 + ZKT_WAIT) != 0) {
    snprintf(error, sizeof error, "no GOT or TIMEOUT from the kazoo reader");
    goto end;
  }
  granted = strncmp(line, "GOT ", 4) == 0;
  timed_out = strncmp(line, "TIMEOUT ", 8) == 0;
  CU_ASSERT(granted || timed_out);
  if (timed_out) {
    /* kazoo #649: W2 is granted once the reader gave up, not before: the
     * reader waited its whole 3 s after W1 left. */
    CU_ASSERT_EQUAL(zkt_counter_wait(&w2.calls, 1, ZKT_WAIT), 1);
    CU_ASSERT_EQUAL(w2.rc, ZKL_OK);
    CU_ASSERT(w2.at - t_w1 >= 2900000000LL);
  } else if (granted) {
    CU_ASSERT_EQUAL(zkl__debug_wait_settled(sb, ZKT_WAIT), 0);
    CU_ASSERT_EQUAL(zkt_counter_get(&w2.calls), 0);
    peer_send(&p, "REL");
    if (!expect_line(&p, "RELEASED ", line, sizeof line, error, sizeof error))
      goto end;
    sscanf(line, "RELEASED %lld", &rel);
    CU_ASSERT_EQUAL(zkt_counter_wait(&w2.calls, 1, ZKT_WAIT), 1);
    CU_ASSERT(w2.at > rel);
  }
  printf("\nINTEROP kazoo-readlock-steps: kazoo %s: a kazoo reader behind "
         "our writer is granted when it leaves, beside our reader, and our "
         "writer waits for it; with our writer queued behind it, the kazoo "
         "reader %s\n", version,
         timed_out ? "waits for that writer and times out (kazoo #649); ours "
                     "waited for it until then"
                   : "is granted (kazoo #649 fixed)");
  if (strncmp(version, "2.8.", 4) == 0)
    CU_ASSERT(timed_out); /* what docs/interop.md says of kazoo 2.8 */
  if (zkt_counter_get(&w2.calls) > 0 && w2.rc == ZKL_OK)
    CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(b)), ZKL_OK);
  peer_send(&p, "END");
  expect_line(&p, "DONE", line, sizeof line, error, sizeof error);
end:
  status = peer_end(&p, END_MS);
  if (error[0] || status != 0) {
    fprintf(stderr, "interop kazoo-readlock-steps: %s (the peer exited with "
            "%d)\n", error, status);
    peer_show_log(&p);
  }
  CU_ASSERT_STRING_EQUAL(error, "");
  CU_ASSERT_EQUAL(status, 0);
out:
  zkl_rwlock_free(a);
  zkl_rwlock_free(b);
  zkl_rwlock_free(c);
  if (sa)
    zkl_session_close(sa, NULL);
  if (sb)
    zkl_session_close(sb, NULL);
  if (sc)
    zkl_session_close(sc, NULL);
  zkt_assert_parent_empty(name);
}

/* One step at a time, kazoo's plain Lock against our mutex in kazoo's
 * layout: a kazoo holder keeps ours waiting until it lets go, and ours
 * keeps kazoo's waiting (a 1 s try of kazoo's times out while ours holds;
 * the next is granted after our release). */
static void layout_steps(bool agent) {
  char name[64], parent[512], line[LINE_MAX_], version[64] = "";
  char error[ERR_MAX] = "";
  const char *tag = agent ? "kazoo-layout-steps-agent" : "kazoo-layout-steps";
  zkl_session *s = NULL;
  zkl_lock *l = NULL;
  agentctl ag = {0};
  stamped a;
  peer p;
  int status;
  long long got = 0, rel = 0;
  int64_t t_rel;
  zkt_name(name, sizeof name, tag);
  zkt_parent(parent, sizeof parent, name);
  bool ok = !agent || agentctl_start(&ag, zkt_hosts(), NULL);
  if (ok && agent) {
    zkl_session_options o;
    zkl_session_options_init(&o);
    o.agent = ag.sock;
    ok = zkl_session_open(&s, &o) == ZKL_OK;
  } else if (ok) {
    ok = zkt_open(&s, zkt_hosts(), T_SESSION, 0, 0) == ZKL_OK;
  }
  ok = ok && zkl_lock_new(&l, s, name) == ZKL_OK &&
       zkl_lock_set_layout(l, ZKL_LAYOUT_KAZOO) == ZKL_OK;
  CU_ASSERT(ok);
  if (ok) {
    ok = kazoo_open(&p, tag, "probe", parent, "lock", "-", NULL, version,
                    sizeof version);
    CU_ASSERT(ok);
  }
  if (!ok)
    goto out;
  if (peer_send(&p, "GO") != 0) {
    snprintf(error, sizeof error, "could not send GO");
    goto end;
  }
  /* kazoo holds: ours waits, and is granted after kazoo's release */
  stamped_init(&a);
  peer_send(&p, "ACQ 20");
  if (!expect_line(&p, "GOT ", line, sizeof line, error, sizeof error))
    goto end;
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 1000, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, ACQ_MS, on_stamped, &a), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 0);
  peer_send(&p, "REL");
  if (!expect_line(&p, "RELEASED ", line, sizeof line, error, sizeof error))
    goto end;
  sscanf(line, "RELEASED %lld", &rel);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_OK);
  CU_ASSERT(a.at > rel);
  /* ours holds: kazoo's 1 s try times out, its next is granted after our
   * release */
  peer_send(&p, "ACQ 1");
  if (!expect_line(&p, "TIMEOUT ", line, sizeof line, error, sizeof error))
    goto end;
  peer_send(&p, "ACQ 20");
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  t_rel = now_ns();
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  if (!expect_line(&p, "GOT ", line, sizeof line, error, sizeof error))
    goto end;
  sscanf(line, "GOT %lld", &got);
  CU_ASSERT(got > t_rel);
  peer_send(&p, "REL");
  if (!expect_line(&p, "RELEASED ", line, sizeof line, error, sizeof error))
    goto end;
  printf("\nINTEROP %s: kazoo %s's plain Lock and our kazoo layout wait "
         "for each other\n", tag, version);
  peer_send(&p, "END");
  expect_line(&p, "DONE", line, sizeof line, error, sizeof error);
end:
  status = peer_end(&p, END_MS);
  if (error[0] || status != 0) {
    fprintf(stderr, "interop %s: %s (the peer exited with %d)\n", tag, error,
            status);
    peer_show_log(&p);
  }
  CU_ASSERT_STRING_EQUAL(error, "");
  CU_ASSERT_EQUAL(status, 0);
out:
  zkl_lock_free(l);
  if (s)
    zkl_session_close(s, NULL);
  if (ag.pid > 0)
    CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

static void test_kazoo_layout_steps(void) { layout_steps(false); }
static void test_kazoo_layout_steps_agent(void) { layout_steps(true); }

/* What zkl_lock_set_layout() refuses, and that a refusal changes nothing:
 * a value that is no layout, a contender of another kind (ZKL_EINVAL), a
 * mutex acquired once already (ZKL_EBUSY, during its hold and after). No
 * node and no parent is made by any of them, and a refused mutex keeps
 * Curator's names. Through the agent the same codes come from the client
 * (a SET has no reply), and the connection is still good after them. */
static void layout_refusals(bool agent) {
  char name[64], other[64], parent[512], node[ZKL_PATH_MAX];
  zkl_session *s = NULL;
  zkl_lock *l = NULL, *sem = NULL, *el = NULL, *multi = NULL;
  zkl_rwlock *rw = NULL;
  agentctl ag = {0};
  const char *names[2];
  zkt_name(name, sizeof name, agent ? "layout-refused-agent"
                                    : "layout-refused");
  zkt_name(other, sizeof other, agent ? "layout-refused-other-agent"
                                      : "layout-refused-other");
  names[0] = name;
  names[1] = other;
  zkt_parent(parent, sizeof parent, name);
  bool ok = !agent || agentctl_start(&ag, zkt_hosts(), NULL);
  if (ok && agent) {
    zkl_session_options o;
    zkl_session_options_init(&o);
    o.agent = ag.sock;
    ok = zkl_session_open(&s, &o) == ZKL_OK;
  } else if (ok) {
    ok = zkt_open(&s, zkt_hosts(), T_SESSION, 0, 0) == ZKL_OK;
  }
  ok = ok && zkl_lock_new(&l, s, name) == ZKL_OK &&
       zkl_rwlock_new(&rw, s, name) == ZKL_OK &&
       zkl_lock_new_semaphore(&sem, s, name, 2) == ZKL_OK &&
       zkl_lock_new_election(&el, s, name, "me") == ZKL_OK &&
       zkl_lock_new_multi(&multi, s, names, 2) == ZKL_OK;
  CU_ASSERT_FATAL(ok);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(NULL, ZKL_LAYOUT_KAZOO), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(l, (zkl_layout)2), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(l, (zkl_layout)-1), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(zkl_rwlock_write(rw), ZKL_LAYOUT_KAZOO),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(zkl_rwlock_read(rw), ZKL_LAYOUT_KAZOO),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(sem, ZKL_LAYOUT_KAZOO), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(el, ZKL_LAYOUT_KAZOO), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(multi, ZKL_LAYOUT_KAZOO), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_children(parent), -1); /* nothing made */
  /* held once: the layout is settled */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ACQ_MS, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(l, ZKL_LAYOUT_KAZOO), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
  CU_ASSERT(strstr(node, "-lock-") != NULL);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(l, ZKL_LAYOUT_KAZOO), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_set_layout(l, ZKL_LAYOUT_CURATOR), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ACQ_MS, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
  CU_ASSERT(strstr(node, "-lock-") != NULL && !strstr(node, "__lock__"));
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkl_rwlock_free(rw);
  zkl_lock_free(sem);
  zkl_lock_free(el);
  zkl_lock_free(multi);
  zkl_session_close(s, NULL);
  if (ag.pid > 0)
    CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  zkt_assert_parent_empty(name);
}

static void test_layout_refusals(void) { layout_refusals(false); }
static void test_layout_refusals_agent(void) { layout_refusals(true); }

/* Kazoo's layout costs no request: an uncontended acquire and release of a
 * fresh name send as many in one layout as in the other (the lease's
 * heartbeats, which come when they come, left out). The node is the one
 * kazoo's Lock takes for a contender: "__lock__" and ten digits at its
 * end, our id in front. */
static void test_layout_requests(void) {
  zkl_session *s = NULL;
  uint64_t sent[2] = {0, 0};
  char node[ZKL_PATH_MAX];
  CU_ASSERT_EQUAL_FATAL(zkt_open(&s, zkt_hosts(), T_SESSION, 0, 0), ZKL_OK);
  for (int layout = 0; layout < 2; layout++) {
    char name[64];
    zkl_lock *l = NULL;
    zkl_session_stats a, b;
    zkt_name(name, sizeof name, layout ? "layout-requests-kazoo"
                                       : "layout-requests-curator");
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_set_layout(l, (zkl_layout)layout), ZKL_OK);
    CU_ASSERT_EQUAL(zkl__debug_wait_quiet(s, ZKT_WAIT), 0);
    CU_ASSERT_EQUAL(zkl_session_get_stats(s, &a), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire(l, ACQ_MS, NULL), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
    if (layout) {
      const char *last = strrchr(node, '/') + 1, *m = strstr(last, "__lock__");
      CU_ASSERT(strncmp(last, "_c_", 3) == 0);
      CU_ASSERT(m && strlen(m) == 8 + 10 &&
                strspn(m + 8, "0123456789") == 10);
    } else {
      CU_ASSERT(strstr(node, "-lock-") != NULL);
    }
    CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
    CU_ASSERT_EQUAL(zkl__debug_wait_quiet(s, ZKT_WAIT), 0);
    CU_ASSERT_EQUAL(zkl_session_get_stats(s, &b), ZKL_OK);
    sent[layout] = (b.requests - b.heartbeats) - (a.requests - a.heartbeats);
    zkl_lock_free(l);
    zkt_assert_parent_empty(name);
  }
  printf("\nINTEROP layout-requests: an uncontended acquire and release of "
         "a fresh name: %llu requests in Curator's layout, %llu in kazoo's\n",
         (unsigned long long)sent[0], (unsigned long long)sent[1]);
  CU_ASSERT(sent[0] > 0);
  CU_ASSERT_EQUAL(sent[0], sent[1]);
  zkl_session_close(s, NULL);
}

int main(void) {
  static const zkt_test tests[] = {
      {"kazoo's plain Lock and our mutex in kazoo's layout",
       test_kazoo_plain_layout},
      {"kazoo's plain Lock and zklock --layout kazoo",
       test_kazoo_plain_zklock_layout},
      {"kazoo's plain Lock and our kazoo layout wait for each other",
       test_kazoo_layout_steps},
      {"zkl_lock_set_layout refusals change nothing", test_layout_refusals},
      {"kazoo's layout sends no more requests", test_layout_requests},
      {"through zklockd: kazoo's plain Lock and our mutex in kazoo's layout",
       test_kazoo_plain_layout_agent},
      {"through zklockd: kazoo's plain Lock and zklock --layout kazoo",
       test_kazoo_plain_zklock_layout_agent},
      {"through zklockd: kazoo's plain Lock and our kazoo layout wait for "
       "each other",
       test_kazoo_layout_steps_agent},
      {"through zklockd: zkl_lock_set_layout refusals change nothing",
       test_layout_refusals_agent},
      {"kazoo's Lock and our mutex", test_kazoo_lock},
      {"kazoo's Lock and our mutex on a full path outside /locks",
       test_kazoo_lock_full_path},
      {"kazoo's Lock without patterns overlaps ours (control)",
       test_kazoo_lock_unpatterned},
      {"kazoo's WriteLock and our read/write lock", test_kazoo_writelock},
      {"kazoo's ReadLock and our readers share", test_kazoo_readlock_shares},
      {"kazoo's ReadLock step by step, kazoo #649",
       test_kazoo_readlock_steps},
      {"Curator's InterProcessMutex and our mutex", test_curator_mutex},
      {"Curator's InterProcessMutex and our mutex on a full path outside "
       "/locks",
       test_curator_mutex_full_path},
      {"Curator's InterProcessReadWriteLock and ours", test_curator_rwlock},
      {"Curator's InterProcessSemaphoreV2 and ours", test_curator_semaphore},
      {"Curator's LeaderLatch and our election", test_curator_latch},
      {"Curator's revocation and ours, both ways", test_curator_revoke},
      {"through zklockd: kazoo's Lock and our mutex", test_kazoo_lock_agent},
      {"through zklockd: kazoo's WriteLock and our read/write lock",
       test_kazoo_writelock_agent},
      {"through zklockd: kazoo's Lock without patterns overlaps ours "
       "(control)",
       test_kazoo_lock_unpatterned_agent},
      {"through zklockd: Curator's InterProcessMutex and our mutex",
       test_curator_mutex_agent},
      {"through zklockd: Curator's InterProcessReadWriteLock and ours",
       test_curator_rwlock_agent},
      {NULL, NULL}};
  /* A peer that died must give EPIPE, not kill the test. */
  signal(SIGPIPE, SIG_IGN);
  return zkt_main("interop", tests);
}
