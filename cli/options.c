/*
 * options.c - the command line of zklock: parsed and checked completely
 * before anything talks to ZooKeeper, so that bad usage exits 2 with a
 * message that says what was wrong and touches nothing.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define DEFAULT_HOSTS "127.0.0.1:2181"
#define DEFAULT_SESSION_MS 10000
#define DEFAULT_CONNECT_MS 5000
#define DEFAULT_GRACE_MS 2000
#define MAX_SECONDS 2000000.0 /* fits in an int of milliseconds */

static const char usage_line[] =
    "usage: zklock [OPTIONS] NAME -- COMMAND [ARG...]";

static void usage(void) {
  static const char *const lines[] = {
      "       zklock [-H] [-s HOSTS] [-t MS] [--auth S:C] --list NAME",
      "Run COMMAND while holding the ZooKeeper lock NAME (znode " ZKL_ROOT
      "/NAME).",
      "",
      "  -s, --servers HOSTS     ZooKeeper connect string (default:",
      "                          $ZKLOCK_SERVERS, else " DEFAULT_HOSTS ")",
      "  -t, --session-timeout MS",
      "                          session timeout in milliseconds (10000)",
      "      --connect-timeout SECONDS",
      "                          give up connecting after that long (5)",
      "  -w, --wait SECONDS      give up after waiting that long (e.g. 0.5),",
      "                          connecting included",
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
      "      --auth SCHEME:CREDENTIALS",
      "                          authenticate the session (default:",
      "                          $ZKLOCK_AUTH), e.g. digest:user:password",
      "      --acl open|creator  who may delete the lock's nodes (open)",
      "  -q, --quiet             no waiting status, no \"not acquired\" "
      "message",
      "  -v, --verbose           report progress on stderr",
      "  -l, --list NAME         print the holder and the waiters of NAME",
      "  -H, --no-header         with --list: no header line",
      "  -h, --help              print this help and exit",
      "      --version           print the version and exit",
      "",
      "COMMAND runs with ZKLOCK_TOKEN (the fencing token), ZKLOCK_NAME and",
      "ZKLOCK_NODE in its environment. Exit status: COMMAND's (128+N if signal",
      "N killed it); the -E code if the lock was not acquired; 2 bad usage,",
      "name or connect string; 3 ZooKeeper unreachable or failing; 4 the lock",
      "was lost while COMMAND ran; 126 COMMAND could not be run; 127 COMMAND",
      "not found. See zklock(1).",
  };
  size_t i;
  printf("%s\n", usage_line);
  for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
    printf("%s\n", lines[i]);
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

static void seconds_or_exit(const char *opt, const char *arg, int *ms) {
  if (!parse_seconds(arg, ms))
    cli_usage_error("%s: %s is not a number of seconds (0 to %.0f, "
                    "fractions allowed)",
                    opt, cli_quote(arg), MAX_SECONDS);
}

/* --auth or ZKLOCK_AUTH: "scheme:credentials", both non-empty. Kept in a
 * copy of ours; the credentials in argv are overwritten so that ps shows
 * "digest:xxxx" (a moment after start: ZKLOCK_AUTH avoids even that). */
static void take_auth(options *o, const char *from, char *value,
                      bool in_argv) {
  const char *colon = strchr(value, ':');
  if (!colon || colon == value || !colon[1])
    cli_usage_error("%s: expected SCHEME:CREDENTIALS, such as "
                    "digest:user:password",
                    from);
  free(o->auth);
  o->auth = strdup(value);
  if (!o->auth) {
    cli_error("out of memory");
    exit(EXIT_ZOOKEEPER);
  }
  o->auth_scheme_len = (size_t)(colon - value);
  if (in_argv)
    memset(value + o->auth_scheme_len + 1, 'x', strlen(colon + 1));
}

static void check_hosts(options *o, const char *from) {
  const char *why = names_parse_hosts(o->hosts, &o->parsed_hosts);
  if (why)
    cli_usage_error("%s: %s is not a ZooKeeper connect string "
                    "(host:port[,host:port...][/chroot]): %s",
                    from, cli_quote(o->hosts), why);
}

static void check_name(const char *name) {
  if (zkl_name_check(name) != ZKL_OK)
    cli_usage_error("bad lock name %s: %s", cli_quote(name),
                    names_why_bad(name));
}

enum { OPT_INFO = 256, OPT_VERSION, OPT_CONNECT, OPT_AUTH, OPT_ACL };

void options_parse(int argc, char **argv, options *o) {
  static const struct option longopts[] = {
      {"servers", required_argument, NULL, 's'},
      {"session-timeout", required_argument, NULL, 't'},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},
      {"wait", required_argument, NULL, 'w'},
      {"nonblock", no_argument, NULL, 'n'},
      {"conflict-exit-code", required_argument, NULL, 'E'},
      {"kill-after", required_argument, NULL, 'k'},
      {"info", required_argument, NULL, OPT_INFO},
      {"auth", required_argument, NULL, OPT_AUTH},
      {"acl", required_argument, NULL, OPT_ACL},
      {"quiet", no_argument, NULL, 'q'},
      {"verbose", no_argument, NULL, 'v'},
      {"list", required_argument, NULL, 'l'},
      {"no-header", no_argument, NULL, 'H'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, OPT_VERSION},
      {NULL, 0, NULL, 0}};
  const char *env = getenv("ZKLOCK_SERVERS"), *hosts_from = "ZKLOCK_SERVERS";
  char *env_auth = getenv("ZKLOCK_AUTH");
  bool e_set = false, k_set = false, acl_set = false, n_set = false;
  int c, rest, at;
  long v;

  memset(o, 0, sizeof *o);
  o->hosts = env && *env ? env : DEFAULT_HOSTS;
  o->session_ms = DEFAULT_SESSION_MS;
  o->connect_ms = DEFAULT_CONNECT_MS;
  o->wait_ms = -1;
  o->conflict_code = 1;
  o->grace_ms = DEFAULT_GRACE_MS;
  o->acl = ZKL_ACL_OPEN;
  opterr = 0;
  /* "+": stop at NAME; what follows "--" is the command's. */
  for (at = 1; (c = getopt_long(argc, argv, "+:s:t:w:nE:k:qvl:Hh", longopts,
                                NULL)) != -1;
       at = optind) { /* argv[at]: the word getopt was reading */
    switch (c) {
    case 's':
      if (!*optarg)
        cli_usage_error("-s: the connect string is empty");
      o->hosts = optarg;
      hosts_from = "-s";
      break;
    case 't':
      if (!parse_int(optarg, 1, INT_MAX, &v))
        cli_usage_error("-t: %s is not a session timeout in milliseconds "
                        "(a whole number from 1 to %d)",
                        cli_quote(optarg), INT_MAX);
      o->session_ms = (int)v;
      break;
    case OPT_CONNECT:
      seconds_or_exit("--connect-timeout", optarg, &o->connect_ms);
      if (o->connect_ms == 0)
        cli_usage_error("--connect-timeout: must be more than 0");
      break;
    case 'w':
      seconds_or_exit("-w", optarg, &o->wait_ms);
      o->wait_arg = optarg;
      break;
    case 'n':
      n_set = true;
      break;
    case 'E':
      if (!parse_int(optarg, 0, 255, &v))
        cli_usage_error("-E: %s is not an exit status (a whole number from "
                        "0 to 255)",
                        cli_quote(optarg));
      o->conflict_code = (int)v;
      e_set = true;
      break;
    case 'k':
      seconds_or_exit("-k", optarg, &o->grace_ms);
      k_set = true;
      break;
    case OPT_INFO: {
      const unsigned char *p = (const unsigned char *)optarg;
      for (; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
          cli_usage_error("--info: the text must be one line without "
                          "control characters");
      if (strlen(optarg) > ZKL_INFO_MAX)
        cli_usage_error("--info: the text is longer than %d bytes",
                        ZKL_INFO_MAX);
      o->info = optarg;
      break;
    }
    case OPT_AUTH:
      take_auth(o, "--auth", optarg, true);
      break;
    case OPT_ACL:
      if (strcmp(optarg, "open") == 0)
        o->acl = ZKL_ACL_OPEN;
      else if (strcmp(optarg, "creator") == 0)
        o->acl = ZKL_ACL_CREATOR;
      else
        cli_usage_error("--acl: %s is neither 'open' nor 'creator'",
                        cli_quote(optarg));
      acl_set = true;
      break;
    case 'q':
      o->quiet = true;
      break;
    case 'v':
      cli_verbose = true;
      break;
    case 'l':
      o->list_name = optarg;
      break;
    case 'H':
      o->no_header = true;
      break;
    case 'h':
      usage();
      exit(0);
    case OPT_VERSION:
      printf("zklock %s (libzklock %s)\n", PACKAGE_VERSION,
             zkl_version_string());
      exit(0);
    case ':':
      if (strncmp(argv[at], "--", 2) == 0) /* a known option: printable */
        cli_usage_error("option %s needs a value", argv[at]);
      cli_usage_error("option -%c needs a value", optopt);
      break;
    default:
      if (strncmp(argv[at], "--", 2) == 0) {
        argv[at][strcspn(argv[at], "=")] = '\0';
        cli_usage_error("unknown option %s (see zklock --help)",
                        cli_quote(argv[at]));
      }
      if (isprint(optopt))
        cli_usage_error("unknown option -%c (see zklock --help)", optopt);
      cli_usage_error("unknown option in %s (see zklock --help)",
                      cli_quote(argv[at]));
    }
  }
  if (n_set && o->wait_arg)
    cli_usage_error("-n and -w cannot be used together");
  if (n_set)
    o->wait_ms = 0;
  if (!o->auth && env_auth && *env_auth)
    take_auth(o, "ZKLOCK_AUTH", env_auth, false);
  check_hosts(o, hosts_from);
  rest = argc - optind;

  if (o->list_name) {
    if (o->wait_arg || n_set || e_set || k_set || o->info || acl_set)
      cli_usage_error("--list takes no -w, -n, -E, -k, --info or --acl");
    if (rest > 0)
      cli_usage_error("--list takes one lock name and no command, but %s "
                      "follows",
                      cli_quote(argv[optind]));
    check_name(o->list_name);
    return;
  }
  if (o->no_header)
    cli_usage_error("-H goes with --list only");
  if (o->acl == ZKL_ACL_CREATOR && !o->auth)
    cli_usage_error("--acl creator needs credentials (--auth or "
                    "ZKLOCK_AUTH): the lock's nodes belong to them");
  if (rest == 0)
    cli_usage_error("missing lock name (%s)", usage_line);
  o->name = argv[optind];
  if (rest == 1)
    cli_usage_error("missing '--' and command after the lock name (%s)",
                    usage_line);
  if (strcmp(argv[optind + 1], "--") != 0)
    cli_usage_error("expected '--' after the lock name %s, not %s (%s)",
                    cli_quote(o->name), cli_quote(argv[optind + 1]),
                    usage_line);
  if (rest == 2)
    cli_usage_error("missing command after '--' (%s)", usage_line);
  check_name(o->name);
  o->command = argv + optind + 2;
}
