/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h - what the files of the zklock command share.
 *
 *   zklock.c     main(): the standard descriptors, then a run, a one-shot
 *                question (--list, --leader, --revoke) or --break, or the
 *                keeper's own main
 *   options.c    the command line: parsing, checking, --help
 *   run.c        a run: the main loop and its states (waiting for the lock,
 *                running the command, lost), for
 *                every kind of lock (mutex, either side of a read/write
 *                lock, a semaphore's lease, an election's lead)
 *   connect.c    opening the session, and saying exactly why it failed
 *   lease.c      the library's lease as zklock and its keeper enforce it:
 *                the deadline, the margin, the last proof of life
 *   keeper.c     zklock's end of the keeper, the process that runs the
 *                command and keeps every process of it under the lock
 *                until the last one is gone (keeper.h: the page they share)
 *   keeper_main.c  the keeper process itself
 *   tree.c       every process under the keeper (or under zklock, once its
 *                keeper died): stopping them all, knowing they are gone
 *   child.c      starting processes (the keeper, the command) and
 *                signalling them
 *   trace.c      -v: the library's events, one line each, with the time
 *                each happened
 *   status.c     the waiting status, kept up to date from a watch
 *   overview.c   every lock under a prefix: --list PREFIX/, --watch
 *   format.c     how --list PREFIX/ prints: a table, JSON, Prometheus
 *   break.c      --break: a stuck lock's holders broken (zkl_name_break())
 *   queue.c      a lock's contenders as zkl_name_list() shows them, for
 *                every kind of lock: --list, --leader, --revoke, who holds
 *                it (the waiting line, the holder named when -n gives up)
 *   events.c     the self-pipe: signal handlers and library callbacks post
 *                events there, the main loop polls it
 *   names.c      connect strings: why one is refused, in words; a lock's
 *                parent znode
 *   msg.c        messages on stderr, and user input quoted as typed
 *
 * Calls go one way, down this list: run.c uses everything below it, and
 * nothing below calls back up (msg.c and events.c call no file of ours).
 * Only the public API is used: <zklock.h>, plus the ZooKeeper client on
 * zkl_session_handle() for the waiting status's child watches, the chroot
 * check, the session's state (in a loss message, before -v's lookups), and
 * the ids of an election's candidates and each contender's session (JSON)
 * (zkl_name_list() carries neither).
 */
#ifndef ZKLOCK_CLI_H
#define ZKLOCK_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <zklock.h>

/* Exit statuses (see zklock(1)). */
#define EXIT_USAGE 2
#define EXIT_ZOOKEEPER 3
#define EXIT_LOST 4
#define EXIT_KIND 5 /* the name is a lock of another kind (ZKL_EKIND) */
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND 127

/* The argument that turns the zklock binary into its keeper (keeper.c);
 * never typed by a user. */
#define KEEPER_ARG "--internal-keeper"

/* CLOCK_MONOTONIC in ms: one clock for zklock, its keeper and the
 * library's lease (the kernel's monotonic clock is the same in every
 * process). */
static inline int64_t cli_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ msg.c */

extern bool cli_verbose;
/* "zklock: " + the message + newline on stderr; cli_verbose_msg only with
 * -v, and with the time after "zklock: " (cli_verbose_at: the time given,
 * CLOCK_REALTIME); cli_usage_error exits 2 after it. Main thread (or the
 * keeper) only. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_verbose_msg(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
void cli_verbose_at(const struct timespec *at, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A wall-clock time (Unix ms) as ISO 8601 local time with the offset,
 * "2026-11-23T12:01:07+01:00", with_ms "2026-11-23T12:01:07.123+01:00",
 * into buf (40 bytes are enough); "-" if it cannot be shown. */
void cli_iso_time(char *buf, size_t len, int64_t unix_ms, bool with_ms);
void cli_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
/* s between single quotes, as typed: control characters, invalid UTF-8,
 * C1 controls, quotes and backslashes escaped (\t, \x1b, \u009b, \', \\),
 * cut with "..." past 200 bytes. The result lives in one of 4 static
 * buffers: good for one message. */
const char *cli_quote(const char *s);
/* Copies s into out (size len) as one line for tab-separated output:
 * control bytes become '?'; cut at a UTF-8 character boundary. */
void cli_printable(char *out, size_t len, const char *s);
/* "1.8 s", "250 ms": a duration for messages. One of 4 static buffers. */
const char *cli_duration(int64_t ms);

