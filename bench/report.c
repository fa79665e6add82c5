/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.c - medians over the rounds, ratios to the floor, the targets, and
 * the two outputs: a table for people and CSV for scripts (bench/compare
 * plots from it, tests/bench_smoke checks it). No field of the CSV holds a
 * comma (the titles are written so), so `awk -F,` reads it.
 *
 * A ratio is always taken within one round (the two runs a few seconds
 * apart on the same server) and only then summarised: the median over the
 * rounds and its spread, min..max. Absolute rates are printed too, but on a
 * shared machine they move by tens of percent from minute to minute.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "zklock.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median, min and max of the finite values among v[0..n); returns their
 * count. v is reordered. */
static int stats(double *v, int n, double *median, double *min, double *max) {
  int i, k = 0;
  for (i = 0; i < n; i++)
    if (isfinite(v[i]))
      v[k++] = v[i];
  *median = *min = *max = NAN;
  if (k == 0)
    return 0;
  qsort(v, (size_t)k, sizeof *v, cmp_double);
  *min = v[0];
  *max = v[k - 1];
  *median = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
  return k;
}

static double cpu_per_op_us(const bench_result *r) {
  if (!r->ok || r->ops == 0 || !isfinite(r->cpu_s))
    return NAN;
  return r->cpu_s / (double)r->ops * 1e6;
}

static double value(const bench_result *r, metric m) {
  if (!r->ok)
    return NAN;
  switch (m) {
  case M_RATE:
    return r->ops > 0 ? r->rate : NAN;
  case M_P99:
    return r->p99_ms;
  default:
    return cpu_per_op_us(r);
  }
}

double plan_ratio(const group *g, int num, int den, metric m, int round) {
  double a = value(&g->rows[num].res[round], m);
  double b = value(&g->rows[den].res[round], m);
  if (!isfinite(a) || !isfinite(b) || b <= 0)
    return NAN;
  return a / b;
}

int plan_ratio_stats(const plan *p, const group *g, int num, int den,
                     metric m, double *median, double *min, double *max) {
  double v[256];
  int i, n = p->rounds < 256 ? p->rounds : 256;
  for (i = 0; i < n; i++)
    v[i] = plan_ratio(g, num, den, m, i);
  return stats(v, n, median, min, max);
}

typedef struct row_stats {
  double rate, rate_min, rate_max;
  double p50, p99, cpu_us;
  unsigned long long overlaps, errors;
  int ok, failed;
  const char *error;
} row_stats;

static void row_summary(const plan *p, const row *rw, row_stats *s) {
  double rate[256], p50[256], p99[256], cpu[256], dummy1, dummy2;
  int i, n = p->rounds < 256 ? p->rounds : 256;
  memset(s, 0, sizeof *s);
  for (i = 0; i < n; i++) {
    const bench_result *r = &rw->res[i];
    rate[i] = value(r, M_RATE);
    p50[i] = r->ok ? r->p50_ms : NAN;
    p99[i] = r->ok ? r->p99_ms : NAN;
    cpu[i] = cpu_per_op_us(r);
    s->overlaps += r->overlaps;
    s->errors += r->errors;
    if (r->ok) {
      s->ok++;
    } else {
      s->failed++;
      if (!s->error)
        s->error = r->error;
    }
  }
  stats(rate, n, &s->rate, &s->rate_min, &s->rate_max);
  stats(p50, n, &s->p50, &dummy1, &dummy2);
  stats(p99, n, &s->p99, &dummy1, &dummy2);
  stats(cpu, n, &s->cpu_us, &dummy1, &dummy2);
}

/* "%.*f" with a precision that suits the magnitude, or "-" for NAN. */
static const char *num(char *buf, size_t len, double v) {
  if (!isfinite(v))
    snprintf(buf, len, "-");
  else if (fabs(v) >= 100)
    snprintf(buf, len, "%.0f", v);
  else if (fabs(v) >= 10)
    snprintf(buf, len, "%.1f", v);
  else
    snprintf(buf, len, "%.2f", v);
  return buf;
}

