/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_resource.h - the shared resource of the fault suite's contenders
 * (tests/contender.c), also read and tidied by the driver
 * (tests/test_fault_suite.c). It stands for a storage server: a small file
 * whose record is read and written under flock() (the server's own request
 * handling, atomic), and a history file to which every operation the
 * resource carried out appends one line, under the same flock, so that the
 * history's order is the order in which the resource saw them: the checker
 * (tests/fault_check.c) needs no clock to judge it.
 *
 * One resource per lock kind, each with its own record:
 *   mutex  "highest counter"            (%020lld %020lld\n, 42 bytes)
 *   rw     "highest counter sections"   (3 x %020lld, 63 bytes): highest is
 *          the highest write token accepted; sections counts entries
 *   sem    "total over", then FR_SEM_ENTRIES lines "pid token" (0 0: free):
 *          the holders registered now; total counts registrations, over
 *          those that made more than the limit registered at once
 *
 * History lines (every one ends "<slot> <pid> <t>", t CLOCK_MONOTONIC us):
 *   mutex  "<token> <old> <new> ..."        an accepted write
 *   rw     "W+ <token> <counter> ..."       a writer entered (read the counter)
 *          "W <token> <old> <new> ..."      its write, accepted
 *          "W! <token> <highest> ..."       its write, refused (stale token)
 *          "R+ <token> <counter> ..."       a reader entered (token not stale)
 *          "R- <token> <c0> <c1> <ok> ..."  it left: c0 the counter it saw on
 *                                           entry, c1 now; ok 1 when the
 *                                           resource vouched for the read
 *                                           (token still not stale), 0 not
 *   sem    "S+ <token> <held> ..."          a holder registered (held: the
 *                                           registrations now, its own in)
 *          "S- <token> <held> ..."          it unregistered
 *   rw, sem "X <slot> <pid> <t>"            the driver: that process died,
 *                                           its registrations are void (a
 *                                           server drops a dead client's)
 * A rw or sem entry the history shows no end for is still open.
 */
#ifndef ZKLOCK_TESTS_FAULT_RESOURCE_H
#define ZKLOCK_TESTS_FAULT_RESOURCE_H

enum { FR_MUTEX, FR_RW, FR_SEM, FR_KINDS };

#define FR_SEM_ENTRIES 16

typedef struct fr_state {
  long long highest;  /* mutex, rw: the highest (write) token accepted */
  long long counter;  /* mutex, rw: the counter writers increment */
  long long sections; /* rw: entries (readers and writers) */
  long long total;    /* sem: registrations */
  long long over;     /* sem: registrations beyond the limit */
  long pid[FR_SEM_ENTRIES];
  long long token[FR_SEM_ENTRIES];
} fr_state;

extern const char *const fr_kind_names[FR_KINDS];

/* "mutex", "rw" or "sem": the kind, or -1. */
int fr_kind_of(const char *name);

/* Writes the initial record of a resource of that kind. 0 or -1. */
int fr_create(const char *path, int kind);

/* Reads/writes the record of the open resource fd; the caller holds the
 * flock. 0 or -1. */
int fr_read(int fd, int kind, fr_state *st);
int fr_write(int fd, int kind, const fr_state *st);

/* The holders the sem record has registered now. */
int fr_sem_held(const fr_state *st);

/* Opens path, reads its record under a shared flock, closes. 0 or -1. */
int fr_peek(const char *path, int kind, fr_state *st);

/* How far the resource has come: the mutex's counter, the rw's entries,
 * the sem's registrations (-1 when it cannot be read). */
long long fr_progress(const char *path, int kind);

/* Appends one history line ("<text> <slot> <pid> <t>\n") with one write().
 * The caller holds the resource's exclusive flock. 0 or -1. */
int fr_history(int history_fd, int slot, long pid, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The process pid (of slot) died: for rw and sem, under the resource's
 * lock, its sem registrations are dropped and "X slot pid t" is appended
 * to the history. Nothing for a mutex. 0 or -1. */
int fr_forget(const char *resource, const char *history, int kind, int slot,
              long pid);

long long fr_now_us(void);

#endif
