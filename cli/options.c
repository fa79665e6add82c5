/* SPDX-License-Identifier: Apache-2.0 */
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
#include <strings.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"

#define DEFAULT_HOSTS "127.0.0.1:2181"
#define DEFAULT_SESSION_MS ZKL_SESSION_TIMEOUT_DEFAULT_MS
#define DEFAULT_CONNECT_MS 5000
#define DEFAULT_GRACE_MS 2000
#define DEFAULT_BREAK_GRACE_MS 5000 /* --break's --grace */
#define MAX_MS 2000000000 /* 2,000,000 s: fits in an int of milliseconds */
/* -t: a bare number below this is refused (a unit says what is meant) */
#define MIN_BARE_SESSION_MS 1000

/* What the ZooKeeper client zklock was built against can do (configure
 * looks for the functions): Debian 12's can do neither. */
#ifdef HAVE_ZOOKEEPER_INIT_SSL
#define ZK_CLIENT_TLS "yes"
#else
#define ZK_CLIENT_TLS "no"
#endif
#ifdef HAVE_ZOOKEEPER_INIT_SASL
#define ZK_CLIENT_SASL "yes"
#else
#define ZK_CLIENT_SASL "no"
#endif

static const char usage_line[] =
    "usage: zklock [OPTIONS] NAME [--] COMMAND [ARG...]";

static void usage(void) {
  static const char *const lines[] = {
      "       zklock [OPTIONS] -- NAME... -- COMMAND [ARG...]   (several NAMEs)",
      "       zklock [OPTIONS] NAME... -c STRING          ($SHELL -c STRING)",
      "       zklock [-H] [-s HOSTS] [-t MS] [--auth S:C] --list NAME",
      "       zklock [-H] [--format F] [--label K=V] [--watch] ... --list "
      "PREFIX/",
      "       zklock [-q] [-s HOSTS] [-t MS] [--auth S:C] --leader NAME "
      "[--watch]",
      "       zklock [-q] [-s HOSTS] [-t MS] [--auth S:C] --revoke NAME",
      "       zklock [-q] [-s HOSTS] [-t MS] [--auth S:C] --break NAME "
      "[--grace SECONDS]",
      "Run COMMAND while holding the ZooKeeper lock NAME (znode " ZKL_ROOT
      "/NAME;",
      "a NAME that starts with / is a full path: /app/jobs/nightly):",
      "several NAMEs (mutexes only) are held all at once, taken atomically",
      "in one transaction (no deadlock whatever the order);",
      "a mutex, or with one of these options another kind of lock:",
      "",
      "      --read, --shared    take the read side of a read/write lock:",
      "                          shared with other readers",
      "  -x, --write, --exclusive",
      "                          take its write side: exclusive",
      "      --limit N           take one of N leases of a semaphore",
      "      --elect ID          stand for election as ID; run COMMAND while",
      "                          leading",
      "",
      "  -c, --command STRING    run STRING with $SHELL -c (/bin/sh without",
      "                          SHELL; as flock -c) instead of a COMMAND",
      "                          after the NAMEs",
      "      --hold              no command: print \"TOKEN NODE\" on stdout",
      "                          and hold until stdin ends (or SIGTERM,",
      "                          SIGINT: exit 0), e.g. in a bash coproc",
      "  -s, --servers HOSTS     ZooKeeper connect string, host[:port],...",
      "                          (port 2181 when none; default:",
      "                          $ZKLOCK_SERVERS, else " DEFAULT_HOSTS ")",
      "  -t, --session-timeout MS",
      "                          session timeout (10000 ms)",
      "      --connect-timeout SECONDS",
      "                          give up connecting after that long (5 s)",
      "      --no-follow-config  keep to HOSTS: do not follow the ensemble's",
      "                          configuration when its servers change",
      "      --agent PATH        lock through the host's agent, zklockd, at",
      "                          PATH (default: $ZKLOCK_AGENT), not a session",
      "                          of its own",
      "      --server-tick MS    the servers' tickTime (or a bound on it), for",
      "                          a longer lease (default: half the session)",
      "  -w, --wait, --timeout SECONDS",
      "                          give up after waiting that long, connecting",
      "                          included",
      "  -n, --nonblock, --nb    do not wait: give up at once if it is held",
      "  -E, --conflict-exit-code CODE",
      "                          exit status when the lock was not acquired "
      "(1)",
      "  -k, --kill-after SECONDS",
      "                          when the lock is lost, SIGKILL the command "
      "that",
      "                          long after SIGTERM (2 s)",
      "      --info TEXT         owner description written into the lock node",
      "                          (default: \"zklock: COMMAND ARG...\")",
      "      --auth SCHEME:CREDENTIALS",
      "                          authenticate the session (default:",
      "                          $ZKLOCK_AUTH), e.g. digest:user:password",
      "      --acl open|creator  who may delete the lock's nodes (open)",
      "      --layout curator|kazoo",
      "                          whose node names the mutex writes (curator);",
      "                          kazoo's default Lock sees only kazoo's",
      "      --on-revoke SIGNAL  pass a revoke request on to COMMAND as SIGNAL",
      "                          (default: only say it came)",
      "      --max-hold SECONDS  hold the lock at most that long: then it is",
      "                          lost, and COMMAND stopped as on any loss",
      "  -q, --quiet             no waiting status, no \"not acquired\" "
      "message",
      "                          (without a terminal on stderr they come",
      "                          only with -v, as with flock)",
      "  -v, --verbose           report progress and the lock's events on",
      "                          stderr, with the time of each",
      "  -l, --list NAME         print the holders and the waiters of NAME",
      "      --leader NAME       print the id and token of NAME's leader (with",
      "                          --watch: again at each change of leader)",
      "      --revoke NAME       ask the holders of NAME to let go",
      "  -l, --list PREFIX/      the same for every lock under PREFIX, one line",
      "                          each, the most contended first (/: every",
      "                          relative name; /app/: full paths under /app)",
      "      --format table|json|prometheus",
      "                          with --list: how to print it (table); json",
      "                          with --list NAME: that lock's contenders",
      "      --label NAME=VALUE  with --format prometheus: a label added to every",
      "                          series (repeatable)",
      "      --watch             with --list: keep it on screen, redrawn when",
      "                          the locks change (q or Ctrl-C quits)",
      "      --break NAME        break the holders of NAME: ask them to let go,",
      "                          and delete their nodes after the grace",
      "      --grace SECONDS     with --break: the grace (5 s; 0: at once)",
      "  -H, --no-header         with --list: no header line",
      "  -o, --close             flock's: taken, and nothing done (no lock",
      "                          descriptor is passed to close)",
      "  -h, --help              print this help and exit",
      "  -V, --version           print the version and exit",
      "",
      "Durations (-w, -k, -t, --connect-timeout, --server-tick, --max-hold,",
      "--grace) take a unit: 500ms, 10s, 1.5s, 2m, 1h, 1m30s. A bare number",
      "is in the unit shown: SECONDS (fractions allowed) or MS (whole; -t",
      "takes no bare number under 1000: write -t 10s or -t 10ms).",
      "",
      "As with flock(1), the first word after the NAME that is not an",
      "option starts COMMAND, and every word from there on is COMMAND's,",
      "its options and a '--' of its own included (zklock job ssh web1 --",
      "ls runs ssh). Several NAMEs, or a NAME that starts with '-', go after",
      "a '--' that ends the options, up to the next '--':",
      "zklock [OPTIONS] -- NAME... -- COMMAND [ARG...]. A line such as",
      "zklock a b -- cmd, where b is no command, is refused as ambiguous.",
      "",
      "COMMAND runs with ZKLOCK_TOKEN (the fencing token), ZKLOCK_NAMES",
      "and ZKLOCK_NODES (every NAME and its node, one a line), ZKLOCK_NAME",
      "and ZKLOCK_NODE (with several NAMEs: each, space-separated, in the",
      "order given) in its environment. Exit status: COMMAND's (128+N if signal",
      "N killed it); the -E code if the lock was not acquired; 2 bad usage,",
      "name or connect string; 3 ZooKeeper unreachable or failing; 4 the lock",
      "was lost while COMMAND ran (--max-hold ran out among the reasons); 5",
      "NAME is a lock of another kind, or a semaphore of another --limit;",
      "126 COMMAND could not be run; 127 COMMAND not found. --break: 0",
      "broken, 1 nobody holds, 3 refused or failed. See zklock(1).",
  };
  size_t i;
  printf("%s\n", usage_line);
  for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
    printf("%s\n", lines[i]);
}

