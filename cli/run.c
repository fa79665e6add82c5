/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run.c - one run of zklock: take the lock, run the command while it is
 * held, release it, and exit as the command did.
 *
 * The lock is any of the library's kinds (make_lock()): a mutex, a side of
 * a read/write lock, a semaphore's lease, an election's lead. Each is a
 * zkl_lock, so the run is the same for all.
 *
 * One thread of our own: the main loop polls the self-pipe (events.c) and
 * the keeper's pipe (keeper.c), and the run is in one of four states, each
 * one case of the switch in run_lock():
 *
 *   WAITING     the async acquire is under way; a signal cancels it. The
 *               library grants with at least half a lease ahead (a grant
 *               on an old proof of the session is confirmed first: see
 *               zkl_session_set_lease_margin()), so the command starts at
 *               once.
 *   RUNNING     the keeper runs the command: signals are passed on,
 *               revoke requests too (--on-revoke), and the library's lease
 *               deadline handed to the keeper. The command's exit is not
 *               the end: processes it left running keep the lock held
 *               until they end; the keeper's exit says the last is gone,
 *               and releases.
 *   LOST        the keeper stops every process of the command (SIGTERM,
 *               SIGKILL after the grace, by the hard stop at the latest);
 *               its exit says they are gone, and releases.
 *   ORPHANED    the keeper died: its processes came to zklock (a
 *               subreaper too), which stops them itself, reaps them, then
 *               releases.
 *
 *   WAITING --granted, keeper started the command-------> RUNNING
 *   RUNNING --lost notice, lease deadline, keeper fired--> LOST
 *               (a maximum hold's node stays until LOST releases it, once
 *               the processes have stopped: see REAP_MS)
 *   RUNNING, LOST --keeper died--------------------------> ORPHANED
 *   any state --acquire failed, signal, keeper exited, last orphan
 *               reaped--> exit status
 *
 * Every exit path frees the lock and closes the session (finish()), and
 * once the keeper runs, only after it has exited (or REAP_MS after the
 * SIGKILL it owed, for processes that SIGKILL does not end).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* A loss zklock finds itself: the lease deadline passed (lease.c). */
#define LOST_OWN_LEASE 100
/* A break's mark (zkl_lock_break_mark()): the node goes when the
 * breaker's grace ends, whatever zklock does, so the command is stopped
 * now, as on a loss, and the lock released once its processes are gone. */
#define LOST_BREAK_MARK 101

/* How long after SIGKILL zklock waits for the command's processes before
 * it lets the lock go all the same: a process stuck in the kernel outlives
 * SIGKILL, and the lease is over by then (the hard stop). --max-hold: the
 * library keeps the node of a hold past its maximum until zklock releases,
 * once the processes have stopped (LOST), or until this much more than -k
 * has passed, should zklock itself never get there. */
#define REAP_MS 2000

enum state { WAITING, RUNNING, LOST, ORPHANED };

typedef struct {
  const options *o;
  zkl_session *s;
  zkl_lock *l;
  zkl_rwlock *rw;          /* --read, --write: l is one of its sides */
  char path[ZKL_PATH_MAX]; /* /locks/NAME, for messages */
  /* What is held, for messages about the hold: "lock" and "/locks/A", or
   * with several names "locks" and "/locks/A and /locks/B" (the loss of
   * any name, a revoke or break of any, is the whole's) */
  const char *held_noun;
  char held[ZKL_PATH_MAX - 8];
  enum state state;
  int64_t acquire_ms;
  bool revoke_pending; /* asked to let go before the command ran */
  int die_sig; /* a signal came before the command ran: die by it */
  int64_t token;
  char node[ZKL_PATH_MAX * ZKL_MULTI_NAMES_MAX]; /* every node, ' ' between */
  pid_t command;      /* the command's pid, as the keeper told it */
  bool same_group;    /* the command shares our process group (a terminal) */
  bool said_left;     /* -v said the command left processes running */
  int64_t kill_at_ms; /* LOST, ORPHANED: SIGKILL then */
  tree_stop orphans;  /* ORPHANED: zklock's own stop */
  pid_t orphan_group; /* ORPHANED: the command's group while unreaped */
  int64_t orphans_at; /* ORPHANED: when to look again */
  int64_t late_ms; /* how late the last wake-up was: zklock stopped or
                      starved */
} run;

/* ---------------------------------------------------------------- endings */

static void free_lock(run *r) {
  if (r->rw)
    zkl_rwlock_free(r->rw); /* its sides are not ours to free */
  else
    zkl_lock_free(r->l);
  r->rw = NULL;
  r->l = NULL;
}

static void finish(run *r) {
  free_lock(r);
  /* the waiting status's watches: answered before the handle closes (a
   * lost connection or an ended session answers them too) */
  ev_wait_answered(zkl_session_timeout(r->s));
  zkl_session_close(r->s, NULL);
  trace_flush(NULL); /* the last events: the release, the session's end */
}

