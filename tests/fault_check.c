/* SPDX-License-Identifier: Apache-2.0 */
/* fault_check.c - the fault suite's checker; see fault_check.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include "fault_check.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "zklock.h"

const char *const fc_kind_names[FC_ALL_KINDS] = {
    "leader killed", "holder killed", "waiter killed", "holder paused",
    "create reply lost", "holder cut off", "server cut off",
    "leader link one-way/flap", "agent killed", "agent frozen",
    "agent stopped", "forked holder killed", "callback busy",
    "zklock killed", "zklock's command lost"};

const char *const fc_link_shape_names[FC_LINK_SHAPES] = {"oneway-out",
                                                         "oneway-in", "flap"};

const char *const fc_lock_names[FC_LOCKS] = {"mutex", "rw", "sem"};

static const char *const history_names[FC_LOCKS] = {"history", "rw-history",
                                                    "sem-history"};

typedef struct {
  int slot, gen, lock;
  long pid;
  long long t_death; /* when the driver reaped it after a kill or crash */
  int killed;        /* 0, or the FC_KILL_ kind that ended it */
  int verified;      /* KILL-HOLDER: its node was the holder's (1), not (0) */
  bool zklock;       /* it locks with the zklock command */
  char last[16];     /* the last word of its log */
} proc_t;

typedef struct {
  int proc, lock;
  char side;        /* rw: 'r' or 'w'; 0 otherwise */
  long long token;
  long long t_start, t_end, t_rel;
  int outcome;      /* 0 none, 1 accepted, 2 rejected */
  long long t_lost; /* first LOST line while in it, 0 if none */
  int pause;        /* 1 + index of the pause it spans, 0 if none */
  long long first_conflict; /* first start of a section it excluded */
  bool work_rule;   /* holds until its END, told or not (fault_check.h:
                       "work late") */
  long long t_last; /* its last line (START, ARMED, ACCEPT, REJECT, END,
                       LOST) */
} section_t;

typedef struct {
  int proc;
  long long a, b;
} wait_t;

typedef struct {
  int slot, lock;
  long pid;
  long long token, t0, t1, highest;
  bool told, rejected, accepted, regranted;
} pause_t;

typedef struct {
  int lock;
  int kind; /* FC_PARTITION, FC_SERVER_CUT, FC_LEADER_LINK, FC_AGENT_*,
               FC_FORK_KILL, FC_BUSY */
  long pid;
  long long token, t0, t1, told;
  int early;
  bool via_agent; /* FC_FORK_KILL, FC_BUSY: the victim locked through one */
} partition_t;

typedef struct {
  long long a, b;
} span_t;

typedef struct {
  long long t;
  long pid;
  int reason; /* LOST lines: ZKL_LOST_* */
} lost_t;

/* A growable array of n elements of size sz. */
#define PUSH(arr, n, cap)                                                   \
  do {                                                                      \
    if ((n) == (cap)) {                                                     \
      (cap) = (cap) ? 2 * (cap) : 64;                                       \
      void *p_ = realloc((arr), sizeof *(arr) * (size_t)(cap));             \
      if (!p_) {                                                            \
        fprintf(stderr, "fault_check: out of memory\n");                    \
        abort();                                                            \
      }                                                                     \
      (arr) = p_;                                                           \
    }                                                                       \
    (n)++;                                                                  \
  } while (0)

typedef struct {
  proc_t *procs;
  int nprocs, cprocs;
  section_t *secs;
  int nsecs, csecs;
  int *by_key; /* sections ordered by (pid, token), for the histories */
  wait_t *waits;
  int nwaits, cwaits;
  pause_t *pauses;
  int npauses, cpauses;
  lost_t *losts;
  int nlosts, closts;
  partition_t *parts;
  int nparts, cparts;
  lost_t *opens; /* SESSION lines: when a process opened a session */
  int nopens, copens;
  long long threshold_us;
  long long session_us;
  long leader_kills;
  long accept_lines[FC_LOCKS];
  int limit;     /* the semaphore's */
  int slot_lock[1024]; /* 1 + the lock kind of each slot seen */
} run_t;

static FILE *open_in(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return fopen(path, "r");
}

static int find_proc(const run_t *r, long pid) {
  int i;
  for (i = 0; i < r->nprocs; i++)
    if (r->procs[i].pid == pid)
      return i;
  return -1;
}

static int lock_of_slot(const run_t *r, int slot) {
  return slot >= 0 && slot < 1024 && r->slot_lock[slot]
             ? r->slot_lock[slot] - 1
             : FC_MUTEX;
}

/* "mutex", "rw", "sem:N" (sets the limit), "zklock" (a mutex): the kind,
 * or -1. */
static int parse_lock(run_t *r, const char *word) {
  if (!strcmp(word, "mutex") || !strcmp(word, "zklock"))
    return FC_MUTEX;
  if (!strcmp(word, "rw"))
    return FC_RW;
  if (!strncmp(word, "sem:", 4)) {
    r->limit = atoi(word + 4);
    return FC_SEM;
  }
  return -1;
}