/* The units of a duration, longest first ("ms" before "m"). */
static const struct {
  const char *name;
  double ms;
} duration_units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};

/* A duration, as every option that takes one reads it (-w, -k, -t,
 * --connect-timeout, --server-tick, --max-hold, --grace): a number with a
 * unit, "500ms", "10s", "1.5m", "2h", or several added up, "1m30s" (as Go's
 * durations, which consul and etcdctl take, are written); or a bare number
 * in the option's own unit (bare_ms: 1000 seconds, fractions allowed, as
 * strtod() reads them; 1 milliseconds, a whole number), as before units
 * came. Rounded up to the millisecond: -w 0.0001 waits, it does not mean
 * -n. true, *ms and *bare (it was a bare number) when it is one from lo_ms
 * to hi_ms. */
static bool parse_duration(const char *s, int bare_ms, int lo_ms, int hi_ms,
                           int *ms, bool *bare) {
  const char *p = s;
  char *end;
  double v, total = 0;
  long long us;
  if (!*s || isspace((unsigned char)*s))
    return false;
  errno = 0;
  v = bare_ms == 1 ? (double)strtol(s, &end, 10) : strtod(s, &end);
  *bare = !*end;
  if (*bare) {
    if (errno || !(v >= 0)) /* NaN fails too */
      return false;
    total = v * bare_ms;
  }
  while (!*bare && *p) {
    size_t i, n, units = sizeof duration_units / sizeof duration_units[0];
    errno = 0;
    v = strtod(p, &end);
    /* digits and a point only: no sign, space, exponent, hex or "inf" */
    if (end == p || (size_t)(end - p) != strspn(p, "0123456789.") || errno)
      return false;
    for (n = 0; isalpha((unsigned char)end[n]); n++)
      ;
    for (i = 0; i < units; i++)
      if (strlen(duration_units[i].name) == n &&
          strncmp(end, duration_units[i].name, n) == 0)
        break;
    if (i == units) /* none, or not one of ours */
      return false;
    total += v * duration_units[i].ms;
    p = end + n;
  }
  if (!(total <= hi_ms)) /* (the infinities too) */
    return false;
  /* to the microsecond first, so that 0.1 s is not 100.00000000000001 ms */
  us = (long long)(total * 1000 + 0.5);
  *ms = (int)((us + 999) / 1000);
  if (*ms == 0 && total > 0)
    *ms = 1;
  return *ms >= lo_ms;
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

/* The duration of option opt (see parse_duration), or a usage error that
 * says what was typed and what is taken. bare_ms: 1000 (a bare number is
 * seconds) or 1 (milliseconds). Returns whether it was a bare number. */
static bool duration_or_exit(const char *opt, const char *arg, int bare_ms,
                             int lo_ms, int hi_ms, int *ms) {
  /* --connect-timeout and --max-hold take 0 here and refuse it after
   * (their own "must be more than 0"): their range says so */
  bool positive = strcmp(opt, "--connect-timeout") == 0 ||
                  strcmp(opt, "--max-hold") == 0;
  char range[64];
  bool bare;
  if (parse_duration(arg, bare_ms, lo_ms, hi_ms, ms, &bare))
    return bare;
  if (bare_ms == 1)
    snprintf(range, sizeof range, "from %d to %d ms", lo_ms, hi_ms);
  else if (positive) /* 0 parses, and is refused after: not "from 0" */
    snprintf(range, sizeof range, "more than 0, up to %d s", hi_ms / 1000);
  else
    snprintf(range, sizeof range, "from %d to %d s", lo_ms / 1000,
             hi_ms / 1000);
  cli_usage_error("%s: %s is not a duration: a number of %s, or a number "
                  "with a unit (500ms, 10s, 1.5s, 2m, 1h, 1m30s); "
                  "%s",
                  opt, cli_quote(arg),
                  bare_ms == 1 ? "milliseconds (a whole number)"
                               : "seconds (fractions allowed)",
                  range);
}

/* --hold holds until its standard input ends. What it says when that
 * input has ended before the hold begins, or NULL when it may not have:
 * closed, /dev/null (what a script's background job reads), or a file
 * read to its end. A pipe or a terminal cannot be told without reading. */
static const char *stdin_at_end(void) {
  struct stat in, null;
  off_t at;
  if (fstat(0, &in) != 0)
    return errno == EBADF ? "closed" : NULL;
  if (S_ISCHR(in.st_mode) && stat("/dev/null", &null) == 0 &&
      in.st_rdev == null.st_rdev)
    return "/dev/null (or closed: zklock reads a closed one as /dev/null)";
  if (S_ISREG(in.st_mode) && (at = lseek(0, 0, SEEK_CUR)) >= 0 &&
      at >= in.st_size)
    return "a file at its end";
  return NULL;
}

/* -w, -k, --connect-timeout, --max-hold, --grace: a bare number is
 * seconds. */
static bool seconds_or_exit(const char *opt, const char *arg, int *ms) {
  return duration_or_exit(opt, arg, 1000, 0, MAX_MS, ms);
}

/* -t, --server-tick: a bare number is milliseconds. Returns whether it
 * was one. */
static bool millis_or_exit(const char *opt, const char *arg, int *ms) {
  return duration_or_exit(opt, arg, 1, 1, INT_MAX, ms);
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
                    "(host[:port][,host[:port]...][/chroot]): %s%s",
                    from, cli_quote(o->hosts), why,
                    o->hosts_flag ? CLI_S_HINT : "");
}