bool report_no_overlaps(const plan *p) {
  int g, r, i;
  for (g = 0; g < p->ngroups; g++)
    for (r = 0; r < p->groups[g].nrows; r++)
      for (i = 0; i < p->rounds; i++)
        if (p->groups[g].rows[r].res[i].overlaps)
          return false;
  return true;
}

/* The targets (with_threshold), or the ratios shown without one. */
static void report_targets(const plan *p, FILE *out, bool with_threshold) {
  int t;
  bool any = false;
  for (t = 0; t < p->ntargets; t++) {
    const target *tg = &p->targets[t];
    double med, mn, mx;
    int k;
    const char *verdict = "";
    char got[64];
    if (isfinite(tg->threshold) != with_threshold)
      continue;
    if (!any)
      fprintf(out, with_threshold
                       ? "\nTargets, median ratio over the rounds [min-max]:\n"
                       : "\nOther ratios, median over the rounds [min-max]:\n");
    any = true;
    k = plan_ratio_stats(p, &p->groups[tg->group], tg->num, tg->den, tg->m,
                         &med, &mn, &mx);
    if (with_threshold)
      verdict = k == 0 ? "no data"
                : (tg->at_most ? med <= tg->threshold : med >= tg->threshold)
                    ? "met"
                    : "NOT met";
    if (k)
      snprintf(got, sizeof got, "%.2f [%.2f-%.2f]", med, mn, mx);
    else
      snprintf(got, sizeof got, "-");
    if (with_threshold)
      fprintf(out, "  %-66s %-20s %s\n", tg->text, got, verdict);
    else
      fprintf(out, "  %-66s %s\n", tg->text, got);
  }
}

void report_table(const plan *p, FILE *out) {
  int gi, ri;
  char a[32], b[32], c[32], d[32], e[32], f[32];
  fprintf(out,
          "\nzklock-bench: libzklock %s; %d round%s of %g s windows (after "
          "%g s warm-up each),\ninterleaved: every row of a group, in "
          "order, in every round. Figures are medians over the rounds,\n"
          "[min-max] their spread; ratios are taken within each round.\n",
          zkl_version_string(), p->rounds, p->rounds == 1 ? "" : "s",
          p->ctx.secs, p->ctx.warm_s);
  if (p->hosts[0])
    fprintf(out, "Server: %s%s\n", p->hosts,
            p->hosts_given ? " (given)" : " (throwaway, fsync on)");
  if (p->hosts_nofsync[0])
    fprintf(out, "Workload 6: %s%s\n", p->hosts_nofsync,
            p->nofsync_given ? " (given)" : " (throwaway, forceSync=no)");
  for (gi = 0; gi < p->ngroups; gi++) {
    const group *g = &p->groups[gi];
    fprintf(out, "\n%d. %s (%s)\n", g->workload, g->title, g->unit);
    fprintf(out, "  %-24s %-20s %7s %7s %9s  %-22s %s\n", "", "rate [min-max]",
            "p50 ms", "p99 ms", "CPU us/op", "ratio [min-max]", "overlaps");
    for (ri = 0; ri < g->nrows; ri++) {
      const row *rw = &g->rows[ri];
      row_stats s;
      char rate[48], ratio[48];
      row_summary(p, rw, &s);
      if (s.ok)
        snprintf(rate, sizeof rate, "%s [%s-%s]", num(a, sizeof a, s.rate),
                 num(b, sizeof b, s.rate_min), num(c, sizeof c, s.rate_max));
      else
        snprintf(rate, sizeof rate, "-");
      if (ri == g->floor) {
        snprintf(ratio, sizeof ratio, "1 (floor)");
      } else if (g->floor >= 0) {
        double med, mn, mx;
        if (plan_ratio_stats(p, g, ri, g->floor, M_RATE, &med, &mn, &mx))
          snprintf(ratio, sizeof ratio, "%.2f [%.2f-%.2f]", med, mn, mx);
        else
          snprintf(ratio, sizeof ratio, "-");
      } else {
        snprintf(ratio, sizeof ratio, "-");
      }
      fprintf(out, "  %-24s %-20s %7s %7s %9s  %-22s %llu", rw->name, rate,
              num(d, sizeof d, s.p50), num(e, sizeof e, s.p99),
              num(f, sizeof f, s.cpu_us), ratio, s.overlaps);
      if (s.errors)
        fprintf(out, " (%llu errors)", s.errors);
      if (s.failed)
        fprintf(out, " (%d run%s failed: %s)", s.failed,
                s.failed == 1 ? "" : "s", s.error);
      fprintf(out, "\n");
    }
  }
  report_targets(p, out, true);
  report_targets(p, out, false);
}

