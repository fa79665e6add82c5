/* SPDX-License-Identifier: Apache-2.0 */
/* agentctl.c - zklockd for the tests (agentctl.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agentctl.h"

#define ZKLOCKD ZKL_TEST_BUILDDIR "/agent/zklockd"
#define AGENTS_MAX 32

static pid_t running[AGENTS_MAX];
static bool hooked;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kill_all(void) {
  int i;
  for (i = 0; i < AGENTS_MAX; i++)
    if (running[i] > 0) {
      kill(running[i], SIGKILL);
      kill(running[i], SIGCONT);
      waitpid(running[i], NULL, 0);
      running[i] = 0;
    }
}

static void remember(pid_t pid, bool add) {
  int i;
  for (i = 0; i < AGENTS_MAX; i++)
    if (add ? running[i] == 0 : running[i] == pid) {
      running[i] = add ? pid : 0;
      return;
    }
}

static bool answers(const char *path) {
  struct sockaddr_un a;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof a.sun_path) {
    close(fd);
    return false;
  }
  strcpy(a.sun_path, path);
  ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (fd >= 0)
    close(fd);
  return ok;
}

bool agentctl_start(agentctl *a, const char *hosts, const char *const *extra) {
  static int seq;
  const char *argv[40];
  int n = 0, i, status;
  pid_t pid;
  int64_t until;
  if (!hooked) {
    atexit(kill_all);
    hooked = true;
  }
  memset(a, 0, sizeof a[0]);
  snprintf(a->dir, sizeof a->dir, "/tmp/zklockd-test-%ld-%d", (long)getpid(),
           ++seq);
  if (mkdir(a->dir, 0700) != 0 && errno != EEXIST) {
    printf("agentctl: %s: %s\n", a->dir, strerror(errno));
    return false;
  }
  snprintf(a->sock, sizeof a->sock, "%s/sock", a->dir);
  snprintf(a->log, sizeof a->log, "%s/log", a->dir);
  argv[n++] = ZKLOCKD;
  argv[n++] = "-s";
  argv[n++] = hosts;
  argv[n++] = "--socket";
  argv[n++] = a->sock;
  argv[n++] = "-v";
  for (i = 0; extra && extra[i] && n < 38; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  fflush(stdout);
  if ((pid = fork()) < 0)
    return false;
  if (pid == 0) {
    int fd = open(a->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(ZKLOCKD, (char *const *)argv);
    _exit(127);
  }
  a->pid = pid;
  remember(pid, true);
  until = now_ms() + 30000;
  while (now_ms() < until) {
    if (answers(a->sock))
      return true;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      remember(pid, false);
      a->pid = 0;
      printf("agentctl: zklockd exited before serving (status %d)\n", status);
      agentctl_print_log(a);
      return false;
    }
    usleep(20000); /* polling a socket path: nothing to wait on */
  }
  printf("agentctl: zklockd did not serve %s within 30 s\n", a->sock);
  agentctl_print_log(a);
  agentctl_kill(a);
  return false;
}

/* The socket, the log and the directory go with the agent, unless
 * ZKL_KEEP_AGENT_LOGS is set (to read a failing test's log). */
static void remove_dir(const agentctl *a) {
  const char *keep = getenv("ZKL_KEEP_AGENT_LOGS");
  if (keep && *keep)
    return;
  unlink(a->sock);
  unlink(a->log);
  rmdir(a->dir);
}

int agentctl_stop(agentctl *a) {
  int status, i;
  if (a->pid <= 0)
    return -1;
  kill(a->pid, SIGCONT);
  kill(a->pid, SIGTERM);
  for (i = 0; i < 1500; i++) { /* 15 s */
    if (waitpid(a->pid, &status, WNOHANG) == a->pid)
      break;
    usleep(10000);
  }
  if (i == 1500) {
    printf("agentctl: zklockd did not stop within 15 s: killed\n");
    kill(a->pid, SIGKILL);
    waitpid(a->pid, &status, 0);
  }
  remember(a->pid, false);
  a->pid = 0;
  /* A stop that did not end in exit 0 is a finding: its log says why (a
   * sanitizer's report among them), before it goes. */
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    agentctl_print_log(a);
  remove_dir(a);
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

void agentctl_kill(agentctl *a) {
  if (a->pid <= 0)
    return;
  kill(a->pid, SIGKILL);
  kill(a->pid, SIGCONT);
  waitpid(a->pid, NULL, 0);
  remember(a->pid, false);
  a->pid = 0;
  remove_dir(a);
}

void agentctl_freeze(agentctl *a, bool freeze) {
  if (a->pid > 0)
    kill(a->pid, freeze ? SIGSTOP : SIGCONT);
}

void agentctl_signal(agentctl *a, int sig) {
  if (a->pid > 0)
    kill(a->pid, sig);
}

void agentctl_print_log(const agentctl *a) {
  char line[1024];
  FILE *f = fopen(a->log, "r");
  if (!f)
    return;
  printf("---- zklockd's log (%s)\n", a->log);
  while (fgets(line, sizeof line, f))
    fputs(line, stdout);
  printf("----\n");
  fclose(f);
}

bool agentctl_log_has(const agentctl *a, const char *needle,
                      const char *needle2, int bound_ms) {
  struct timespec ts;
  long long until, now;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  until = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 + bound_ms;
  do {
    char line[1024];
    bool seen = false;
    FILE *log = fopen(a->log, "r");
    while (log && fgets(line, sizeof line, log))
      if (strstr(line, needle) && (!needle2 || strstr(line, needle2)))
        seen = true;
    if (log)
      fclose(log);
    if (seen)
      return true;
    usleep(10000); /* a file has no change to wait on; looked at again */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
  } while (now < until);
  return false;
}
