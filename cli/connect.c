/* SPDX-License-Identifier: Apache-2.0 */
/*
 * connect.c - opening the session, and when that fails, saying which of
 * these happened: the connect string does not parse (exit 2), no host
 * resolves, every server refused the connection, a server took it but
 * opened no session, nobody answered, the chroot does not exist, the
 * credentials were refused (exit 3).
 *
 * A -w shorter than the connect timeout bounds the connect too: when it
 * runs out first, that is a wait that ran out (the -E status), unless every
 * server refused or none resolved.
 *
 * The ZooKeeper client does not tell a refused connection from a silent
 * one, so after a failed connect zklock asks each host itself with a short
 * TCP connect of its own. A refusal costs the server nothing; a server that
 * accepts it sees one connection closed without a word.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"

#define PROBE_MS 500   /* refusals come back at once; silence does not */
#define FIRST_TRY_MS 500 /* -n: the first try at a session */
#define PROBE_SOCKETS 64

enum verdict { V_NONE, V_UNRESOLVED, V_ERROR, V_SILENT, V_REFUSED, V_ACCEPTS };

typedef struct {
  enum verdict v;
  int err; /* V_ERROR: errno; V_UNRESOLVED: getaddrinfo's code */
} host_verdict;

/* The most telling verdict wins for a host with several addresses: one
 * that accepts shows the host is up; silence beats refusal (the refusing
 * address may just be the wrong family). */
static int rank(enum verdict v) {
  static const int r[] = {[V_NONE] = 0,   [V_UNRESOLVED] = 1, [V_REFUSED] = 2,
                          [V_ERROR] = 3,  [V_SILENT] = 4,     [V_ACCEPTS] = 5};
  return r[v];
}

static void note(host_verdict *h, enum verdict v, int err) {
  if (rank(v) > rank(h->v)) {
    h->v = v;
    h->err = err;
  }
}

/* Resolves every host, and with connect set, tries a TCP connection to
 * each address for PROBE_MS at most. */
static void probe(const host_list *hl, bool connect_too, host_verdict *out) {
  struct pollfd pfd[PROBE_SOCKETS];
  int owner[PROBE_SOCKETS], n = 0, i, h;
  int64_t deadline;
  memset(out, 0, sizeof *out * (size_t)hl->count);
  for (h = 0; h < hl->count; h++) {
    struct addrinfo hints, *res = NULL, *ai;
    int rc;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(hl->host[h].host, hl->host[h].port, &hints, &res);
    if (rc != 0) {
      note(&out[h], V_UNRESOLVED, rc);
      continue;
    }
    for (ai = res; ai && connect_too; ai = ai->ai_next) {
      int fd;
      if (n == PROBE_SOCKETS)
        break;
      fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                  ai->ai_protocol);
      if (fd < 0) {
        note(&out[h], V_ERROR, errno);
        continue;
      }
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        note(&out[h], V_ACCEPTS, 0);
        close(fd);
      } else if (errno == EINPROGRESS) {
        pfd[n].fd = fd;
        pfd[n].events = POLLOUT;
        owner[n++] = h;
      } else {
        note(&out[h], errno == ECONNREFUSED ? V_REFUSED : V_ERROR, errno);
        close(fd);
      }
    }
    if (!connect_too && res)
      note(&out[h], V_ACCEPTS, 0); /* resolved: all that was asked */
    freeaddrinfo(res);
  }
  deadline = cli_now_ms() + PROBE_MS;
  for (;;) {
    int pending = 0, left = (int)(deadline - cli_now_ms());
    for (i = 0; i < n; i++)
      pending += pfd[i].fd >= 0;
    if (!pending || left <= 0 || poll(pfd, (nfds_t)n, left) <= 0)
      break;
    for (i = 0; i < n; i++) {
      int err = 0;
      socklen_t len = sizeof err;
      if (pfd[i].fd < 0 || !pfd[i].revents)
        continue;
      getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
      note(&out[owner[i]],
           err == 0             ? V_ACCEPTS
           : err == ECONNREFUSED ? V_REFUSED
                                 : V_ERROR,
           err);
      close(pfd[i].fd);
      pfd[i].fd = -1; /* poll() skips negative descriptors */
    }
  }
  for (i = 0; i < n; i++)
    if (pfd[i].fd >= 0) {
      note(&out[owner[i]], V_SILENT, 0);
      close(pfd[i].fd);
    }
}

