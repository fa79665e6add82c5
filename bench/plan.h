/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plan.h - what the driver runs and the report prints: workload groups,
 * each a list of contestants (rows) measured in every round, the row the
 * others are compared with (the floor), and the targets.
 */
#ifndef ZKL_BENCH_PLAN_H
#define ZKL_BENCH_PLAN_H

#include "bench.h"

typedef enum {
  K_RAW_CD,      /* raw create+delete */
  K_RAW_PIPE,    /* raw create+delete, n in flight */
  K_RAW_PIPE_LOCK, /* the same with a listing, one parent per cycle */
  K_RAW_RECIPE,  /* raw-call contended recipe, n clients */
  K_LIB_BLOCK,   /* libzklock blocking, n clients */
  K_LIB_RW,      /* the same, a read/write lock's write side */
  K_LIB_SEM,     /* the same, a semaphore of one lease */
  K_LIB_WATCHED, /* the same, a mutex watching its node from the grant */
  K_LIB_MANY,    /* libzklock async, n locks on one session */
  K_LIB_QUEUE,   /* libzklock async, n waiters on one lock */
  K_RAW_MULTI,   /* raw zoo_multi of n creates, then of n deletes */
  K_LIB_MULTI,   /* libzklock blocking, a multi-lock of n names */
  K_PEER,        /* a peer's process */
  K_CLI_RUNS,    /* `zklock NAME -- true` runs, n at a time (agent.c) */
  K_CLI_WRITES,  /* ZooKeeper writes per such run */
  K_DEAD_HOLDER  /* a SIGKILLed holder's lock, to the next grant, ms */
} row_kind;

#define MAX_ROWS 16
#define MAX_GROUPS 24
#define MAX_TARGETS 48
#define MAX_PEERS 4

typedef struct row {
  char name[48];
  row_kind kind;
  int n;
  int sessions;          /* K_LIB_QUEUE */
  const char *peer_cmd;  /* K_PEER */
  const char *peer_mode; /* K_PEER: "uncontended", "contended", "multi"... */
  bool client_defaults;  /* raw rows: the client's default host resolution */
  bool build;            /* K_PEER: another zklock-bench build (--build) */
  bool agent;            /* K_CLI_*, K_DEAD_HOLDER: through zklockd */
  bench_result *res;     /* one per round */
} row;

typedef struct group {
  int workload;     /* the number: 1, 2, 3, 4, 6, 7 */
  char title[64];
  const char *unit; /* "cycles/s", "handoffs/s" */
  int n;            /* the group's N (contended clients...) for the plot */
  bool no_fsync;    /* runs on the server without fsync */
  row rows[MAX_ROWS];
  int nrows;
  int floor; /* the row the others are compared with; -1: none */
} group;

typedef enum { M_RATE, M_P99, M_CPU } metric;

typedef struct target {
  char text[112];
  int group, num, den; /* ratio of row num to row den of group */
  metric m;
  bool at_most; /* met when the median ratio is <= threshold (else >=) */
  double threshold; /* NAN: a ratio shown without a target */
} target;

typedef struct peer {
  char name[32];
  const char *cmd;
  bool build; /* another zklock-bench (--build): every workload */
} peer;

typedef struct plan {
  group groups[MAX_GROUPS];
  int ngroups;
  target targets[MAX_TARGETS];
  int ntargets;
  int rounds;
  char hosts[256], hosts_nofsync[256]; /* where each kind of group ran */
  bool hosts_given, nofsync_given;
  bench_ctx ctx;
} plan;

/* report.c */
/* The ratio of row num to row den in round i by metric m; NAN if either
 * run failed or has nothing to compare. */
double plan_ratio(const group *g, int num, int den, metric m, int round);
/* Median and min..max of the ratio over the rounds where it exists; returns
 * how many rounds had one. */
int plan_ratio_stats(const plan *p, const group *g, int num, int den,
                     metric m, double *median, double *min, double *max);
void report_table(const plan *p, FILE *out);
void report_csv(const plan *p, FILE *out);
/* True when every run reported 0 overlaps. */
bool report_no_overlaps(const plan *p);

#endif
