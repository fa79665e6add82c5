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

const char *const fc_kind_names[FC_KINDS] = {
    "leader killed", "holder killed", "waiter killed", "holder paused",
    "create reply lost", "holder cut off"};

typedef struct {
  int slot, gen;
  long pid;
  long long t_death; /* when the driver reaped it after a kill or crash */
  int killed;        /* 0, or the FC_KILL_ kind that ended it */
  int verified;      /* KILL-HOLDER: its node was the lowest (1), not (0) */
  char last[16];     /* the last word of its log */
} proc_t;

typedef struct {
  int proc;
  long long token;
  long long t_start, t_end, t_rel;
  int outcome;      /* 0 none, 1 accepted, 2 rejected */
  long long t_lost; /* first LOST line while in it, 0 if none */
  int pause;        /* 1 + index of the pause it spans, 0 if none */
} section_t;

typedef struct {
  int proc;
  long long a, b;
} wait_t;

typedef struct {
  int slot;
  long pid;
  long long token, t0, t1, highest;
  bool told, rejected, accepted;
} pause_t;

typedef struct {
  long pid;
  long long token, t0, t1, told;
  int early;
} partition_t;

typedef struct {
  long long a, b;
} span_t;

typedef struct {
  long long t;
  long pid;
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
  long long run_end;
  long accept_lines;
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
    char kind[32];
    int slot, gen, fired, pi;
    long pid;
    if (sscanf(line, "%lld %31s", &t, kind) != 2)
      continue;
    const char *args = strchr(line, ' ');
    args = args ? strchr(args + 1, ' ') : NULL;
    args = args ? args + 1 : "";
    if (!strcmp(kind, "SPAWN") &&
        sscanf(args, "%d %d %ld", &slot, &gen, &pid) == 3) {
      PUSH(r->procs, r->nprocs, r->cprocs);
      proc_t *p = &r->procs[r->nprocs - 1];
      memset(p, 0, sizeof *p);
      p->slot = slot;
      p->gen = gen;
      p->pid = pid;
    } else if ((!strcmp(kind, "KILL-HOLDER") || !strcmp(kind, "KILL-WAITER") ||
                !strcmp(kind, "CRASH")) &&
               sscanf(args, "%d %ld", &slot, &pid) == 2) {
      int k = !strcmp(kind, "KILL-HOLDER")   ? FC_KILL_HOLDER
              : !strcmp(kind, "KILL-WAITER") ? FC_KILL_WAITER
                                             : -1;
      pi = find_proc(r, pid);
      if (pi >= 0) {
        r->procs[pi].t_death = t;
        r->procs[pi].killed = k;
        if (k == FC_KILL_HOLDER)
          sscanf(args, "%*d %*d %*s %d", &r->procs[pi].verified);
      }
      if (k >= 0)
        out->faults[k]++;
      else
        out->crashes++;
    } else if (!strcmp(kind, "PAUSE") &&
               sscanf(args, "%d %ld %lld %lld %lld %lld", &slot, &pid, &a3,
                      &a4, &a5, &a6) == 6) {
      PUSH(r->pauses, r->npauses, r->cpauses);
      pause_t *p = &r->pauses[r->npauses - 1];
      memset(p, 0, sizeof *p);
      p->slot = slot;
      p->pid = pid;
      p->token = a3;
      p->t0 = a4;
      p->t1 = a5;
      p->highest = a6;
      out->faults[FC_PAUSE_HOLDER]++;
    } else if (!strcmp(kind, "PARTITION") &&
               sscanf(args, "%d %ld %lld %lld %lld %d", &slot, &pid, &a3, &a4,
                      &a5, &fired) == 6) {
      PUSH(r->parts, r->nparts, r->cparts);
      partition_t *pa = &r->parts[r->nparts - 1];
      memset(pa, 0, sizeof *pa);
      pa->pid = pid;
      pa->token = a3;
      pa->t0 = a4;
      pa->t1 = a5;
      pa->early = fired;
      out->faults[FC_PARTITION]++;
      out->partitions_early += fired != 0;
    } else if (!strcmp(kind, "LEADER-KILL")) {
      out->faults[FC_LEADER_KILL]++;
    } else if (!strcmp(kind, "LOST-CREATE") &&
               sscanf(args, "%d %ld %lld %d", &slot, &pid, &a3, &fired) == 4) {
      out->faults[FC_LOST_CREATE] += fired;
    } else if (!strcmp(kind, "SKIP")) {
      out->skipped++;
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

static int read_contender_log(run_t *r, const char *dir, int pi,
                              fc_result *out, FILE *rep) {
  char name[64], line[512], prev_word[32] = "";
  proc_t *p = &r->procs[pi];
  FILE *f;
  long long wait_start = 0, prev_t = 0;
  int cur = -1; /* open section */
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
    char word[32];
    int n = sscanf(line, "%lld %31s %lld %lld", &t, word, &a1, &a2);
    if (n < 2)
      continue;
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
      if (wait_start) {
        PUSH(r->waits, r->nwaits, r->cwaits);
        r->waits[r->nwaits - 1] = (wait_t){pi, wait_start, t};
        wait_start = 0;
      }
      PUSH(r->secs, r->nsecs, r->csecs);
      cur = r->nsecs - 1;
      memset(&r->secs[cur], 0, sizeof r->secs[cur]);
      r->secs[cur].proc = pi;
      r->secs[cur].token = a1;
      r->secs[cur].t_start = t;
      out->grants++;
    } else if (!strcmp(word, "ACCEPT")) {
      r->accept_lines++;
      if (cur >= 0)
        r->secs[cur].outcome = 1;
    } else if (!strcmp(word, "REJECT")) {
      out->rejected++;
      if (cur >= 0)
        r->secs[cur].outcome = 2;
    } else if (!strcmp(word, "END")) {
      if (cur >= 0)
        r->secs[cur].t_end = t;
    } else if (!strcmp(word, "REL")) {
      if (cur >= 0) {
        if (!r->secs[cur].t_end)
          r->secs[cur].t_end = t;
        r->secs[cur].t_rel = t;
      }
      cur = -1;
    } else if (!strcmp(word, "FAIL") && n >= 3) {
      if (wait_start) {
        PUSH(r->waits, r->nwaits, r->cwaits);
        r->waits[r->nwaits - 1] = (wait_t){pi, wait_start, t};
        wait_start = 0;
      }
      if (a1 == ZKL_ETIMEDOUT)
        out->acq_timeouts++;
      else if (a1 == ZKL_ELOST || a1 == ZKL_EEXPIRED)
        out->acq_lost++;
      else if (a1 != ZKL_ECANCELED)
        out->acq_other++;
    } else if (!strcmp(word, "LOST") && n >= 3) {
      if (a1 >= 0 && a1 < 4)
        out->lost_by_reason[a1]++;
      PUSH(r->losts, r->nlosts, r->closts);
      r->losts[r->nlosts - 1] = (lost_t){t, p->pid};
      if (cur >= 0 && !r->secs[cur].t_lost)
        r->secs[cur].t_lost = t;
    } else if (!strcmp(word, "SESSION")) {
      out->sessions++;
      PUSH(r->opens, r->nopens, r->copens);
      r->opens[r->nopens - 1] = (lost_t){t, p->pid};
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
                   "the lowest\n",
              p->pid, p->last, p->verified == 1 ? "was" : "was not seen as");
  } else if (p->killed == FC_KILL_WAITER) {
    if (!strcmp(p->last, "ACQ"))
      out->kills_aimed++;
    else
      fprintf(rep, "note: killed waiter pid %ld: last line %s\n", p->pid,
              p->last);
  }
  /* What was still open when the process died or the run ended. */
  {
    long long end = p->t_death ? p->t_death : prev_t;
    if (wait_start) {
      PUSH(r->waits, r->nwaits, r->cwaits);
      r->waits[r->nwaits - 1] = (wait_t){pi, wait_start, end};
    }
    if (cur >= 0) {
      if (!r->secs[cur].t_end)
        r->secs[cur].t_end = end;
      r->secs[cur].t_rel = end;
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
 * the lock, keeps it out). */
static long long held_until(const section_t *s) {
  return s->t_lost && s->t_lost < s->t_end ? s->t_lost : s->t_end;
}

static void check_overlaps(run_t *r, fc_result *out, FILE *rep) {
  int i, m = -1; /* m: the unpaused section reaching furthest so far */
  qsort(r->secs, (size_t)r->nsecs, sizeof *r->secs, cmp_sec_start);
  for (i = 0; i < r->nsecs; i++) {
    section_t *s = &r->secs[i];
    proc_t *p = &r->procs[s->proc];
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
    if (m >= 0 && s->t_start < held_until(&r->secs[m]) &&
        r->secs[m].proc != s->proc) {
      section_t *o = &r->secs[m];
      fprintf(rep,
              "VIOLATION overlap: pid %ld token %lld [%lld, %lld]%s and "
              "pid %ld token %lld [%lld, %lld] (%.3f ms)\n",
              r->procs[o->proc].pid, o->token, o->t_start, o->t_end,
              o->t_lost ? " (told LOST later)" : "", p->pid, s->token,
              s->t_start, s->t_end,
              (double)(held_until(o) - s->t_start) / 1000.0);
      out->overlaps++;
    }
    if (m < 0 || held_until(s) > held_until(&r->secs[m]))
      m = i;
  }
}

static void check_pauses(run_t *r, fc_result *out, FILE *rep) {
  int i, j;
  for (i = 0; i < r->npauses; i++) {
    pause_t *pa = &r->pauses[i];
    for (j = 0; j < r->nlosts; j++)
      if (r->losts[j].pid == pa->pid && r->losts[j].t >= pa->t0 &&
          r->losts[j].t <= pa->t1 + 2 * r->threshold_us)
        pa->told = true;
    if (pa->told)
      out->pauses_lost_told++;
    if (pa->rejected)
      out->pauses_late_rejected++;
    if (pa->told && pa->rejected)
      out->pauses_proven++;
    if (pa->accepted && pa->highest > pa->token) {
      fprintf(rep,
              "VIOLATION late accept: paused pid %ld token %lld wrote after "
              "token %lld had been accepted\n",
              pa->pid, pa->token, pa->highest);
      out->late_accepts++;
    }
    if (!pa->told && pa->highest > pa->token) {
      fprintf(rep,
              "VIOLATION unannounced: paused pid %ld (token %lld) lost the "
              "lock to token %lld and never reported LOST\n",
              pa->pid, pa->token, pa->highest);
      out->unannounced++;
    }
    if (pa->highest <= pa->token)
      fprintf(rep,
              "note: pause of pid %ld proves nothing: no newer token was "
              "accepted before it resumed\n",
              pa->pid);
  }
}

/* A holder cut off from the servers must hear from its lease (LOST)
 * before any other contender is granted the lock. */
static void check_partitions(run_t *r, fc_result *out, FILE *rep) {
  int i, j;
  for (i = 0; i < r->nparts; i++) {
    partition_t *pa = &r->parts[i];
    long long told = 0, first_other = 0;
    for (j = 0; j < r->nlosts; j++)
      if (r->losts[j].pid == pa->pid && r->losts[j].t >= pa->t0 &&
          (!told || r->losts[j].t < told))
        told = r->losts[j].t;
    for (j = 0; j < r->nsecs; j++) {
      const section_t *sc = &r->secs[j];
      if (r->procs[sc->proc].pid != pa->pid && sc->t_start > pa->t0 &&
          (!first_other || sc->t_start < first_other))
        first_other = sc->t_start;
    }
    if (!told || told > pa->t0 + r->threshold_us) {
      fprintf(rep,
              "VIOLATION unannounced: pid %ld cut off at %lld while holding "
              "token %lld never reported LOST\n",
              pa->pid, pa->t0, pa->token);
      out->unannounced++;
    } else if (first_other && first_other < told) {
      fprintf(rep,
              "VIOLATION lease late: pid %ld cut off at %lld reported LOST "
              "at %lld, after another contender was granted the lock at "
              "%lld\n",
              pa->pid, pa->t0, told, first_other);
      out->lease_late++;
    } else {
      out->partitions_told++;
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

static int check_history(run_t *r, const char *dir, fc_result *out,
                         FILE *rep) {
  char line[256];
  long long prev_token = -1, prev_new = 0;
  FILE *f = open_in(dir, "history");
  if (!f) {
    fprintf(rep, "fault_check: cannot open %s/history\n", dir);
    return -1;
  }
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
  fclose(f);
  if (r->accept_lines != out->handoffs) {
    fprintf(rep, "VIOLATION accept count: %ld ACCEPT lines, %ld history "
                 "lines\n",
            r->accept_lines, out->handoffs);
    out->accept_mismatch++;
  }
  return 0;
}

/* The longest stretch of each wait during which no contender held the
 * lock. Holds are [START, REL] (or until the process died). */
static void check_waits(run_t *r, fc_result *out, FILE *rep) {
  span_t *u = NULL;
  int nu = 0, cu = 0, i;
  span_t *h = malloc(sizeof *h * (size_t)(r->nsecs ? r->nsecs : 1));
  if (!h)
    abort();
  for (i = 0; i < r->nsecs; i++) {
    h[i].a = r->secs[i].t_start;
    h[i].b = r->secs[i].t_rel > r->secs[i].t_end ? r->secs[i].t_rel
                                                 : r->secs[i].t_end;
  }
  qsort(h, (size_t)r->nsecs, sizeof *h, cmp_span);
  for (i = 0; i < r->nsecs; i++) {
    if (nu > 0 && h[i].a <= u[nu - 1].b) {
      if (h[i].b > u[nu - 1].b)
        u[nu - 1].b = h[i].b;
      continue;
    }
    PUSH(u, nu, cu);
    u[nu - 1] = h[i];
  }
  free(h);
  for (i = 0; i < r->nwaits; i++) {
    const wait_t *w = &r->waits[i];
    long long cursor = w->a, longest = 0;
    int lo = 0, hi = nu;
    while (lo < hi) { /* first union span ending after the wait began */
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
              "STUCK: pid %ld (slot %d) waited from %lld to %lld; the lock "
              "was free for %.1f s of it\n",
              r->procs[w->proc].pid, r->procs[w->proc].slot, w->a, w->b,
              (double)longest / 1e6);
      out->stuck++;
    }
  }
  free(u);
}

int fc_check(const char *dir, int session_ms, fc_result *out, FILE *rep) {
  run_t r;
  int i, rc = 0;
  memset(out, 0, sizeof *out);
  memset(&r, 0, sizeof r);
  r.threshold_us = (3LL * session_ms + 10000) * 1000;
  if (read_driver_log(&r, dir, out, rep) != 0)
    return -1;
  for (i = 0; i < r.nprocs && rc == 0; i++)
    rc = read_contender_log(&r, dir, i, out, rep);
  if (rc == 0)
    rc = check_history(&r, dir, out, rep);
  if (rc == 0) {
    check_overlaps(&r, out, rep);
    check_pauses(&r, out, rep);
    check_partitions(&r, out, rep);
    check_waits(&r, out, rep);
  }
  out->violations = out->overlaps + out->token_order + out->lost_updates +
                    out->stale_grants + out->late_accepts + out->unannounced +
                    out->lease_late + out->accept_mismatch;
  free(r.procs);
  free(r.secs);
  free(r.waits);
  free(r.pauses);
  free(r.losts);
  free(r.parts);
  free(r.opens);
  return rc;
}

void fc_print(const fc_result *r, long leaked, double seconds, FILE *out) {
  int k;
  long total = 0;
  for (k = 0; k < FC_KINDS; k++)
    total += r->faults[k];
  fprintf(out, "\n    ---- fault suite: %.0f s ----\n", seconds);
  fprintf(out, "    handoffs done        %ld (accepted writes; %ld grants, "
               "%ld refused)\n",
          r->handoffs, r->grants, r->rejected);
  fprintf(out, "    faults injected      %ld:", total);
  for (k = 0; k < FC_KINDS; k++)
    fprintf(out, "%s %s %ld", k ? "," : "", fc_kind_names[k], r->faults[k]);
  fprintf(out, "\n");
  fprintf(out, "    kills on target      %ld of %ld (holders in their "
               "section with the lowest node, waiters in their acquire)\n",
          r->kills_aimed, r->faults[FC_KILL_HOLDER] + r->faults[FC_KILL_WAITER]);
  fprintf(out, "    paused holders       %ld told LOST, %ld late writes "
               "refused, %ld proven both\n",
          r->pauses_lost_told, r->pauses_late_rejected, r->pauses_proven);
  fprintf(out, "    cut-off holders      %ld told LOST before anyone else "
               "was granted the lock; %ld healed at once, %ld of them kept "
               "their session\n",
          r->partitions_told, r->partitions_early, r->partitions_kept);
  fprintf(out, "    violations           %ld (overlap %ld, token order %ld, "
               "lost update %ld, stale grant %ld, late accept %ld, "
               "unannounced %ld, lease late %ld, accept count %ld)\n",
          r->violations, r->overlaps, r->token_order, r->lost_updates,
          r->stale_grants, r->late_accepts, r->unannounced, r->lease_late,
          r->accept_mismatch);
  fprintf(out, "    nodes leaked         %ld\n", leaked);
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
  if (r->skipped)
    fprintf(out, "    faults skipped       %ld\n", r->skipped);
  fprintf(out, "    ----\n");
}
