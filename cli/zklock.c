/*
 * zklock - run a command while holding a ZooKeeper lock (see zklock(1)).
 *
 *   zklock [-s HOSTS] [-t MS] [-w SECONDS | -n] [-E CODE] [-k SECONDS]
 *          NAME -- COMMAND [ARG...]
 *   zklock [-s HOSTS] --list NAME
 *
 * One thread of our own: the main loop polls the self-pipe (events.c) and
 * goes through three states: WAITING for the async acquire (a signal
 * cancels it), RUNNING the command (signals are forwarded; its exit
 * releases the lock), and LOST (the command got SIGTERM and gets SIGKILL
 * when the grace runs out). The only timer is that grace.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define DEFAULT_HOSTS "127.0.0.1:2181"
#define MAX_SECONDS 2000000.0 /* fits in an int of milliseconds */

bool cli_verbose;

/* ---------------------------------------------------------------- output */

static void vmsg(const char *fmt, va_list ap) {
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  fprintf(stderr, "zklock: %s\n", line);
}

void cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

void cli_verbose_msg(const char *fmt, ...) {
  va_list ap;
  if (!cli_verbose)
    return;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

int64_t cli_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --------------------------------------------------------------- options */

typedef struct {
  const char *hosts;
  int session_ms;
  const char *wait_arg; /* -w as given, for messages */
  int wait_ms;          /* -1: without bound, 0: -n */
  bool nonblock;
  int conflict_code;
  int grace_ms;
  bool quiet;
  const char *info; /* --info, or NULL for "zklock: COMMAND..." */
  const char *list_name;
  const char *name;
  char **command;
} options;

static const char usage_line[] =
    "usage: zklock [OPTIONS] NAME -- COMMAND [ARG...]";

static void usage(void) {
  static const char *const lines[] = {
      "       zklock [-s HOSTS] [-t MS] --list NAME",
      "Run COMMAND while holding the ZooKeeper lock NAME (znode /locks/NAME).",
      "",
      "  -s, --servers HOSTS     ZooKeeper connect string (default:",
      "                          $ZKLOCK_SERVERS, else " DEFAULT_HOSTS ")",
      "  -t, --session-timeout MS",
      "                          session timeout in milliseconds (10000)",
      "  -w, --wait SECONDS      give up after waiting that long (e.g. 0.5)",
      "  -n, --nonblock          do not wait: give up at once if it is held",
      "  -E, --conflict-exit-code CODE",
      "                          exit status when the lock was not acquired "
      "(1)",
      "  -k, --kill-after SECONDS",
      "                          when the lock is lost, SIGKILL the command "
      "that",
      "                          long after SIGTERM (2)",
      "      --info TEXT         owner description written into the lock node",
      "                          (default: \"zklock: COMMAND ARG...\")",
      "  -q, --quiet             no waiting status, no \"not acquired\" "
      "message",
      "  -v, --verbose           report progress on stderr",
      "  -l, --list NAME         print the holder and the waiters of NAME",
      "  -h, --help              print this help and exit",
      "      --version           print the version and exit",
      "",
      "COMMAND runs with ZKLOCK_TOKEN (the fencing token), ZKLOCK_NAME and",
      "ZKLOCK_NODE in its environment. Exit status: COMMAND's (128+N if signal",
      "N killed it); the -E code if the lock was not acquired; 2 bad usage or",
      "name; 3 ZooKeeper unreachable or failing; 4 the lock was lost while",
      "COMMAND ran; 126 COMMAND could not be run; 127 COMMAND not found.",
      "See zklock(1).",
  };
  size_t i;
  printf("%s\n", usage_line);
  for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
    printf("%s\n", lines[i]);
}

static void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
  exit(EXIT_USAGE);
}