/* ---------------------------------------------------------------- names.c */

/* The lock's parent znode, ZKL_ROOT "/" name, or name itself when it is a
 * full path (it starts with '/'), into buf (ZKL_PATH_MAX). */
void names_parent(char *buf, size_t len, const char *name);
/* The znode --list PREFIX/ walks: ZKL_ROOT for "" (--list /). */
void names_prefix_parent(char *buf, size_t len, const char *prefix);

/* One host of a connect string: "host:port" split at the last ':', as the
 * ZooKeeper client splits it, or "[IPv6-address]:port"; the port 2181 when
 * none is given. */
typedef struct {
  char host[256]; /* an IPv6 address without its brackets */
  char port[8];
  bool bracketed; /* it was given in brackets: shown with them */
} host_entry;
#define HOSTS_MAX 64
typedef struct {
  host_entry host[HOSTS_MAX];
  int count;
  char chroot[ZKL_PATH_MAX]; /* "" when none */
  char connect[ZKL_SERVERS_MAX]; /* for the client: every host with its
                                    port, without brackets, and the chroot */
} host_list;
/* Parses "host[:port][,host[:port]...][/chroot]". Returns NULL and fills
 * out, or a phrase saying what is wrong (static). */
const char *names_parse_hosts(const char *hosts, host_list *out);

/* -------------------------------------------------------------- options.c */

/* What zklock does (options.c sets exactly one). */
enum cli_action {
  ACT_RUN,    /* take the lock, run the command */
  ACT_LIST,   /* --list */
  ACT_LEADER, /* --leader */
  ACT_REVOKE, /* --revoke */
  ACT_BREAK   /* --break */
};

/* How --list prints (--format). */
enum cli_format { FORMAT_TABLE, FORMAT_JSON, FORMAT_PROMETHEUS };

/* Said after a mistake made with -s: flock(1)'s -s is a shared lock. */
#define CLI_S_HINT                                                             \
  " (-s names ZooKeeper's servers here, HOST[:PORT],...; flock's -s, a "        \
  "shared lock, is --shared)"

/* Which lock a run takes. */
enum cli_kind {
  KIND_MUTEX,     /* the default */
  KIND_READ,      /* --read: the read side of a read/write lock */
  KIND_WRITE,     /* --write: its write side */
  KIND_SEMAPHORE, /* --limit N: one of N leases */
  KIND_ELECT      /* --elect ID: the lead of an election */
};

typedef struct {
  const char *hosts;
  bool hosts_flag; /* the hosts came from -s (for flock(1)'s -s hint) */
  host_list parsed_hosts;
  int session_ms;
  int connect_ms; /* --connect-timeout */
  bool no_follow; /* --no-follow-config */
  const char *agent; /* --agent or ZKLOCK_AGENT: zklockd's socket, or NULL */
  int server_tick_ms; /* --server-tick: the servers' tickTime; 0: T/2 */
  const char *wait_arg; /* -w as given, for messages ("1 s", "500ms") */
  int wait_ms;          /* -1: without bound, 0: -n */
  int conflict_code;
  int grace_ms;
  bool quiet;
  const char *info; /* --info, or NULL for "zklock: COMMAND..." */
  char *auth;       /* --auth or ZKLOCK_AUTH, "scheme:credentials" */
  size_t auth_scheme_len;
  int acl; /* ZKL_ACL_OPEN or ZKL_ACL_CREATOR */
  int layout; /* --layout: ZKL_LAYOUT_CURATOR (default) or ZKL_LAYOUT_KAZOO */
  int action;          /* ACT_* */
  const char *target;  /* the NAME of --list, --leader, --revoke */
  bool no_header;
  const char *prefix;  /* --list PREFIX/: PREFIX ("" for /), else NULL */
  int format;          /* --format: FORMAT_* */
  bool format_set;
  bool watch;          /* --watch */
  int kind;            /* KIND_* */
  int limit;           /* KIND_SEMAPHORE: N */
  const char *elect_id; /* KIND_ELECT: ID */
  int revoke_sig;      /* --on-revoke: the signal, 0: none */
  const char *revoke_sig_name; /* ... as "SIGUSR1" */
  const char *name;    /* the first NAME */
  char **names;        /* every NAME (several: one multi-lock), in the
                          order given; main() frees the array */
  int n_names;
  char **command;
  const char *command_string; /* -c STRING: command is sh -c STRING */
  bool hold; /* --hold: the command prints "TOKEN NODE" and reads stdin to
                its end; SIGTERM or SIGINT ending it is exit 0 */
  int break_grace_ms; /* --break: --grace */
  int max_hold_ms;    /* --max-hold; 0: none */
#define LABELS_MAX 16
  const char *label[LABELS_MAX]; /* --label K=V, as given (checked) */
  int n_labels;
} options;