/* "a:1 refused the connection; b:2 did not answer" into buf. */
static void describe(const host_list *hl, const host_verdict *hv, char *buf,
                     size_t len) {
  size_t used = 0;
  int h;
  buf[0] = '\0';
  for (h = 0; h < hl->count && used + 1 < len; h++) {
    const char *what;
    char tmp[160];
    switch (hv[h].v) {
    case V_UNRESOLVED:
      snprintf(tmp, sizeof tmp, "cannot be resolved (%s)",
               gai_strerror(hv[h].err));
      what = tmp;
      break;
    case V_REFUSED:
      what = "refused the connection";
      break;
    case V_SILENT:
      what = "did not answer";
      break;
    case V_ACCEPTS:
      what = "accepts connections but opened no ZooKeeper session";
      break;
    case V_ERROR:
      snprintf(tmp, sizeof tmp, "cannot be reached (%s)", strerror(hv[h].err));
      what = tmp;
      break;
    default:
      what = "was not tried";
    }
    used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s:%s %s",
                             h ? "; " : "", hl->host[h].bracketed ? "[" : "",
                             hl->host[h].host, hl->host[h].bracketed ? "]" : "",
                             hl->host[h].port, what);
  }
}

/* Says why, closes the session, exits 3. */
static void fail(zkl_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static void fail(zkl_session *s, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  cli_error("%s", line);
  zkl_session_close(s, NULL);
  exit(EXIT_ZOOKEEPER);
}

static void authenticate(zkl_session *s, const options *o) {
  char scheme[128];
  const char *creds = o->auth + o->auth_scheme_len + 1;
  int rc;
  snprintf(scheme, sizeof scheme, "%.*s", (int)o->auth_scheme_len, o->auth);
  rc = zkl_session_add_auth(s, scheme, creds, (int)strlen(creds));
  if (rc == ZAUTHFAILED)
    fail(s, "ZooKeeper refused the credentials (scheme %s)",
         cli_quote(scheme));
  if (rc != ZKL_OK)
    fail(s, "cannot authenticate (scheme %s): %s",
         cli_quote(scheme), zkl_strerror(rc));
  cli_verbose_msg("authenticated (scheme %s)", cli_quote(scheme));
}

/* With a chroot every path is under it, and a chroot that does not exist
 * makes every lock fail in ways that do not say so. */
static void check_chroot(zkl_session *s, const options *o) {
  const char *chroot = o->parsed_hosts.chroot;
  struct Stat st;
  int64_t deadline = 0;
  int rc;
  if (!chroot[0] || strcmp(chroot, "/") == 0)
    return;
  do /* "/" is the chroot */
    rc = zoo_exists(zkl_session_handle(s), "/", 0, &st);
  while (queue_read_again(s, rc, &deadline));
  if (rc == ZNONODE)
    fail(s, "the chroot %s does not exist on ZooKeeper at %.*s",
         cli_quote(chroot), (int)strcspn(o->hosts, "/"), o->hosts);
  if (rc != ZOK)
    fail(s, "cannot look up the chroot %s: %s",
         cli_quote(chroot), zerror(rc));
}

/* Whether every host refused the connection or does not resolve: nobody
 * is there to wait for. */
static bool nobody_there(const host_list *hl, const host_verdict *hv) {
  int h;
  for (h = 0; h < hl->count; h++)
    if (hv[h].v != V_REFUSED && hv[h].v != V_UNRESOLVED)
      return false;
  return true;
}

/* Added when nobody serves the connect string: perhaps a first run that
 * never said where ZooKeeper is (the default is 127.0.0.1:2181). */
#define WHERE_HINT \
  "; say where ZooKeeper runs with -s HOST[:PORT] or ZKLOCK_SERVERS"

zkl_session *connect_or_exit(const options *o, int bound_ms) {
  const host_list *hl = &o->parsed_hosts;
  host_verdict hv[HOSTS_MAX];
  char why[2048];
  zkl_session *s;
  int64_t t0 = cli_now_ms();
  int rc, total_ms = bound_ms;
  zkl_session_options so;
  zkl_session_options_init(&so);
  if (o->agent) {
    /* The agent has the session: its servers, timeout and credentials. */
    so.agent = o->agent;
    so.connect_timeout_ms = bound_ms;
    if ((rc = zkl_session_open(&s, &so)) != ZKL_OK) {
      cli_error("no lock agent at %s: %s (is zklockd running? see "
                "zklockd(8); unset ZKLOCK_AGENT to ask ZooKeeper directly)",
                cli_quote(o->agent), zkl_strerror(rc));
      exit(EXIT_ZOOKEEPER);
    }
    cli_verbose_msg("connected to the agent at %s (its session timeout %d ms)",
                    cli_quote(o->agent), zkl_session_timeout(s));
    /* --watch too: the views ask through the agent, under its policy
     * (overview.c), never from a session of their own at its servers */
    return s;
  }
  so.hosts = hl->connect; /* with the default ports */
  so.session_timeout_ms = o->session_ms;
  so.flags = o->no_follow ? ZKL_OPEN_NO_FOLLOW_CONFIG : 0;
  /* -n does not wait, and that covers connecting: a healthy ensemble opens
   * a session well within the first try; if it did not, and every server
   * refuses, there is nobody to wait for. Anyone else (a server that is
   * slow, or silent) gets the rest of the connect timeout. */
  if (o->wait_ms == 0 && bound_ms > FIRST_TRY_MS) {
    so.connect_timeout_ms = FIRST_TRY_MS;
    rc = zkl_session_open(&s, &so);
    if (rc == ZKL_ECONNECT) {
      probe(hl, true, hv);
      if (nobody_there(hl, hv)) {
        describe(hl, hv, why, sizeof why);
        cli_error("no ZooKeeper session: %s (-n does not wait for one)%s",
                  why, WHERE_HINT);
        exit(EXIT_ZOOKEEPER);
      }
      bound_ms -= (int)(cli_now_ms() - t0);
      so.connect_timeout_ms = bound_ms > 0 ? bound_ms : 1;
      rc = zkl_session_open(&s, &so);
    }
  } else {
    so.connect_timeout_ms = bound_ms;
    rc = zkl_session_open(&s, &so);
  }
  switch (rc) {
  case ZKL_OK:
    break;
  case ZKL_EINVAL: /* passed names_parse_hosts: the chroot, most likely */
    cli_usage_error("the ZooKeeper client refuses the connect string %s "
                    "(is the chroot a valid path?)",
                    cli_quote(o->hosts));
  case ZKL_ERESOLVE:
    probe(hl, false, hv);
    describe(hl, hv, why, sizeof why);
    cli_error("cannot resolve any ZooKeeper host: %s%s", why,
              o->hosts_flag ? CLI_S_HINT : "");
    exit(EXIT_ZOOKEEPER);
  case ZKL_ECONNECT:
    probe(hl, true, hv);
    describe(hl, hv, why, sizeof why);
    /* run_lock() passes the -w time when it is the shorter bound: then the
     * wait ran out before any session, and the lock was never asked for.
     * That is ZooKeeper out of reach, not a lock held by another: exit 3
     * and a line even with -q, so that cron does not read an outage as
     * "another host has it" (issue 34; it was the -E code, and -q said
     * nothing). */
    if (o->action == ACT_RUN && o->wait_ms > 0 && total_ms == o->wait_ms &&
        !nobody_there(hl, hv)) {
      char path[ZKL_PATH_MAX];
      names_parent(path, sizeof path, o->name);
      cli_error("no ZooKeeper session within the wait (-w %s), so %s was "
                "never tried: %s",
                o->wait_arg, path, why);
      exit(EXIT_ZOOKEEPER);
    }
    /* every server refused: the library gave up at once (refused.c) */
    if (nobody_there(hl, hv))
      cli_error("no ZooKeeper session: %s%s", why, WHERE_HINT);
    else
      cli_error("no ZooKeeper session within %s: %s", cli_duration(total_ms),
                why);
    exit(EXIT_ZOOKEEPER);
  default:
    cli_error("cannot open a ZooKeeper session at %s: %s",
              cli_quote(o->hosts), zkl_strerror(rc));
    exit(EXIT_ZOOKEEPER);
  }
  cli_verbose_msg("connected to %s (session timeout %d ms)",
                  cli_quote(hl->connect), zkl_session_timeout(s));
  if (o->auth)
    authenticate(s, o);
  check_chroot(s, o);
  return s;
}
