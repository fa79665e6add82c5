/* SPDX-License-Identifier: Apache-2.0 */
/*
 * child.c - starting processes (the command, and the watchdog) and
 * signalling them.
 *
 * zklock has ZooKeeper's threads running when it forks, so the child does
 * only async-signal-safe things between fork and exec: everything it needs
 * (the environment, the list of descriptors to keep) is prepared before the
 * fork. An exec failure is reported through a close-on-exec pipe, so that
 * the parent can say why and choose 127 or 126 as a shell does.
 *
 * Nobody signals a pid that may have been reused: a process's pid, and the
 * id of a process group it leads, stay reserved until its parent reaps it,
 * and zklock, the parent of both, reaps the command only once the watchdog
 * is gone (see watchdog.c).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"

extern char **environ;

/* Descriptors open when zklock started, ascending: the command's. */
static int *inherited;
static int n_inherited;

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static void note_fd(int fd, int *cap) {
  if (n_inherited == *cap) {
    int *grown =
        realloc(inherited, sizeof *inherited * (size_t)(*cap * 2 + 16));
    if (!grown)
      return; /* not kept: the command loses it, zklock goes on */
    inherited = grown;
    *cap = *cap * 2 + 16;
  }
  inherited[n_inherited++] = fd;
}

void child_note_inherited_fds(void) {
  int cap = 0, fd;
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.')
        continue;
      fd = atoi(e->d_name);
      if (fd != dirfd(d))
        note_fd(fd, &cap);
    }
    closedir(d);
  } else {
    struct rlimit rl;
    int max = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < 65536)
      max = (int)rl.rlim_cur;
    for (fd = 0; fd < max; fd++)
      if (fcntl(fd, F_GETFD) != -1)
        note_fd(fd, &cap);
  }
  qsort(inherited, (size_t)n_inherited, sizeof *inherited, cmp_int);
}

/* In the child: closes every descriptor from 3 up that zklock did not
 * inherit, except keep. */
static void close_others(int keep, int fd_max) {
  int next = 3, i = 0;
  for (;;) {
    int stop = -1; /* the next descriptor to keep, at or after next */
    while (i < n_inherited && inherited[i] < next)
      i++;
    if (i < n_inherited)
      stop = inherited[i];
    if (keep >= next && (stop < 0 || keep < stop))
      stop = keep;
    if (stop == next) {
      next++;
      continue;
    }
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)next,
                stop < 0 ? ~0U : (unsigned)(stop - 1), 0) != 0)
#endif
    {
      int fd;
      for (fd = next; fd < (stop < 0 ? fd_max : stop); fd++)
        close(fd);
    }
    if (stop < 0)
      return;
    next = stop + 1;
  }
}

static bool is_ours(const char *entry) {
  static const char *const ours[] = {
      "ZKLOCK_TOKEN=", "ZKLOCK_NAME=", "ZKLOCK_NODE="};
  size_t i;
  for (i = 0; i < sizeof ours / sizeof ours[0]; i++)
    if (strncmp(entry, ours[i], strlen(ours[i])) == 0)
      return true;
  return false;
}

static char *env_entry(const char *key, const char *value) {
  size_t k = strlen(key), v = strlen(value);
  char *e = malloc(k + v + 1);
  if (e) {
    memcpy(e, key, k);
    memcpy(e + k, value, v + 1);
  }
  return e;
}

/* environ without ZKLOCK_TOKEN, _NAME, _NODE, then ours (in added[]). */
static char **build_env(int64_t token, const char *name, const char *node,
                        char *added[3]) {
  size_t n = 0, k = 0, i;
  char **env, number[24];
  while (environ[n])
    n++;
  env = calloc(n + 4, sizeof *env);
  if (!env)
    return NULL;
  for (i = 0; i < n; i++)
    if (!is_ours(environ[i]))
      env[k++] = environ[i];
  snprintf(number, sizeof number, "%" PRId64, token);
  added[0] = env_entry("ZKLOCK_TOKEN=", number);
  added[1] = env_entry("ZKLOCK_NAME=", name);
  added[2] = env_entry("ZKLOCK_NODE=", node);
  for (i = 0; i < 3; i++) {
    if (!added[i]) {
      free(env);
      return NULL; /* the caller frees added[] */
    }
    env[k++] = added[i];
  }
  env[k] = NULL;
  return env;
}

static void free_env(char **env, char *added[3]) {
  int i;
  for (i = 0; i < 3; i++)
    free(added[i]);
  free(env);
}

static int open_max(void) {
  long m = sysconf(_SC_OPEN_MAX);
  return m < 0 || m > 65536 ? 65536 : (int)m;
}

/* In the child: descriptors 3 and 4 from spec->moved_fds, then everything
 * else closed from 3 (or 5) up, except what zklock inherited when asked and
 * the exec error pipe. Async-signal-safe. */
static void arrange_fds(const child_spec *spec, int errfd, int fd_max) {
  int i, first = 3;
  for (i = 0; i < 2; i++)
    if (spec->moved_fds[i] >= 0) {
      /* dup2 clears close-on-exec; the source is above 4 (see below) */
      dup2(spec->moved_fds[i], 3 + i);
      first = 4 + i;
    }
  if (spec->keep_inherited) {
    close_others(errfd, fd_max);
    return;
  }
  /* only 0-2, the moved ones and errfd: close [first, errfd) and above */
#ifdef SYS_close_range
  if (errfd > first)
    syscall(SYS_close_range, (unsigned)first, (unsigned)(errfd - 1), 0);
  if (syscall(SYS_close_range, (unsigned)errfd + 1, ~0U, 0) == 0)
    return;
#endif
  for (i = first; i < fd_max; i++)
    if (i != errfd)
      close(i);
}