/* Parses and checks argv (exits 2 with a message on bad usage, 0 after
 * --help or --version). May overwrite the credentials of --auth in argv so
 * that ps does not show them. */
void options_parse(int argc, char **argv, options *o);

/* -------------------------------------------------------------- connect.c */

/* Opens the session (waiting at most bound_ms for a server), adds the
 * credentials, checks the chroot. On failure says which of "bad connect
 * string" (exits 2), "cannot resolve", "refused", "no answer", "no such
 * chroot", "credentials refused" happened, and exits 3. */
zkl_session *connect_or_exit(const options *o, int bound_ms);

/* ---------------------------------------------------------------- events.c */

/* The signals zklock catches: forwarded to the command while it runs, and
 * while waiting, a cancel of the acquire. */
extern const int cli_signals[];
extern const int cli_signal_count;

/* Creates the self-pipe. Returns 0, or -1 with errno. */
int ev_init(void);
/* Remembers the dispositions and the mask zklock was started with (the
 * command gets them back), then catches cli_signals (except those that
 * were ignored at startup: those stay ignored, for the command too, as a
 * shell does) and SIGCHLD, and ignores SIGPIPE. same_group: the command
 * will share zklock's process group, so signals the kernel sends to the
 * whole group (a terminal's Ctrl-C) reach it without zklock's help and are
 * not forwarded. */
void ev_catch_signals(bool same_group);
/* Puts back, in a child between fork and exec, the dispositions and mask
 * zklock was started with. Async-signal-safe. */
void ev_restore_signals_in_child(void);
/* The read end, for poll(). */
int ev_fd(void);
/* Empties the pipe (call after poll said it is readable). */
void ev_drain(void);
/* Async-signal-safe and non-blocking: wakes the main loop. */
void ev_wake(void);

/* What happened since the last call. */
typedef struct {
  int signals[8];  /* caught signals, in cli_signals order */
  bool forward[8]; /* ... and whether to forward them */
  int nsignals;
  bool child;         /* SIGCHLD */
  bool acquired;      /* the acquire completed: */
  int acquire_rc;     /*   its status */
  int64_t token;      /*   and token */
  bool lost;          /* the lock was lost: */
  int lost_reason;    /*   ZKL_LOST_* */
  int64_t lost_at_ms; /*   when the notice came (monotonic) */
  bool queue_changed; /* the child watch on the lock's parent fired */
  int revokes;        /* revoke requests since the last batch */
} ev_batch;
void ev_take(ev_batch *b);

/* Library callbacks: they only record and wake. */
void ev_acquire_cb(zkl_lock *l, int rc, int64_t token, void *arg);
void ev_lost_cb(zkl_lock *l, zkl_lost_reason reason, void *arg);
void ev_revoke_cb(zkl_lock *l, void *arg);
void ev_post_queue_changed(void);
/* zklock's own requests on the session's handle: counted out and back,
 * and waited for (bounded) before the session closes. The client drops
 * what is still out at its close without calling the completion
 * (ZOOKEEPER-2894), leaking its records and whatever the completion was
 * to free. ev_wait_answered() drains the pipe: call it only once the main
 * loop is done with its events. */
void ev_request_sent(void);
void ev_request_answered(void);
void ev_wait_answered(int timeout_ms);

/* The session's event hook (-v): copies each event, with the time it came
 * (CLOCK_REALTIME), for the main loop to print (trace.c). */
void ev_event_cb(zkl_session *s, const zkl_event *ev, void *arg);
typedef struct {
  zkl_event ev; /* its strings point into the fields below */
  struct timespec at;
  char name[ZKL_NAME_MAX + 1];
  char node[ZKL_PATH_MAX / 2];
  char waiting_for[ZKL_PATH_MAX / 2];
  char servers[ZKL_SERVERS_MAX];
} ev_trace;
/* Takes the oldest event recorded: true, or false when there is none.
 * *dropped: events lost since the last call because too many came at
 * once. */
