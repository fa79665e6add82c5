/* SPDX-License-Identifier: Apache-2.0 */
/*
 * child.c - starting processes (the keeper from zklock, the command from
 * the keeper) and signalling them.
 *
 * zklock has ZooKeeper's threads running when it forks, so the child does
 * only async-signal-safe things between fork and exec: everything it needs
 * (the environment, the list of descriptors to keep) is prepared before the
 * fork. An exec failure is reported through a close-on-exec pipe, so that
 * the parent can say why and choose 127 or 126 as a shell does.
 *
 * Nobody signals a pid that may have been reused: a process's pid, and the
 * id of a process group it leads, stay reserved until its parent reaps it,
 * and only the parent signals (the keeper its command, zklock its keeper).
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

/* Descriptors open when zklock (or the keeper) started, ascending: the
 * command's. */
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

void child_forget_fd(int fd) {
  int i;
  for (i = 0; i < n_inherited; i++)
    if (inherited[i] == fd) {
      memmove(inherited + i, inherited + i + 1,
              sizeof *inherited * (size_t)(n_inherited - i - 1));
      n_inherited--;
      return;
    }
}

void child_close_inherited(void) {
  int i;
  for (i = 0; i < n_inherited; i++)
    if (inherited[i] > 2)
      close(inherited[i]);
  n_inherited = 0;
}

/* In the child: closes every descriptor from 3 up but keep[0..n-1]
 * (ascending). */
