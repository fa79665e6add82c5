/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/snippet-app.h - the application around the C snippets of README.md
 * and of the man pages' EXAMPLES, for tests/doc-snippets, which compiles and
 * links every one of them. A snippet without main() is a fragment: it is
 * compiled after this header, its #include lines and its functions and
 * types (those that begin at the start of a line) at file scope, the rest
 * in the body of a function. The names a fragment uses without declaring
 * them (the session `s`, the lock `l`, the application's own
 * write_to_storage(), ...) are declared here and defined, doing nothing, in
 * snippet-app.c; a snippet that needs another one adds it to both.
 */
#ifndef SNIPPET_APP_H
#define SNIPPET_APP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zklock.h>

/* the library's objects, opened elsewhere in the application */
extern zkl_session *s;
extern zkl_lock *l, *lock;
extern int64_t token, epoch;

/* the application's own things */
extern const char *data;
void write_to_storage(const char *data, int64_t token);
void start_work(zkl_lock *lock, int64_t token);
void stop_work(zkl_lock *lock);
struct histogram;
struct counter;
struct metrics {
  struct histogram *wait_ms;
  struct counter *losses, *timeouts;
};
extern struct metrics my_metrics;
void histogram_observe(struct histogram *h, int64_t value);
void counter_inc(struct counter *c, const char *label);

#endif