bool ev_take_trace(ev_trace *out, int *dropped);

/* ----------------------------------------------------------------- child.c */

/* Records the descriptors open at startup: the command inherits those and
 * no others (the ZooKeeper client's socket, for one, is not its business).
 * Call first thing in main (the keeper: in keeper_main). */
void child_note_inherited_fds(void);
/* Takes fd off that record (the keeper's own descriptors). */
void child_forget_fd(int fd);
/* Closes every recorded descriptor above 2 (the keeper, once the command
 * has them). */
void child_close_inherited(void);

typedef struct {
  pid_t pid;
  bool own_group; /* in a process group of its own (pgid == pid) */
} child_proc;

/* How to start a process. zklock has ZooKeeper's threads running when it
 * forks, so everything is prepared here and the child makes only
 * async-signal-safe calls before exec. */
typedef struct {
  const char *path;   /* execv() this; NULL: execvp(argv[0]) */
  char *const *argv;
  char **envp;        /* NULL: the caller's environment */
  bool own_group;     /* setpgid(0, 0) */
  pid_t join_group;   /* else, > 0: setpgid(0, join_group) */
  int pdeathsig;      /* sent to it when its parent dies (Linux); 0: none */
  bool restore_signals; /* the dispositions and mask zklock started with */
  bool keep_inherited;  /* keep the descriptors recorded at startup;
                           otherwise only 0, 1, 2 and pass_fds */
  int pass_fds[3];      /* kept at their numbers across the exec (-1:
                           none) */
  void (*in_child)(void); /* async-signal-safe, run in the child before
                             its descriptors are arranged */
} child_spec;

/* Starts spec and waits until its exec succeeded or failed. Returns 0; or
 * -1 with *err set (errno of the fork or the exec): then, if c->pid is not
 * 0, the child exists and must be reaped with child_reap(). */
int child_spawn(child_proc *c, const child_spec *spec, int *err);

/* The command's environment: the caller's without ZKLOCK_TOKEN, _NAME,
 * _NAMES and _NODE, then those as given (ZKLOCK_NAMES: names[0..n_names-1]
 * one a line). NULL when out of memory; free with child_env_free(). */
char **child_env(int64_t token, const char *name, char *const *names,
                 int n_names, const char *node);
void child_env_free(char **env);
/* Sends sig to the process (to its process group if it has its own). Call
 * only while it is unreaped: its pid (and group id) cannot be reused
 * before. */
void child_signal(const child_proc *c, int sig);
/* SIGTERM and then SIGCONT, so that a stopped process gets it now. */
void child_terminate(const child_proc *c);
/* Whether it has exited, without reaping it (its pid, and its process
 * group id, stay reserved until child_reap). */
bool child_exited(const child_proc *c);
/* Reaps it (it must have exited) and returns its wait status. */
int child_reap(const child_proc *c);

/* ------------------------------------------------------------------ tree.c */

/* For a child subreaper (the keeper; zklock once its keeper died): every
 * process under the caller is the command's. */

/* Sends sig to every process under the caller, each once: to the process
 * group `group` (the command's, while it is unreaped; 0: none), and to
 * each process outside it, its own children by pid, deeper ones through a
 * pidfd. Returns how many signals were sent. */
int tree_signal(pid_t group, int sig);
/* Reaps every child that has exited; when one is `command`, its wait
 * status goes to *status and *reaped is set. Returns whether any child is
 * left (false: every process under the caller is gone). */
bool tree_reap(pid_t command, int *status, bool *reaped);

/* A stop: SIGTERM and SIGCONT to every process at once, SIGKILL to every
 * process at kill_at_ms, and again to any found after. */
typedef struct {
  bool stopping;
  int64_t kill_at_ms;
  int round_ms; /* 0 until SIGKILL was sent; then the rounds' interval */
} tree_stop;
void tree_stop_begin(tree_stop *t, pid_t group, int64_t kill_at_ms);
/* At each wake-up while stopping: SIGKILL once it is due. Returns when to
 * be called again (monotonic ms), 0 when not stopping. */
int64_t tree_stop_step(tree_stop *t, pid_t group, int64_t now_ms);

/* ----------------------------------------------------------------- lease.c */