/* Releases (after the command or instead of it). Returns 0 when the lock
 * was still ours, else why it was not (a ZKL_LOST_ reason). */
static int release(run *r) {
  int rc = zkl_lock_release(r->l);
  if (rc == ZKL_EEXPIRED)
    return ZKL_LOST_SESSION_EXPIRED;
  if (rc == ZKL_ELOST) /* its notice may still be on its way: the lease */
    return ZKL_LOST_LEASE_EXPIRED; /* is what a release itself finds */
  if (rc != ZKL_OK && rc != ZKL_ENOTHELD)
    cli_error("could not release %s: %s (it goes when the session closes)",
              r->held, zkl_strerror(rc));
  return 0;
}

/* Ends zklock as the signal would have, after the cleanup: a shell then
 * reports 128+sig, and a script run by bash stops on Ctrl-C as it would
 * without zklock. */
static void die_by_signal(int sig) {
  struct rlimit no_core = {0, 0};
  struct sigaction dfl;
  sigset_t set;
  fflush(NULL);
  setrlimit(RLIMIT_CORE, &no_core); /* zklock's core would help nobody */
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, NULL);
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  kill(getpid(), sig);
  exit(128 + sig); /* a signal whose default is not to terminate */
}

static int exit_code_of(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    die_by_signal(WTERMSIG(status));
  return EXIT_CANNOT_RUN;
}

/* --------------------------------------------------------------- messages */

static bool session_expired(const run *r) {
  zhandle_t *zh = zkl_session_handle(r->s); /* NULL: through the agent */
  return zh && zoo_state(zh) == ZOO_EXPIRED_SESSION_STATE;
}

/* Why the lock is lost, in words that claim no more than zklock knows. */
static const char *lost_reason_text(const run *r, int reason) {
  static char buf[512];
  int64_t silent = cli_now_ms() - lease_proven();
  int t = lease_timeout();
  size_t n;
  if (reason == ZKL_LOST_SESSION_EXPIRED || session_expired(r))
    return "the ZooKeeper session expired: the lock may already be someone "
           "else's";
  if (reason == ZKL_LOST_BROKEN)
    return "it was broken (zklock --break): its node was deleted, and the "
           "lock may already be someone else's";
  if (reason == LOST_BREAK_MARK)
    return "it is being broken (zklock --break): its node goes when the "
           "breaker's grace ends";
  if (reason == ZKL_LOST_AGENT)
    return "zklockd stopped or went away (or fell silent), and the lock "
           "with it";
  if (reason == ZKL_LOST_MAX_HOLD) {
    snprintf(buf, sizeof buf,
             "it was held for its maximum of %s (--max-hold); its node goes "
             "once the command has stopped",
             cli_duration(r->o->max_hold_ms));
    return buf;
  }
  /* The server deletes an expiring session's node, and may tell the
   * session so on its way out: after a long silence, that is the likely
   * deleter. */
  if (reason == ZKL_LOST_NODE_DELETED && silent < t)
    return "its node was deleted by someone else";
  if (reason == ZKL_LOST_NODE_DELETED)
    n = (size_t)snprintf(buf, sizeof buf,
                         "its node is gone after no answer from ZooKeeper "
                         "for %s, more than the %s session timeout: the "
                         "session has most likely expired, and the lock may "
                         "already be someone else's",
                         cli_duration(silent), cli_duration(t));
  else if (reason != ZKL_LOST_LEASE_EXPIRED && reason != LOST_OWN_LEASE)
    return "the library no longer knows its node";
  else if (silent < t)
    n = (size_t)snprintf(buf, sizeof buf,
                         "no answer from ZooKeeper for %s of the %s session "
                         "timeout: it may give the lock to another at any "
                         "moment",
                         cli_duration(silent), cli_duration(t));
  else
    n = (size_t)snprintf(buf, sizeof buf,
                         "no answer from ZooKeeper for %s, more than the %s "
                         "session timeout: the session has most likely "
                         "expired, and the lock may already be someone "
                         "else's",
                         cli_duration(silent), cli_duration(t));
  if (r->late_ms > t / 6 && n < sizeof buf)
    snprintf(buf + n, sizeof buf - n,
             " (zklock itself was stopped or starved for %s)",
             cli_duration(r->late_ms));
  return buf;
}

/* r->held: every name's path, "/locks/A", "/locks/A and /locks/B",
 * "/locks/A, /locks/B and /locks/C"; past the buffer, "/locks/A and N
 * more". */