static int read_driver_log(run_t *r, const char *dir, fc_result *out,
                           FILE *rep) {
  char line[512];
  FILE *f = open_in(dir, "faults.log");
  if (!f) {
    fprintf(rep, "fault_check: cannot open %s/faults.log\n", dir);
    return -1;
  }
  while (fgets(line, sizeof line, f)) {
    long long t, a3, a4, a5, a6;
    char kind[32], mode[32], role[32], shape[32], *last = strrchr(line, ' ');
    bool reader = last && !strncmp(last, " reader", 7);
    bool multi = last && !strncmp(last, " multi", 6);
    int slot, gen, fired, pi, n, lk;
    long pid;
    if (sscanf(line, "%lld %31s", &t, kind) != 2)
      continue;
    const char *args = strchr(line, ' ');
    args = args ? strchr(args + 1, ' ') : NULL;
    args = args ? args + 1 : "";
    if (!strcmp(kind, "SPAWN") &&
        (n = sscanf(args, "%d %d %ld %31s", &slot, &gen, &pid, mode)) >= 3) {
      lk = n == 4 ? parse_lock(r, mode) : FC_MUTEX;
      if (lk < 0) {
        fprintf(rep, "fault_check: unknown lock kind in: %s", line);
        fclose(f);
        return -1;
      }
      PUSH(r->procs, r->nprocs, r->cprocs);
      proc_t *p = &r->procs[r->nprocs - 1];
      memset(p, 0, sizeof *p);
      p->slot = slot;
      p->gen = gen;
      p->pid = pid;
      p->lock = lk;
      p->zklock = n == 4 && !strcmp(mode, "zklock");
      if (slot >= 0 && slot < 1024)
        r->slot_lock[slot] = lk + 1;
    } else if ((!strcmp(kind, "KILL-HOLDER") || !strcmp(kind, "KILL-WAITER") ||
                !strcmp(kind, "CRASH")) &&
               sscanf(args, "%d %ld", &slot, &pid) == 2) {
      int k = !strcmp(kind, "KILL-HOLDER")   ? FC_KILL_HOLDER
              : !strcmp(kind, "KILL-WAITER") ? FC_KILL_WAITER
                                             : -1;
      fc_result *o = &out[lock_of_slot(r, slot)];
      pi = find_proc(r, pid);
      if (pi >= 0) {
        r->procs[pi].t_death = t;
        r->procs[pi].killed = k;
        if (k == FC_KILL_HOLDER)
          sscanf(args, "%*d %*d %*s %d", &r->procs[pi].verified);
      }
      if (k >= 0)
        o->faults[k]++;
      else
        o->crashes++;
      if (k == FC_KILL_HOLDER && reader)
        o->on_readers[k]++;
      if (k >= 0 && multi)
        o->on_multi[k]++;
    } else if (!strcmp(kind, "PAUSE") &&
               sscanf(args, "%d %ld %lld %lld %lld %lld", &slot, &pid, &a3,
                      &a4, &a5, &a6) == 6) {
      PUSH(r->pauses, r->npauses, r->cpauses);
      pause_t *p = &r->pauses[r->npauses - 1];
      memset(p, 0, sizeof *p);
      p->slot = slot;
      p->lock = lock_of_slot(r, slot);
      p->pid = pid;
      p->token = a3;
      p->t0 = a4;
      p->t1 = a5;
      p->highest = a6;
      out[p->lock].faults[FC_PAUSE_HOLDER]++;
      out[p->lock].on_readers[FC_PAUSE_HOLDER] += reader;
      out[p->lock].on_multi[FC_PAUSE_HOLDER] += multi;
    } else if (!strcmp(kind, "PARTITION") &&
               sscanf(args, "%d %ld %lld %lld %lld %d", &slot, &pid, &a3, &a4,
                      &a5, &fired) == 6) {
      PUSH(r->parts, r->nparts, r->cparts);
      partition_t *pa = &r->parts[r->nparts - 1];
      memset(pa, 0, sizeof *pa);
      pa->lock = lock_of_slot(r, slot);
      pa->pid = pid;
      pa->token = a3;
      pa->t0 = a4;
      pa->t1 = a5;
      pa->early = fired;
      pa->kind = FC_PARTITION;
      out[pa->lock].faults[FC_PARTITION]++;
      out[pa->lock].on_readers[FC_PARTITION] += reader;
      out[pa->lock].on_multi[FC_PARTITION] += multi;
      out[pa->lock].partitions_early += fired != 0;
    } else if (!strcmp(kind, "ENSEMBLE-CUT") &&
               sscanf(args, "%d %ld %lld %lld %lld %*s %*s %31s %31s", &slot,
                      &pid, &a3, &a4, &a5, role, shape) == 7) {
      int fk = !strcmp(shape, "isolate") ? FC_SERVER_CUT : FC_LEADER_LINK, s;
      fc_result *o;
      PUSH(r->parts, r->nparts, r->cparts);
      partition_t *pa = &r->parts[r->nparts - 1];
      memset(pa, 0, sizeof *pa);
      pa->lock = lock_of_slot(r, slot);
      pa->kind = fk;
      pa->pid = pid;
      pa->token = a3;
      pa->t0 = a4;
      pa->t1 = a5;
      o = &out[pa->lock];
      o->faults[fk]++;
      o->on_readers[fk] += reader;
      o->on_multi[fk] += multi;
      o->on_leader[fk] += !strcmp(role, "leader");
      for (s = 0; s < FC_LINK_SHAPES; s++)
        if (fk == FC_LEADER_LINK && !strcmp(shape, fc_link_shape_names[s]))
          o->link_shapes[s]++;
    } else if ((!strcmp(kind, "AGENT-KILL") ||
                !strcmp(kind, "AGENT-FREEZE") ||
                !strcmp(kind, "AGENT-STOP")) &&
               sscanf(args, "%d %ld %lld %lld %lld", &slot, &pid, &a3, &a4,
                      &a5) == 5) {
      int fk = !strcmp(kind, "AGENT-KILL")     ? FC_AGENT_KILL
               : !strcmp(kind, "AGENT-FREEZE") ? FC_AGENT_FREEZE
                                               : FC_AGENT_STOP;
      PUSH(r->parts, r->nparts, r->cparts);
      partition_t *pa = &r->parts[r->nparts - 1];
      memset(pa, 0, sizeof *pa);
      pa->lock = lock_of_slot(r, slot);
      pa->kind = fk;
      pa->pid = pid;
      pa->token = a3;
      pa->t0 = a4;
      pa->t1 = a5;
      out[pa->lock].faults[fk]++;
      out[pa->lock].on_readers[fk] += reader;
      out[pa->lock].on_multi[fk] += multi;
    } else if (((!strcmp(kind, "FORK-KILL") ||
                 !strcmp(kind, "ZKLOCK-KILL")) &&
                sscanf(args, "%d %ld %lld %lld %31s", &slot, &pid, &a3, &a4,
                       shape) == 5) ||
               ((!strcmp(kind, "BUSY") || !strcmp(kind, "ZKLOCK-LOSS")) &&
                sscanf(args, "%d %ld %lld %lld %lld %31s", &slot, &pid, &a3,
                       &a4, &a5, shape) == 6)) {
      /* shape: the via field, an agent's letter or '-' */
      int fk = !strcmp(kind, "FORK-KILL")     ? FC_FORK_KILL
               : !strcmp(kind, "ZKLOCK-KILL") ? FC_ZKLOCK_KILL
               : !strcmp(kind, "BUSY")        ? FC_BUSY
                                              : FC_ZKLOCK_LOSS;
      fc_result *o;
      PUSH(r->parts, r->nparts, r->cparts);
      partition_t *pa = &r->parts[r->nparts - 1];
      memset(pa, 0, sizeof *pa);
      pa->lock = lock_of_slot(r, slot);
      pa->kind = fk;
      pa->pid = pid;
      pa->token = a3;
      pa->t0 = a4;
      pa->t1 = fk == FC_FORK_KILL || fk == FC_ZKLOCK_KILL ? t : a5;
      pa->via_agent = shape[0] != '-';
      o = &out[pa->lock];
      o->faults[fk]++;
      o->on_readers[fk] += reader;
      o->on_multi[fk] += multi;
      o->via_agent[fk] += pa->via_agent;
      /* Dead from the kill on (a4): the line is written after the reap
       * and the resource's bookkeeping, and through an agent the lock may
       * pass before that. What its helper did after the kill still shows,
       * in the lines its log got later. */
      if (fk == FC_FORK_KILL && (pi = find_proc(r, pid)) >= 0) {
        r->procs[pi].t_death = a4;
        r->procs[pi].killed = FC_FORK_KILL;
      }
    } else if (!strcmp(kind, "LEADER-KILL")) {
      r->leader_kills++; /* every kind's */
    } else if (!strcmp(kind, "LOST-CREATE") &&
               (n = sscanf(args, "%d %ld %lld %d %lld", &slot, &pid, &a3,
                           &fired, &a4)) >= 4) {
      out[lock_of_slot(r, slot)].faults[FC_LOST_CREATE] += fired;
      if (n == 5 && a4 == FC_OP_MULTI) /* the op armed: a multi-lock's */
        out[lock_of_slot(r, slot)].on_multi[FC_LOST_CREATE] += fired;
    } else if (!strcmp(kind, "SKIP")) {
      out[FC_MUTEX].skipped++; /* not per kind: counted in the total */
    }
  }
  fclose(f);
  return 0;
}

/* Is [a, b] within a pause of pid? Returns 1 + its index, or 0. */
static int pause_of(const run_t *r, long pid, long long a, long long b) {
  int i;
  for (i = 0; i < r->npauses; i++)
    if (r->pauses[i].pid == pid && a <= r->pauses[i].t1 && b >= r->pauses[i].t0)
      return i + 1;
  return 0;
}

/* The open section of token among the open ones (cur[0..*ncur)), or the
 * latest when token is 0 or none matches; -1 when none is open. */
static int open_of(const run_t *r, const int *cur, int ncur, long long token) {
  int i;
  for (i = ncur - 1; i >= 0; i--)
    if (token && r->secs[cur[i]].token == token)
      return cur[i];
  return ncur > 0 ? cur[ncur - 1] : -1;
}

/* The section a line of token belongs to: an open one of that token; else,
 * for a zklock contender, one of its closed ones of that token (a zklock
 * command's grandchild's line after zklock let go: it is that hold's work,
 * which then lasted until t, so the section is held on to t); else as
 * open_of(). -1: none. */
static int section_for(run_t *r, int pi, const int *cur, int ncur,
                       long long token, long long t) {
  int i;
  for (i = ncur - 1; i >= 0; i--)
    if (token && r->secs[cur[i]].token == token) {
      r->secs[cur[i]].t_last = t;
      return cur[i];
    }
  /* this log's sections are the last ones read, in order; only a zklock
   * run's work outlives its hold's REL */
  for (i = r->nsecs - 1;
       r->procs[pi].zklock && token && i >= 0 && r->secs[i].proc == pi; i--)
    if (r->secs[i].token == token) {
      if (r->secs[i].t_end < t)
        r->secs[i].t_end = t;
      if (r->secs[i].t_rel < t)
        r->secs[i].t_rel = t;
      r->secs[i].t_last = t;
      return i;
    }
  i = open_of(r, cur, ncur, token);
  if (i >= 0)
    r->secs[i].t_last = t;
  return i;
}

static void close_open(int *cur, int *ncur, int sec) {
  int i, j;
  for (i = j = 0; i < *ncur; i++)
    if (cur[i] != sec)
      cur[j++] = cur[i];
  *ncur = j;
}

static void push_wait(run_t *r, int pi, long long *wait_start, long long t) {
  if (!*wait_start)
    return;
  PUSH(r->waits, r->nwaits, r->cwaits);
  r->waits[r->nwaits - 1] = (wait_t){pi, *wait_start, t};
  *wait_start = 0;
}