/* Sets the session's lease margin, m = T/10 within 100..2000 ms (so that
 * zklock knows it: its keeper acts m/4 after the deadline, and sends
 * SIGKILL by m/2 after it, before the server can expire the session). proven_ms: a moment at or after
 * which the server is known to have heard the session (the start of the
 * connect), until a deadline says more. Returns a ZKL_ code. */
int lease_init(zkl_session *s, int64_t proven_ms, int server_tick_ms);
/* The session timeout T the server granted, and the margin m. */
int lease_timeout(void);
int lease_margin(void);
/* When the lease runs out (monotonic ms): zkl_session_lease_deadline(),
 * 0 when the session holds no lock (then the last one seen stays known to
 * lease_proven()). */
int64_t lease_deadline(void);
/* The latest moment the server is known to have heard the session, by the
 * latest deadline seen (its deadline - T + m), else lease_init()'s. */
int64_t lease_proven(void);

/* ---------------------------------------------------------------- keeper.c */

typedef struct {
  const char *what;     /* "lock /locks/NAME", "locks /locks/A and
                           /locks/B": for its messages */
  char *const *command; /* argv, PATH searched */
  char **envp;          /* the command's environment (child_env()) */
  int grace_ms;         /* -k */
  bool own_group;       /* the command leads a process group of its own;
                           else it joins zklock's */
  int margin_ms;        /* m */
  int64_t fire_at_ms;   /* the keeper stops the command then unless
                           renewed: D + m/4 */
  int64_t hard_at_ms;   /* no SIGKILL later than this: D + m/2 */
} keeper_spec;
/* Starts the keeper; it starts the command at keeper_go(). Returns 0, or
 * -1 with errno. */
int keeper_start(const keeper_spec *ks);
pid_t keeper_pid(void);
/* Readable when the keeper has news (the command started, or exited);
 * -1 once the keeper closed it. After poll(), keeper_drain(). */
int keeper_fd(void);
void keeper_drain(void);
/* run: start the command; false: exit without starting it. */
void keeper_go(bool run);
/* After keeper_go(true), waits for the start: returns 0 with the
 * command's pid in *command; or the errno of its fork or exec (*command is
 * then its pid, or 0 if it was not forked); or KEEPER_NOT_IN_TIME when the
 * lease deadline had passed before the word came (the command was not
 * started); or -1 when the keeper died before it said. */
#define KEEPER_NOT_IN_TIME (-2)
int keeper_wait_started(pid_t *command);
/* Moves the keeper's times forward (never back): D + m/4, D + m/2. */
void keeper_renew(int64_t fire_at_ms, int64_t hard_at_ms);
/* Asks the keeper to stop every process of the command now: SIGTERM, then
 * SIGKILL at kill_at_ms (no later than the hard stop). Returns true, with
 * the SIGKILL time in *at; false when the stop began already (the keeper
 * fired, or an earlier request), its SIGKILL time in *at. */
bool keeper_stop(int64_t kill_at_ms, int64_t *at);
/* Whether the keeper began a stop on its own (its SIGKILL time then in
 * *kill_at_ms). */
bool keeper_fired(int64_t *kill_at_ms);
/* Whether a stop began, by either (its SIGKILL time in *kill_at_ms). */
bool keeper_stopping(int64_t *kill_at_ms);
/* The hard stop last given (H = D + m/2). */
int64_t keeper_hard_stop(void);
/* Asks the keeper to pass sig on: to the command (its process group when
 * it has one), or, once it has exited, to every process it left. */
void keeper_signal(int sig);
/* The command's pid as the keeper told it (0: not started). */
pid_t keeper_command(void);
/* Whether the command has exited (the keeper reaped it): its wait status
 * then in *status. */
bool keeper_command_exited(int *status);
/* Reaps the keeper if it has exited (block: waits for it): true with its
 * wait status in *status. Its exit status 0 says every process of the
 * command is gone. */
bool keeper_reap(int *status, bool block);
/* Lets go of the page and the pipes (a keeper still running sees zklock
 * gone). */
void keeper_end(void);
/* main() of the keeper process (argv[1] == KEEPER_ARG). */
int keeper_main(int argc, char **argv);

/* ----------------------------------------------------------------- trace.c */

/* Prints, with -v, the library's events recorded since the last call (see
 * ev_event_cb), one line each, with the time each happened. s: the
 * session, to name the owner of a node waited for (NULL once it is
 * closed). */
