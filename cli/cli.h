/*
 * cli.h - what the files of the zklock command share.
 *
 *   zklock.c  options, --list, and the main loop (waiting, running, lost)
 *   events.c  the self-pipe: signal handlers and library callbacks post
 *             events there, the main loop polls it
 *   child.c   starting the command (environment, descriptors, signals) and
 *             signalling it
 *   queue.c   the queue as zkl_participants() shows it: --list lines and the
 *             waiting status, refreshed by a child watch
 *
 * Only the public API is used: <zklock.h>, plus the ZooKeeper client on
 * zkl_session_handle() for the child watch.
 */
#ifndef ZKLOCK_CLI_H
#define ZKLOCK_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <zklock.h>

/* Exit statuses (see zklock(1)). */
#define EXIT_USAGE 2
#define EXIT_ZOOKEEPER 3
#define EXIT_LOST 4
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND 127

/* ---------------------------------------------------------------- output */

extern bool cli_verbose;
/* "zklock: " + the message + newline on stderr; cli_verbose_msg only with
 * -v. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_verbose_msg(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
int64_t cli_now_ms(void); /* CLOCK_MONOTONIC */

/* ---------------------------------------------------------------- events */

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
} ev_batch;
void ev_take(ev_batch *b);

/* Library callbacks: they only record and wake. */
void ev_acquire_cb(zkl_lock *l, int rc, int64_t token, void *arg);
void ev_lost_cb(zkl_lock *l, int reason, void *arg);
void ev_post_queue_changed(void);

/* ----------------------------------------------------------------- child */

/* Records the descriptors open at startup: the command inherits those and
 * no others (the ZooKeeper client's socket, for one, is not its business).
 * Call first thing in main. */
void child_note_inherited_fds(void);

typedef struct {
  pid_t pid;
  bool own_group; /* in a process group of its own (pgid == pid) */
} child_proc;

/* Starts argv (PATH searched) with ZKLOCK_TOKEN, ZKLOCK_NAME and
 * ZKLOCK_NODE added to the environment. Returns 0; or, when it could not
 * be started, the exit status to use (126, 127) after printing why. */
int child_start(child_proc *c, char *const argv[], bool own_group,
                int64_t token, const char *name, const char *node);
/* Sends sig to the command (to its process group if it has its own). */
void child_signal(const child_proc *c, int sig);
/* Whether the command has exited, without reaping it (its pid, and its
 * process group id, stay reserved until child_reap). */
bool child_exited(const child_proc *c);
/* Reaps it (it must have exited) and returns its wait status. */
int child_reap(const child_proc *c);

/* ----------------------------------------------------------------- queue */

/* The owner description zklock writes into its node: "zklock: ARGV...",
 * made one printable line of at most 200 bytes. Caller frees. */
char *queue_owner_info(char *const argv[]);
/* --list: prints the participants of name on stdout, one line each.
 * Returns a ZKL_ code. */
int queue_list(zkl_session *s, const char *name);

/* The waiting status. mode: 0 none (-q), 1 one plain line when the wait
 * starts, 2 a line kept up to date in place (stderr is a terminal). */
void status_init(int mode, zkl_session *s, zkl_lock *l);
/* Sets the child watch: call before the acquire starts, so that the
 * creation of our own node already fires it. */
void status_arm(void);
/* The watch fired: look again, and show where we stand. */
void status_refresh(void);
/* The wait is over: takes the in-place line off the terminal. */
void status_clear(void);

#endif