static int read_contender_log(run_t *r, const char *dir, int pi,
                              fc_result *all, FILE *rep) {
  char name[64], line[512], prev_word[32] = "";
  proc_t *p = &r->procs[pi];
  fc_result *out = &all[p->lock];
  FILE *f;
  long long wait_start = 0, prev_t = 0;
  int cur[4], ncur = 0, i; /* open sections: two at most (a downgrade) */
  char tail[4][100];       /* its last lines, for the notes below */
  int ntail = 0;
  snprintf(name, sizeof name, "c%d-%d.log", p->slot, p->gen);
  out->processes++;
  f = open_in(dir, name);
  if (!f) {
    /* It died before it opened its log: nothing it did to check. */
    fprintf(rep, "note: pid %ld (slot %d) left no log\n", p->pid, p->slot);
    return 0;
  }
  while (fgets(line, sizeof line, f)) {
    long long t, a1 = 0, a2 = 0;
    char word[32], side[8] = "";
    int n = sscanf(line, "%lld %31s %lld %lld", &t, word, &a1, &a2), s;
    if (n < 2)
      continue;
    snprintf(tail[ntail++ % 4], sizeof tail[0], "%.*s", (int)strcspn(line, "\n"),
             line);
    if (out->first_us == 0 || t < out->first_us)
      out->first_us = t;
    if (t > out->last_us)
      out->last_us = t;
    /* a live contender silent for too long (waits are judged apart) */
    if (prev_t && t - prev_t > r->threshold_us && strcmp(prev_word, "ACQ") &&
        strcmp(prev_word, "IDLE") && !pause_of(r, p->pid, prev_t, t)) {
      fprintf(rep, "STUCK: pid %ld (slot %d) silent for %.1f s after %s\n",
              p->pid, p->slot, (double)(t - prev_t) / 1e6, prev_word);
      out->stuck++;
    }
    prev_t = t;
    snprintf(prev_word, sizeof prev_word, "%s", word);
    if (!strcmp(word, "ACQ")) {
      wait_start = t;
    } else if (!strcmp(word, "START") && n >= 3) {
      push_wait(r, pi, &wait_start, t);
      sscanf(line, "%*s %*s %*s %7s", side); /* t START token side */
      PUSH(r->secs, r->nsecs, r->csecs);
      s = r->nsecs - 1;
      memset(&r->secs[s], 0, sizeof r->secs[s]);
      r->secs[s].proc = pi;
      r->secs[s].lock = p->lock;
      r->secs[s].side = p->lock == FC_RW ? (side[0] == 'w' ? 'w' : 'r') : 0;
      r->secs[s].token = a1;
      r->secs[s].t_start = t;
      r->secs[s].t_last = t;
      if (p->lock == FC_RW && ncur > 0 && r->secs[s].side == 'r')
        out->downgrades++;
      if (p->lock == FC_MUTEX && side[0] == 'm')
        out->multi_grants++;
      out->zklock_grants += p->zklock;
      if (ncur < 4)
        cur[ncur++] = s;
      out->grants++;
    } else if (!strcmp(word, "ACCEPT")) {
      r->accept_lines[p->lock]++;
      if ((s = section_for(r, pi, cur, ncur, n >= 3 ? a1 : 0, t)) >= 0)
        r->secs[s].outcome = 1;
    } else if (!strcmp(word, "REJECT")) {
      out->rejected++;
      if ((s = section_for(r, pi, cur, ncur, n >= 3 ? a1 : 0, t)) >= 0)
        r->secs[s].outcome = 2;
    } else if (!strcmp(word, "ARMED") && n >= 3) {
      section_for(r, pi, cur, ncur, a1, t);
    } else if (!strcmp(word, "END")) {
      if ((s = section_for(r, pi, cur, ncur, n >= 3 ? a1 : 0, t)) >= 0 &&
          r->secs[s].t_end < t)
        r->secs[s].t_end = t;
    } else if (!strcmp(word, "REL")) {
      /* a zklock run that ended without its command: its wait too */
      push_wait(r, pi, &wait_start, t);
      if ((s = open_of(r, cur, ncur, n >= 4 ? a2 : 0)) >= 0) {
        /* A zklock run's REL is its loop's, written once zklock exited,
         * after the release: its hold's work ended at its last line (a
         * grandchild SIGKILLed by the keeper says nothing more). */
        if (!r->secs[s].t_end)
          r->secs[s].t_end = p->zklock ? r->secs[s].t_last : t;
        r->secs[s].t_rel = t;
        close_open(cur, &ncur, s);
      }
    } else if (!strcmp(word, "FAIL") && n >= 3) {
      push_wait(r, pi, &wait_start, t);
      if (a1 == ZKL_ETIMEDOUT)
        out->acq_timeouts++;
      else if (a1 == ZKL_ELOST || a1 == ZKL_EEXPIRED)
        out->acq_lost++;
      else if (a1 != ZKL_ECANCELED)
        out->acq_other++;
    } else if (!strcmp(word, "LOST") && n >= 3) {
      if (a1 >= 0 && a1 < 8)
        out->lost_by_reason[a1]++;
      PUSH(r->losts, r->nlosts, r->closts);
      r->losts[r->nlosts - 1] = (lost_t){t, p->pid, (int)a1};
      /* "LOST reason token": the section of that token (or the latest; a
       * closed one of that token: a zklock command's grandchild's); with
       * no token, every open one */
      if (a2 && (s = section_for(r, pi, cur, ncur, a2, t)) >= 0 &&
          r->secs[s].token == a2) {
        if (!r->secs[s].t_lost)
          r->secs[s].t_lost = t;
      } else {
        for (i = 0; i < ncur; i++)
          if ((a2 == 0 || open_of(r, cur, ncur, a2) == cur[i]) &&
              !r->secs[cur[i]].t_lost)
            r->secs[cur[i]].t_lost = t;
      }
    } else if (!strcmp(word, "SESSION")) {
      out->sessions++;
      PUSH(r->opens, r->nopens, r->copens);
      r->opens[r->nopens - 1] = (lost_t){t, p->pid, 0};
    }
  }
  fclose(f);
  snprintf(p->last, sizeof p->last, "%s", prev_word);
  /* The kills were aimed right: a killed holder was in its critical
   * section (ARMED), a killed waiter in its acquire (ACQ). */
  if (p->killed == FC_KILL_HOLDER) {
    if (!strcmp(p->last, "ARMED") && p->verified == 1)
      out->kills_aimed++;
    else
      fprintf(rep, "note: killed holder pid %ld: last line %s, its node %s "
                   "the holder's\n",
              p->pid, p->last, p->verified == 1 ? "was" : "was not seen as");
  } else if (p->killed == FC_KILL_WAITER) {
    if (!strcmp(p->last, "ACQ"))
      out->kills_aimed++;
    else
      fprintf(rep, "note: killed waiter pid %ld: last line %s\n", p->pid,
              p->last);
  }
  if (p->killed && strcmp(p->last,
                          p->killed == FC_KILL_WAITER ? "ACQ" : "ARMED")) {
    /* off target: what it was doing, with the time it was killed */
    for (i = ntail > 4 ? ntail - 4 : 0; i < ntail; i++)
      fprintf(rep, "      | %s\n", tail[i % 4]);
    fprintf(rep, "      | %lld killed\n", p->t_death);
  }
  /* What was still open when the process died or the run ended (or its
   * helper's last line, should one have outlived it). */
  {
    long long end = p->t_death > prev_t ? p->t_death : prev_t;
    push_wait(r, pi, &wait_start, end);
    for (i = 0; i < ncur; i++) {
      section_t *sc = &r->secs[cur[i]];
      if (!sc->t_end)
        sc->t_end = p->zklock ? sc->t_last : end;
      sc->t_rel = end;
    }
  }
  return 0;
}

static int cmp_sec_start(const void *a, const void *b) {
  const section_t *x = a, *y = b;
  return x->t_start < y->t_start ? -1 : x->t_start > y->t_start;
}

static int cmp_span(const void *a, const void *b) {
  const span_t *x = a, *y = b;
  return x->a < y->a ? -1 : x->a > y->a;
}

/* Where a section stops counting as a legitimate hold: its END, or the
 * LOST notice its contender got before that (from then on the fence, not
 * the lock, keeps it out); under the work rule, its END whatever it was
 * told. */
static long long held_until(const section_t *s) {
  if (s->work_rule)
    return s->t_end;
  return s->t_lost && s->t_lost < s->t_end ? s->t_lost : s->t_end;
}

/* Told, and held on only by the work rule (a grant that excludes it now
 * is "work late", not an overlap). */