static bool parse_seconds(const char *s, int *ms) {
  char *end;
  double v, x;
  if (!*s || isspace((unsigned char)*s))
    return false;
  errno = 0;
  v = strtod(s, &end);
  if (*end || errno || !(v >= 0 && v <= MAX_SECONDS)) /* NaN fails too */
    return false;
  x = v * 1000;
  *ms = (int)x;
  if (*ms < x)
    (*ms)++; /* round up: -w 0.0001 waits, it does not mean -n */
  return true;
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  long v;
  if (!*s || isspace((unsigned char)*s))
    return false;
  errno = 0;
  v = strtol(s, &end, 10);
  if (*end || errno || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

enum { OPT_INFO = 256, OPT_VERSION };

static void parse_options(int argc, char **argv, options *o) {
  static const struct option longopts[] = {
      {"servers", required_argument, NULL, 's'},
      {"session-timeout", required_argument, NULL, 't'},
      {"wait", required_argument, NULL, 'w'},
      {"nonblock", no_argument, NULL, 'n'},
      {"conflict-exit-code", required_argument, NULL, 'E'},
      {"kill-after", required_argument, NULL, 'k'},
      {"info", required_argument, NULL, OPT_INFO},
      {"quiet", no_argument, NULL, 'q'},
      {"verbose", no_argument, NULL, 'v'},
      {"list", required_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, OPT_VERSION},
      {NULL, 0, NULL, 0}};
  const char *env = getenv("ZKLOCK_SERVERS");
  bool e_set = false, k_set = false;
  int c, rest, at;
  long v;

  memset(o, 0, sizeof *o);
  o->hosts = env && *env ? env : DEFAULT_HOSTS;
  o->session_ms = 10000;
  o->wait_ms = -1;
  o->conflict_code = 1;
  o->grace_ms = 2000;
  opterr = 0;
  /* "+": stop at NAME; what follows "--" is the command's. */
  for (at = 1; (c = getopt_long(argc, argv, "+:s:t:w:nE:k:qvl:h", longopts,
                                NULL)) != -1;
       at = optind) { /* argv[at]: the word getopt was reading */
    switch (c) {
    case 's':
      if (!*optarg)
        usage_error("-s: the connect string is empty");
      o->hosts = optarg;
      break;
    case 't':
      if (!parse_int(optarg, 1, INT_MAX, &v))
        usage_error("-t: '%s' is not a session timeout in milliseconds "
                    "(a whole number from 1 to %d)",
                    optarg, INT_MAX);
      o->session_ms = (int)v;
      break;
    case 'w':
      if (!parse_seconds(optarg, &o->wait_ms))
        usage_error("-w: '%s' is not a number of seconds (0 to %.0f, "
                    "fractions allowed)",
                    optarg, MAX_SECONDS);
      o->wait_arg = optarg;
      break;
    case 'n':
      o->nonblock = true;
      break;
    case 'E':
      if (!parse_int(optarg, 0, 255, &v))
        usage_error("-E: '%s' is not an exit status (a whole number from 0 "
                    "to 255)",
                    optarg);
      o->conflict_code = (int)v;
      e_set = true;
      break;
    case 'k':
      if (!parse_seconds(optarg, &o->grace_ms))
        usage_error("-k: '%s' is not a number of seconds (0 to %.0f, "
                    "fractions allowed)",
                    optarg, MAX_SECONDS);
      k_set = true;
      break;
    case OPT_INFO: {
      const unsigned char *p = (const unsigned char *)optarg;
      for (; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
          usage_error("--info: the text must be one line without control "
                      "characters");
      if (strlen(optarg) > 200)
        usage_error("--info: the text is longer than 200 bytes");
      o->info = optarg;
      break;
    }
    case 'q':
      o->quiet = true;
      break;
    case 'v':
      cli_verbose = true;
      break;
    case 'l':
      o->list_name = optarg;
      break;
    case 'h':
      usage();
      exit(0);
    case OPT_VERSION:
      printf("zklock %s (libzklock %s)\n", PACKAGE_VERSION,
             zkl_version_string());
      exit(0);
    case ':':
      if (strncmp(argv[at], "--", 2) == 0)
        usage_error("option %s needs a value", argv[at]);
      usage_error("option -%c needs a value", optopt);
      break;
    default:
      if (strncmp(argv[at], "--", 2) == 0)
        usage_error("unknown option %.*s (see zklock --help)",
                    (int)strcspn(argv[at], "="), argv[at]);
      usage_error("unknown option -%c (see zklock --help)", optopt);
    }
  }
  if (o->nonblock && o->wait_arg)
    usage_error("-n and -w cannot be used together");
  if (o->nonblock)
    o->wait_ms = 0;
  rest = argc - optind;

  if (o->list_name) {
    if (o->wait_arg || o->nonblock || e_set || k_set || o->info)
      usage_error("--list takes no -w, -n, -E, -k or --info");
    if (rest > 0)
      usage_error("--list takes one lock name and no command, but '%s' "
                  "follows",
                  argv[optind]);
    return;
  }
  if (rest == 0)
    usage_error("missing lock name (%s)", usage_line);
  o->name = argv[optind];
  if (rest == 1)
    usage_error("missing '--' and command after the lock name (%s)",
                usage_line);
  if (strcmp(argv[optind + 1], "--") != 0)
    usage_error("expected '--' after the lock name '%s', not '%s' (%s)",
                o->name, argv[optind + 1], usage_line);
  if (rest == 2)
    usage_error("missing command after '--' (%s)", usage_line);
  o->command = argv + optind + 2;
}

/* ------------------------------------------------------------ ZooKeeper */

static void bad_name(const char *name) {
  usage_error("bad lock name '%s': use 1 to 255 bytes of '/'-separated "
              "segments, none empty, '.' or '..', without control characters",
              name);
}

static zkl_session *connect_or_exit(const options *o) {
  zkl_session *s;
  int rc = zkl_session_open(&s, o->hosts, o->session_ms);
  if (rc != ZKL_OK) {
    if (rc == ZKL_ECONNECT)
      cli_error("cannot reach ZooKeeper at %s within %d ms", o->hosts,
                o->session_ms);
    else
      cli_error("cannot open a ZooKeeper session at %s: %s", o->hosts,
                zkl_strerror(rc));
    exit(EXIT_ZOOKEEPER);
  }
  cli_verbose_msg("connected to %s (session timeout %d ms)", o->hosts,
                  zkl_session_timeout(s));
  return s;
}

static int run_list(const options *o) {
  zkl_session *s;
  if (zkl_name_check(o->list_name) != ZKL_OK)
    bad_name(o->list_name); /* before connecting: a usage error is 2 */
  s = connect_or_exit(o);
  int rc = queue_list(s, o->list_name);
  zkl_session_close(s);
  if (rc == ZKL_EINVAL)
    bad_name(o->list_name);
  if (rc != ZKL_OK) {
    cli_error("cannot list /locks/%s: %s", o->list_name, zkl_strerror(rc));
    return EXIT_ZOOKEEPER;
  }
  return 0;
}

/* ------------------------------------------------------------- the run */

static const char *lost_reason_text(int reason) {
  switch (reason) {
  case ZKL_LOST_SESSION_EXPIRED:
    return "the ZooKeeper session expired";
  case ZKL_LOST_NODE_DELETED:
    return "its node was deleted by someone else";
  case ZKL_LOST_LEASE_EXPIRED:
    return "no answer from ZooKeeper for nearly the session timeout, so "
           "the server may give the lock to another";
  default:
    return "unknown reason";
  }
}

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

enum state { WAITING, RUNNING, LOST };

typedef struct {
  const options *o;
  zkl_session *s;
  zkl_lock *l;
  char parent[600];
  enum state state;
  int64_t started_ms;
  int die_sig; /* a signal came while waiting: cancel, then die by it */
  child_proc child;
  bool same_group;    /* the command shares our process group (a terminal) */
  int64_t kill_at_ms; /* LOST: SIGKILL then */
  bool killed;
} run;

static void finish(run *r) {
  zkl_lock_free(r->l);
  zkl_session_close(r->s);
}

/* Releases (after the command or instead of it) and says whether the lock
 * was still ours. */
static bool release(run *r) {
  int rc = zkl_lock_release(r->l);
  if (rc == ZKL_ELOST || rc == ZKL_EEXPIRED)
    return false;
  if (rc != ZKL_OK && rc != ZKL_ENOTHELD)
    cli_error("could not release %s: %s (it goes when the session closes)",
              r->parent, zkl_strerror(rc));
  return true;
}

static void begin_lost(run *r, int reason, int64_t notice_ms) {
  cli_error("lost the lock %s: %s; stopping the command", r->parent,
            lost_reason_text(reason));
  child_signal(&r->child, SIGTERM);
  cli_verbose_msg("SIGTERM sent to pid %ld %lld ms after the loss notice; "
                  "SIGKILL in %d ms",
                  (long)r->child.pid, (long long)(cli_now_ms() - notice_ms),
                  r->o->grace_ms);
  r->kill_at_ms = cli_now_ms() + r->o->grace_ms;
  r->state = LOST;
}

/* WAITING: the acquire completed. Returns -1 to go on, else an exit code. */
static int on_acquired(run *r, const ev_batch *b) {
  char node[600];
  int rc = b->acquire_rc;
  status_clear();
  if (r->die_sig) {
    if (rc == ZKL_OK)
      release(r);
    finish(r);
    die_by_signal(r->die_sig);
  }
  if (rc == ZKL_EBUSY || rc == ZKL_ETIMEDOUT) {
    if (!r->o->quiet) {
      if (rc == ZKL_EBUSY)
        cli_error("%s is held by another owner; not waiting", r->parent);
      else
        cli_error("gave up waiting for %s after %s s", r->parent,
                  r->o->wait_arg);
    }
    finish(r);
    return r->o->conflict_code;
  }
  if (rc != ZKL_OK) {
    cli_error("could not acquire %s: %s", r->parent, zkl_strerror(rc));
    finish(r);
    return EXIT_ZOOKEEPER;
  }
  cli_verbose_msg("acquired %s, token %" PRId64 ", after %lld ms", r->parent,
                  b->token, (long long)(cli_now_ms() - r->started_ms));
  if (b->lost || zkl_lock_node_path(r->l, node, sizeof node) != ZKL_OK) {
    cli_error("lost the lock %s before the command started: %s", r->parent,
              lost_reason_text(b->lost ? b->lost_reason : 0));
    release(r);
    finish(r);
    return EXIT_LOST;
  }
  rc = child_start(&r->child, r->o->command, !r->same_group, b->token,
                   r->o->name, node);
  if (rc != 0) {
    release(r);
    finish(r);
    return rc;
  }
  r->state = RUNNING;
  return -1;
}

/* RUNNING or LOST: the command has exited. Returns the exit code. */
static int on_child_exit(run *r) {
  int status;
  ev_batch late;
  if (r->state == LOST) {
    /* Whatever is left of its process group runs without the lock. */
    if (r->child.own_group)
      child_signal(&r->child, SIGKILL);
    child_reap(&r->child);
    release(r);
    finish(r);
    return EXIT_LOST;
  }
  status = child_reap(&r->child);
  cli_verbose_msg("the command exited (%s %d); releasing",
                  WIFSIGNALED(status) ? "signal" : "status",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  if (!release(r)) {
    ev_take(&late);
    cli_error("lost the lock %s while the command ran: %s", r->parent,
              lost_reason_text(late.lost ? late.lost_reason : 0));
    finish(r);
    return EXIT_LOST;
  }
  finish(r);
  return exit_code_of(status);
}

static int run_lock(const options *o) {
  run r;
  char *info;
  int rc, mode;

  memset(&r, 0, sizeof r);
  r.o = o;
  snprintf(r.parent, sizeof r.parent, "/locks/%s", o->name);
  if (ev_init() != 0) {
    cli_error("cannot create a pipe: %s", strerror(errno));
    return EXIT_ZOOKEEPER;
  }
  if (zkl_name_check(o->name) != ZKL_OK)
    bad_name(o->name); /* before connecting: a usage error is 2, not 3 */
  /* Signals keep their default action until the session is open: nothing
   * to clean up before. */
  r.s = connect_or_exit(o);
  rc = zkl_lock_new(&r.l, r.s, o->name);
  if (rc == ZKL_EINVAL) {
    zkl_session_close(r.s);
    bad_name(o->name);
  }
  if (rc != ZKL_OK) {
    cli_error("cannot use the lock %s: %s", r.parent, zkl_strerror(rc));
    zkl_session_close(r.s);
    return EXIT_ZOOKEEPER;
  }
  info = o->info ? NULL : queue_owner_info(o->command);
  zkl_lock_set_owner_info(r.l, o->info ? o->info : info);
  free(info);
  zkl_lock_on_lost(r.l, ev_lost_cb, NULL);

  r.same_group = has_terminal();
  ev_catch_signals(r.same_group);
  mode = o->quiet || o->wait_ms == 0 ? 0 : isatty(STDERR_FILENO) ? 2 : 1;
  status_init(mode, r.s, r.l);
  status_arm();
  r.started_ms = cli_now_ms();
  rc = zkl_lock_acquire_async(r.l, o->wait_ms, ev_acquire_cb, NULL);
  if (rc != ZKL_OK) {
    cli_error("could not acquire %s: %s", r.parent, zkl_strerror(rc));
    finish(&r);
    return EXIT_ZOOKEEPER;
  }
  r.state = WAITING;

  for (;;) {
    struct pollfd pfd = {ev_fd(), POLLIN, 0};
    int timeout = -1, i, code = -1;
    ev_batch b;
    if (r.state == LOST && !r.killed) {
      int64_t left = r.kill_at_ms - cli_now_ms();
      timeout = left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
    }
    if (poll(&pfd, 1, timeout) < 0 && errno != EINTR) {
      cli_error("poll: %s", strerror(errno));
      abort();
    }
    ev_drain();
    ev_take(&b);

    if (r.state == WAITING) {
      for (i = 0; i < b.nsignals && !r.die_sig; i++) {
        r.die_sig = b.signals[i];
        cli_verbose_msg("%s while waiting: canceling", strsignal(r.die_sig));
        zkl_lock_cancel(r.l); /* ZKL_EIDLE: the callback is on its way */
      }
      if (b.acquired)
        code = on_acquired(&r, &b);
      else if (b.queue_changed)
        status_refresh();
      if (code >= 0)
        return code;
      continue;
    }

    if (b.lost && r.state == RUNNING)
      begin_lost(&r, b.lost_reason, b.lost_at_ms);
    for (i = 0; i < b.nsignals; i++)
      if (b.forward[i]) {
        cli_verbose_msg("passing on %s", strsignal(b.signals[i]));
        child_signal(&r.child, b.signals[i]);
      }
    if (child_exited(&r.child))
      return on_child_exit(&r);
    if (r.state == LOST && !r.killed && cli_now_ms() >= r.kill_at_ms) {
      cli_verbose_msg("grace over: SIGKILL");
      child_signal(&r.child, SIGKILL);
      r.killed = true;
    }
  }
}

/* A closed standard descriptor would be taken by the next open, say the
 * ZooKeeper connection, and the command would inherit it as its stdin,
 * stdout or stderr. */
static void open_standard_fds(void) {
  int fd;
  for (fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) == -1 && open("/dev/null", O_RDWR) != fd)
      exit(EXIT_CANNOT_RUN);
}

int main(int argc, char **argv) {
  options o;
  open_standard_fds();
  child_note_inherited_fds(); /* before anything else opens one */
  parse_options(argc, argv, &o);
  if (o.list_name)
    return run_list(&o);
  return run_lock(&o);
}
