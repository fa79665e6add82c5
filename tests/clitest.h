/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clitest.h - what the tests of the zklock command (tests/test_cli*.c)
 * share: starting zklock as a program, the command it runs, and bounded
 * waits on what they do.
 *
 * The commands zklock runs are the test program itself in helper mode
 * (`test_cli --helper MODE ...`, see HELPER): it reports on descriptor 3 (a
 * pipe to the test) what it saw (its pid, ZKLOCK_* variables, its
 * descriptors, the signals it was started with ignored, the signals it
 * gets: TERM, INT, HUP, USR1, USR2) and waits on descriptor 4 (a pipe from
 * the test) for the word to exit. With CLITEST_LOG=FILE in its environment
 * (or in mode "log FILE") it also appends "start|sig N|end PID NS" lines to
 * FILE, NS from CLOCK_MONOTONIC, one clock for every process of the test:
 * the tests order events by these records, never by sleeps.
 *
 * Every wait is bounded and waits on a condition: a line on a pipe, a
 * child watch (zkt_wait_children), a process's exit (a SIGCHLD self-pipe,
 * or a pidfd for processes that are not the test's children). zklock is
 * started in a session of its own (setsid), so it has no controlling
 * terminal unless a test gives it a pty.
 */
#ifndef ZKLOCK_TESTS_CLITEST_H
#define ZKLOCK_TESTS_CLITEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "zktest.h"

#define ZKLOCK ZKL_TEST_BUILDDIR "/cli/zklock"
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"
#define T_WAIT 15000

/* The arguments that make zklock run this program as the command: modes
 * "hold [EXIT_CODE]" (waits for go()), "count" (survives every signal),
 * "ignore-term" (survives SIGTERM), "log FILE" (hold, logging to FILE),
 * "slow-term MS" (hold; on SIGTERM it takes MS before it exits 0, and
 * logs "end" then). */
#define HELPER(mode) clit_self_exe, "--helper", mode
extern char clit_self_exe[];
extern char clit_hostname[];

/* main() of a CLI test program: runs the helper when asked to, else sets up
 * and runs the tests. */
int clit_main(int argc, char **argv, const char *suite, const zkt_test *tests);

typedef struct {
  pid_t pid;
  bool reaped;
  int status;   /* as a shell reports it: code, or 128+signal */
  int out, err; /* zklock's stdout and stderr (read ends; -1: a pty) */
  int report;   /* the helper's descriptor 3 (read end) */
  int go;       /* the helper's descriptor 4 (write end) */
  long helper;  /* the command's pid, once it reported */
  int64_t started_ms;
} proc;

typedef struct {
  const char *env[4]; /* extra "K=V" for zklock, in place of the test's
                         own K; "K" alone: without K */
  int tty;            /* >= 0: a pty slave for stdin and stderr */
  bool ctty;          /* ... and make it the controlling terminal */
  bool ignore_int;    /* start zklock with SIGINT ignored (as a script's
                         background job is) */
  uid_t uid;          /* > 0: run zklock as this user (uid and gid, no
                         supplementary groups): another real user than the
                         test's root */
} spawn_opts;

/* Starts zklock with args (NULL-terminated). */
void spawn_argv(proc *p, const spawn_opts *so, const char *const *args);
void spawn_with(proc *p, const spawn_opts *so, ...);
#define spawn(p, ...) spawn_with(p, NULL, __VA_ARGS__)

/* Waits at most timeout_ms for zklock to exit; returns its status as a
 * shell reports it, or -1 on timeout. */
int wait_exit(proc *p, int timeout_ms);
/* Reads one line (without the newline) within timeout_ms: its length, 0 at
 * EOF, -1 on timeout. */
int read_line(int fd, char *buf, size_t len, int timeout_ms);
/* Reads until EOF (at most timeout_ms); returns the length, -1 on
 * timeout. */
