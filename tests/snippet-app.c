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
void stop_work(zkl_lock *k) { (void)k; }
void histogram_observe(struct histogram *h, int64_t v) { (void)h, (void)v; }
void counter_inc(struct counter *c, const char *label) { (void)c, (void)label; }