int child_spawn(child_proc *c, const child_spec *spec, int *err) {
  int errpipe[2], fd_max = open_max(), i;
  int moved[2] = {-1, -1};
  child_spec s = *spec;
  pid_t parent = getpid(), pid;
  ssize_t n;
  c->pid = 0;
  c->own_group = spec->own_group;
  *err = 0;
  /* The error pipe and the descriptors to move must sit above 4, where the
   * child's dup2 onto 3 and 4 cannot clobber them. */
  if (pipe(errpipe) != 0) {
    *err = errno;
    return -1;
  }
  for (i = 0; i < 2; i++) {
    int fd = fcntl(errpipe[i], F_DUPFD_CLOEXEC, 5);
    close(errpipe[i]);
    errpipe[i] = fd;
  }
  for (i = 0; i < 2; i++)
    if (spec->moved_fds[i] >= 0)
      moved[i] = s.moved_fds[i] = fcntl(spec->moved_fds[i], F_DUPFD_CLOEXEC, 5);
  if (errpipe[0] < 0 || errpipe[1] < 0 ||
      (spec->moved_fds[0] >= 0 && moved[0] < 0) ||
      (spec->moved_fds[1] >= 0 && moved[1] < 0)) {
    *err = errno;
    pid = -1;
    goto out;
  }
  pid = fork();
  if (pid < 0) {
    *err = errno;
    goto out;
  }
  if (pid == 0) {
    /* The child: async-signal-safe calls only. */
    if (s.own_group)
      setpgid(0, 0);
#ifdef __linux__
    if (s.pdeathsig) {
      prctl(PR_SET_PDEATHSIG, s.pdeathsig);
      if (getppid() != parent) /* zklock died before the prctl */
        _exit(EXIT_CANNOT_RUN);
    }
#endif
    if (s.restore_signals)
      ev_restore_signals_in_child();
    if (s.in_child) /* before arrange_fds closes zklock's descriptors */
      s.in_child();
    arrange_fds(&s, errpipe[1], fd_max);
    if (s.envp)
      environ = s.envp;
    if (s.path)
      execv(s.path, s.argv);
    else
      execvp(s.argv[0], s.argv);
    *err = errno;
    n = write(errpipe[1], err, sizeof *err);
    (void)n;
    _exit(*err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
  }
  if (s.own_group)
    setpgid(pid, pid); /* also here, so that it holds before we signal it */
  c->pid = pid;
  close(errpipe[1]);
  errpipe[1] = -1;
  /* EOF: exec succeeded (the pipe closed on exec). */
  do
    n = read(errpipe[0], err, sizeof *err);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof *err)
    *err = 0;
out:
  for (i = 0; i < 2; i++) {
    if (errpipe[i] >= 0)
      close(errpipe[i]);
    if (moved[i] >= 0)
      close(moved[i]);
  }
  return *err ? -1 : 0;
}

int child_start(child_proc *c, char *const argv[], bool own_group,
                int64_t token, const char *name, const char *node,
                void (*in_child)(void)) {
  char *added[3] = {NULL, NULL, NULL};
  char **env = build_env(token, name, node, added);
  child_spec spec;
  int err, rc;
  c->pid = 0;
  if (!env) {
    free_env(NULL, added);
    cli_error("cannot run %s: out of memory", cli_quote(argv[0]));
    return EXIT_CANNOT_RUN;
  }
  memset(&spec, 0, sizeof spec);
  spec.argv = argv;
  spec.envp = env;
  spec.own_group = own_group;
  /* Should zklock die without a chance to stop it (SIGKILL), the command
   * must not go on believing it holds the lock. */
  spec.pdeathsig = SIGTERM;
  spec.restore_signals = true;
  spec.keep_inherited = true;
  spec.moved_fds[0] = spec.moved_fds[1] = -1;
  spec.in_child = in_child;
  rc = child_spawn(c, &spec, &err);
  free_env(env, added);
  if (rc == 0) {
    cli_verbose_msg("running %s (pid %ld%s)", cli_quote(argv[0]),
                    (long)c->pid,
                    own_group ? ", in its own process group" : "");
    return 0;
  }
  if (c->pid)
    cli_error("%s: %s", cli_quote(argv[0]), strerror(err));
  else
    cli_error("cannot run %s: %s", cli_quote(argv[0]), strerror(err));
  return c->pid && err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}

void child_signal(const child_proc *c, int sig) {
  if (kill(c->own_group ? -c->pid : c->pid, sig) != 0 && c->own_group)
    kill(c->pid, sig); /* the group is not set up yet: at least the child */
}

void child_terminate(const child_proc *c) {
  child_signal(c, SIGTERM);
  child_signal(c, SIGCONT); /* as systemd does: a stopped one acts on it now */
}

bool child_exited(const child_proc *c) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
    return errno == ECHILD; /* gone: nothing more to wait for */
  return si.si_pid == c->pid;
}

int child_reap(const child_proc *c) {
  int status = 0;
  while (waitpid(c->pid, &status, 0) < 0)
    if (errno != EINTR)
      return 0;
  return status;
}