static bool told_working(const section_t *s, long long t) {
  return s->work_rule && s->t_lost && s->t_lost <= t;
}

/* The sections whose lock must wait for their work: AGENT-STOP victims',
 * and every zklock run's. */
static void mark_work_rule(run_t *r) {
  int i, j;
  for (j = 0; j < r->nsecs; j++)
    if (r->procs[r->secs[j].proc].zklock)
      r->secs[j].work_rule = true;
  for (i = 0; i < r->nparts; i++) {
    if (r->parts[i].kind != FC_AGENT_STOP)
      continue;
    for (j = 0; j < r->nsecs; j++)
      if (r->procs[r->secs[j].proc].pid == r->parts[i].pid &&
          r->secs[j].token == r->parts[i].token)
        r->secs[j].work_rule = true;
  }
}

/* Does a new section s exclude, or is it excluded by, the held section a
 * (mutex, rw; the semaphore counts instead)? */
static bool excludes(const section_t *a, const section_t *s) {
  return s->lock == FC_MUTEX || s->side == 'w' || a->side == 'w';
}

/* By the contenders' clocks: sweeps the sections of each kind in start
 * order, with the set of unexcused sections held at each start. */
static void check_overlaps(run_t *r, fc_result *all, FILE *rep) {
  int i, j, *active = NULL, nact = 0, cact = 0, lk;
  qsort(r->secs, (size_t)r->nsecs, sizeof *r->secs, cmp_sec_start);
  for (lk = 0; lk < FC_LOCKS; lk++) {
    fc_result *out = &all[lk];
    nact = 0;
    for (i = 0; i < r->nsecs; i++) {
      section_t *s = &r->secs[i];
      proc_t *p = &r->procs[s->proc];
      int held = 0, told_held = 0, clash = -1, wclash = -1;
      if (s->lock != lk)
        continue;
      if (!s->t_end)
        s->t_end = s->t_start;
      s->pause = pause_of(r, p->pid, s->t_start, s->t_end);
      if (s->t_lost && !s->pause)
        out->lost_sections++;
      if (s->pause) {
        pause_t *pa = &r->pauses[s->pause - 1];
        if (s->outcome == 2)
          pa->rejected = true;
        if (s->outcome == 1)
          pa->accepted = true;
        continue; /* spans a pause: the fence judges it, not the clock */
      }
      if (s->outcome == 2 && !s->t_lost) {
        fprintf(rep,
                "VIOLATION stale grant: pid %ld (slot %d) token %lld was "
                "refused by the resource, not paused, never told LOST\n",
                p->pid, p->slot, s->token);
        out->stale_grants++;
      }
      for (j = 0; j < nact; j++) { /* those still held at s's start */
        section_t *a = &r->secs[active[j]];
        if (held_until(a) <= s->t_start)
          active[j--] = active[--nact];
      }
      for (j = 0; j < nact; j++) {
        section_t *a = &r->secs[active[j]];
        if (a->proc == s->proc)
          continue;
        held++;
        told_held += told_working(a, s->t_start);
        if (lk != FC_SEM && excludes(a, s)) {
          if (told_working(a, s->t_start))
            wclash = active[j];
          else
            clash = active[j];
          if (!a->first_conflict)
            a->first_conflict = s->t_start;
        }
      }
      if (lk == FC_SEM && held + 1 > r->limit) {
        for (j = 0; j < nact; j++) {
          section_t *a = &r->secs[active[j]];
          if (a->proc != s->proc && !a->first_conflict)
            a->first_conflict = s->t_start;
          if (a->proc != s->proc)
            clash = active[j];
        }
        if (held - told_held + 1 > r->limit) {
          fprintf(rep,
                  "VIOLATION overlap: pid %ld token %lld began at %lld with "
                  "%d others holding a lease (limit %d)\n",
                  p->pid, s->token, s->t_start, held, r->limit);
          out->overlaps++;
        } else {
          fprintf(rep,
                  "VIOLATION work late: sem pid %ld token %lld began at "
                  "%lld with %d others holding a lease (limit %d), %d of "
                  "them told LOST but still at work\n",
                  p->pid, s->token, s->t_start, held, r->limit, told_held);
          out->work_late++;
        }
      } else if (clash < 0 && wclash >= 0) {
        section_t *o = &r->secs[wclash];
        fprintf(rep,
                "VIOLATION work late: %s pid %ld token %lld%s was granted "
                "at %lld while pid %ld token %lld%s, told LOST at %lld, was "
                "still at work until %lld\n",
                fc_lock_names[lk], p->pid, s->token,
                s->side == 'w' ? " (w)" : s->side ? " (r)" : "", s->t_start,
                r->procs[o->proc].pid, o->token,
                o->side == 'w' ? " (w)" : o->side ? " (r)" : "", o->t_lost,
                o->t_end);
        out->work_late++;
      } else if (clash >= 0) {
        section_t *o = &r->secs[clash];
        fprintf(rep,
                "VIOLATION overlap: %s pid %ld token %lld%s [%lld, %lld]%s "
                "and pid %ld token %lld%s [%lld, %lld] (%.3f ms)\n",
                fc_lock_names[lk], r->procs[o->proc].pid, o->token,
                o->side == 'w' ? " (w)" : o->side ? " (r)" : "", o->t_start,
                o->t_end, o->t_lost ? " (told LOST later)" : "", p->pid,
                s->token, s->side == 'w' ? " (w)" : s->side ? " (r)" : "",
                s->t_start, s->t_end,
                (double)(held_until(o) - s->t_start) / 1000.0);
        out->overlaps++;
      }
      if (held_until(s) > s->t_start) {
        PUSH(active, nact, cact);
        active[nact - 1] = i;
      }
    }
  }
  free(active);
}

static void check_pauses(run_t *r, fc_result *all, FILE *rep) {
  int i, j;
  for (i = 0; i < r->npauses; i++) {
    pause_t *pa = &r->pauses[i];
    fc_result *out = &all[pa->lock];
    bool fenced = pa->lock != FC_SEM;
    /* Its lock went to another while it was stopped: a newer token was
     * accepted (mutex, rw), its lease was taken (sem). */
    bool taken = fenced ? pa->highest > pa->token : pa->regranted;
    for (j = 0; j < r->nlosts; j++)
      if (r->losts[j].pid == pa->pid && r->losts[j].t >= pa->t0 &&
          r->losts[j].t <= pa->t1 + 2 * r->threshold_us)
        pa->told = true;
    if (pa->told)
      out->pauses_lost_told++;
    if (pa->rejected)
      out->pauses_late_rejected++;
    if (pa->told && (fenced ? pa->rejected : pa->regranted))
      out->pauses_proven++;
    if (fenced && pa->accepted && pa->highest > pa->token) {
      fprintf(rep,
              "VIOLATION late accept: paused pid %ld token %lld wrote after "
              "token %lld had been accepted\n",
              pa->pid, pa->token, pa->highest);
      out->late_accepts++;
    }
    if (!pa->told && taken) {
      fprintf(rep,
              "VIOLATION unannounced: paused pid %ld (%s token %lld) lost "
              "the lock to another and never reported LOST\n",
              pa->pid, fc_lock_names[pa->lock], pa->token);
      out->unannounced++;
    }
    if (!taken)
      fprintf(rep,
              "note: pause of pid %ld (%s) proves nothing: its lock did not "
              "go to another before it resumed\n",
              pa->pid, fc_lock_names[pa->lock]);
  }
}

/* The first grant, at or after `from`, of what excludes section v (mutex:
 * any other holder; rw: a writer, or anyone after a writer): its start, or
 * 0. The semaphore has none to name: N may hold at once. */
static long long next_exclusion(const run_t *r, const section_t *v,
                                long long from) {
  long long first = 0;
  int j;
  if (v->lock == FC_SEM)
    return 0;
  for (j = 0; j < r->nsecs; j++) {
    const section_t *s = &r->secs[j];
    if (s->lock != v->lock || s->proc == v->proc || s->t_start < from ||
        !excludes(v, s))
      continue;
    if (!first || s->t_start < first)
      first = s->t_start;
  }
  return first;
}

/* A holder cut off must hear from its lease (LOST) before any other
 * contender is granted what excludes it: cut off from every server
 * (PARTITION), or pinned to a server cut off inside the ensemble
 * (ENSEMBLE-CUT). The first always loses its session, so never being told
 * is a violation too; a holder of the second may keep its lock (a link
 * that flaps may let its server through in time), which is no harm as long
 * as nobody else was granted it meanwhile. */