static void csv_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

static void csv_num(FILE *out, double v) {
  if (isfinite(v))
    fprintf(out, ",%.6g", v);
  else
    fprintf(out, ",");
}

void report_csv(const plan *p, FILE *out) {
  int gi, ri, i, t;
  fprintf(out, "record,workload,title,contestant,n,round,rate,rate_min,"
               "rate_max,p50_ms,p99_ms,cpu_us_per_op,overlaps,errors,ratio,"
               "ratio_min,ratio_max,target,met\n");
  for (gi = 0; gi < p->ngroups; gi++) {
    const group *g = &p->groups[gi];
    for (ri = 0; ri < g->nrows; ri++) {
      const row *rw = &g->rows[ri];
      row_stats s;
      double med = NAN, mn = NAN, mx = NAN;
      for (i = 0; i < p->rounds; i++) {
        const bench_result *r = &rw->res[i];
        fprintf(out, "round,%d,", g->workload);
        csv_str(out, g->title);
        fputc(',', out);
        csv_str(out, rw->name);
        fprintf(out, ",%d,%d", g->n, i + 1);
        csv_num(out, value(r, M_RATE));
        fprintf(out, ",,");
        csv_num(out, r->ok ? r->p50_ms : NAN);
        csv_num(out, r->ok ? r->p99_ms : NAN);
        csv_num(out, cpu_per_op_us(r));
        fprintf(out, ",%llu,%llu", (unsigned long long)r->overlaps,
                (unsigned long long)r->errors);
        csv_num(out, g->floor >= 0 && ri != g->floor
                         ? plan_ratio(g, ri, g->floor, M_RATE, i)
                         : NAN);
        fprintf(out, ",,,,\n");
      }
      row_summary(p, rw, &s);
      if (g->floor >= 0 && ri != g->floor)
        plan_ratio_stats(p, g, ri, g->floor, M_RATE, &med, &mn, &mx);
      fprintf(out, "median,%d,", g->workload);
      csv_str(out, g->title);
      fputc(',', out);
      csv_str(out, rw->name);
      fprintf(out, ",%d,", g->n);
      csv_num(out, s.rate);
      csv_num(out, s.rate_min);
      csv_num(out, s.rate_max);
      csv_num(out, s.p50);
      csv_num(out, s.p99);
      csv_num(out, s.cpu_us);
      fprintf(out, ",%llu,%llu", s.overlaps, s.errors);
      csv_num(out, med);
      csv_num(out, mn);
      csv_num(out, mx);
      fprintf(out, ",,\n");
    }
  }
  for (t = 0; t < p->ntargets; t++) {
    const target *tg = &p->targets[t];
    const group *g = &p->groups[tg->group];
    double med, mn, mx;
    int k = plan_ratio_stats(p, g, tg->num, tg->den, tg->m, &med, &mn, &mx);
    bool has = isfinite(tg->threshold);
    fprintf(out, "%s,%d,", has ? "target" : "ratio", g->workload);
    csv_str(out, tg->text);
    fputc(',', out);
    csv_str(out, g->rows[tg->num].name);
    fprintf(out, ",%d,,,,,,,,,", g->n);
    csv_num(out, k ? med : NAN);
    csv_num(out, k ? mn : NAN);
    csv_num(out, k ? mx : NAN);
    if (!has) {
      fprintf(out, ",,\n");
      continue;
    }
    fprintf(out, ",%s%g,%s\n", tg->at_most ? "<=" : ">=", tg->threshold,
            k == 0 ? "" :
            (tg->at_most ? med <= tg->threshold : med >= tg->threshold)
                ? "yes" : "no");
  }
}
