/* SPDX-License-Identifier: Apache-2.0 */
/*
 * format.c - how --list PREFIX/ prints what overview.c found: a
 * tab-separated table (one lock a line), one JSON document, or
 * Prometheus' text exposition format 0.0.4, which node_exporter's textfile
 * collector reads as it is. Strings from the nodes are the lock's users'
 * text: escaped for each format (JSON: RFC 8259, invalid UTF-8 as
 * U+FFFD; Prometheus label values: backslash, double quote, newline).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static double seconds(int64_t ms) { return (double)ms / 1000.0; }

static int64_t since(int64_t now, int64_t then) {
  return now > then ? now - then : 0;
}

/* ----------------------------------------------------------------- table */

static void table(FILE *f, const overview *ov, bool header) {
  int i, j;
  if (header)
    fprintf(f, "NAME\tKIND\tHOLDERS\tWAITERS\tHELD_S\tWAITED_S\tTOKEN\tHOLDER"
               "\tINFO\n");
  for (i = 0; i < ov->count; i++) {
    const ov_lock *k = &ov->locks[i];
    const queue_entry *first = NULL;
    char name[ZKL_NAME_MAX + 1], holder[600], info[ZKL_INFO_MAX + 1],
        held[32], waited[32], token[24];
    for (j = 0; j < k->view.count && !first; j++)
      if (k->view.e[j].p->holds)
        first = &k->view.e[j];
    cli_printable(name, sizeof name, k->name);
    if (first) {
      size_t n;
      queue_describe(first, false, holder, sizeof holder);
      n = strlen(holder);
      if (k->holders > 1)
        snprintf(holder + n, sizeof holder - n, " +%d", k->holders - 1);
      cli_printable(info, sizeof info, first->id ? "" : first->p->info);
      snprintf(held, sizeof held, "%.1f", seconds(k->held_ms));
      snprintf(token, sizeof token, "%" PRId64, k->token);
    } else {
      snprintf(holder, sizeof holder, "-");
      info[0] = '\0';
      snprintf(held, sizeof held, "-");
      snprintf(token, sizeof token, "-");
    }
    if (k->waiters > 0)
      snprintf(waited, sizeof waited, "%.1f", seconds(k->wait_ms));
    else
      snprintf(waited, sizeof waited, "-");
    fprintf(f, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", name, k->kind,
            k->holders, k->waiters, held, waited, token, holder,
            info[0] ? info : "-");
  }
}

/* ------------------------------------------------------------------ JSON */