/* A holder SIGKILLed while its helper did its section (FORK-KILL), or a
 * zklock while its command's grandchild did (ZKLOCK-KILL): the next grant
 * of what excludes it (mutex, rw writers), from the kill; through an
 * agent, within a session timeout (the agent frees it once the holder and
 * its helper, or zklock's keeper, have gone), direct, at the session's
 * expiry. */
static void check_fork_kill(const run_t *r, const partition_t *pa,
                            const section_t *sec, fc_result *out, FILE *rep) {
  long long next, h;
  int via = pa->via_agent;
  if (!sec || (sec->lock == FC_RW && sec->side != 'w') ||
      !(next = next_exclusion(r, sec, pa->t0)))
    return;
  h = next - pa->t0;
  if (!out->kill_handoffs[via] || h < out->kill_handoff_min_us[via])
    out->kill_handoff_min_us[via] = h;
  if (!out->kill_handoffs[via] || h > out->kill_handoff_max_us[via])
    out->kill_handoff_max_us[via] = h;
  out->kill_handoffs[via]++;
  if (via && h > r->session_us) {
    fprintf(rep,
            "LATE: pid %ld (%s token %lld), SIGKILLed (%s) with its work "
            "under way, through an agent: the next grant came %.3f s after "
            "the kill, past the session timeout\n",
            pa->pid, fc_lock_names[pa->lock], pa->token,
            fc_kind_names[pa->kind], (double)h / 1e6);
    out->late_handoffs++;
  }
}

static void check_partitions(run_t *r, fc_result *all, FILE *rep) {
  int i, j;
  for (i = 0; i < r->nparts; i++) {
    partition_t *pa = &r->parts[i];
    fc_result *out = &all[pa->lock];
    const section_t *sec = NULL;
    long long told = 0, first_other = 0;
    int told_reason = 0;
    for (j = 0; j < r->nlosts; j++)
      if (r->losts[j].pid == pa->pid && r->losts[j].t >= pa->t0 &&
          (!told || r->losts[j].t < told)) {
        told = r->losts[j].t;
        told_reason = r->losts[j].reason;
      }
    for (j = 0; j < r->nsecs; j++) {
      const section_t *sc = &r->secs[j];
      if (r->procs[sc->proc].pid == pa->pid && sc->token == pa->token) {
        first_other = sc->first_conflict;
        sec = sc;
      }
    }
    if (pa->kind == FC_FORK_KILL || pa->kind == FC_ZKLOCK_KILL) {
      check_fork_kill(r, pa, sec, out, rep);
      continue;
    }
    if (told > pa->t0 + r->threshold_us ||
        (pa->kind == FC_BUSY && told > pa->t1))
      told = 0; /* long after (a busy victim's: after its END): not this
                   fault's notice */
    if (pa->kind == FC_AGENT_STOP && told && told_reason == ZKL_LOST_AGENT)
      out->stop_told_agent++;
    if (told && pa->via_agent)
      out->told_via_agent[pa->kind]++;
    /* Cut off from every server, its agent killed, frozen past its session
     * or stopped: it surely lost its lock, so it must have been told. */
    bool must_tell = pa->kind != FC_SERVER_CUT &&
                     pa->kind != FC_LEADER_LINK && pa->kind != FC_BUSY;
    if (!told && (must_tell || first_other)) {
      fprintf(rep,
              "VIOLATION unannounced: pid %ld, hit (%s) at %lld while "
              "holding token %lld, never reported LOST%s\n",
              pa->pid, fc_kind_names[pa->kind], pa->t0, pa->token,
              first_other ? ", and another was granted the lock" : "");
      out->unannounced++;
    } else if (first_other && first_other < told) {
      fprintf(rep,
              "VIOLATION lease late: pid %ld, hit (%s) at %lld, reported "
              "LOST at %lld, after another contender was granted the lock "
              "at %lld\n",
              pa->pid, fc_kind_names[pa->kind], pa->t0, told, first_other);
      out->lease_late++;
    } else if (!told) {
      out->kept_lock[pa->kind]++;
    } else if (first_other && sec && sec->work_rule) {
      /* told, but granted to another while still at work: counted as
       * "work late" by check_overlaps */
    } else {
      /* healed at LOST, it let go itself: the next grant follows at once,
       * which says nothing of the lease's margin; under the work rule,
       * the margin runs from its END */
      long long from = sec && sec->work_rule ? sec->t_end : told;
      long long next = sec && !pa->early ? next_exclusion(r, sec, from) : 0;
      if (pa->kind == FC_PARTITION)
        out->partitions_told++;
      out->told_first[pa->kind]++;
      /* A killed agent's client hears it at once, by the socket's EOF;
       * the relayed lease would tell it later, still in time. */
      if (pa->kind == FC_AGENT_KILL && told_reason == ZKL_LOST_AGENT)
        out->told_by_eof++;
      if (next) {
        long long m = next - from;
        int k = pa->kind;
        if (!out->margins[k] || m < out->margin_min_us[k])
          out->margin_min_us[k] = m;
        if (!out->margins[k] || m > out->margin_max_us[k])
          out->margin_max_us[k] = m;
        out->margins[k]++;
      }
    }
    if (pa->early) {
      /* Healed at LOST: did its next grant come on the same session? */
      long long next_start = 0;
      bool reopened = false;
      for (j = 0; j < r->nsecs; j++) {
        const section_t *sc = &r->secs[j];
        if (r->procs[sc->proc].pid == pa->pid && sc->t_start > pa->t1 &&
            (!next_start || sc->t_start < next_start))
          next_start = sc->t_start;
      }
      for (j = 0; j < r->nopens; j++)
        if (r->opens[j].pid == pa->pid && r->opens[j].t > pa->t0 &&
            (!next_start || r->opens[j].t < next_start))
          reopened = true;
      if (next_start && !reopened)
        out->partitions_kept++;
    }
  }
}

static void check_mutex_history(FILE *f, fc_result *out, FILE *rep) {
  char line[256];
  long long prev_token = -1, prev_new = 0;
  while (fgets(line, sizeof line, f)) {
    long long token, old, nw;
    if (sscanf(line, "%lld %lld %lld", &token, &old, &nw) != 3)
      continue;
    out->handoffs++;
    if (token <= prev_token) {
      fprintf(rep, "VIOLATION token order: %lld accepted after %lld\n", token,
              prev_token);
      out->token_order++;
    }
    if (old != prev_new || nw != old + 1) {
      fprintf(rep,
              "VIOLATION lost update: token %lld read %lld wrote %lld after "
              "the counter reached %lld\n",
              token, old, nw, prev_new);
      out->lost_updates++;
    }
    prev_token = token;
    prev_new = nw;
  }
}

/* ------------------------------------- the rw and sem histories, in order */

typedef struct {
  char kind; /* 'W' writer, 'R' reader, 'S' lease */
  long pid;
  long long token, t;
} reg_t;

static int cmp_key(const void *a, const void *b, void *arg) {
  const run_t *r = arg;
  const section_t *x = &r->secs[*(const int *)a], *y = &r->secs[*(const int *)b];
  long px = r->procs[x->proc].pid, py = r->procs[y->proc].pid;
  if (px != py)
    return px < py ? -1 : 1;
  return x->token < y->token ? -1 : x->token > y->token;
}

static const section_t *section_of(const run_t *r, long pid, long long token) {
  int lo = 0, hi = r->nsecs;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    const section_t *s = &r->secs[r->by_key[mid]];
    long p = r->procs[s->proc].pid;
    if (p < pid || (p == pid && s->token < token))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < r->nsecs) {
    const section_t *s = &r->secs[r->by_key[lo]];
    if (r->procs[s->proc].pid == pid && s->token == token)
      return s;
  }
  return NULL;
}

/* A registration stops counting once its holder is known stale: paused
 * since it registered, or told LOST (under the work rule, at its end); or
 * dead: SIGKILLed with its helper at work (FORK-KILL) before t, as the
 * driver's X line, written after the reap, says later (a helper's late
 * entry would be one of its own). */
static bool excused(const run_t *r, const reg_t *g, long long t) {
  const section_t *s = section_of(r, g->pid, g->token);
  int pi;
  if (pause_of(r, g->pid, g->t, t) ||
      (s && s->t_lost && s->t_lost <= t && !s->work_rule))
    return true;
  pi = find_proc(r, g->pid);
  return pi >= 0 && r->procs[pi].killed == FC_FORK_KILL &&
         r->procs[pi].t_death <= t;
}

