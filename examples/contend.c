/* SPDX-License-Identifier: Apache-2.0 */
/*
 * contend.c - several processes contend for one lock. Each takes it ROUNDS
 * times and, while holding it, reports its token; since only the holder
 * writes, the reports arrive in grant order, and the parent checks that the
 * tokens strictly increase.
 *
 *   usage: contend HOSTS [NAME [PROCESSES [ROUNDS]]]
 *          (default name "demo", 4 processes, 3 rounds)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zklock.h>

static int contender(const char *hosts, const char *name, int id, int rounds,
                     int out) {
  zkl_session_options o;
  zkl_session *session;
  zkl_lock *lock;
  int i, rc;
  zkl_session_options_init(&o);
  o.hosts = hosts;
  o.session_timeout_ms = 10000;
  rc = zkl_session_open(&session, &o);
  if (rc != ZKL_OK) {
    fprintf(stderr, "process %d: connect: %s\n", id, zkl_strerror(rc));
    return 1;
  }
  rc = zkl_lock_new(&lock, session, name);
  for (i = 0; rc == ZKL_OK && i < rounds; i++) {
    int64_t token;
    char line[128];
    struct timespec work = {0, 20 * 1000000L}; /* the "work" under the lock */
    rc = zkl_lock_acquire(lock, 60000, &token);
    if (rc != ZKL_OK)
      break;
    snprintf(line, sizeof line, "%d %ld %" PRId64 "\n", id, (long)getpid(),
             token);
    if (write(out, line, strlen(line)) < 0) /* one write: one line, atomic */
      rc = -1;
    nanosleep(&work, NULL);
    if (zkl_lock_release(lock) != ZKL_OK)
      rc = -1;
  }
  if (rc != ZKL_OK)
    fprintf(stderr, "process %d: %s\n", id, zkl_strerror(rc));
  zkl_lock_free(lock);
  zkl_session_close(session, NULL);
  return rc == ZKL_OK ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *hosts, *name;
  int procs, rounds, i, fds[2], failed = 0, grants = 0;
  int64_t last = 0;
  FILE *in;
  char line[256];

  if (argc < 2) {
    fprintf(stderr, "usage: %s HOSTS [NAME [PROCESSES [ROUNDS]]]\n", argv[0]);
    return 2;
  }
  hosts = argv[1];
  name = argc > 2 ? argv[2] : "demo";
  procs = argc > 3 ? atoi(argv[3]) : 4;
  rounds = argc > 4 ? atoi(argv[4]) : 3;
  if (procs < 1 || rounds < 1 || pipe(fds) != 0)
    return 2;

  printf("%d processes contend for /locks/%s, %d rounds each\n", procs, name,
         rounds);
  fflush(stdout);
  for (i = 0; i < procs; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      _exit(contender(hosts, name, i + 1, rounds, fds[1]));
    }
    if (pid < 0) {
      perror("fork");
      return 1;
    }
  }
  close(fds[1]);
  in = fdopen(fds[0], "r");
  while (in && fgets(line, sizeof line, in)) {
    int id;
    long pid;
    int64_t token;
    if (sscanf(line, "%d %ld %" SCNd64, &id, &pid, &token) != 3)
      continue;
    grants++;
    printf("grant %2d: process %d (pid %ld) holds the lock, token %" PRId64
           "%s\n",
           grants, id, pid, token, token > last ? "" : "  <-- NOT INCREASING");
    if (token <= last)
      failed = 1;
    last = token;
  }
  for (i = 0; i < procs; i++) {
    int status;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed = 1;
  }
  if (grants != procs * rounds)
    failed = 1;
  printf("%d grants, tokens %s\n", grants,
         failed ? "NOT as expected" : "strictly increasing");
  return failed;
}