static void describe_hold(run *r) {
  const options *o = r->o;
  char path[ZKL_PATH_MAX];
  size_t used = 0, lsep, lpath;
  int i;
  r->held_noun = o->n_names > 1 ? "locks" : "lock";
  snprintf(r->held, sizeof r->held, "%.*s", (int)sizeof r->held - 1, r->path);
  for (i = 0; o->n_names > 1 && i < o->n_names; i++) {
    const char *sep = i == 0 ? "" : i == o->n_names - 1 ? " and " : ", ";
    names_parent(path, sizeof path, o->names[i]);
    lsep = strlen(sep);
    lpath = strlen(path);
    if (used + lsep + lpath >= sizeof r->held) {
      snprintf(r->held, sizeof r->held, "%.*s and %d more",
               (int)sizeof r->held - 32, r->path, o->n_names - 1);
      return;
    }
    memcpy(r->held + used, sep, lsep);
    memcpy(r->held + used + lsep, path, lpath + 1);
    used += lsep + lpath;
  }
}

/* ------------------------------------------------------------ transitions */

/* WAITING: granted, and lost before the command ran. */
static int lost_before_start(run *r, int reason) {
  cli_error("lost the %s %s before the command started: %s", r->held_noun,
            r->held, lost_reason_text(r, reason));
  release(r);
  finish(r);
  return EXIT_LOST;
}

/* RUNNING -> LOST: the keeper stops every process of the command, unless
 * it began already (it fired: zklock was late). */
static void begin_lost(run *r, int reason, int64_t notice_ms) {
  int64_t now = cli_now_ms(), at;
  const char *why = lost_reason_text(r, reason);
  if (keeper_stop(now + r->o->grace_ms, &at)) {
    cli_error("lost the %s %s: %s; stopping the command", r->held_noun,
              r->held, why);
    cli_verbose_msg("the keeper stops the command (pid %ld) and its "
                    "processes %lld ms after the loss notice: SIGTERM now, "
                    "SIGKILL in %s%s",
                    (long)r->command, (long long)(now - notice_ms),
                    cli_duration(at > now ? at - now : 0),
                    at < now + r->o->grace_ms ? " (-k cut to what the lease "
                                                "leaves)"
                                              : "");
  } else {
    cli_error("lost the %s %s: %s; the keeper has stopped the command",
              r->held_noun, r->held, why);
  }
  r->kill_at_ms = at;
  r->state = LOST;
}

/* Passes a revoke request on to the command (RUNNING), or says it came. */
static void pass_revoke(run *r) {
  if (!r->o->revoke_sig) {
    cli_error("asked to let go of %s; the command is not told (see "
              "--on-revoke)",
              r->held);
    return;
  }
  cli_error("asked to let go of %s: sending %s to the command", r->held,
            r->o->revoke_sig_name);
  keeper_signal(r->o->revoke_sig);
}

