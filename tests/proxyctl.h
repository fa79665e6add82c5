/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proxyctl - run and steer tests/faultproxy from a C test.
 *
 *   proxyctl *px;
 *   int port;
 *   if (proxyctl_start(&px, ZKL_TEST_BUILDDIR "/tests/faultproxy", zkt_hosts(), &port) != 0)
 *       fail;
 *   ... connect the client under test to 127.0.0.1:<port> ...
 *   proxyctl_cmd(px, "drop", NULL, 0, 2000);          partition
 *   ... wait for the client's CONNECTING event (2/3 of the session timeout) ...
 *   proxyctl_cmd(px, "pass", NULL, 0, 2000);          heal: same session
 *   proxyctl_cmd(px, "reset-after-op 15", NULL, 0, 2000);
 *   ... zoo_acreate2(...) ...
 *   proxyctl_wait_fired(px, 5000);                     the reply is lost
 *   proxyctl_stop(px);
 *
 * Commands are those of faultproxy (see the comment at the top of
 * faultproxy.c): pass, drop, hold, reset, refuse, accept, reset-after-op N,
 * drop-after-op N, hold-after-op N, disarm, stats, quit.
 *
 * Every wait is bounded.  The proxy dies with the test: it gets SIGTERM when
 * the thread that started it exits (PR_SET_PDEATHSIG; start it from the main
 * thread) and quits on EOF of its control channel, which closes when the
 * test process dies.  If the environment variable FAULTPROXY_WRAPPER is set
 * (e.g. "valgrind -q --leak-check=full --error-exitcode=9"), its
 * space-separated words are put in front of the proxy's command line.
 *
 * Not thread-safe: use one proxyctl from one thread at a time.
 */
#ifndef ZKLOCK_TESTS_PROXYCTL_H
#define ZKLOCK_TESTS_PROXYCTL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct proxyctl proxyctl;

/* Starts faultproxy (faultproxy_path, e.g. from the build dir) as a child
 * process forwarding 127.0.0.1:<*port> to target_host_port ("host:port"),
 * and waits (at most 15 s) for it to report its port.  Returns 0 and sets
 * *out and *port, or -1 with a message on stderr (*out is then NULL). */
int proxyctl_start(proxyctl **out, const char *faultproxy_path, const char *target_host_port, int *port);

/* The same, listening on listen_addr:listen_port (an IPv4 address, NULL:
 * 127.0.0.1; 0: a port the kernel picks), e.g. 127.0.0.2:2181 for a client
 * that uses the default port.  A port in use fails the start (-1). */
int proxyctl_start_on(proxyctl **out, const char *faultproxy_path, const char *target_host_port,
                      const char *listen_addr, int listen_port, int *port);

/* Sends one command line (without newline) and waits at most timeout_ms for
 * its answer.  Asynchronous "fired ..." lines that arrive meanwhile are
 * recorded (see proxyctl_wait_fired), not taken as the answer.  Returns 0 if
 * the answer is "ok" or "ok <details>", -1 on "err ...", timeout or a dead
 * proxy; the answer line (without newline; empty on timeout) is copied into
 * buf if buf != NULL and len > 0.  After a timeout or a dead proxy the handle
 * is broken: every later command fails at once. */
int proxyctl_cmd(proxyctl *p, const char *cmd, char *buf, size_t len, int timeout_ms);

/* Waits at most timeout_ms until a "fired" line has been seen.  Each fired
 * line satisfies one call; one seen earlier (e.g. while waiting for a
 * command's answer) makes the call return at once.  Returns 0, or -1 on
 * timeout or a dead proxy. */
int proxyctl_wait_fired(proxyctl *p, int timeout_ms);

/* The number of "fired" lines seen so far, and the opcode of the last one
 * (0 if none). */
int proxyctl_fired_count(const proxyctl *p);
int proxyctl_last_fired_op(const proxyctl *p);

/* The port the proxy listens on (127.0.0.1). */
int proxyctl_port(const proxyctl *p);

/* The proxy's process id (e.g. for SIGSTOP/SIGCONT: a frozen proxy is
 * another kind of partition). */
int proxyctl_pid(const proxyctl *p);

/* Sends quit (or SIGTERM if the proxy stopped answering), closes the control
 * channel, waits (at most 10 s, enough for valgrind's leak check) for the
 * child to exit, kills it if it does not, reaps it and frees p.  Safe on NULL.  Returns nothing; use
 * proxyctl_stop_status if the exit status matters (e.g. under valgrind). */
void proxyctl_stop(proxyctl *p);

/* Like proxyctl_stop, and returns the child's exit status (0..255), or
 * 128+signal if it was killed by a signal, or -1 if p is NULL. */
int proxyctl_stop_status(proxyctl *p);

#ifdef __cplusplus
}
#endif

#endif