void trace_flush(zkl_session *s);
/* With -v, once the event hook is set: tells the servers the session uses
 * if they are not `given` (the connect string): the first reading of the
 * ensemble's configuration may have changed them before the hook was
 * there. A change is told once, by this or by its event. given NULL (an
 * agent's session): tells where it is, as the baseline. */
void trace_servers_now(zkl_session *s, const char *given);

/* ---------------------------------------------------------------- status.c */

/* The waiting status. mode: 0 none (-q), 1 one plain line when the wait
 * starts, 2 a line kept up to date in place (stderr is a terminal). */
void status_init(int mode, zkl_session *s, zkl_lock *l, const options *o);
/* Sets the child watches: call before the acquire starts, so that the
 * creation of our own node already fires one. */
void status_arm(void);
/* A watch fired: look again, and show where we stand. */
void status_refresh(void);
/* The wait is over: takes the in-place line off the terminal. */
void status_clear(void);

/* ----------------------------------------------------------------- queue.c */

/* The owner description zklock writes into its node: "zklock: ARGV...",
 * made one printable line of at most ZKL_INFO_MAX bytes. Caller frees. */
char *queue_owner_info(char *const argv[]);

/* Whether rc, the outcome of a read zklock makes on the client itself (a
 * candidate's id, the chroot), is worth asking again: the connection was
 * lost under it, and *deadline has not passed (the session timeout from
 * the first try: the first call sets it from 0). A session that follows
 * the ensemble moves to other servers just after it opens, which drops
 * its connection. The client holds a request made while it reconnects
 * until the connection is back or lost again: asking again does not spin
 * while it reconnects. */
bool queue_read_again(zkl_session *s, int rc, int64_t *deadline);

/* One contender, as --list shows it. */
typedef struct {
  const zkl_participant *p; /* its kind ("lock", "read", "write", "latch",
                               "lease", "gate") and whether it holds, as
                               the library tells them */
  char *id; /* a candidate's id (latch), else NULL */
  int64_t session; /* its node's ephemeral owner, once
                      queue_view_sessions() read it; 0: unknown */
} queue_entry;

/* Every contender of NAME, as zkl_name_list() lists them: its own
 * queue, then a semaphore's leases and its queue at the gate. */
typedef struct {
  queue_entry *e;
  int count;
  int holders; /* entries that hold */
  zkl_participant *list;
} queue_view;

/* Lists them (zkl_name_list(): two round trips; one more per candidate
 * of an election). Returns a ZKL_ code; on success free the view with
 * queue_view_free(). */
int queue_view_get(zkl_session *s, const char *name, queue_view *v);
void queue_view_free(queue_view *v);
/* Reads each contender's session (its node's ephemeral owner; one round
 * trip per contender, with the ZooKeeper client): left 0 for a node gone
 * since the listing, or that cannot be read. */
void queue_view_sessions(zkl_session *s, queue_view *v);
/* Who holds it, for messages: "db1:4242 since 12:01:07", "'web1' since
 * 12:01:07" (a candidate), "an unknown owner since ...", with " and N more"
 * when several hold. false when nobody holds it. */
bool queue_describe_holders(const queue_view *v, char *buf, size_t len);
/* The same for one entry: "db1:4242", "'web1'", or "an unknown owner";
 * with_since adds " since 12:01:07". */
void queue_describe(const queue_entry *e, bool with_since, char *buf,
                    size_t len);
/* The limit another contender of the semaphore NAME says in its lease
 * node (zkl_participant.limit), other than mine; 0 when none says one (or
 * the leases cannot be read). For the message of a refusal. */
int queue_other_limit(zkl_session *s, const char *name, int mine);
/* The owner of the node `child` of NAME (in its own queue, or a
 * semaphore's lease or gate node), as queue_describe() says it; false when it cannot be learned (or the session is not
 * connected: then it does not wait). */
bool queue_describe_node(zkl_session *s, const char *name, const char *child,
                         char *buf, size_t len);
/* Who holds name now, as queue_describe_holders() says it (one listing). */
bool queue_holder(zkl_session *s, const char *name, char *buf, size_t len);
/* The first of names[0..count-1], in that order, that somebody holds:
 * its index, and who holds it in buf, as queue_holder() says it; -1 when
 * nobody holds any (one listing per name looked at). */
int queue_first_held(zkl_session *s, char *const *names, int count,
                     char *buf, size_t len);

