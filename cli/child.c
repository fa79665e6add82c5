/*
 * child.c - starting the command and signalling it.
 *
 * zklock has ZooKeeper's threads running when it forks, so the child does
 * only async-signal-safe things between fork and exec: everything it needs
 * (the environment, the list of descriptors to keep) is prepared before the
 * fork. An exec failure is reported through a close-on-exec pipe, so that
 * the parent can say why and choose 127 or 126 as a shell does.
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

int child_start(child_proc *c, char *const argv[], bool own_group,
                int64_t token, const char *name, const char *node) {
  int errpipe[2], err = 0, fd_max = open_max();
  char *added[3] = {NULL, NULL, NULL};
  char **env = build_env(token, name, node, added);
  pid_t parent = getpid(), pid;
  ssize_t n;
  if (!env) {
    free_env(NULL, added);
    cli_error("cannot run %s: out of memory", argv[0]);
    return EXIT_CANNOT_RUN;
  }
  if (pipe(errpipe) != 0 || fcntl(errpipe[0], F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(errpipe[1], F_SETFD, FD_CLOEXEC) != 0) {
    free_env(env, added);
    cli_error("cannot run %s: pipe: %s", argv[0], strerror(errno));
    return EXIT_CANNOT_RUN;
  }
  pid = fork();
  if (pid < 0) {
    err = errno;
    close(errpipe[0]);
    close(errpipe[1]);
    free_env(env, added);
    cli_error("cannot run %s: fork: %s", argv[0], strerror(err));
    return EXIT_CANNOT_RUN;
  }
  if (pid == 0) {
    /* The child: async-signal-safe calls only. */
    if (own_group)
      setpgid(0, 0);
#ifdef __linux__
    /* Should zklock die without a chance to stop it (SIGKILL), the
     * command must not go on believing it holds the lock. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
      _exit(EXIT_CANNOT_RUN);
#endif
    ev_restore_signals_in_child();
    close_others(errpipe[1], fd_max);
    environ = env;
    execvp(argv[0], argv);
    err = errno;
    n = write(errpipe[1], &err, sizeof err);
    (void)n;
    _exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
  }
  if (own_group)
    setpgid(pid, pid); /* also here, so that it holds before we signal it */
  close(errpipe[1]);
  c->pid = pid;
  c->own_group = own_group;
  /* EOF: exec succeeded (the pipe closed on exec). */
  do
    n = read(errpipe[0], &err, sizeof err);
  while (n < 0 && errno == EINTR);
  close(errpipe[0]);
  free_env(env, added);
  if (n == (ssize_t)sizeof err) {
    child_reap(c);
    cli_error("%s: %s", argv[0], strerror(err));
    return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
  }
  cli_verbose_msg("running %s (pid %ld%s)", argv[0], (long)pid,
                  own_group ? ", in its own process group" : "");
  return 0;
}

void child_signal(const child_proc *c, int sig) {
  if (kill(c->own_group ? -c->pid : c->pid, sig) != 0 && c->own_group)
    kill(c->pid, sig); /* the group is not set up yet: at least the child */
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
