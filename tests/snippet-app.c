/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/snippet-app.c - the definitions of tests/snippet-app.h: linked with
 * every fragment of the documentation, never called.
 */
#include "snippet-app.h"

zkl_session *s;
zkl_lock *l, *lock;
int64_t token, epoch;

const char *data = "data";
struct metrics my_metrics;

void write_to_storage(const char *d, int64_t t) { (void)d, (void)t; }
void start_work(zkl_lock *k, int64_t t) { (void)k, (void)t; }
void released(zkl_lock *k, int rc, void *arg) { (void)k, (void)rc, (void)arg; }
void on_leading(zkl_lock *k, int rc, int64_t t, void *arg) {
  (void)k, (void)rc, (void)t, (void)arg;
}
void on_no_longer_leader(zkl_lock *k, zkl_lost_reason reason, void *arg) {
  (void)k, (void)reason, (void)arg;
}
void histogram_observe(struct histogram *h, int64_t v) { (void)h, (void)v; }
void counter_inc(struct counter *c, const char *label) { (void)c, (void)label; }