/* --list: prints the contenders of name on stdout, one line each, after
 * a header line unless no_header. Returns a ZKL_ code. */
int queue_list(zkl_session *s, const char *name, bool no_header);
/* --leader: prints "ID<TAB>TOKEN" of name's leader. Returns a ZKL_ code
 * (ZKL_ENOTHELD: nobody leads). */
int queue_leader(zkl_session *s, const char *name);
/* --revoke: asks every holder of name to let go (zkl_name_revoke()), and prints
 * the node of each one asked. Returns a ZKL_ code (ZKL_ENOTHELD: nobody
 * to ask). */
int queue_revoke(zkl_session *s, const char *name);

/* ----------------------------------------------------------------- break.c */

/* --break: breaks the holders of name after grace_ms (zkl_name_break()), prints
 * the node of each one broken on stdout, and says what happened on stderr
 * (not the "nobody holds" line when quiet). Returns zklock's exit status:
 * 0 broken, 1 nobody holds (or each let go within the grace), 3 refused or
 * failed. */
int break_holders(zkl_session *s, const char *name, int grace_ms, bool quiet);
/* -------------------------------------------------------------- overview.c */

/* One lock of --list PREFIX/, summed up from its contenders. */
typedef struct {
  char *name;
  queue_view view;  /* its contenders */
  const char *kind; /* "mutex", "rwlock", "semaphore", "election" */
  int holders;
  int waiters;      /* contenders that wait (a semaphore's: counted once) */
  int64_t held_ms;  /* the longest holder's, by its node's ctime; 0: none */
  int64_t wait_ms;  /* the oldest waiter's; 0: none */
  int64_t token;    /* the newest holder's token; 0: none */
} ov_lock;

typedef struct {
  ov_lock *locks; /* the most contended first */
  int count;
  bool truncated; /* the walk stopped at its bound */
  int64_t now_ms; /* the local wall clock when it was listed */
  char servers[2048]; /* through the agent: its ensemble, as
                         zkl_session_get_servers() says ("" direct: the
                         connect string is the label) */
} overview;

/* The locks under o->prefix (or the one o->target), summed up. Returns a
 * ZKL_ code; on success free with overview_free(). */
int overview_get(zkl_session *s, const options *o, overview *ov);
void overview_free(overview *ov);
/* --list PREFIX/ or --format: prints it once. Returns a ZKL_ code. */
int overview_list(zkl_session *s, const options *o);
/* --list NAME when nobody holds or waits for NAME itself: whether locks
 * are held under it (deploy/web under deploy), said on stderr with the
 * form that lists them (--list NAME/). Quiet with -q; asks nothing more
 * when NAME has contenders. */
void overview_say_under(zkl_session *s, const options *o);
/* --watch: keeps it on screen until q, Ctrl-C or a signal. Returns a ZKL_
 * code (the session's end). */
int overview_watch(zkl_session *s, const options *o);
/* --leader NAME --watch: prints "ID<TAB>TOKEN" of the leader at the start
 * and at each change of leader (a child watch on the election's queue),
 * until a signal. Returns a ZKL_ code (the session's end). */
int overview_leader_watch(zkl_session *s, const options *o);

/* --------------------------------------------------------------- format.c */

/* Prints ov as o->format says: a table (a header line unless -H), one
 * JSON document, or Prometheus' text format 0.0.4. */
void format_print(FILE *f, const overview *ov, const options *o);
/* --list ... --format prometheus: from now until format_print() printed
 * the document, an exit of zklock (it could not connect, the listing
 * failed) prints the document of a listing that did not reach ZooKeeper
 * (zklock_up 0) on stdout first. */
void format_prometheus_arm(const options *o);
/* The version of both JSON documents (zklock(1), JSON): raised when a
 * field changes meaning or goes; new fields may come without it. */
#define FORMAT_JSON_VERSION 1
/* --list NAME --format json: the contenders of the one lock name, in queue
 * order (v as queue_view_get() and queue_view_sessions() filled it), their
 * durations to now_ms (the local wall clock, Unix ms). */
void format_contenders_json(FILE *f, const char *name, const queue_view *v,
                            int64_t now_ms);

/* ------------------------------------------------------------------- run.c */

/* Takes the lock, runs the command, and returns zklock's exit status (or
 * ends zklock by the signal that ended the command). */
int run_lock(const options *o);

#endif
