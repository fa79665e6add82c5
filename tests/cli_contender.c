/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_contender.c - a contender of the fault suite (tests/test_fault_suite.c)
 * that locks with the zklock command: the holder is a zklock run, and its
 * work a command's tree, as a shell script's would be.
 *
 *   cli_contender [--agent PATH] HOSTS LOCK SLOT RESOURCE HISTORY LOG
 *                 SESSION_MS ACQ_TIMEOUT_MS HOLD_MS zklock
 *
 * The arguments are tests/contender's, so that the driver starts either
 * alike. It loops: runs
 *
 *   zklock (-s HOSTS -t SESSION_MS | --agent PATH) -q -w ACQ -k 1 -E 75
 *          --info slot=SLOT LOCK -- cli_contender --command ...
 *
 * and waits for it. The command (this program again) takes its token from
 * ZKLOCK_TOKEN and runs the mutex's section on RESOURCE
 * (tests/fault_resource.h): read the counter, work, write counter + 1
 * fenced by the token; an armed one (SIGUSR1, below) works HOLD_MS in steps
 * of 50 to 150 ms and may leave a grandchild to do it. Only a mutex: the
 * zklock runs queue beside tests/contender's mutexes and multi-locks on
 * LOCK, and share their resource.
 *
 * LOG gets the lines of tests/contender.c's format, from three processes,
 * each line one write() on an O_APPEND descriptor:
 *   this loop   BEGIN, ACQ (zklock started), REL <status> (zklock exited
 *               after the command ran), FAIL <status> (it never ran it:
 *               75, not acquired), IDLE, EXIT
 *   the command START <token>, ARMED <token>, ACCEPT, REJECT, END <token>
 *   its grandchild (armed, see below) ARMED's section from step 2 on:
 *               ACCEPT or REJECT, END; and LOST 0 <token> when it gets
 *               SIGTERM (zklock's word of a loss; 0: no reason is told)
 * Every line that names a token is that hold's work, wherever it comes
 * from and whenever (the checker holds the section until its last such
 * line: a grandchild that wrote after zklock exited worked under the lock).
 *
 * Signals (this loop; the driver's, as for tests/contender):
 *   SIGUSR1  arm: the next command that runs holds HOLD_MS (the value's
 *            low 24 bits; 0: HOLD_MS) and tells the driver on fd 3 (which
 *            zklock passes to its command) "H <token> - <zklock pid>" once
 *            it has read the counter; bits 29-30 say how:
 *              1  it forks a grandchild to do steps 2-3 and exits at once
 *                 (the command's end is not the end of its work); the
 *                 grandchild ends its work at SIGTERM, at its next step,
 *                 then writes (fenced), ENDs and exits
 *              3  the same, but the grandchild ignores SIGTERM (it logs
 *                 it, and works on until SIGKILL or its hold's end)
 *   SIGUSR2  quiesce: SIGTERM to a running zklock, wait for it, log IDLE,
 *            write "I\n" to fd 3, wait for SIGTERM
 *   SIGTERM  the same, then EXIT, exit 0
 * zklock gets PR_SET_PDEATHSIG SIGTERM: should this loop die, it lets go.
 *
 * Exit status: 0 after SIGTERM, 2 for bad arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fault_resource.h"

#define ZKLOCK ZKL_TEST_BUILDDIR "/cli/zklock"
#define SELF ZKL_TEST_BUILDDIR "/tests/cli_contender"
#define NOTIFY_FD 3
#define NOT_ACQUIRED 75 /* zklock -E: the lock was not acquired */
#define HOW_GRANDCHILD 1
#define HOW_IGNORE_TERM 2
#define STEP_MIN_US 50000
#define STEP_SPREAD_US 100001

static int log_fd = -1, notify_fd = -1;

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* One line, one write(). */
static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
  char buf[256];
  va_list ap;
  int n = snprintf(buf, sizeof buf, "%lld ", fr_now_us());
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2)
    n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(log_fd, buf, (size_t)n) < 0) {
    /* the checker will miss the line */
  }
}

static void notify(const char *msg) {
  if (notify_fd >= 0 && write(notify_fd, msg, strlen(msg)) < 0) {
    /* no driver listening (run by hand) */
  }
}

static void die(const char *what) {
  fprintf(stderr, "cli_contender: %s\n", what);
  exit(2);
}

/* ------------------------------------------------------------ the command */

static volatile sig_atomic_t termed;
static long long the_token;

/* Appends the decimal digits of v (>= 0) at p; returns the end. */
static char *put_ll(char *p, long long v) {
  char d[24];
  int n = 0;
  do
    d[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n > 0)
    *p++ = d[--n];
  return p;
}

/* SIGTERM in the grandchild: zklock's word of a loss (through its
 * keeper), logged when it came. Async-signal-safe: the line is put
 * together by hand (clock_gettime, write). */
static void on_term(int sig) {
  char buf[80], *p = buf;
  struct timespec ts;
  (void)sig;
  termed = 1;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  p = put_ll(p, (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
  memcpy(p, " LOST 0 ", 8);
  p = put_ll(p + 8, the_token);
  *p++ = '\n';
  if (write(log_fd, buf, (size_t)(p - buf)) < 0) {
  }
}

static int res_lock(int fd, fr_state *st) {
  return flock(fd, LOCK_EX) == 0 && fr_read(fd, FR_MUTEX, st) == 0 ? 0 : -1;
}

/* Step 3: the fenced write of counter + 1. */
static void fenced_write(int fd, int history_fd, int slot, long holder,
                         long long token, long long counter) {
  fr_state st;
  if (res_lock(fd, &st) != 0)
    die("cannot read the resource");
  if (token < st.highest) {
    logf_("REJECT %lld %lld", token, st.highest);
  } else {
    st.highest = token;
    st.counter = counter + 1;
    if (fr_write(fd, FR_MUTEX, &st) != 0 ||
        fr_history(history_fd, slot, holder, "%lld %lld %lld", token, counter,
                   counter + 1) != 0)
      die("cannot write the resource");
    logf_("ACCEPT %lld %lld %lld", token, counter, counter + 1);
  }
  flock(fd, LOCK_UN);
}

/* cli_contender --command RESOURCE HISTORY LOG SLOT HOLDER HOLD_MS HOW */
static int command_main(char **argv) {
  const char *t = getenv("ZKLOCK_TOKEN"), *z = getenv("ZKL_FAULT_ZKLOCK_PID");
  int slot = atoi(argv[3]), hold_ms = atoi(argv[5]), how = atoi(argv[6]);
  long holder = atol(argv[4]);
  int fd = open(argv[0], O_RDWR | O_CLOEXEC);
  int history_fd = open(argv[1], O_WRONLY | O_APPEND | O_CLOEXEC);
  long long counter, end;
  fr_state st;
  log_fd = open(argv[2], O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fcntl(NOTIFY_FD, F_GETFD) >= 0)
    notify_fd = NOTIFY_FD;
  if (!t || fd < 0 || history_fd < 0 || log_fd < 0)
    die("bad command arguments");
  the_token = atoll(t);
  logf_("START %lld", the_token);
  /* 1. read */
  if (res_lock(fd, &st) != 0)
    die("cannot read the resource");
  counter = st.counter;
  flock(fd, LOCK_UN);
  if (hold_ms <= 0) {
    /* 2. work, 3. write */
    srand((unsigned)getpid());
    sleep_us(1000 + rand() % 2000);
    fenced_write(fd, history_fd, slot, holder, the_token, counter);
    logf_("END %lld", the_token);
    return 0;
  }
  logf_("ARMED %lld", the_token);
  /* SIGTERM is caught (and logged) from here on, before the driver hears
   * of the hold and before the fork (the grandchild inherits the handler,
   * and termed): the driver begins its fault at the H line, and a stop
   * that came quicker than the fork used to kill the command by SIGTERM's
   * default action, with no LOST line (an "unannounced" loss, seen under
   * ASan in a CI run). */
  {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
  }
  {
    char msg[96];
    snprintf(msg, sizeof msg, "H %lld - %s\n", the_token, z ? z : "0");
    notify(msg);
  }
  if (how & HOW_GRANDCHILD) {
    /* The rest is a grandchild's: the command itself ends now, and its
     * end must not let the lock go. (One thread: a plain fork.) */
    pid_t pid = fork();
    if (pid < 0)
      die("fork");
    if (pid > 0)
      return 0;
  }
  /* 2. work, in steps; told (SIGTERM), it stops at the next one unless it
   * ignores SIGTERM */
  srand((unsigned)getpid());
  end = fr_now_us() + hold_ms * 1000LL;
  for (;;) {
    long long left = end - fr_now_us();
    long step = STEP_MIN_US + rand() % STEP_SPREAD_US;
    if ((termed && !(how & HOW_IGNORE_TERM)) || left <= 0)
      break;
    sleep_us(step < left ? step : (long)left);
  }
  /* 3. write */
  fenced_write(fd, history_fd, slot, holder, the_token, counter);
  logf_("END %lld", the_token);
  return 0;
}

/* --------------------------------------------------------------- the loop */

static const char *agent_path, *hosts, *lock_name, *resource, *history,
    *log_path;
static int slot, session_ms, acq_timeout_ms, hold_ms;

/* Starts zklock for one acquire; armed_ms > 0: its command is armed. */
static pid_t start_zklock(int armed_ms, int how) {
  char session_s[16], wait_s[16], info[32], slot_s[16], holder_s[24],
      hold_s[16], how_s[16], *argv[40];
  int n = 0;
  pid_t parent = getpid(), pid;
  snprintf(session_s, sizeof session_s, "%d", session_ms);
  snprintf(wait_s, sizeof wait_s, "%d", (acq_timeout_ms + 999) / 1000);
  snprintf(info, sizeof info, "slot=%d", slot);
  snprintf(slot_s, sizeof slot_s, "%d", slot);
  snprintf(holder_s, sizeof holder_s, "%ld", (long)parent);
  snprintf(hold_s, sizeof hold_s, "%d", armed_ms);
  snprintf(how_s, sizeof how_s, "%d", how);
  argv[n++] = (char *)ZKLOCK;
  if (agent_path) {
    argv[n++] = (char *)"--agent";
    argv[n++] = (char *)agent_path;
  } else {
    argv[n++] = (char *)"-s";
    argv[n++] = (char *)hosts;
    argv[n++] = (char *)"-t";
    argv[n++] = session_s;
  }
  argv[n++] = (char *)"-q";
  argv[n++] = (char *)"-w";
  argv[n++] = wait_s;
  argv[n++] = (char *)"-k";
  argv[n++] = (char *)"1";
  argv[n++] = (char *)"-E";
  argv[n++] = (char *)"75";
  argv[n++] = (char *)"--info";
  argv[n++] = info;
  argv[n++] = (char *)lock_name;
  argv[n++] = (char *)"--";
  argv[n++] = (char *)SELF;
  argv[n++] = (char *)"--command";
  argv[n++] = (char *)resource;
  argv[n++] = (char *)history;
  argv[n++] = (char *)log_path;
  argv[n++] = slot_s;
  argv[n++] = holder_s;
  argv[n++] = hold_s;
  argv[n++] = how_s;
  argv[n] = NULL;
  if ((pid = fork()) < 0)
    die("fork");
  if (pid == 0) {
    char me[24];
    sigset_t none;
    /* One thread: setenv is fine here. zklock stops its command and lets
     * go should this loop die. It starts with no signal blocked: this loop
     * was started with the driver's blocked (tests/test_fault_suite.c's
     * spawn()), and blocks SIGCHLD too. */
    snprintf(me, sizeof me, "%ld", (long)getpid());
    setenv("ZKL_FAULT_ZKLOCK_PID", me, 1);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
      _exit(127);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

static int loop_main(void) {
  sigset_t set;
  int sfd, armed_ms = 0, armed_how = 0;
  unsigned armed_gen = 0;
  bool stop = false, quiesce = false;
  /* Every signal it takes comes through a signalfd: one thread, no
   * handler. */
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, NULL);
  sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0)
    die("signalfd");
  logf_("BEGIN %ld %d", (long)getpid(), slot);
  while (!stop && !quiesce) {
    pid_t z;
    int status = 0;
    unsigned gen = armed_gen;
    bool exited = false;
    logf_("ACQ");
    z = start_zklock(armed_ms, armed_how);
    while (!exited) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
        continue;
      switch (si.ssi_signo) {
      case SIGUSR1: {
        int v = si.ssi_code == SI_QUEUE ? si.ssi_int : 0;
        armed_ms = v & 0xffffff;
        if (armed_ms == 0)
          armed_ms = hold_ms;
        armed_how = (v >> 29) & 3;
        armed_gen++;
        break;
      }
      case SIGUSR2:
      case SIGTERM:
      case SIGINT:
        if (si.ssi_signo == SIGUSR2)
          quiesce = true;
        else
          stop = true;
        kill(z, SIGTERM); /* it cancels its wait, or stops its command */
        break;
      default: /* SIGCHLD */
        while (waitpid(z, &status, WNOHANG) == z)
          exited = true;
        break;
      }
    }
    status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (status == NOT_ACQUIRED) {
      logf_("FAIL %d", status);
    } else {
      logf_("REL %d", status);
      if (armed_gen == gen)
        armed_ms = armed_how = 0; /* the armed command ran, or was told
                                     to stop (no newer arming came) */
    }
  }
  if (quiesce) {
    logf_("IDLE");
    notify("I\n");
    while (!stop) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si &&
          (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT))
        stop = true;
    }
  }
  logf_("EXIT");
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 9 && !strcmp(argv[1], "--command"))
    return command_main(argv + 2);
  if (argc > 2 && !strcmp(argv[1], "--agent")) {
    agent_path = argv[2];
    argv += 2;
    argc -= 2;
  }
  if (argc != 11 || strcmp(argv[10], "zklock") != 0) {
    fprintf(stderr, "usage: cli_contender [--agent PATH] HOSTS LOCK SLOT "
                    "RESOURCE HISTORY LOG SESSION_MS ACQ_TIMEOUT_MS HOLD_MS "
                    "zklock\n");
    return 2;
  }
  hosts = argv[1];
  lock_name = argv[2];
  slot = atoi(argv[3]);
  resource = argv[4];
  history = argv[5];
  log_path = argv[6];
  session_ms = atoi(argv[7]);
  acq_timeout_ms = atoi(argv[8]);
  hold_ms = atoi(argv[9]);
  if (fcntl(NOTIFY_FD, F_GETFD) >= 0)
    notify_fd = NOTIFY_FD;
  log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0 || session_ms <= 0 || acq_timeout_ms <= 0)
    die("bad arguments");
  return loop_main();
}