int read_all(int fd, char *buf, size_t len, int timeout_ms);
/* Waits for the command's "start" line and remembers its pid. */
bool command_started(proc *p, char *line, size_t len);
/* The same, and reads the line's token and node (node: len bytes). */
bool command_started_at(proc *p, long long *token, char *node, size_t len);
/* Runs zklock with args to its end: its exit status, and what it wrote on
 * stdout and stderr. */
int run_question(const char *const *args, char *out, size_t outlen,
                 char *err, size_t errlen);
/* SIGSTOP to zklock alone, and waits (bounded) until it has stopped: a
 * signal is acted on only when its target next runs. */
bool stop_zklock(proc *p);
/* Tells the command to exit. */
void go(proc *p);
/* Whatever happened, nothing started here outlives the test. */
void cleanup(proc *p);
/* path (or the lock's parent) ends up empty or gone; an error of the
 * test's own ZooKeeper connection fails the test. */
void assert_empty(const char *path);
void assert_no_node(const char *name);


/* "zklock: waiting for /locks/NAME: N ahead, held by HOST:PID since " */
void expect_status(char *out, size_t len, const char *name, int ahead,
                   long pid);

/* The keeper of zklock p: its one child (the command is the keeper's).
 * 0 if none. Call after command_started(). */
pid_t find_keeper(const proc *p);
/* The parent of pid, from /proc; -1 when it is gone. */
pid_t proc_parent(pid_t pid);
/* When pid started (field 22 of /proc/PID/stat, in clock ticks since
 * boot): with the pid, it names one process; -1 when it is gone. */
long long proc_start_time(pid_t pid);
/* Appends "PID:START" (comma-separated) to buf, for CLITEST_GONE. */
void gone_entry(char *buf, size_t len, pid_t pid);
/* Watching a process that is not the test's child for its exit: a pidfd
 * (readable once it has exited, zombie or reaped). Where there is none
 * (valgrind does not know the call), /proc is looked at instead, every
 * 10 ms within the same bound. */
typedef struct {
  int fd; /* -1: no pidfd */
  pid_t pid;
} pid_watch;
void watch_pid(pid_watch *w, pid_t pid);
/* Waits (bounded) until it has exited: true if it did. */
bool wait_pid_exit(pid_watch *w, int timeout_ms);
void unwatch_pid(pid_watch *w);
/* "R", "S", "T", "Z": the state of pid in /proc, "" if it is gone. */
const char *proc_state(pid_t pid, char *buf, size_t len);

/* -v lines: "zklock: 2026-11-23T12:01:07.123+01:00 MESSAGE". Reads
 * zklock's stderr (fd) line by line until a -v line whose MESSAGE starts
 * with want, and copies that MESSAGE into msg. Other lines (the waiting
 * status, errors) are skipped; a -v line whose time is not of that form
 * fails the test. Returns false when none came within T_WAIT. */
bool expect_verbose(int fd, const char *want, char *msg, size_t len);

/* zklock's waiting status and "not acquired" message come on a pipe only
 * with -v (issue 34: as flock(1), quiet in cron), among the -v lines. */
/* read_line(), skipping -v lines: the next other line of fd. */
int read_status(int fd, char *buf, size_t len, int timeout_ms);
/* The line of text (from read_all) that starts with prefix, or NULL. */
const char *find_line(const char *text, const char *prefix);
/* text without its -v lines, into out (len bytes); returns out. */
const char *without_verbose(const char *text, char *out, size_t len);

/* One record of a helper's log. */
typedef struct {
  char what[8]; /* start, sig, end */
  int sig;
  long pid;
  long long ns;
} log_rec;
/* Reads FILE: the number of records (at most max). */
int read_log(const char *file, log_rec *recs, int max);
/* A log file name unique to this test. */
void log_name(char *buf, size_t len, const char *name);

/* Splits line (a --list line) in place at tabs into f, at most max fields
 * (strtok_r: empty fields are skipped).  Returns the number of fields. */
int clitest_fields(char *line, char **f, int max);

#endif