/* "signal 9", "status 0": a wait status, for messages. */
static const char *how_ended(int status) {
  static char buf[32];
  snprintf(buf, sizeof buf, "%s %d", WIFSIGNALED(status) ? "signal" : "status",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  return buf;
}

/* RUNNING or LOST: the keeper died (SIGKILL, most likely) before the last
 * process of the command: those left came to zklock, a subreaper too.
 * Nothing would stop them should zklock die now, so zklock stops them
 * itself, as on a loss, and exits 4 once they are gone. */
static void keeper_died(run *r, pid_t gone, int status) {
  int64_t now = cli_now_ms(), at = now + r->o->grace_ms,
          hard = keeper_hard_stop(), theirs;
  pid_t group = 0;
  siginfo_t si;
  if (keeper_stopping(&theirs) && theirs < at)
    at = theirs;
  if (at > hard)
    at = hard;
  /* its process group is ours to signal only while it is our unreaped
   * child: then its id cannot be reused */
  memset(&si, 0, sizeof si);
  if (!r->command)
    r->command = keeper_command();
  if (!r->same_group && r->command > 0 &&
      waitid(P_PID, (id_t)r->command, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
    group = r->command;
  keeper_end();
  cli_error("the keeper (pid %ld) died (%s): nothing would stop the "
            "command's processes should zklock be killed; stopping them",
            (long)gone, how_ended(status));
  r->kill_at_ms = at;
  r->orphan_group = group;
  tree_stop_begin(&r->orphans, group, at);
  r->orphans_at = now;
  r->state = ORPHANED;
}

/* Through zklockd: should zklock die, the agent keeps the lock until the
 * keeper has ended (by the lease's end at the latest), so the next holder
 * never overlaps the command's processes. Direct, the session outlives
 * zklock that long by itself. Returns -1 to go on, else an exit code (the
 * keeper told to quit). */
static int add_keeper(run *r) {
  int rc = zkl_session_add_worker(r->s, keeper_pid()), status;
  if (rc == ZKL_OK)
    return -1;
  if (rc == ZKL_EINVAL && r->o->agent) {
    cli_error("zklockd at %s is too old to wait for the command's "
              "processes: should zklock be killed, the lock may pass before "
              "they end (restart zklockd to update it)",
              r->o->agent);
    return -1;
  }
  keeper_go(false);
  keeper_reap(&status, true);
  keeper_end();
  if (rc == ZKL_EAGENT || rc == ZKL_ECLOSED)
    return lost_before_start(r, ZKL_LOST_AGENT);
  cli_error("cannot name the command's keeper a worker of the session: %s; "
            "not running the command",
            zkl_strerror(rc));
  release(r);
  finish(r);
  return EXIT_CANNOT_RUN;
}

/* The keeper could not start the command (errno err; pid: the child whose
 * exec failed, or 0 when the fork did). Returns the exit status a shell
 * gives: 127 not found, else 126. */
static int command_not_started(run *r, pid_t pid, int err) {
  int status;
  const char *word = r->o->command[0];
  if (pid && err == ENOENT && !r->o->command_string && !r->o->command[1] &&
      strchr(word, ' ') && !strchr(word, '/'))
    /* consul lock's form, a command line in one quoted word: flock's is
     * -c */
    cli_error("%s: %s; it is one word with a space: to run it as a shell "
              "command line, give it with -c (zklock [OPTIONS] NAME -c %s)",
              cli_quote(word), strerror(err), cli_quote(word));
  else if (pid)
    cli_error("%s: %s", cli_quote(word), strerror(err));
  else
    cli_error("cannot run %s: %s", cli_quote(r->o->command[0]),
              strerror(err));
  keeper_reap(&status, true); /* it reaps the child and ends */
  keeper_end();
  release(r);
  finish(r);
  return pid && err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}

/* -> RUNNING: starts the keeper, tells zklockd of it, then has it start
 * the command. Returns -1 to go on, else an exit code. */
static int start_command(run *r) {
  int64_t deadline = lease_deadline(), m = lease_margin();
  char what[sizeof r->held + 8];
  keeper_spec ks;
  pid_t pid;
  int rc, status;
  char **env;
  /* 0: the lease lapsed since the grant; the lost notice is on its way */
  if (deadline == 0)
    return lost_before_start(r, ZKL_LOST_LEASE_EXPIRED);
  if (r->revoke_pending && zkl_lock_break_mark(r->l))
    return lost_before_start(r, LOST_BREAK_MARK);
  cli_verbose_msg("the lease has %lld ms left",
                  (long long)(deadline - cli_now_ms()));
  snprintf(what, sizeof what, "%s %s", r->held_noun, r->held);
  env = child_env(r->token, zkl_lock_name(r->l), r->o->names, r->o->n_names,
                  r->node);
  if (!env) {
    cli_error("cannot run %s: out of memory", cli_quote(r->o->command[0]));
    release(r);
    finish(r);
    return EXIT_CANNOT_RUN;
  }
  memset(&ks, 0, sizeof ks);
  ks.what = what;
  ks.command = r->o->command;
  ks.envp = env;
  ks.grace_ms = r->o->grace_ms;
  ks.own_group = !r->same_group;
  ks.margin_ms = (int)m;
  ks.fire_at_ms = deadline + m / 4;
  ks.hard_at_ms = deadline + m / 2;
  rc = keeper_start(&ks);
  child_env_free(env); /* the keeper has it since its exec */
  if (rc != 0) {
    cli_error("cannot start the command's keeper: %s; not running the "
              "command",
              strerror(errno));
    release(r);
    finish(r);
    return EXIT_CANNOT_RUN;
  }
  if ((rc = add_keeper(r)) >= 0)
    return rc;
  keeper_go(true);
  rc = keeper_wait_started(&pid);
  r->state = RUNNING;
  if (rc == KEEPER_NOT_IN_TIME) { /* it ends at once: nothing started */
    keeper_reap(&status, true);
    keeper_end();
    return lost_before_start(r, LOST_OWN_LEASE);
  }
  if (rc < 0) { /* it died before it said */
    pid_t gone = keeper_pid();
    bool reaped = false;
    int ignored;
    keeper_reap(&status, true);
    if (tree_reap(0, &ignored, &reaped)) { /* what it started came to us */
      keeper_died(r, gone, status);
      return -1;
    }
    keeper_end();
    cli_error("the command's keeper (pid %ld) ended (%s) before it started "
              "the command; not running it",
              (long)gone, how_ended(status));
    release(r);
    finish(r);
    return EXIT_CANNOT_RUN;
  }
  if (rc > 0)
    return command_not_started(r, pid, rc);
  r->command = pid;
  cli_verbose_msg("running %s (pid %ld%s)", cli_quote(r->o->command[0]),
                  (long)pid,
                  r->same_group ? "" : ", in its own process group");
  if (r->revoke_pending)
    pass_revoke(r);
  return -1;
}

/* RUNNING: asked to let go. A break's mark is a loss to come: the command
 * is stopped now, so that its processes are gone, and the lock released,
 * before the breaker deletes the node. A plain request is the command's
 * to honour (--on-revoke). */
static void on_revoke(run *r) {
  if (zkl_lock_break_mark(r->l))
    begin_lost(r, LOST_BREAK_MARK, cli_now_ms());
  else
    pass_revoke(r);
}

/* "a" or "an", for a kind's name: "an election". */
static const char *article(const char *word) {
  return word[0] && strchr("aeiou", word[0]) ? "an" : "a";
}

/* The acquire was refused: the name is a lock of another family. */
static void refused_for_kind(const run *r) {
  static const char *const ours[] = {
      [KIND_MUTEX] = "mutex",         [KIND_READ] = "read lock",
      [KIND_WRITE] = "write lock",    [KIND_SEMAPHORE] = "semaphore",
      [KIND_ELECT] = "election"};
  static const struct {
    const char *kind, *how;
  } flags[] = {{"mutex", "zklock without a kind option"},
               {"read lock", "--read"},
               {"write lock", "--write"},
               {"semaphore", "--limit"},
               {"election", "--elect"}};
  const char *other = zkl_lock_other_kind(r->l), *how = NULL;
  size_t i;
  if (r->o->quiet)
    return;
  for (i = 0; other && i < sizeof flags / sizeof flags[0]; i++)
    if (strcmp(flags[i].kind, other) == 0)
      how = flags[i].how;
  if (other && how)
    cli_error("could not acquire %s: it is the name of %s %s (%s), which "
              "%s %s cannot share",
              r->path, article(other), other, how, article(ours[r->o->kind]),
              ours[r->o->kind]);
  else
    cli_error("could not acquire %s: %s", r->path, zkl_strerror(ZKL_EKIND));
}

/* Whether the waiting status and the "not acquired" message of -n and -w
 * are said: on a terminal, or with -v, never with -q. As flock(1): a cron
 * job (stderr a pipe or a file) that finds the lock busy is quiet, where
 * every contended run used to mail its lines (issue 34). Errors are
 * said whatever this says. */
static bool tells_wait(const options *o) {
  return !o->quiet && (cli_verbose || isatty(STDERR_FILENO));
}

/* Whether the session's connection was lost and is not back (or the
 * session is over): then a wait that ran out says nothing of the lock. */
static bool out_of_reach(const zkl_session *s) {
  zkl_session_stats st;
  return zkl_session_get_stats(s, &st) != ZKL_OK ||
         st.disconnects > st.reconnects;
}

/* WAITING: the acquire completed. Returns -1 to go on, else an exit code. */
static int on_acquired(run *r, const ev_batch *b) {
  int rc = b->acquire_rc;
  status_clear();
  if (r->die_sig) {
    if (rc == ZKL_OK)
      release(r);
    finish(r);
    die_by_signal(r->die_sig);
  }
  /* -w ran out with ZooKeeper out of reach: an outage, not a busy lock,
   * exit 3 and a line even with -q, as when no session opened within -w
   * (connect.c), so that cron does not read it as "another host has it"
   * (issue 34). Who held it when last seen is not news enough to say
   * otherwise: it may have let go since. */
  if (rc == ZKL_ETIMEDOUT && out_of_reach(r->s)) {
    cli_error("gave up waiting for %s after %s: the connection to ZooKeeper "
              "was lost during the wait and is not back, so whether it is "
              "free is not known",
              r->path, r->o->wait_arg ? r->o->wait_arg : "the wait");
    finish(r);
    return EXIT_ZOOKEEPER;
  }
  if (rc == ZKL_EBUSY || rc == ZKL_ETIMEDOUT) {
    char holder[600], path[ZKL_PATH_MAX];
    const char *verb = r->o->kind == KIND_ELECT ? "led" : "held";
    if (tells_wait(r->o)) {
      /* several names: the first that someone holds is the one in the
       * way (our nodes are gone by now) */
      int held = queue_first_held(r->s, r->o->names, r->o->n_names, holder,
                                  sizeof holder);
      if (held < 0)
        snprintf(holder, sizeof holder, "another owner");
      names_parent(path, sizeof path, r->o->names[held < 0 ? 0 : held]);
      if (r->o->wait_arg)
        cli_error("gave up waiting for %s after %s (%s by %s)", path,
                  r->o->wait_arg, verb, holder);
      else
        cli_error("%s is %s by %s; not waiting", path, verb, holder);
    }
    finish(r);
    return r->o->conflict_code;
  }
  if (rc == ZKL_ECONNECT) { /* -n: the one exchange could not happen */
    cli_error("could not try %s: the connection to ZooKeeper was lost "
              "before it answered",
              r->path);
    finish(r);
    return EXIT_ZOOKEEPER;
  }
  if (rc == ZKL_EKIND) {
    refused_for_kind(r);
    finish(r);
    return EXIT_KIND;
  }
  if (rc == ZKL_ELIMIT) {
    /* The semaphore is in use with another limit: refused at once, as a
     * name of another kind is (their lease nodes say their limit), or,
     * among contenders whose nodes say none (Curator's), a certain excess
     * when the wait ran out. Nothing of ours is left either way. */
    if (!r->o->quiet) {
      int theirs = queue_other_limit(r->s, r->o->name, r->o->limit);
      if (theirs > 0)
        cli_error("could not acquire %s: it is a semaphore of %d leases "
                  "(--limit %d), not %d",
                  r->path, theirs, theirs, r->o->limit);
      else
        cli_error("could not acquire %s: %s (--limit %d here)", r->path,
                  zkl_strerror(rc), r->o->limit);
    }
    finish(r);
    return EXIT_KIND;
  }
  /* Granted, but the lease ran out before the grant was told: the release
   * then says ZKL_ELOST once (a queue node deleted under a waiter was
   * never held, and its release says ZKL_ENOTHELD). */
  if (rc == ZKL_ELOST && zkl_lock_release(r->l) == ZKL_ELOST)
    return lost_before_start(r, b->lost ? b->lost_reason
                                        : ZKL_LOST_LEASE_EXPIRED);
  if (rc != ZKL_OK) {
    /* several names: the one ZooKeeper refused, not the first */
    const char *refused = zkl_lock_refused_name(r->l);
    char path[ZKL_PATH_MAX];
    if (refused)
      names_parent(path, sizeof path, refused);
    else
      snprintf(path, sizeof path, "%s", r->path);
    cli_error("could not acquire %s: %s%s", path, zkl_strerror(rc),
              rc == ZNOAUTH ? " (the lock's nodes belong to other "
                              "credentials: see --auth)"
                            : "");
    finish(r);
    return EXIT_ZOOKEEPER;
  }
  r->token = b->token;
  if (b->lost)
    return lost_before_start(r, b->lost_reason);
  /* ZKLOCK_NODE: the node that holds (a semaphore's lease node, not its
   * gate's), or every name's */
  if ((r->o->n_names > 1
           ? zkl_lock_get_node_paths(r->l, r->node, sizeof r->node)
           : zkl_lock_get_node_path(r->l, r->node, sizeof r->node)) != ZKL_OK)
    return lost_before_start(r, 0);
  return start_command(r);
}

/* RUNNING or LOST: the keeper has exited, so every process of the command
 * is gone. Returns the exit code. */
static int on_keeper_exit(run *r) {
  int status = 0, reason;
  int64_t theirs;
  ev_batch late;
  bool exited = keeper_command_exited(&status);
  if (keeper_fired(&theirs) && r->state == RUNNING) {
    cli_error("lost the %s %s: %s; the keeper stopped the command",
              r->held_noun, r->held, lost_reason_text(r, LOST_OWN_LEASE));
    r->state = LOST;
  }
  keeper_end();
  if (r->state == LOST || !exited) {
    release(r);
    finish(r);
    return EXIT_LOST;
  }
  if (r->said_left)
    cli_verbose_msg("the last process the command left has ended; "
                    "releasing");
  else
    cli_verbose_msg("the command exited (%s); releasing", how_ended(status));
  if ((reason = release(r)) != 0) {
    ev_take(&late); /* the notice, if it came meanwhile, says more */
    cli_error("lost the %s %s while the command ran: %s", r->held_noun,
              r->held,
              lost_reason_text(r, late.lost ? late.lost_reason : reason));
    finish(r);
    return EXIT_LOST;
  }
  finish(r);
  /* --hold: a SIGTERM or SIGINT (zklock passes it on) is how it ends */
  if (r->o->hold && WIFSIGNALED(status) &&
      (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGINT))
    return 0;
  return exit_code_of(status);
}

/* LOST, ORPHANED: REAP_MS after SIGKILL, processes are left (stuck in the
 * kernel, or a keeper that is stopped): the lease is over by now, so the
 * lock goes all the same. */
static int give_up(run *r) {
  cli_error("the command's processes have not ended %s after SIGKILL "
            "(stuck in the kernel?): releasing the %s all the same",
            cli_duration(REAP_MS), r->held_noun);
  keeper_end(); /* a keeper still there waits on for them */
  release(r);
  finish(r);
  return EXIT_LOST;
}

/* ORPHANED: reaps what has exited, and goes on with the stop. Returns -1
 * to go on, else the exit code once the last is gone. */
static int on_orphans(run *r, int64_t now) {
  int status;
  bool reaped = false;
  if (!tree_reap(r->command, &status, &reaped)) {
    cli_verbose_msg("the command's processes are gone; releasing");
    release(r);
    finish(r);
    return EXIT_LOST;
  }
  if (reaped)
    r->orphan_group = 0; /* its id may be reused from now on */
  if (now >= r->kill_at_ms + REAP_MS)
    return give_up(r);
  r->orphans_at = tree_stop_step(&r->orphans, r->orphan_group, now);
  return -1;
}

/* RUNNING, LOST or ORPHANED: one wake-up. Returns -1 to go on, else an
 * exit code. */
static int on_running(run *r, const ev_batch *b) {
  int64_t now = cli_now_ms(), theirs, deadline = lease_deadline();
  int64_t m = lease_margin();
  int i, status;
  pid_t gone;
  if (r->state == RUNNING) {
    /* deadline 0: the library no longer counts the lock as held, so its
     * lost notice is on its way; the keeper is not renewed meanwhile. */
    if (b->lost)
      begin_lost(r, b->lost_reason, b->lost_at_ms);
    else if (deadline != 0 && now >= deadline)
      begin_lost(r, LOST_OWN_LEASE, now);
    else if (keeper_fired(&theirs)) /* it beat a late zklock to it */
      begin_lost(r, LOST_OWN_LEASE, now);
    else if (deadline != 0)
      keeper_renew(deadline + m / 4, deadline + m / 2);
  }
  if (r->state == RUNNING && b->revokes > 0)
    on_revoke(r);
  for (i = 0; i < b->nsignals && r->state != ORPHANED; i++)
    if (b->forward[i]) {
      cli_verbose_msg("passing on %s", strsignal(b->signals[i]));
      keeper_signal(b->signals[i]);
    }
  if (r->state == ORPHANED)
    return on_orphans(r, now);
  gone = keeper_pid();
  if (keeper_reap(&status, false)) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      return on_keeper_exit(r);
    keeper_died(r, gone, status);
    return on_orphans(r, now);
  }
  if (r->state == RUNNING && !r->said_left &&
      keeper_command_exited(&status)) {
    cli_verbose_msg("the command exited (%s), leaving processes running: "
                    "the %s stays held until they end",
                    how_ended(status), r->held_noun);
    r->said_left = true;
  }
  if (r->state == LOST && now >= r->kill_at_ms + REAP_MS)
    return give_up(r);
  return -1;
}

/* ------------------------------------------------------------- the loop */

/* Has a controlling terminal: then the command stays in zklock's process
 * group, so that it can use the terminal and gets its signals (Ctrl-C)
 * directly. Without one (cron, services) it gets a group of its own, so
 * that signals reach the processes it starts too. */
static bool has_terminal(void) {
  int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return false;
  close(fd);
  return true;
}

/* The lock of the kind asked for. Returns a ZKL_ code. */
static int make_lock(run *r) {
  const options *o = r->o;
  int rc;
  switch (o->kind) {
  case KIND_READ:
  case KIND_WRITE:
    rc = zkl_rwlock_new(&r->rw, r->s, o->name);
    if (rc == ZKL_OK)
      r->l = o->kind == KIND_READ ? zkl_rwlock_read(r->rw)
                                  : zkl_rwlock_write(r->rw);
    return rc;
  case KIND_SEMAPHORE:
    return zkl_lock_new_semaphore(&r->l, r->s, o->name, o->limit);
  case KIND_ELECT:
    return zkl_lock_new_election(&r->l, r->s, o->name, o->elect_id);
  default:
    if (o->n_names > 1)
      return zkl_lock_new_multi(&r->l, r->s, (const char *const *)o->names,
                                o->n_names);
    return zkl_lock_new(&r->l, r->s, o->name);
  }
}

/* When the loop must wake up at the latest (monotonic ms), 0: never. */
static int64_t next_wake(run *r, int64_t now) {
  int64_t at, deadline;
  switch (r->state) {
  case RUNNING:
    /* The library renews the lease every T/6: pass it on to the keeper
     * twice as often, and look at the deadline itself when it comes. */
    at = now + (lease_timeout() / 12 > 10 ? lease_timeout() / 12 : 10);
    deadline = lease_deadline();
    return deadline != 0 && deadline < at ? deadline : at;
  case LOST:
    return r->kill_at_ms + REAP_MS;
  case ORPHANED:
    return r->orphans_at;
  default:
    return 0;
  }
}

int run_lock(const options *o) {
  run r;
  char *info;
  int rc, mode, bound = o->connect_ms, wait = o->wait_ms;
  int64_t t0 = cli_now_ms();

  memset(&r, 0, sizeof r);
  r.o = o;
  names_parent(r.path, sizeof r.path, o->name);
  describe_hold(&r);
  if (ev_init() != 0) {
    cli_error("cannot create a pipe: %s", strerror(errno));
    return EXIT_ZOOKEEPER;
  }
  /* -w counts from now: connecting is part of the wait. */
  if (wait > 0 && wait < bound)
    bound = wait;
  /* Signals keep their default action until the session is open: nothing
   * to clean up before. */
  r.s = connect_or_exit(o, bound);
  rc = lease_init(r.s, t0, o->server_tick_ms); /* the leader heard us after
                                                 we began */
  /* The events: -v traces them; through the agent they also redraw the
   * waiting status (status.c), which has no handle for watches there. */
  if (rc == ZKL_OK &&
      (cli_verbose || (o->agent && tells_wait(o) && o->wait_ms != 0)))
    rc = zkl_session_on_event(r.s, ev_event_cb, NULL);
  if (rc == ZKL_OK && cli_verbose)
    trace_servers_now(r.s, o->agent ? NULL : o->parsed_hosts.connect);
  if (rc == ZKL_OK)
    rc = make_lock(&r);
  if (rc == ZKL_OK && o->acl != ZKL_ACL_OPEN)
    rc = zkl_lock_set_acl(r.l, o->acl);
  if (rc == ZKL_OK && o->layout != ZKL_LAYOUT_CURATOR)
    rc = zkl_lock_set_layout(r.l, (zkl_layout)o->layout);
  if (rc == ZKL_OK && o->max_hold_ms > 0)
    rc = zkl_lock_set_max_hold(r.l, o->max_hold_ms);
  /* A bounded hold ends as a loss zklock controls: the command is stopped
   * (LOST), then the release lets the node go; the library's grace is the
   * bound should zklock not get that far. */
  if (rc == ZKL_OK && o->max_hold_ms > 0)
    rc = zkl_lock_set_max_hold_grace(r.l,
                                     o->grace_ms > INT_MAX - REAP_MS
                                         ? INT_MAX
                                         : o->grace_ms + REAP_MS);
  /* A command holds for long, and is told of a break or a deletion at
   * once, whatever its age: one read per acquire, nothing for a process. */
  if (rc == ZKL_OK)
    rc = zkl_lock_set_watch_after(r.l, 0);
  if (rc != ZKL_OK) {
    cli_error("cannot use the lock %s: %s", r.path, zkl_strerror(rc));
    free_lock(&r);
    zkl_session_close(r.s, NULL);
    return EXIT_ZOOKEEPER;
  }
  if (o->kind != KIND_ELECT) { /* a candidate's node holds its id */
    info = o->info ? NULL : queue_owner_info(o->command);
    zkl_lock_set_owner_info(r.l, o->info ? o->info : info);
    free(info);
  }
  zkl_lock_on_lost(r.l, ev_lost_cb, NULL);
  zkl_lock_on_revoke(r.l, ev_revoke_cb, NULL);

  r.same_group = has_terminal();
  ev_catch_signals(r.same_group);
  mode = !tells_wait(o) || o->wait_ms == 0 ? 0
         : isatty(STDERR_FILENO)            ? 2
                                            : 1; /* -v */
  status_init(mode, r.s, r.l, o);
  status_arm();
  r.acquire_ms = cli_now_ms();
  if (wait > 0) /* what connecting left of it; at least one try */
    wait = wait > r.acquire_ms - t0 ? wait - (int)(r.acquire_ms - t0) : 0;
  rc = zkl_lock_acquire_async(r.l, wait, ev_acquire_cb, NULL);
  if (rc != ZKL_OK) {
    cli_error("could not acquire %s: %s", r.path, zkl_strerror(rc));
    finish(&r);
    return EXIT_ZOOKEEPER;
  }
  r.state = WAITING;

  for (;;) {
    struct pollfd pfd[2] = {{ev_fd(), POLLIN, 0}, {keeper_fd(), POLLIN, 0}};
    int64_t now = cli_now_ms(), wake = next_wake(&r, now);
    int timeout = -1, i, code = -1;
    ev_batch b;
    if (wake)
      timeout = wake <= now ? 0 : wake - now > INT_MAX ? INT_MAX
                                                       : (int)(wake - now);
    if (poll(pfd, 2, timeout) < 0 && errno != EINTR) {
      cli_error("poll: %s", strerror(errno));
      abort();
    }
    r.late_ms = wake ? cli_now_ms() - wake : 0;
    ev_drain();
    if (pfd[1].fd >= 0 && pfd[1].revents)
      keeper_drain();
    ev_take(&b);
    trace_flush(r.s);

    switch (r.state) {
    case WAITING:
      /* The library tells waiters too; granted in the same batch, the
       * request may have been for the holder we now are. */
      if (b.revokes > 0 && b.acquired && b.acquire_rc == ZKL_OK)
        r.revoke_pending = true;
      else if (b.revokes > 0)
        cli_verbose_msg("asked to let go of %s while waiting for it: "
                        "nothing to let go of yet",
                        r.path);
      for (i = 0; i < b.nsignals && !r.die_sig; i++) {
        r.die_sig = b.signals[i];
        cli_verbose_msg("%s while waiting: canceling", strsignal(r.die_sig));
        zkl_lock_cancel(r.l); /* ZKL_EIDLE: the callback is on its way */
      }
      if (b.acquired)
        code = on_acquired(&r, &b);
      else if (b.queue_changed)
        status_refresh();
      break;
    case RUNNING:
    case LOST:
    case ORPHANED:
      code = on_running(&r, &b);
      break;
    }
    if (code >= 0)
      return code;
  }
}