static void check_shared_history(run_t *r, int lk, FILE *f, fc_result *out,
                                 FILE *rep) {
  char line[256], op[8];
  reg_t *open = NULL, *g;
  int nopen = 0, copen = 0, i;
  long long prev_w = -1, counter = 0;
  while (fgets(line, sizeof line, f)) {
    long long v[7];
    int n = sscanf(line, "%7s %lld %lld %lld %lld %lld %lld %lld", op, &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
    long pid;
    long long t, token;
    if (n < 4)
      continue;
    /* n counts the op and the numbers after it, which end "slot pid t" */
    pid = (long)v[n - 3];
    t = v[n - 2];
    token = v[0];
    if (!strcmp(op, "X")) { /* the process died: its entries are void */
      for (i = 0; i < nopen; i++)
        if (open[i].pid == pid)
          open[i--] = open[--nopen];
      continue;
    }
    if (op[1] == '+') {
      reg_t now = {op[0], pid, token, t};
      int others = 0, readers = 0, clash = -1;
      bool me_excused = excused(r, &now, t);
      for (i = 0; i < nopen; i++) {
        g = &open[i];
        if (g->pid == pid || excused(r, g, t))
          continue;
        others++;
        readers += g->kind == 'R';
        if (op[0] == 'W' || (op[0] == 'R' && g->kind == 'W'))
          clash = i;
      }
      if (op[0] == 'S') {
        out->handoffs++;
        if (v[1] > r->limit) /* a stale lease beside N: taken from it */
          for (i = 0; i < r->npauses; i++)
            if (r->pauses[i].lock == lk && r->pauses[i].pid != pid &&
                t >= r->pauses[i].t0 && t <= r->pauses[i].t1)
              r->pauses[i].regranted = true;
      }
      if (!me_excused) {
        if (op[0] == 'S' && others + 1 > r->limit) {
          fprintf(rep,
                  "VIOLATION resource: sem token %lld (pid %ld) registered "
                  "with %d others, limit %d\n",
                  token, pid, others, r->limit);
          out->resource_overlaps++;
        } else if (clash >= 0) {
          fprintf(rep,
                  "VIOLATION resource: rw %s token %lld (pid %ld) entered "
                  "while %s token %lld (pid %ld) was in\n",
                  op[0] == 'W' ? "writer" : "reader", token, pid,
                  open[clash].kind == 'W' ? "writer" : "reader",
                  open[clash].token, open[clash].pid);
          out->resource_overlaps++;
        }
        if (op[0] == 'R' && readers > 0)
          out->readers_together++;
        if (op[0] == 'R' && readers + 1 > out->max_readers)
          out->max_readers = readers + 1;
        if (op[0] == 'S') {
          if (others + 1 == r->limit)
            out->at_limit++;
          if (others + 1 > out->max_held)
            out->max_held = others + 1;
        }
      }
      PUSH(open, nopen, copen);
      open[nopen - 1] = now;
      continue;
    }
    /* an end: W, W!, R-, S- */
    for (i = 0; i < nopen; i++)
      if (open[i].pid == pid && open[i].token == token) {
        open[i] = open[--nopen];
        break;
      }
    if (!strcmp(op, "W") && n == 7) {
      out->handoffs++;
      out->writes++;
      if (token <= prev_w) {
        fprintf(rep, "VIOLATION token order: rw write %lld accepted after "
                     "%lld\n",
                token, prev_w);
        out->token_order++;
      }
      if (v[1] != counter || v[2] != v[1] + 1) {
        fprintf(rep,
                "VIOLATION lost update: rw token %lld read %lld wrote %lld "
                "after the counter reached %lld\n",
                token, v[1], v[2], counter);
        out->lost_updates++;
      }
      prev_w = token;
      counter = v[2];
    } else if (!strcmp(op, "R-") && n == 8 && v[3] == 1) {
      out->handoffs++;
      out->reads++;
      if (v[1] != v[2]) {
        fprintf(rep,
                "VIOLATION read changed: rw reader token %lld (pid %ld) saw "
                "the counter go from %lld to %lld\n",
                token, pid, v[1], v[2]);
        out->read_changed++;
      }
    }
  }
  for (i = 0; i < nopen; i++)
    fprintf(rep, "note: %s pid %ld token %lld never left the resource\n",
            fc_lock_names[lk], open[i].pid, open[i].token);
  free(open);
}

static int check_history(run_t *r, const char *dir, int lk, fc_result *out,
                         FILE *rep) {
  FILE *f = open_in(dir, history_names[lk]);
  long accepted;
  if (!f) {
    fprintf(rep, "fault_check: cannot open %s/%s\n", dir, history_names[lk]);
    return -1;
  }
  if (lk == FC_MUTEX)
    check_mutex_history(f, out, rep);
  else
    check_shared_history(r, lk, f, out, rep);
  fclose(f);
  accepted = lk == FC_RW ? out->writes + out->reads : out->handoffs;
  if (r->accept_lines[lk] != accepted) {
    fprintf(rep, "VIOLATION accept count: %s: %ld ACCEPT lines, %ld in the "
                 "history\n",
            fc_lock_names[lk], r->accept_lines[lk], accepted);
    out->accept_mismatch++;
  }
  return 0;
}

/* The spans during which the lock of kind lk was not free: someone held it
 * (mutex, rw), N held leases (sem). Holds are [START, REL] (or until the
 * process died). Returns the count; *out is malloc'd. */
static int busy_spans(const run_t *r, int lk, span_t **out) {
  span_t *u = NULL, *h;
  int nu = 0, cu = 0, i, n = 0, need = lk == FC_SEM ? r->limit : 1;
  h = malloc(sizeof *h * (size_t)(2 * r->nsecs + 1));
  if (!h)
    abort();
  /* events: (t, +1) at a start, (t, -1) at an end, in h[].a and h[].b */
  for (i = 0; i < r->nsecs; i++) {
    const section_t *s = &r->secs[i];
    if (s->lock != lk)
      continue;
    h[n++] = (span_t){s->t_start, 1};
    h[n++] = (span_t){s->t_rel > s->t_end ? s->t_rel : s->t_end, -1};
  }
  qsort(h, (size_t)n, sizeof *h, cmp_span);
  {
    int level = 0;
    long long since = 0;
    for (i = 0; i < n; i++) {
      int before = level;
      level += (int)h[i].b;
      if (before < need && level >= need) {
        since = h[i].a;
      } else if (before >= need && level < need) {
        if (nu > 0 && since <= u[nu - 1].b) {
          if (h[i].a > u[nu - 1].b)
            u[nu - 1].b = h[i].a;
        } else {
          PUSH(u, nu, cu);
          u[nu - 1] = (span_t){since, h[i].a};
        }
      }
    }
  }
  free(h);
  *out = u;
  return nu;
}

/* The longest stretch of each wait during which the lock was free. */
static void check_waits(run_t *r, fc_result *all, FILE *rep) {
  int lk, i;
  for (lk = 0; lk < FC_LOCKS; lk++) {
    span_t *u = NULL;
    fc_result *out = &all[lk];
    int nu = busy_spans(r, lk, &u);
    for (i = 0; i < r->nwaits; i++) {
      const wait_t *w = &r->waits[i];
      long long cursor = w->a, longest = 0;
      int lo = 0, hi = nu;
      if (r->procs[w->proc].lock != lk)
        continue;
      while (lo < hi) { /* first span ending after the wait began */
        int mid = (lo + hi) / 2;
        if (u[mid].b <= w->a)
          lo = mid + 1;
        else
          hi = mid;
      }
      for (; lo < nu && u[lo].a < w->b; lo++) {
        if (u[lo].a > cursor && u[lo].a - cursor > longest)
          longest = u[lo].a - cursor;
        if (u[lo].b > cursor)
          cursor = u[lo].b;
      }
      if (w->b > cursor && w->b - cursor > longest)
        longest = w->b - cursor;
      if (longest > out->longest_free_wait_us)
        out->longest_free_wait_us = longest;
      if (longest > r->threshold_us) {
        fprintf(rep,
                "STUCK: pid %ld (slot %d) waited from %lld to %lld; the "
                "%s was free for %.1f s of it\n",
                r->procs[w->proc].pid, r->procs[w->proc].slot, w->a, w->b,
                fc_lock_names[lk], (double)longest / 1e6);
        out->stuck++;
      }
    }
    free(u);
  }
}

static void sum_violations(fc_result *o) {
  o->violations = o->overlaps + o->resource_overlaps + o->token_order +
                  o->lost_updates + o->read_changed + o->stale_grants +
                  o->late_accepts + o->unannounced + o->lease_late +
                  o->work_late + o->accept_mismatch;
}

/* into += from, field by field (maxima and spans as such). */
static void add_result(fc_result *into, const fc_result *from) {
  int k;
#define ADD(f) into->f += from->f
  ADD(processes); ADD(sessions); ADD(grants); ADD(handoffs); ADD(rejected);
  ADD(acq_timeouts); ADD(acq_lost); ADD(acq_other); ADD(skipped);
  ADD(crashes); ADD(kills_aimed); ADD(pauses_proven);
  ADD(pauses_late_rejected); ADD(pauses_lost_told); ADD(lost_sections);
  ADD(partitions_told); ADD(partitions_early); ADD(partitions_kept);
  ADD(writes); ADD(reads); ADD(downgrades); ADD(readers_together);
  ADD(at_limit); ADD(overlaps); ADD(resource_overlaps); ADD(token_order);
  ADD(lost_updates); ADD(read_changed); ADD(stale_grants); ADD(late_accepts);
  ADD(unannounced); ADD(lease_late); ADD(accept_mismatch); ADD(violations);
  ADD(stuck); ADD(multi_grants); ADD(told_by_eof); ADD(work_late);
  ADD(stop_told_agent); ADD(late_handoffs); ADD(zklock_grants);
#undef ADD
  for (k = 0; k < 8; k++)
    into->lost_by_reason[k] += from->lost_by_reason[k];
  for (k = 0; k < FC_ALL_KINDS; k++) {
    into->faults[k] += from->faults[k];
    into->on_readers[k] += from->on_readers[k];
    into->on_multi[k] += from->on_multi[k];
    into->told_first[k] += from->told_first[k];
    into->kept_lock[k] += from->kept_lock[k];
    into->on_leader[k] += from->on_leader[k];
    into->via_agent[k] += from->via_agent[k];
    into->told_via_agent[k] += from->told_via_agent[k];
    if (from->margins[k] &&
        (!into->margins[k] || from->margin_min_us[k] < into->margin_min_us[k]))
      into->margin_min_us[k] = from->margin_min_us[k];
    if (from->margins[k] &&
        (!into->margins[k] || from->margin_max_us[k] > into->margin_max_us[k]))
      into->margin_max_us[k] = from->margin_max_us[k];
    into->margins[k] += from->margins[k];
  }
  for (k = 0; k < FC_LINK_SHAPES; k++)
    into->link_shapes[k] += from->link_shapes[k];
  for (k = 0; k < 2; k++) {
    if (from->kill_handoffs[k] &&
        (!into->kill_handoffs[k] ||
         from->kill_handoff_min_us[k] < into->kill_handoff_min_us[k]))
      into->kill_handoff_min_us[k] = from->kill_handoff_min_us[k];
    if (from->kill_handoffs[k] &&
        (!into->kill_handoffs[k] ||
         from->kill_handoff_max_us[k] > into->kill_handoff_max_us[k]))
      into->kill_handoff_max_us[k] = from->kill_handoff_max_us[k];
    into->kill_handoffs[k] += from->kill_handoffs[k];
  }
  if (from->first_us && (!into->first_us || from->first_us < into->first_us))
    into->first_us = from->first_us;
  if (from->last_us > into->last_us)
    into->last_us = from->last_us;
  if (from->max_readers > into->max_readers)
    into->max_readers = from->max_readers;
  if (from->max_held > into->max_held)
    into->max_held = from->max_held;
  if (from->limit > into->limit)
    into->limit = from->limit;
  if (from->longest_free_wait_us > into->longest_free_wait_us)
    into->longest_free_wait_us = from->longest_free_wait_us;
}

int fc_check(const char *dir, int session_ms, fc_result *total,
             fc_result per_lock[FC_LOCKS], FILE *rep) {
  run_t r;
  fc_result out[FC_LOCKS];
  int i, rc = 0, lk;
  memset(out, 0, sizeof out);
  memset(total, 0, sizeof *total);
  memset(&r, 0, sizeof r);
  r.threshold_us = (3LL * session_ms + 10000) * 1000;
  r.session_us = (long long)session_ms * 1000;
  if (read_driver_log(&r, dir, out, rep) != 0)
    return -1;
  for (i = 0; i < r.nprocs && rc == 0; i++)
    rc = read_contender_log(&r, dir, i, out, rep);
  if (rc == 0) {
    mark_work_rule(&r);
    check_overlaps(&r, out, rep); /* sorts the sections by start */
    r.by_key = malloc(sizeof *r.by_key * (size_t)(r.nsecs + 1));
    if (!r.by_key)
      abort();
    for (i = 0; i < r.nsecs; i++)
      r.by_key[i] = i;
    qsort_r(r.by_key, (size_t)r.nsecs, sizeof *r.by_key, cmp_key, &r);
    for (lk = 0; lk < FC_LOCKS && rc == 0; lk++)
      if (out[lk].processes > 0)
        rc = check_history(&r, dir, lk, &out[lk], rep);
  }
  if (rc == 0) {
    check_pauses(&r, out, rep);
    check_partitions(&r, out, rep);
    check_waits(&r, out, rep);
  }
  for (lk = 0; lk < FC_LOCKS; lk++) {
    if (out[lk].processes > 0)
      out[lk].faults[FC_LEADER_KILL] = r.leader_kills;
    if (lk == FC_SEM)
      out[lk].limit = r.limit;
    sum_violations(&out[lk]);
    add_result(total, &out[lk]);
  }
  total->faults[FC_LEADER_KILL] = r.leader_kills;
  if (per_lock)
    memcpy(per_lock, out, sizeof out);
  free(r.procs);
  free(r.secs);
  free(r.by_key);
  free(r.waits);
  free(r.pauses);
  free(r.losts);
  free(r.parts);
  free(r.opens);
  return rc;
}

static void print_one(const fc_result *r, int lk, FILE *out) {
  int k;
  long total = 0;
  for (k = 0; k < FC_ALL_KINDS; k++)
    total += r->faults[k];
  if (lk == FC_RW)
    fprintf(out, "    handoffs done        %ld (%ld writes accepted, %ld reads "
                 "vouched for; %ld grants, %ld refused, %ld downgrades)\n",
            r->handoffs, r->writes, r->reads, r->grants, r->rejected,
            r->downgrades);
  else if (lk == FC_SEM)
    fprintf(out, "    handoffs done        %ld (leases registered; %ld "
                 "grants)\n",
            r->handoffs, r->grants);
  else
    fprintf(out, "    handoffs done        %ld (accepted writes; %ld grants, "
                 "%ld refused)\n",
            r->handoffs, r->grants, r->rejected);
  if (lk == FC_RW)
    fprintf(out, "    readers together     %ld entered beside another reader, "
                 "up to %ld at once\n",
            r->readers_together, r->max_readers);
  if (lk == FC_SEM)
    fprintf(out, "    leases at once       up to %ld of %d; %ld registrations "
                 "made %d at once\n",
            r->max_held, r->limit, r->at_limit, r->limit);
  fprintf(out, "    faults injected      %ld:", total);
  for (k = 0; k < FC_KINDS; k++)
    fprintf(out, "%s %s %ld", k ? "," : "", fc_kind_names[k], r->faults[k]);
  for (k = FC_KINDS; k < FC_ALL_KINDS; k++) {
    if (!r->faults[k])
      continue;
    if (k == FC_FORK_KILL || k == FC_ZKLOCK_KILL) {
      fprintf(out, ", %s %ld (%ld through an agent)", fc_kind_names[k],
              r->faults[k], r->via_agent[k]);
      continue;
    }
    fprintf(out, ", %s %ld (told first %ld%s", fc_kind_names[k],
            r->faults[k], r->told_first[k],
            k == FC_AGENT_KILL   ? (r->told_by_eof == r->faults[k]
                                        ? ", all at the EOF"
                                        : ", NOT all at the EOF")
            : k == FC_AGENT_STOP ? (r->stop_told_agent == r->faults[k]
                                        ? ", all told the agent stops"
                                        : ", NOT all told the agent stops")
                                 : "");
    if (k == FC_BUSY)
      fprintf(out, ", kept %ld; %ld through an agent, %ld of them told",
              r->kept_lock[k], r->via_agent[k], r->told_via_agent[k]);
    if (k == FC_ZKLOCK_LOSS)
      fprintf(out, "; %ld through an agent", r->via_agent[k]);
    if (r->margins[k]) /* none for the semaphore */
      fprintf(out, ", margin %.0f-%.0f ms%s", r->margin_min_us[k] / 1e3,
              r->margin_max_us[k] / 1e3,
              k == FC_AGENT_STOP || k == FC_ZKLOCK_LOSS
                  ? " from the END of its work"
                  : "");
    fprintf(out, ")");
  }
  fprintf(out, "\n");
  if (r->faults[FC_FORK_KILL] || r->faults[FC_ZKLOCK_KILL]) {
    static const char *const via[2] = {"direct", "through an agent"};
    fprintf(out, "    holders killed       (forked holders, zklock) kill to "
                 "the next grant:");
    for (k = 0; k < 2; k++)
      if (r->kill_handoffs[k])
        fprintf(out, "%s %s %.0f-%.0f ms (%ld)", k ? "," : "", via[k],
                r->kill_handoff_min_us[k] / 1e3,
                r->kill_handoff_max_us[k] / 1e3, r->kill_handoffs[k]);
      else
        fprintf(out, "%s %s none", k ? "," : "", via[k]);
    fprintf(out, "; %ld late\n", r->late_handoffs);
  }
  if (lk == FC_RW)
    fprintf(out, "    readers, writers     holder killed %ld, %ld; paused %ld, "
                 "%ld; cut off %ld, %ld; server cut off %ld, %ld; leader "
                 "link %ld, %ld (waiters were killed behind a writer)\n",
            r->on_readers[FC_KILL_HOLDER],
            r->faults[FC_KILL_HOLDER] - r->on_readers[FC_KILL_HOLDER],
            r->on_readers[FC_PAUSE_HOLDER],
            r->faults[FC_PAUSE_HOLDER] - r->on_readers[FC_PAUSE_HOLDER],
            r->on_readers[FC_PARTITION],
            r->faults[FC_PARTITION] - r->on_readers[FC_PARTITION],
            r->on_readers[FC_SERVER_CUT],
            r->faults[FC_SERVER_CUT] - r->on_readers[FC_SERVER_CUT],
            r->on_readers[FC_LEADER_LINK],
            r->faults[FC_LEADER_LINK] - r->on_readers[FC_LEADER_LINK]);
  if (lk == FC_MUTEX && r->zklock_grants)
    fprintf(out, "    zklock runs          %ld grants of %ld (every one held "
                 "until its command's processes were gone)\n",
            r->zklock_grants, r->grants);
  if (lk == FC_MUTEX)
    fprintf(out, "    multi-locks          %ld grants of %ld; holder killed "
                 "%ld, waiter killed %ld, paused %ld, cut off %ld, server "
                 "cut off %ld, leader link %ld, create reply lost %ld\n",
            r->multi_grants, r->grants, r->on_multi[FC_KILL_HOLDER],
            r->on_multi[FC_KILL_WAITER], r->on_multi[FC_PAUSE_HOLDER],
            r->on_multi[FC_PARTITION], r->on_multi[FC_SERVER_CUT],
            r->on_multi[FC_LEADER_LINK], r->on_multi[FC_LOST_CREATE]);
  fprintf(out, "    kills on target      %ld of %ld (holders in their "
               "section, seen holding by ZooKeeper; waiters in their "
               "acquire)\n",
          r->kills_aimed, r->faults[FC_KILL_HOLDER] + r->faults[FC_KILL_WAITER]);
  fprintf(out, "    paused holders       %ld told LOST, %ld late writes "
               "refused, %ld proven%s\n",
          r->pauses_lost_told, r->pauses_late_rejected, r->pauses_proven,
          lk == FC_SEM ? " (told, and the lease taken meanwhile)" : " both");
  fprintf(out, "    cut-off holders      %ld told LOST before anyone else "
               "was granted the lock; %ld healed at once, %ld of them kept "
               "their session\n",
          r->partitions_told, r->partitions_early, r->partitions_kept);
  fprintf(out, "    ensemble cuts        server cut off %ld (%ld on the "
               "leader, %ld on a follower), leader link %ld (oneway-out "
               "%ld, oneway-in %ld, flap %ld): %ld told LOST before anyone "
               "else was granted the lock, %ld kept it (nobody else was "
               "granted it)\n",
          r->faults[FC_SERVER_CUT], r->on_leader[FC_SERVER_CUT],
          r->faults[FC_SERVER_CUT] - r->on_leader[FC_SERVER_CUT],
          r->faults[FC_LEADER_LINK], r->link_shapes[FC_ONEWAY_OUT],
          r->link_shapes[FC_ONEWAY_IN], r->link_shapes[FC_FLAP],
          r->told_first[FC_SERVER_CUT] + r->told_first[FC_LEADER_LINK],
          r->kept_lock[FC_SERVER_CUT] + r->kept_lock[FC_LEADER_LINK]);
  if (lk != FC_SEM) {
    static const int cut[] = {FC_PARTITION, FC_SERVER_CUT, FC_LEADER_LINK};
    fprintf(out, "    told, next grant     margin");
    for (k = 0; k < 3; k++)
      if (r->margins[cut[k]])
        fprintf(out, "%s %s %.0f-%.0f ms (%ld)", k ? "," : "",
                fc_kind_names[cut[k]], r->margin_min_us[cut[k]] / 1e3,
                r->margin_max_us[cut[k]] / 1e3, r->margins[cut[k]]);
      else
        fprintf(out, "%s %s none", k ? "," : "", fc_kind_names[cut[k]]);
    fprintf(out, "\n");
  }
  fprintf(out, "    violations           %ld (overlap %ld, resource %ld, "
               "token order %ld, lost update %ld, read changed %ld, stale "
               "grant %ld, late accept %ld, unannounced %ld, lease late %ld, "
               "work late %ld, accept count %ld)\n",
          r->violations, r->overlaps, r->resource_overlaps, r->token_order,
          r->lost_updates, r->read_changed, r->stale_grants, r->late_accepts,
          r->unannounced, r->lease_late, r->work_late, r->accept_mismatch);
  fprintf(out, "    stuck contenders     %ld (longest lock-free stretch in "
               "a wait %.2f s)\n",
          r->stuck, (double)r->longest_free_wait_us / 1e6);
  fprintf(out, "    contenders           %ld processes, %ld sessions, %ld "
               "crashed; acquires failed: %ld timed out, %ld lost, %ld "
               "other\n",
          r->processes, r->sessions, r->crashes, r->acq_timeouts, r->acq_lost,
          r->acq_other);
  fprintf(out, "    LOST reported        %ld session expired, %ld node "
               "deleted, %ld lease expired (%ld in a section, unpaused)\n",
          r->lost_by_reason[ZKL_LOST_SESSION_EXPIRED],
          r->lost_by_reason[ZKL_LOST_NODE_DELETED],
          r->lost_by_reason[ZKL_LOST_LEASE_EXPIRED], r->lost_sections);
  if (r->lost_by_reason[ZKL_LOST_AGENT])
    fprintf(out, "    LOST, agent gone     %ld\n",
            r->lost_by_reason[ZKL_LOST_AGENT]);
}

void fc_print(const fc_result *total, const fc_result per_lock[FC_LOCKS],
              long leaked, double seconds, FILE *out) {
  int lk, kinds = 0;
  long faults = 0;
  for (lk = 0; lk < FC_ALL_KINDS; lk++)
    faults += total->faults[lk];
  fprintf(out, "\n    ---- fault suite: %.0f s ----\n", seconds);
  for (lk = 0; per_lock && lk < FC_LOCKS; lk++)
    kinds += per_lock[lk].processes > 0;
  if (kinds <= 1) {
    print_one(total, per_lock && per_lock[FC_RW].processes   ? FC_RW
                     : per_lock && per_lock[FC_SEM].processes ? FC_SEM
                                                              : FC_MUTEX,
              out);
  } else {
    fprintf(out, "    all kinds            %ld handoffs, %ld faults, %ld "
                 "violations, %ld stuck, %ld crashed\n",
            total->handoffs, faults, total->violations, total->stuck,
            total->crashes);
    for (lk = 0; lk < FC_LOCKS; lk++) {
      if (!per_lock[lk].processes)
        continue;
      fprintf(out, "  -- %s\n",
              lk == FC_MUTEX ? "mutex"
              : lk == FC_RW  ? "read/write lock"
                             : "semaphore");
      print_one(&per_lock[lk], lk, out);
    }
  }
  fprintf(out, "    nodes leaked         %ld\n", leaked);
  if (total->skipped)
    fprintf(out, "    faults skipped       %ld\n", total->skipped);
  fprintf(out, "    ----\n");
}