static void check_name(const char *name) {
  char why[512];
  if (zkl_name_explain(name, why, sizeof why) != ZKL_OK)
    cli_usage_error("bad lock name %s: %s", cli_quote(name), why);
}

/* --list PREFIX/: PREFIX must be a lock name. Refused, the message quotes
 * what was typed, and says what is wrong with it as the name of a lock
 * under it: "a//" has an empty segment, which "it ends with '/'" of the
 * name "a/" would hide. */
static void check_prefix(const char *typed, const char *prefix) {
  char why[512], under[ZKL_NAME_MAX + 3];
  if (zkl_name_check(prefix) == ZKL_OK)
    return;
  if (strlen(prefix) + 2 <= ZKL_NAME_MAX) /* else its length is what's wrong */
    snprintf(under, sizeof under, "%s/x", prefix);
  else
    snprintf(under, sizeof under, "%s", prefix);
  zkl_name_explain(under, why, sizeof why);
  cli_usage_error("bad lock name prefix %s: %s", cli_quote(typed), why);
}

/* One line of text without control characters, 1..max bytes. */
static void check_line(const char *opt, const char *what, const char *s,
                       size_t max) {
  const unsigned char *p = (const unsigned char *)s;
  if (!*s)
    cli_usage_error("%s: the %s is empty", opt, what);
  for (; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      cli_usage_error("%s: the %s must be one line without control "
                      "characters",
                      opt, what);
  if (strlen(s) > max)
    cli_usage_error("%s: the %s is longer than %zu bytes", opt, what, max);
}

/* --on-revoke: a signal by name (TERM, SIGTERM, term) or number. */
static const struct {
  const char *name;
  int sig;
} signal_names[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT},
    {"ILL", SIGILL},   {"TRAP", SIGTRAP},     {"ABRT", SIGABRT},
    {"BUS", SIGBUS},   {"FPE", SIGFPE},       {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},     {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},     {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},     {"TTOU", SIGTTOU},
    {"URG", SIGURG},   {"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
    {"IO", SIGIO},     {"SYS", SIGSYS}};

static void take_signal(options *o, const char *arg) {
  static char number_name[16];
  const char *name = arg;
  size_t i;
  long v;
  if (strncasecmp(name, "SIG", 3) == 0)
    name += 3;
  for (i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
    if (strcasecmp(name, signal_names[i].name) == 0) {
      static char canonical[16];
      snprintf(canonical, sizeof canonical, "SIG%s", signal_names[i].name);
      o->revoke_sig = signal_names[i].sig;
      o->revoke_sig_name = canonical;
      return;
    }
  if (!parse_int(arg, 1, SIGRTMAX, &v))
    cli_usage_error("--on-revoke: %s is not a signal (a name such as TERM, "
                    "USR1 or SIGHUP, or a number from 1 to %d)",
                    cli_quote(arg), (int)SIGRTMAX);
  o->revoke_sig = (int)v;
  snprintf(number_name, sizeof number_name, "signal %ld", v);
  o->revoke_sig_name = number_name;
}

/* Whether a '--' is among argv[from..argc-1]. */
static bool has_separator(int argc, char **argv, int from) {
  for (; from < argc; from++)
    if (strcmp(argv[from], "--") == 0)
      return true;
  return false;
}

/* Whether word names a program that exec would find, as execvp() looks
 * for it: a word with a '/' is a path; else each directory of PATH (an
 * empty one is the current directory; confstr's default when PATH is
 * unset). A regular file that may be executed. */
static bool is_executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
         access(path, X_OK) == 0;
}

static bool is_command(const char *word) {
  char def[256], dir_word[PATH_MAX];
  const char *path = getenv("PATH"), *p, *end;
  if (strchr(word, '/'))
    return is_executable(word);
  if (!path) {
    size_t need = confstr(_CS_PATH, def, sizeof def);
    if (need == 0 || need > sizeof def) /* none, or cut short */
      snprintf(def, sizeof def, "/bin:/usr/bin");
    path = def;
  }
  for (p = path;; p = end + 1) {
    size_t n;
    end = strchr(p, ':');
    n = end ? (size_t)(end - p) : strlen(p);
    if ((size_t)snprintf(dir_word, sizeof dir_word, "%.*s%s%s", (int)n, p,
                         n ? "/" : "", word) < sizeof dir_word &&
        is_executable(dir_word))
      return true;
    if (!end)
      return false;
  }
}

/* opt: the kind's option as given, without its "--" ("read" or
 * "shared"), for messages. */
static void set_kind(options *o, int kind, const char *opt) {
  static const char *kind_opt = "";
  if (o->kind != KIND_MUTEX && o->kind != kind)
    cli_usage_error("--%s and --%s cannot be used together: --read (--shared), "
                    "--write (--exclusive), --limit and --elect choose the "
                    "kind of lock",
                    kind_opt, opt);
  o->kind = kind;
  kind_opt = opt;
}

static const char *action_option(int action) {
  return action == ACT_LIST     ? "--list"
         : action == ACT_LEADER ? "--leader"
         : action == ACT_BREAK  ? "--break"
                                : "--revoke";
}

static void set_action(options *o, int action, const char *target) {
  if (o->action != ACT_RUN && o->action != action)
    cli_usage_error("%s and %s cannot be used together",
                    action_option(o->action), action_option(action));
  o->action = action;
  o->target = target;
}

enum {
  OPT_INFO = 256,
  OPT_VERSION,
  OPT_CONNECT,
  OPT_AUTH,
  OPT_ACL,
  OPT_READ,
  OPT_WRITE,
  OPT_LIMIT,
  OPT_ELECT,
  OPT_LEADER,
  OPT_REVOKE,
  OPT_ON_REVOKE,
  OPT_BREAK,
  OPT_GRACE,
  OPT_MAX_HOLD,
  OPT_NO_FOLLOW,
  OPT_AGENT,
  OPT_SERVER_TICK,
  OPT_FORMAT,
  OPT_WATCH,
  OPT_LABEL,
  OPT_HOLD,
  OPT_LAYOUT
};

/* --format and --watch: the view of --list (overview.c). */
static void take_format(options *o, const char *arg) {
  static const char *const names[] = {"table", "json", "prometheus"};
  int i;
  for (i = 0; i < 3; i++)
    if (strcmp(arg, names[i]) == 0) {
      o->format = i;
      o->format_set = true;
      return;
    }
  cli_usage_error("--format: %s is none of table, json, prometheus",
                  cli_quote(arg));
}

/* --label K=V: K a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__", which Prometheus keeps for itself), none of the
 * labels zklock sets, and not given twice; V one line. */
static void take_label(options *o, const char *arg) {
  static const char *const ours[] = {"lock", "kind", "list", "servers"};
  const char *eq = strchr(arg, '=');
  size_t n = eq ? (size_t)(eq - arg) : 0, i;
  int j;
  if (!eq || n == 0)
    cli_usage_error("--label: expected NAME=VALUE, not %s", cli_quote(arg));
  for (i = 0; i < n; i++)
    if (!(isalpha((unsigned char)arg[i]) || arg[i] == '_' ||
          (i > 0 && isdigit((unsigned char)arg[i]))))
      cli_usage_error("--label: %s is not a Prometheus label name (a letter "
                      "or '_', then letters, digits or '_')",
                      cli_quote(arg));
  if (n >= 2 && arg[0] == '_' && arg[1] == '_')
    cli_usage_error("--label: %s: names that start with '__' are Prometheus' "
                    "own",
                    cli_quote(arg));
  for (i = 0; i < sizeof ours / sizeof ours[0]; i++)
    if (strlen(ours[i]) == n && strncmp(arg, ours[i], n) == 0)
      cli_usage_error("--label: %s: zklock sets the label %s itself",
                      cli_quote(arg), ours[i]);
  for (j = 0; j < o->n_labels; j++)
    if (strncmp(o->label[j], arg, n + 1) == 0)
      cli_usage_error("--label: %s is given twice", cli_quote(arg));
  if (o->n_labels == LABELS_MAX)
    cli_usage_error("--label: at most %d labels", LABELS_MAX);
  check_line("--label", "value", eq + 1, 1024);
  o->label[o->n_labels++] = arg;
}

static void check_view(options *o) {
  size_t len = o->action == ACT_LIST ? strlen(o->target) : 0;
  if (o->watch && o->action != ACT_LIST && o->action != ACT_LEADER)
    cli_usage_error("--watch goes with --list or --leader only");
  if (o->format_set && o->action != ACT_LIST)
    cli_usage_error("--format goes with --list only");
  if (o->n_labels > 0 &&
      (o->action != ACT_LIST || o->format != FORMAT_PROMETHEUS))
    cli_usage_error("--label goes with --list and --format prometheus only");
  if (o->watch && o->format != FORMAT_TABLE)
    cli_usage_error("--watch shows a table: it takes no --format %s",
                    o->format == FORMAT_JSON ? "json" : "prometheus");
  if (len > 0 && o->target[len - 1] == '/') {
    static char prefix[ZKL_NAME_MAX + 1];
    if (len > 1) {
      snprintf(prefix, sizeof prefix, "%.*s", (int)(len - 1), o->target);
      check_prefix(o->target, prefix);
    } else {
      prefix[0] = '\0';
    }
    o->prefix = prefix;
  }
}

void options_parse(int argc, char **argv, options *o) {
  static const struct option longopts[] = {
      {"servers", required_argument, NULL, 's'},
      {"session-timeout", required_argument, NULL, 't'},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT},
      {"no-follow-config", no_argument, NULL, OPT_NO_FOLLOW},
      {"agent", required_argument, NULL, OPT_AGENT},
      {"server-tick", required_argument, NULL, OPT_SERVER_TICK},
      {"wait", required_argument, NULL, 'w'},
      {"timeout", required_argument, NULL, 'w'}, /* flock(1)'s words */
      {"nonblock", no_argument, NULL, 'n'},
      {"nb", no_argument, NULL, 'n'},
      {"close", no_argument, NULL, 'o'},
      {"conflict-exit-code", required_argument, NULL, 'E'},
      {"kill-after", required_argument, NULL, 'k'},
      {"info", required_argument, NULL, OPT_INFO},
      {"auth", required_argument, NULL, OPT_AUTH},
      {"acl", required_argument, NULL, OPT_ACL},
      {"layout", required_argument, NULL, OPT_LAYOUT},
      {"command", required_argument, NULL, 'c'},
      {"quiet", no_argument, NULL, 'q'},
      {"verbose", no_argument, NULL, 'v'},
      {"list", required_argument, NULL, 'l'},
      {"leader", required_argument, NULL, OPT_LEADER},
      {"revoke", required_argument, NULL, OPT_REVOKE},
      {"on-revoke", required_argument, NULL, OPT_ON_REVOKE},
      {"break", required_argument, NULL, OPT_BREAK},
      {"grace", required_argument, NULL, OPT_GRACE},
      {"max-hold", required_argument, NULL, OPT_MAX_HOLD},
      {"read", no_argument, NULL, OPT_READ},
      {"shared", no_argument, NULL, OPT_READ}, /* as flock(1) says it */
      {"write", no_argument, NULL, OPT_WRITE},
      {"exclusive", no_argument, NULL, OPT_WRITE},
      {"limit", required_argument, NULL, OPT_LIMIT},
      {"elect", required_argument, NULL, OPT_ELECT},
      {"no-header", no_argument, NULL, 'H'},
      {"format", required_argument, NULL, OPT_FORMAT},
      {"watch", no_argument, NULL, OPT_WATCH},
      {"label", required_argument, NULL, OPT_LABEL},
      {"hold", no_argument, NULL, OPT_HOLD},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, OPT_VERSION},
      {NULL, 0, NULL, 0}};
  static char wait_said[256];
  const char *env = getenv("ZKLOCK_SERVERS"), *hosts_from = "ZKLOCK_SERVERS";
  char *env_auth = getenv("ZKLOCK_AUTH");
  bool e_set = false, k_set = false, acl_set = false, n_set = false,
       grace_set = false, layout_set = false;
  int c, at, li, n, i, j, command_at = 0;
  bool separator;
  long v;

  memset(o, 0, sizeof *o);
  o->hosts = env && *env ? env : DEFAULT_HOSTS;
  o->agent = getenv("ZKLOCK_AGENT");
  if (o->agent && !*o->agent)
    o->agent = NULL;
  o->session_ms = DEFAULT_SESSION_MS;
  o->connect_ms = DEFAULT_CONNECT_MS;
  o->wait_ms = -1;
  o->conflict_code = 1;
  o->grace_ms = DEFAULT_GRACE_MS;
  o->break_grace_ms = DEFAULT_BREAK_GRACE_MS;
  o->acl = ZKL_ACL_OPEN;
  o->action = ACT_RUN;
  o->kind = KIND_MUTEX;
  opterr = 0;
  /* Every word has room among the NAMEs; main() frees them. */
  o->names = calloc((size_t)argc + 1, sizeof *o->names);
  if (!o->names) {
    cli_error("out of memory");
    exit(EXIT_ZOOKEEPER);
  }
  /* "+": getopt stops at each NAME, which is taken here, and goes on
   * after it: an option between the NAME and the command (or '--') acts
   * as an option (it used to become a NAME: "zklock db --read -- cmd"
   * took a lock named "--read"). The first word after the one NAME that is
   * not an option starts the command, as flock(1) has it; a '--' there
   * ends the options, and what follows it is the command's. A '--' before
   * any NAME ends the options, as POSIX has it: every word up to the next
   * '--' is then a NAME, even one that starts with '-': the form for
   * several NAMEs. */
  for (;;) {
    at = optind; /* argv[at]: the word getopt reads */
    li = -1;     /* longopts[li]: the long option read, if one was */
    c = getopt_long(argc, argv, "+:s:t:w:nE:k:c:xuoqvVl:Hh", longopts, &li);
    if (c == -1) {
      if (optind == at + 1) { /* it took a '--' */
        if (o->n_names == 0) {
          /* "zklock -- -NAME COMMAND...": flock's form here too */
          bool one = !o->command_string && !o->hold &&
                     !has_separator(argc, argv, optind);
          while (optind < argc && strcmp(argv[optind], "--") != 0 &&
                 !(one && o->n_names == 1))
            o->names[o->n_names++] = argv[optind++];
          if (one && optind < argc)
            command_at = optind;
        } else
          optind--; /* the separator, looked at below */
        break;
      }
      if (optind >= argc)
        break;
      /* flock(1)'s form, "zklock NAME COMMAND [ARG...]": a word after
       * the one NAME starts the command, and every word from there on is
       * the command's, its options and a '--' of its own included
       * ("zklock job ssh web1 -- echo X" runs ssh; issue 34). With -c or
       * --hold the words are all NAMEs. Several NAMEs go between '--'s
       * (the leading form above), which cannot be misread. */
      if (o->n_names == 1 && !o->command_string && !o->hold) {
        command_at = optind;
        break;
      }
      o->names[o->n_names++] = argv[optind++];
      continue;
    }
    switch (c) {
    case 's':
      if (!*optarg)
        cli_usage_error("-s: the connect string is empty");
      o->hosts = optarg;
      o->hosts_flag = true;
      hosts_from = "-s";
      break;
    case 't':
      /* "-t 10" was 10 ms, which no server grants (it gave a session of
       * its minimum without a word): a bare number that small is meant in
       * seconds, most likely, and refused. With a unit, any. */
      if (millis_or_exit("-t", optarg, &o->session_ms) &&
          o->session_ms < MIN_BARE_SESSION_MS)
        cli_usage_error("-t: a bare number is milliseconds, and %d ms is "
                        "less than a ZooKeeper server grants: write the "
                        "unit (-t %ds for seconds, or -t %dms)",
                        o->session_ms, o->session_ms, o->session_ms);
      break;
    case OPT_CONNECT:
      seconds_or_exit("--connect-timeout", optarg, &o->connect_ms);
      if (o->connect_ms == 0)
        cli_usage_error("--connect-timeout: must be more than 0");
      break;
    case OPT_NO_FOLLOW:
      o->no_follow = true;
      break;
    case OPT_AGENT:
      o->agent = *optarg ? optarg : NULL;
      break;
    case OPT_SERVER_TICK:
      millis_or_exit("--server-tick", optarg, &o->server_tick_ms);
      break;
    case 'w':
      /* for messages: "after 1 s", "after 500ms" */
      snprintf(wait_said, sizeof wait_said,
               seconds_or_exit("-w", optarg, &o->wait_ms) ? "%s s" : "%s",
               optarg);
      o->wait_arg = wait_said;
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
    case OPT_INFO:
      if (*optarg)
        check_line("--info", "text", optarg, ZKL_INFO_MAX);
      o->info = optarg;
      break;
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
    case OPT_LAYOUT:
      if (strcmp(optarg, "curator") == 0)
        o->layout = ZKL_LAYOUT_CURATOR;
      else if (strcmp(optarg, "kazoo") == 0)
        o->layout = ZKL_LAYOUT_KAZOO;
      else
        cli_usage_error("--layout: %s is neither 'curator' nor 'kazoo'",
                        cli_quote(optarg));
      layout_set = true;
      break;
    case 'c':
      if (!*optarg)
        cli_usage_error("-c: the command string is empty");
      o->command_string = optarg;
      break;
    case 'x': /* flock(1)'s -x */
      set_kind(o, KIND_WRITE, "exclusive");
      break;
    case 'u': /* flock(1)'s, which have no meaning here */
      cli_usage_error("-u: zklock has no unlock: the lock is released when "
                      "the command exits (with --hold, when its standard "
                      "input ends)");
    case 'o':
      /* flock(1)'s -o closes the lock's descriptor before the command
       * runs: zklock passes none (the lock is in ZooKeeper), so there is
       * nothing to close. Taken, and nothing done, so that a flock line
       * runs as it is; every process the command starts still holds the
       * lock until it ends (zklock(1), The keeper). */
      break;
    case 'q':
      o->quiet = true;
      break;
    case 'v':
      cli_verbose = true;
      break;
    case 'l':
      set_action(o, ACT_LIST, optarg);
      break;
    case OPT_LEADER:
      set_action(o, ACT_LEADER, optarg);
      break;
    case OPT_REVOKE:
      set_action(o, ACT_REVOKE, optarg);
      break;
    case OPT_ON_REVOKE:
      take_signal(o, optarg);
      break;
    case OPT_BREAK:
      set_action(o, ACT_BREAK, optarg);
      break;
    case OPT_GRACE:
      seconds_or_exit("--grace", optarg, &o->break_grace_ms);
      grace_set = true;
      break;
    case OPT_MAX_HOLD:
      seconds_or_exit("--max-hold", optarg, &o->max_hold_ms);
      if (o->max_hold_ms == 0)
        cli_usage_error("--max-hold: must be more than 0");
      break;
    case OPT_READ:
    case OPT_WRITE: /* --read, --shared, --write, --exclusive */
      set_kind(o, c == OPT_READ ? KIND_READ : KIND_WRITE, longopts[li].name);
      break;
    case OPT_LIMIT:
      set_kind(o, KIND_SEMAPHORE, "limit");
      if (!parse_int(optarg, 1, INT_MAX, &v))
        cli_usage_error("--limit: %s is not a number of leases (a whole "
                        "number from 1 to %d)",
                        cli_quote(optarg), INT_MAX);
      o->limit = (int)v;
      break;
    case OPT_ELECT:
      set_kind(o, KIND_ELECT, "elect");
      check_line("--elect", "id", optarg, ZKL_ID_MAX);
      o->elect_id = optarg;
      break;
    case 'H':
      o->no_header = true;
      break;
    case OPT_FORMAT:
      take_format(o, optarg);
      break;
    case OPT_WATCH:
      o->watch = true;
      break;
    case OPT_LABEL:
      take_label(o, optarg);
      break;
    case OPT_HOLD:
      o->hold = true;
      break;
    case 'h':
      usage();
      exit(0);
    case 'V': /* flock(1)'s */
    case OPT_VERSION:
      printf("zklock %s (libzklock %s)\n"
             "ZooKeeper client: %s, TLS: %s, SASL: %s\n"
             "License: Apache-2.0 <https://www.apache.org/licenses/LICENSE-2.0>\n",
             PACKAGE_VERSION, zkl_version_string(), ZOO_VERSION,
             ZK_CLIENT_TLS, ZK_CLIENT_SASL);
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
  check_view(o);
  n = o->n_names;
  separator = !command_at && optind < argc; /* argv[optind] is the "--" */

  if (grace_set && o->action != ACT_BREAK)
    cli_usage_error("--grace goes with --break only");
  /* --list, --leader, --revoke and --break ask through the agent, --watch
   * included (overview.c). */
  /* A socket's path lives in sockaddr_un.sun_path (108 bytes, its NUL
   * included): say so, not the library's bare "invalid argument". */
  if (o->agent && strlen(o->agent) >= sizeof(((struct sockaddr_un *)0)->sun_path))
    cli_usage_error("the agent's socket path is %zu bytes long; a Unix "
                    "socket's path holds at most %zu",
                    strlen(o->agent),
                    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
  if (o->agent && (o->auth || o->server_tick_ms))
    cli_usage_error("--auth and --server-tick are the agent's to set "
                    "(zklockd(8)), not zklock's through it");
  if (o->action != ACT_RUN) {
    const char *opt = action_option(o->action);
    if (o->wait_arg || n_set || e_set || k_set || o->info || acl_set ||
        layout_set || o->revoke_sig || o->max_hold_ms ||
        o->kind != KIND_MUTEX)
      cli_usage_error("%s takes no -w, -n, -E, -k, --info, --acl, "
                      "--layout, --on-revoke, --max-hold, --read, --write, "
                      "--limit or --elect",
                      opt);
    if (o->no_header && o->action != ACT_LIST)
      cli_usage_error("-H goes with --list only");
    if (n > 0 || separator || command_at)
      cli_usage_error("%s takes one lock name and no command, but %s "
                      "follows",
                      opt, cli_quote(n > 0 ? o->names[0] : argv[optind]));
    if (o->command_string || o->hold)
      cli_usage_error("%s takes no %s", opt, o->hold ? "--hold" : "-c");
    if (!o->prefix)
      check_name(o->target);
    return;
  }
  if (o->no_header)
    cli_usage_error("-H goes with --list only");
  if (o->info && o->kind == KIND_ELECT)
    cli_usage_error("--info cannot be used with --elect: a candidate's node "
                    "holds its id");
  if (o->acl == ZKL_ACL_CREATOR && !o->auth)
    cli_usage_error("--acl creator needs credentials (--auth or "
                    "ZKLOCK_AUTH): the lock's nodes belong to them");
  if (n == 0)
    cli_usage_error("missing lock name (%s)", usage_line);
  o->name = o->names[0];
  if (o->hold && (o->command_string || separator))
    cli_usage_error("--hold holds the lock until its standard input ends: "
                    "it takes no command (%s)",
                    o->command_string ? "-c" : "'--'");
  if (o->command_string && (separator || command_at))
    cli_usage_error("-c %s is the command: no other command may follow, "
                    "but %s does",
                    cli_quote(o->command_string),
                    cli_quote(command_at ? argv[command_at]
                              : optind + 1 < argc ? argv[optind + 1]
                                                  : "--"));
  if (command_at && has_separator(argc, argv, command_at + 1) &&
      !is_command(argv[command_at]))
    /* "zklock a b -- cmd" was a line of two NAMEs; it is now NAME a and
     * the command "b -- cmd", as flock(1) reads it. When b is no command,
     * the line most likely means the old form: refused, not run. */
    cli_usage_error("%s after the lock name %s is no command (not found), "
                    "and a '--' follows: several lock names go between "
                    "'--'s (zklock [OPTIONS] -- NAME... -- COMMAND "
                    "[ARG...]); after one NAME, every word is the "
                    "command's, a '--' included",
                    cli_quote(argv[command_at]), cli_quote(o->names[0]));
  /* "zklock -s NAME COMMAND" (flock's shared lock) ends here: -s took
   * NAME for the servers, and COMMAND became the lock's name. Said when
   * -s has no port: "-s zk1:2181 name" is more likely a forgotten
   * command. */
  if (!o->command_string && !o->hold && !separator && !command_at)
    cli_usage_error("missing command after the lock name (zklock [OPTIONS] "
                    "NAME COMMAND [ARG...], -c STRING, or --hold; several "
                    "NAMEs: zklock [OPTIONS] -- NAME... -- COMMAND)%s",
                    o->hosts_flag && !strchr(o->hosts, ':') ? CLI_S_HINT
                                                            : "");
  if (separator && optind + 1 == argc && !o->command_string)
    cli_usage_error("missing command after '--' (%s)", usage_line);
  for (i = 0; i < n; i++) {
    check_name(o->names[i]);
    for (j = 0; j < i; j++)
      if (strcmp(o->names[i], o->names[j]) == 0)
        cli_usage_error("lock name %s is given twice", cli_quote(o->names[i]));
  }
  if (n > 1 && o->kind != KIND_MUTEX)
    cli_usage_error("several lock names are held as mutexes only: no "
                    "--read, --write, --limit or --elect with them");
  /* Kazoo's names exist for its Lock alone (zkl_lock_set_layout(3)). */
  if (o->layout == ZKL_LAYOUT_KAZOO && (n > 1 || o->kind != KIND_MUTEX))
    cli_usage_error("--layout kazoo is a mutex's of one lock name: no "
                    "--read, --write, --limit, --elect or several NAMEs "
                    "with it");
  if (n > ZKL_MULTI_NAMES_MAX)
    cli_usage_error("at most %d lock names", ZKL_MULTI_NAMES_MAX);
  if (o->hold) {
    /* --hold: the command is the hold itself. A process of its own, so
     * that everything a run does for a command (the watchdog, SIGTERM on
     * a loss, exit 4) holds for it: it tells the token and the node on
     * stdout, then reads stdin to its end (exec, so that SIGTERM reaches
     * cat itself). */
    static char *argv_hold[] = {
        "sh", "-c",
        "printf '%s %s\\n' \"$ZKLOCK_TOKEN\" \"$ZKLOCK_NODE\" && "
        "exec cat >/dev/null",
        NULL};
    const char *ended = stdin_at_end();
    o->command = argv_hold;
    if (!o->info)
      o->info = "zklock --hold";
    if (ended && !o->quiet)
      cli_error("warning: --hold holds until standard input ends, and it "
                "is %s already: the lock will be released as soon as it is "
                "granted. A script's background job (&) reads /dev/null; "
                "give --hold a pipe that stays open while you need the "
                "lock: a coprocess (coproc, see zklock(1)) or a fifo kept "
                "open for writing",
                ended);
  } else if (o->command_string) {
    /* flock -c: the string is run by $SHELL -c, as flock runs it (so
     * that bash's [[ ]] works for a bash user), /bin/sh when SHELL is
     * unset or empty */
    static char sh[] = "/bin/sh", dash_c[] = "-c";
    static char *argv_c[4];
    char *shell = getenv("SHELL");
    argv_c[0] = shell && *shell ? shell : sh;
    argv_c[1] = dash_c;
    argv_c[2] = (char *)o->command_string;
    argv_c[3] = NULL;
    o->command = argv_c;
  } else {
    o->command = command_at ? argv + command_at : argv + optind + 1;
  }
}