/* The length of the valid UTF-8 character at s, or 0. */
static int utf8_len(const unsigned char *s) {
  int n, i;
  unsigned cp;
  if (s[0] < 0x80)
    return 1;
  if (s[0] >= 0xc2 && s[0] <= 0xdf)
    n = 2, cp = s[0] & 0x1f;
  else if (s[0] >= 0xe0 && s[0] <= 0xef)
    n = 3, cp = s[0] & 0x0f;
  else if (s[0] >= 0xf0 && s[0] <= 0xf4)
    n = 4, cp = s[0] & 0x07;
  else
    return 0;
  for (i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return n;
}

static void json_string(FILE *f, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', f);
  while (*s) {
    int n = utf8_len(s);
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if (*s == '\n')
      fputs("\\n", f);
    else if (*s == '\t')
      fputs("\\t", f);
    else if (*s < 0x20 || *s == 0x7f)
      fprintf(f, "\\u%04x", *s);
    else if (n == 0)
      fputs("\\ufffd", f);
    else
      fwrite(s, 1, (size_t)n, f);
    s += n ? n : 1;
  }
  fputc('"', f);
}

/* A string, or null when it is empty (unknown: the library gives "" for
 * what a node does not say). */
static void json_string_or_null(FILE *f, const char *s) {
  if (s && *s)
    json_string(f, s);
  else
    fputs("null", f);
}

/* Seconds with three decimals, or null when unknown (known false). */
static void json_seconds(FILE *f, bool known, int64_t ms) {
  if (known)
    fprintf(f, "%.3f", seconds(ms));
  else
    fputs("null", f);
}

static void json_pid(FILE *f, long pid) {
  if (pid > 0)
    fprintf(f, "%ld", pid);
  else
    fputs("null", f);
}

/* What a contender's node says of its owner, the fields both documents
 * share: "host", "pid", "info" (the owner description) and "id" (a
 * candidate's: its node holds only that, so it has no host, pid or info). */
static void json_owner(FILE *f, const queue_entry *e) {
  fputs("\"host\":", f);
  json_string_or_null(f, e->p->host);
  fputs(",\"pid\":", f);
  json_pid(f, e->p->pid);
  fputs(",\"info\":", f);
  json_string_or_null(f, e->id ? "" : e->p->info);
  fputs(",\"id\":", f);
  if (e->id)
    json_string(f, e->id);
  else
    fputs("null", f);
}

/* The overview's document, version 1 (zklock(1), JSON). */
static void json(FILE *f, const overview *ov, const options *o) {
  int i, j;
  fprintf(f, "{\"version\":%d,\"prefix\":", FORMAT_JSON_VERSION);
  json_string(f, o->prefix ? o->prefix : "");
  fputs(",\"locks\":[", f);
  for (i = 0; i < ov->count; i++) {
    const ov_lock *k = &ov->locks[i];
    bool comma = false;
    fprintf(f, "%s\n{\"name\":", i ? "," : "");
    json_string(f, k->name);
    fprintf(f, ",\"kind\":\"%s\",\"holders\":[", k->kind);
    for (j = 0; j < k->view.count; j++) {
      const queue_entry *e = &k->view.e[j];
      if (!e->p->holds)
        continue;
      fprintf(f, "%s{\"node\":", comma ? "," : "");
      json_string(f, e->p->node);
      fprintf(f, ",\"token\":%" PRId64 ",", e->p->token);
      json_owner(f, e);
      fputs(",\"held_s\":", f);
      json_seconds(f, true, since(ov->now_ms, e->p->queued_ms));
      fputc('}', f);
      comma = true;
    }
    fprintf(f, "],\"waiters\":%d,\"held_s\":", k->waiters);
    json_seconds(f, k->holders > 0, k->held_ms);
    fputs(",\"oldest_wait_s\":", f);
    json_seconds(f, k->waiters > 0, k->wait_ms);
    fputs(",\"token\":", f);
    if (k->holders > 0)
      fprintf(f, "%" PRId64, k->token);
    else
      fputs("null", f);
    fputc('}', f);
  }
  fprintf(f, "%s],\"truncated\":%s}\n", ov->count ? "\n" : "",
          ov->truncated ? "true" : "false");
}

void format_contenders_json(FILE *f, const char *name, const queue_view *v,
                            int64_t now_ms) {
  const char *kinds[8];
  int nkinds = 0, i, j;
  fprintf(f, "{\"version\":%d,\"name\":", FORMAT_JSON_VERSION);
  json_string(f, name);
  /* every kind of lock its contenders take, in queue order, each once
   * (mutex and read/write contenders may share a name) */
  for (i = 0; i < v->count; i++) {
    for (j = 0; j < nkinds && strcmp(kinds[j], v->e[i].p->lock) != 0; j++)
      ;
    if (j == nkinds && nkinds < (int)(sizeof kinds / sizeof kinds[0]))
      kinds[nkinds++] = v->e[i].p->lock;
  }
  fputs(",\"kinds\":[", f);
  for (i = 0; i < nkinds; i++) {
    fputs(i ? "," : "", f);
    json_string(f, kinds[i]);
  }
  fputs("],\"contenders\":[", f);
  for (i = 0; i < v->count; i++) {
    const queue_entry *e = &v->e[i];
    const zkl_participant *p = e->p;
    char when[40];
    fprintf(f, "%s\n{\"position\":%d,\"node\":", i ? "," : "", i);
    json_string(f, p->node);
    fprintf(f, ",\"kind\":\"%s\",\"lock\":\"%s\",\"role\":\"%s\","
               "\"token\":%" PRId64 ",\"session\":",
            p->kind, p->lock, p->holds ? "holder" : "waiter", p->token);
    if (e->session) {
      char sid[24];
      snprintf(sid, sizeof sid, "0x%" PRIx64, (uint64_t)e->session);
      json_string(f, sid);
    } else {
      fputs("null", f);
    }
    fputc(',', f);
    json_owner(f, e);
    fputs(",\"started\":", f);
    if (p->started_ms > 0) {
      cli_iso_time(when, sizeof when, p->started_ms, true);
      json_string(f, when);
    } else {
      fputs("null", f);
    }
    cli_iso_time(when, sizeof when, p->queued_ms, true);
    fputs(",\"queued\":", f);
    json_string(f, when);
    fputs(",\"held_s\":", f);
    json_seconds(f, p->holds, since(now_ms, p->queued_ms));
    fputs(",\"waited_s\":", f);
    json_seconds(f, !p->holds, since(now_ms, p->queued_ms));
    fputc('}', f);
  }
  fprintf(f, "%s]}\n", v->count ? "\n" : "");
}

/* ------------------------------------------------------------ Prometheus */

static void label_value(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      fprintf(f, "\\%c", *s);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
}

enum { M_HOLDERS, M_WAITERS, M_WAIT, M_HELD, M_TOKEN, M_COUNT };

static const struct {
  const char *name, *help;
} metrics[M_COUNT] = {
    {"zklock_holders", "Contenders holding the lock."},
    {"zklock_waiters", "Contenders waiting for the lock."},
    {"zklock_longest_wait_seconds",
     "How long the oldest waiter has waited (its node's age)."},
    {"zklock_held_seconds",
     "How long the oldest holder has held, counted from its node's "
     "creation (its wait included)."},
    {"zklock_token", "The newest holder's fencing token (czxid), 0 if none."},
};

/* The labels every series of the file carries after its own: what was
 * listed ("list": the --list argument, "deploy/" or "/") and where
 * ("servers": the connect string), so that two files, of two prefixes or
 * two ensembles, never have a series in common (node_exporter's textfile
 * collector fails the whole scrape on a duplicate); then each --label. */
static void file_labels(FILE *f, const options *o, const char *servers) {
  int i;
  fputs("list=\"", f);
  if (o->prefix) {
    label_value(f, o->prefix);
    fputs("/", f);
  } else {
    label_value(f, o->target);
  }
  fputs("\",servers=\"", f);
  label_value(f, servers && *servers ? servers : o->parsed_hosts.connect);
  fputc('"', f);
  for (i = 0; i < o->n_labels; i++) {
    const char *eq = strchr(o->label[i], '=');
    fprintf(f, ",%.*s=\"", (int)(eq - o->label[i]), o->label[i]);
    label_value(f, eq + 1);
    fputc('"', f);
  }
}

/* zklock_up: whether this listing reached ZooKeeper (through the agent:
 * the agent answered it). */
static void up_series(FILE *f, const options *o, const char *servers,
                      bool up) {
  fprintf(f, "# HELP zklock_up 1 when this listing reached ZooKeeper, 0 "
             "otherwise.\n# TYPE zklock_up gauge\nzklock_up{");
  file_labels(f, o, servers);
  fprintf(f, "} %d\n", up ? 1 : 0);
}

static void prometheus(FILE *f, const overview *ov, const options *o) {
  int m, i;
  for (m = 0; m < M_COUNT; m++) {
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", metrics[m].name,
            metrics[m].help, metrics[m].name);
    for (i = 0; i < ov->count; i++) {
      const ov_lock *k = &ov->locks[i];
      fprintf(f, "%s{lock=\"", metrics[m].name);
      label_value(f, k->name);
      fprintf(f, "\",kind=\"%s\",", k->kind);
      file_labels(f, o, ov->servers);
      fputs("} ", f);
      switch (m) {
      case M_HOLDERS:
        fprintf(f, "%d\n", k->holders);
        break;
      case M_WAITERS:
        fprintf(f, "%d\n", k->waiters);
        break;
      case M_WAIT:
        fprintf(f, "%.3f\n", seconds(k->wait_ms));
        break;
      case M_HELD:
        fprintf(f, "%.3f\n", seconds(k->held_ms));
        break;
      default:
        fprintf(f, "%" PRId64 "\n", k->token);
      }
    }
  }
  fprintf(f, "# HELP zklock_list_truncated 1 when the listing stopped at its "
             "bound.\n# TYPE zklock_list_truncated gauge\n"
             "zklock_list_truncated{");
  file_labels(f, o, ov->servers);
  fprintf(f, "} %d\n", ov->truncated ? 1 : 0);
  up_series(f, o, ov->servers, true);
  fprintf(f, "# HELP zklock_last_success_timestamp_seconds When this "
             "listing reached ZooKeeper (Unix time).\n"
             "# TYPE zklock_last_success_timestamp_seconds gauge\n"
             "zklock_last_success_timestamp_seconds{");
  file_labels(f, o, ov->servers);
  fprintf(f, "} %.3f\n", seconds(ov->now_ms));
}

static const options *armed_o;

/* At exit, with no document printed: the listing did not reach
 * ZooKeeper. */
static void print_down(void) {
  if (!armed_o)
    return;
  up_series(stdout, armed_o, NULL, false);
  fflush(stdout);
}

void format_prometheus_arm(const options *o) {
  armed_o = o;
  atexit(print_down);
}

void format_print(FILE *f, const overview *ov, const options *o) {
  switch (o->format) {
  case FORMAT_JSON:
    json(f, ov, o);
    break;
  case FORMAT_PROMETHEUS:
    armed_o = NULL; /* printed: nothing more at exit */
    prometheus(f, ov, o);
    break;
  default:
    table(f, ov, !o->no_header);
  }
}