static void close_others(const int *keep, int n, int fd_max) {
  int next = 3, i = 0;
  for (;;) {
    int stop; /* the next descriptor to keep, at or after next; -1: none */
    while (i < n && keep[i] < next)
      i++;
    stop = i < n ? keep[i] : -1;
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

/* The descriptors the child keeps, ascending: zklock's inherited ones
 * when asked, spec's passed ones, and the exec error pipe. NULL when out
 * of memory. */
static int *keep_list(const child_spec *spec, int errfd, int *n) {
  int *keep = malloc(sizeof *keep * (size_t)(n_inherited + 4)), i;
  *n = 0;
  if (!keep)
    return NULL;
  if (spec->keep_inherited)
    for (i = 0; i < n_inherited; i++)
      keep[(*n)++] = inherited[i];
  for (i = 0; i < 3; i++)
    if (spec->pass_fds[i] >= 0)
      keep[(*n)++] = spec->pass_fds[i];
  keep[(*n)++] = errfd;
  qsort(keep, (size_t)*n, sizeof *keep, cmp_int);
  return keep;
}

#define N_OURS 5
static const char *const ours[N_OURS] = {"ZKLOCK_TOKEN=", "ZKLOCK_NAME=",
                                         "ZKLOCK_NAMES=", "ZKLOCK_NODE=",
                                         "ZKLOCK_NODES="};

static bool is_ours(const char *entry) {
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

/* names[0..count-1], one a line: a name has no control character
 * (zkl_name_check), so a newline cannot be part of one, where a space can. */
static char *lines_of(char *const *names, int count) {
  size_t len = 1, used = 0, l;
  int i;
  char *out;
  for (i = 0; i < count; i++)
    len += strlen(names[i]) + 1;
  if (!(out = malloc(len)))
    return NULL;
  out[0] = '\0';
  for (i = 0; i < count; i++) {
    if (i > 0)
      out[used++] = '\n';
    l = strlen(names[i]);
    memcpy(out + used, names[i], l + 1);
    used += l;
  }
  return out;
}

/* ZKLOCK_NODE's paths (space-separated, in the order of the names) one a
 * line. A name may hold a space, so the list is cut where each name's
 * queue begins (its parent, then '/'), and a node's own name ends at the
 * next space (ours have none: _c_<id>-lock-<seq>). The result is never
 * longer than node. Should node not read so, it is kept as it is. NULL
 * when out of memory. */
static char *node_lines(char *const *names, int count, const char *node) {
  char *out = strdup(node), parent[ZKL_PATH_MAX];
  const char *at = node;
  size_t used = 0;
  int i;
  if (!out || count < 2)
    return out;
  for (i = 0; i < count; i++) {
    size_t plen, len;
    const char *end;
    if (i > 0 && *at++ != ' ')
      break;
    names_parent(parent, sizeof parent, names[i]);
    plen = strlen(parent);
    if (strncmp(at, parent, plen) != 0 || at[plen] != '/')
      break;
    end = strchr(at + plen + 1, ' ');
    len = end ? (size_t)(end - at) : strlen(at);
    if (i > 0)
      out[used++] = '\n';
    memcpy(out + used, at, len);
    used += len;
    at += len;
  }
  if (i < count || *at) /* not the list expected: as it came */
    return strcpy(out, node);
  out[used] = '\0';
  return out;
}

char **child_env(int64_t token, const char *name, char *const *names,
                 int n_names, const char *node) {
  size_t n = 0, k = 0, i;
  char **env, number[24], *lines = lines_of(names, n_names),
                           *nodes = node_lines(names, n_names, node);
  const char *value[N_OURS];
  if (!lines || !nodes) {
    free(lines);
    free(nodes);
    return NULL;
  }
  snprintf(number, sizeof number, "%" PRId64, token);
  value[0] = number;
  value[1] = name;
  value[2] = lines;
  value[3] = node;
  value[4] = nodes;
  while (environ[n])
    n++;
  /* ours at the front, where child_env_free() finds them */
  env = calloc(n + N_OURS + 1, sizeof *env);
  if (!env) {
    free(lines);
    free(nodes);
    return NULL;
  }
  for (i = 0; i < N_OURS; i++)
    if (!(env[k++] = env_entry(ours[i], value[i]))) {
      free(lines);
      free(nodes);
      child_env_free(env);
      return NULL;
    }
  free(lines);
  free(nodes);
  for (i = 0; i < n; i++)
    if (!is_ours(environ[i]))
      env[k++] = environ[i];
  env[k] = NULL;
  return env;
}

void child_env_free(char **env) {
  int i;
  for (i = 0; env && i < N_OURS && env[i]; i++)
    free(env[i]);
  free(env);
}

static int open_max(void) {
  long m = sysconf(_SC_OPEN_MAX);
  return m < 0 || m > 65536 ? 65536 : (int)m;
}

/* In the child: everything but keep[] closed from 3 up, and the passed
 * descriptors kept across the exec. Async-signal-safe. */
static void arrange_fds(const child_spec *spec, const int *keep, int n,
                        int fd_max) {
  int i;
  close_others(keep, n, fd_max);
  for (i = 0; i < 3; i++)
    if (spec->pass_fds[i] >= 0)
      fcntl(spec->pass_fds[i], F_SETFD, 0);
}

int child_spawn(child_proc *c, const child_spec *spec, int *err) {
  int errpipe[2], fd_max = open_max(), i, nkeep = 0;
  int *keep = NULL;
  child_spec s = *spec;
  pid_t parent = getpid(), pid;
  ssize_t n;
  c->pid = 0;
  c->own_group = spec->own_group;
  *err = 0;
  if (pipe2(errpipe, O_CLOEXEC) != 0) {
    *err = errno;
    return -1;
  }
  if (!(keep = keep_list(spec, errpipe[1], &nkeep))) {
    *err = ENOMEM;
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
    else if (s.join_group > 0)
      setpgid(0, s.join_group);
#ifdef __linux__
    if (s.pdeathsig) {
      prctl(PR_SET_PDEATHSIG, s.pdeathsig);
      if (getppid() != parent) /* the parent died before the prctl */
        _exit(EXIT_CANNOT_RUN);
    }
#endif
    if (s.restore_signals)
      ev_restore_signals_in_child();
    if (s.in_child)
      s.in_child();
    arrange_fds(&s, keep, nkeep, fd_max);
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
  free(keep);
  for (i = 0; i < 2; i++)
    if (errpipe[i] >= 0)
      close(errpipe[i]);
  return *err ? -1 : 0;
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
