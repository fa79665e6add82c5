/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agentctl.h - a real zklockd for a test: started from the build tree on a
 * socket of its own, stopped, killed, frozen and thawed. Every agent a test
 * starts is killed when the test program exits (normally or by a signal),
 * and dies with it should the program be killed outright (PDEATHSIG).
 */
#ifndef AGENTCTL_H
#define AGENTCTL_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct agentctl {
  pid_t pid;     /* 0: not running */
  char dir[64]; /* its own directory: the socket and the log */
  char sock[100]; /* fits sun_path */
  char log[160];
} agentctl;

/* Starts zklockd -s hosts --socket DIR/sock -v, plus extra (NULL-ended,
 * may be NULL), and waits (bounded) until its socket takes connections.
 * False, with the reason printed, when it did not come up. */
bool agentctl_start(agentctl *a, const char *hosts, const char *const *extra);
/* SIGTERM, and waits (bounded; SIGKILL after) for it: its exit status
 * (0..255), 128 + signal when killed, -1 when not running. */
int agentctl_stop(agentctl *a);
/* SIGKILL, reaped. */
void agentctl_kill(agentctl *a);
/* SIGSTOP (freeze true) or SIGCONT. */
void agentctl_freeze(agentctl *a, bool freeze);
/* Sends sig (SIGHUP: reload). */
void agentctl_signal(agentctl *a, int sig);
/* Prints the agent's log (for a failing test's output). */
void agentctl_print_log(const agentctl *a);
/* Whether the agent's log has a line with both needles (the second may be
 * NULL), looking again until bound_ms have passed. */
bool agentctl_log_has(const agentctl *a, const char *needle,
                      const char *needle2, int bound_ms);

#endif
