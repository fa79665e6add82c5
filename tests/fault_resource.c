/* SPDX-License-Identifier: Apache-2.0 */
/* fault_resource.c - the fault suite's shared resource; see
 * fault_resource.h. libc only: the contender links it beside the public
 * API, the driver beside the tests' helpers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include "fault_resource.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define LINE 21                            /* "%020lld " */
#define HEAD2 (2 * LINE)                   /* two numbers and the newline */
#define HEAD3 (3 * LINE)
#define ENTRY 32                           /* "%010ld %020lld\n" */
#define SEM_LEN (HEAD2 + FR_SEM_ENTRIES * ENTRY)
#define MAX_LEN SEM_LEN

const char *const fr_kind_names[FR_KINDS] = {"mutex", "rw", "sem"};

long long fr_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int fr_kind_of(const char *name) {
  int k;
  for (k = 0; k < FR_KINDS; k++)
    if (!strcmp(name, fr_kind_names[k]))
      return k;
  return -1;
}

static int record_len(int kind) {
  return kind == FR_SEM ? SEM_LEN : kind == FR_RW ? HEAD3 : HEAD2;
}

int fr_read(int fd, int kind, fr_state *st) {
  char buf[MAX_LEN + 1];
  int len = record_len(kind), i;
  ssize_t n = pread(fd, buf, (size_t)len, 0);
  memset(st, 0, sizeof *st);
  if (n != len)
    return -1;
  buf[n] = '\0';
  switch (kind) {
  case FR_MUTEX:
    return sscanf(buf, "%lld %lld", &st->highest, &st->counter) == 2 ? 0 : -1;
  case FR_RW:
    return sscanf(buf, "%lld %lld %lld", &st->highest, &st->counter,
                  &st->sections) == 3
               ? 0
               : -1;
  default:
    if (sscanf(buf, "%lld %lld", &st->total, &st->over) != 2)
      return -1;
    for (i = 0; i < FR_SEM_ENTRIES; i++)
      if (sscanf(buf + HEAD2 + i * ENTRY, "%ld %lld", &st->pid[i],
                 &st->token[i]) != 2)
        return -1;
    return 0;
  }
}

int fr_write(int fd, int kind, const fr_state *st) {
  char buf[MAX_LEN + 1];
  int len = record_len(kind), i;
  switch (kind) {
  case FR_MUTEX:
    snprintf(buf, sizeof buf, "%020lld %020lld\n", st->highest, st->counter);
    break;
  case FR_RW:
    snprintf(buf, sizeof buf, "%020lld %020lld %020lld\n", st->highest,
             st->counter, st->sections);
    break;
  default:
    snprintf(buf, sizeof buf, "%020lld %020lld\n", st->total, st->over);
    for (i = 0; i < FR_SEM_ENTRIES; i++)
      snprintf(buf + HEAD2 + i * ENTRY, sizeof buf - (size_t)(HEAD2 + i * ENTRY),
               "%010ld %020lld\n", st->pid[i], st->token[i]);
    break;
  }
  return pwrite(fd, buf, (size_t)len, 0) == len ? 0 : -1;
}

int fr_sem_held(const fr_state *st) {
  int i, n = 0;
  for (i = 0; i < FR_SEM_ENTRIES; i++)
    n += st->pid[i] != 0;
  return n;
}

int fr_create(const char *path, int kind) {
  fr_state st;
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc;
  if (fd < 0)
    return -1;
  memset(&st, 0, sizeof st);
  rc = fr_write(fd, kind, &st);
  close(fd);
  return rc;
}

int fr_peek(const char *path, int kind, fr_state *st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC), rc;
  if (fd < 0)
    return -1;
  flock(fd, LOCK_SH);
  rc = fr_read(fd, kind, st);
  flock(fd, LOCK_UN);
  close(fd);
  return rc;
}

long long fr_progress(const char *path, int kind) {
  fr_state st;
  if (fr_peek(path, kind, &st) != 0)
    return -1;
  return kind == FR_SEM ? st.total : kind == FR_RW ? st.sections : st.counter;
}

int fr_history(int history_fd, int slot, long pid, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || n >= (int)sizeof buf - 64)
    return -1;
  n += snprintf(buf + n, sizeof buf - (size_t)n, " %d %ld %lld\n", slot, pid,
                fr_now_us());
  return write(history_fd, buf, (size_t)n) == n ? 0 : -1;
}

int fr_forget(const char *resource, const char *history, int kind, int slot,
              long pid) {
  fr_state st;
  int fd, hfd, rc = 0, i;
  if (kind == FR_MUTEX)
    return 0;
  fd = open(resource, O_RDWR | O_CLOEXEC);
  hfd = open(history, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0 || hfd < 0 || flock(fd, LOCK_EX) != 0) {
    rc = -1;
    goto out;
  }
  if (kind == FR_SEM) {
    if (fr_read(fd, kind, &st) != 0) {
      rc = -1;
    } else {
      for (i = 0; i < FR_SEM_ENTRIES; i++)
        if (st.pid[i] == pid) {
          st.pid[i] = 0;
          st.token[i] = 0;
        }
      rc = fr_write(fd, kind, &st);
    }
  }
  if (rc == 0)
    rc = fr_history(hfd, slot, pid, "X");
  flock(fd, LOCK_UN);
out:
  if (fd >= 0)
    close(fd);
  if (hfd >= 0)
    close(hfd);
  return rc;
}
