/* SPDX-License-Identifier: Apache-2.0 */
/*
 * peerctl.h - a peer program (a JVM running Curator, python3 running kazoo)
 * as a child of a test: its stdin and stdout are pipes to the test, one line
 * per message; its stderr goes to a log file in the build directory.
 *
 * The child gets PR_SET_PDEATHSIG(SIGKILL), so it dies with the thread that
 * started it: call peer_start() from the test's main thread only. Every
 * wait is bounded. peer_end() kills and reaps on every path; call it once
 * for every peer_start() that succeeded.
 */
#ifndef PEERCTL_H
#define PEERCTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct peer {
  pid_t pid;
  int pidfd;       /* readable once the child exited; -1 if unsupported */
  int to;          /* its stdin */
  int from;        /* its stdout */
  size_t len;
  char buf[16384]; /* what came from its stdout and was not read as lines */
  char log[512];   /* its stderr */
} peer;

/* Starts argv (argv[0] a path; argv NULL-terminated) with stdin and stdout
 * piped and stderr written to log_path (truncated). Returns 0, or -1 (with a
 * message on stderr) when nothing runs. */
int peer_start(peer *p, char *const argv[], const char *log_path);

/* Reads one line (without its newline) into line. Returns 0; -1 when no
 * line came before deadline_ms (zkt_now_ms() clock); -2 on EOF or error. */
int peer_line(peer *p, char *line, size_t cap, int64_t deadline_ms);

/* Sends one line (the newline is added). 0, or -1 when the peer is gone. */
int peer_send(peer *p, const char *line);

/* Ends the peer: closes its stdin (peers exit on EOF), waits up to
 * timeout_ms for it to exit, then SIGKILLs it; always reaps it. Returns its
 * exit status, 128+N when a signal N ended it, or -1. */
int peer_end(peer *p, int timeout_ms);

/* Copies the last lines of the peer's stderr log to stderr (for a failure's
 * report). */
void peer_show_log(const peer *p);

#endif
