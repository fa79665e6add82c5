/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zklockd.c - the agent's command line (zklockd(8)): options, the policy,
 * the ZooKeeper session, the listening socket (its own, or systemd's), the
 * signals; then serve.c's loop until SIGTERM or SIGINT.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* accept4, pipe2, struct ucred */
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../cli/cli.h"
#include "agent.h"

#define DEFAULT_SOCKET "/run/zklockd/zklockd.sock"
#define DEFAULT_CONFIG "/etc/zklockd.conf"
#define DEFAULT_HOSTS "127.0.0.1:2181"

static volatile int stop_, reload_;
static int signal_pipe_[2] = {-1, -1};

static void on_signal(int sig) {
  int saved = errno;
  char x = 1;
  ssize_t n;
  if (sig == SIGHUP)
    reload_ = 1;
  else
    stop_ = 1;
  n = write(signal_pipe_[1], &x, 1);
  (void)n;
  errno = saved;
}

static void usage(FILE *to) {
  fputs("usage: zklockd [-s HOSTS] [--socket PATH] [--config FILE] "
        "[-t DURATION]\n"
        "               [--auth-file FILE [--acl creator|private]] [-v]\n"
        "\n"
        "The lock agent: one ZooKeeper session for every process of this host\n"
        "that locks through it; a process's locks are freed the moment its\n"
        "connection closes. Runs in the foreground; SIGTERM or SIGINT stops it\n"
        "(every lock released), SIGHUP reads the policy again (locks kept).\n"
        "\n"
        "  -s, --servers HOSTS   ZooKeeper, host[:port][,...][/chroot] (port 2181\n"
        "                        when none; default: $ZKLOCK_SERVERS, else\n"
        "                        " DEFAULT_HOSTS ")\n"
        "      --socket PATH     where to listen (default " DEFAULT_SOCKET ";\n"
        "                        a socket systemd passes is used instead)\n"
        "      --config FILE     the policy (default " DEFAULT_CONFIG
        "; when that\n"
        "                        is missing: the built-in default, zklockd(8))\n"
        "  -t, --session-timeout DURATION  the session's timeout (default 10s)\n"
        "      --no-follow-config  keep to HOSTS: do not follow the ensemble's\n"
        "                        configuration when its servers change\n"
        "      --server-tick DURATION  the servers' tickTime (or a bound on it),\n"
        "                        for a longer lease (default: half the session)\n"
        "      --auth-file FILE  the session's ZooKeeper credentials: one line\n"
        "                        SCHEME:CREDENTIALS (digest:USER:PASSWORD) in a\n"
        "                        file only the agent's user may read\n"
        "      --acl creator|private  the ACL of every lock node the agent\n"
        "                        makes, whatever its client asks: only these\n"
        "                        credentials may change them (creator), or\n"
        "                        read them too (private); needs --auth-file\n"
        "  -v, --verbose         log each client's connection, close and refusal\n"
        "      --version         print the version\n"
        "  -h, --help            this text\n"
        "\n"
        "Exit status: 0 stopped by a signal, 1 bad usage or policy, 3 no\n"
        "ZooKeeper session.\n",
        to);
}

static void die_usage(const char *fmt, const char *arg) {
  fputs("zklockd: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\n(zklockd --help says more)\n", stderr);
  exit(1);
}

/* "500ms", "10s", "2m", or milliseconds when bare (as zklock's -t). */
static int parse_duration(const char *s) {
  char *end;
  double v;
  errno = 0;
  v = strtod(s, &end);
  if (errno || end == s || v <= 0)
    return -1;
  if (strcmp(end, "ms") == 0 || !*end)
    ;
  else if (strcmp(end, "s") == 0)
    v *= 1000;
  else if (strcmp(end, "m") == 0)
    v *= 60000;
  else
    return -1;
  if (v < ZKL_SESSION_TIMEOUT_MIN || v > 3600000)
    return -1;
  return (int)v;
}

/* The socket systemd passed (LISTEN_FDS, fd 3), or -1. */
static int activated_socket(void) {
  const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
  if (!pid || !fds || atol(pid) != (long)getpid() || atoi(fds) < 1)
    return -1;
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return 3;
}

/* Listens on path: mode 0666 (anyone on this host may connect; the policy
 * says what each may do). A socket file nobody answers on is a dead
 * agent's and is replaced; one that answers is another agent's. */
static int listen_on(const char *path) {
  struct sockaddr_un a;
  int fd;
  if (strlen(path) >= sizeof a.sun_path) {
    fprintf(stderr, "zklockd: %s: the path is too long for a socket\n", path);
    return -1;
  }
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  strcpy(a.sun_path, path);
  if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
    return -1;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
    fprintf(stderr, "zklockd: %s: another agent answers there\n", path);
    close(fd);
    return -1;
  }
  close(fd);
  {
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
      fprintf(stderr, "zklockd: %s: exists and is not a socket\n", path);
      return -1;
    }
  }
  unlink(path);
  if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) <
          0 ||
      bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      chmod(path, 0666) != 0 || listen(fd, SOMAXCONN) != 0) {
    fprintf(stderr, "zklockd: %s: %s\n", path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

int main(int argc, char **argv) {
  static const struct option longs[] = {
      {"servers", required_argument, NULL, 's'},
      {"socket", required_argument, NULL, 'S'},
      {"config", required_argument, NULL, 'c'},
      {"session-timeout", required_argument, NULL, 't'},
      {"verbose", no_argument, NULL, 'v'},
      {"no-follow-config", no_argument, NULL, 'F'},
      {"server-tick", required_argument, NULL, 'T'},
      {"auth-file", required_argument, NULL, 'A'},
      {"acl", required_argument, NULL, 'L'},
      {"version", no_argument, NULL, 'V'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *hosts = getenv("ZKLOCK_SERVERS"), *socket_path = DEFAULT_SOCKET;
  const char *config = NULL, *why, *auth_file = NULL;
  agent_auth *auth = NULL;
  bool config_named = false, own_socket = false;
  static host_list hl;
  server_config cfg;
  zkl_session_options o;
  struct sigaction sa;
  char err[512] = "";
  int opt, timeout_ms = ZKL_SESSION_TIMEOUT_DEFAULT_MS, rc, status;
  int tick_ms = 0;
  bool no_follow = false;
  memset(&cfg, 0, sizeof cfg);
  while ((opt = getopt_long(argc, argv, "s:t:vh", longs, NULL)) != -1) {
    switch (opt) {
    case 's':
      hosts = optarg;
      break;
    case 'S':
      socket_path = optarg;
      break;
    case 'c':
      config = optarg;
      config_named = true;
      break;
    case 't':
      if ((timeout_ms = parse_duration(optarg)) < 0)
        die_usage("-t %s: not a duration from 100ms to 1h", optarg);
      break;
    case 'v':
      cfg.verbose = true;
      break;
    case 'F':
      no_follow = true;
      break;
    case 'T':
      if ((tick_ms = parse_duration(optarg)) < 0)
        die_usage("--server-tick %s: not a duration from 100ms to 1h",
                  optarg);
      break;
    case 'A':
      auth_file = optarg;
      break;
    case 'L':
      if (strcmp(optarg, "creator") == 0)
        cfg.acl = ZKL_ACL_CREATOR;
      else if (strcmp(optarg, "private") == 0)
        cfg.acl = ZKL_ACL_PRIVATE;
      else
        die_usage("--acl %s: neither 'creator' nor 'private'", optarg);
      cfg.acl_forced = true;
      break;
    case 'V':
      printf("zklockd %s\n", zkl_version_string());
      return 0;
    case 'h':
      usage(stdout);
      return 0;
    default:
      fputs("(zklockd --help says more)\n", stderr);
      return 1;
    }
  }
  if (optind < argc)
    die_usage("'%s': zklockd takes no arguments", argv[optind]);
  if (!hosts || !*hosts)
    hosts = DEFAULT_HOSTS;
  if ((why = names_parse_hosts(hosts, &hl)))
    die_usage("-s: the connect string is not valid: %s", why);
  /* ZooKeeper's "auth" ACL names the session's credentials: without any,
   * every create would fail (ZINVALIDACL). */
  if (cfg.acl_forced && !auth_file)
    die_usage("--acl %s needs the agent's credentials (--auth-file)",
              cfg.acl == ZKL_ACL_PRIVATE ? "private" : "creator");
  if (!config_named && access(DEFAULT_CONFIG, F_OK) == 0)
    config = DEFAULT_CONFIG;
  if (!(cfg.pol = policy_load(config, getuid(), err, sizeof err))) {
    fprintf(stderr, "zklockd: %s\n", err[0] ? err : "out of memory");
    return 1;
  }
  if (auth_file && !(auth = auth_load(auth_file, err, sizeof err))) {
    fprintf(stderr, "zklockd: %s\n", err);
    policy_free(cfg.pol);
    return 1;
  }
  cfg.auth = auth;

  if (pipe2(signal_pipe_, O_NONBLOCK | O_CLOEXEC) != 0) {
    perror("zklockd: pipe");
    return 1;
  }
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  /* The session first: the socket appears when the agent can serve. */
  zkl_session_options_init(&o);
  o.hosts = hl.connect;
  o.session_timeout_ms = timeout_ms;
  o.server_tick_ms = tick_ms;
  o.flags = no_follow ? ZKL_OPEN_NO_FOLLOW_CONFIG : 0;
  rc = auth_open(&cfg.session, &o, auth);
  if (rc != ZKL_OK) {
    fprintf(stderr, "zklockd: no ZooKeeper session with %s%s: %s\n", hosts,
            auth && rc == ZAUTHFAILED ? " (its credentials were refused)" : "",
            zkl_strerror(rc));
    policy_free(cfg.pol);
    auth_free(auth);
    return 3;
  }
  if ((cfg.listen_fd = activated_socket()) >= 0) {
    int fl = fcntl(cfg.listen_fd, F_GETFL);
    fcntl(cfg.listen_fd, F_SETFL, fl | O_NONBLOCK);
    fcntl(cfg.listen_fd, F_SETFD, FD_CLOEXEC);
  } else if ((cfg.listen_fd = listen_on(socket_path)) >= 0) {
    own_socket = true;
  } else {
    zkl_session_close(cfg.session, NULL);
    policy_free(cfg.pol);
    auth_free(auth);
    return 1;
  }

  cfg.hosts = hl.connect;
  cfg.session_timeout_ms = timeout_ms;
  cfg.server_tick_ms = tick_ms;
  cfg.open_flags = o.flags;
  fprintf(stderr,
          "zklockd: serving %s; ZooKeeper %s, session timeout %d ms%s%s%s%s\n",
          own_socket ? socket_path : "the socket systemd passed", hosts,
          zkl_session_timeout(cfg.session),
          auth ? "; credentials of scheme " : "", auth ? auth->scheme : "",
          cfg.acl_forced ? "; every lock node " : "",
          !cfg.acl_forced                  ? ""
          : cfg.acl == ZKL_ACL_PRIVATE ? "private to them"
                                       : "changed by them only");
  status = server_run(&cfg, &stop_, &reload_, config, signal_pipe_[0]);
  auth_free(auth);
  if (own_socket)
    unlink(socket_path);
  close(cfg.listen_fd);
  if (status == 0)
    fputs("zklockd: stopped; every lock released\n", stderr);
  return status;
}
