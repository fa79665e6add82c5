/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue.c - a lock's contenders as zkl_name_list() shows them, for every
 * kind of lock: --list, --leader, --revoke, and who holds it (the waiting
 * line, the holder named when zklock gives up).
 *
 * One call lists them all, through the library's registry of lock kinds:
 * the name's own queue (a mutex, a read/write lock's readers and writers,
 * an election's candidates), then a semaphore's leases and its queue at
 * the gate. Who holds is the library's word (zkl_participant.holds): no
 * rule of a kind is written here.
 *
 * A candidate's node holds its id, not an owner description, and
 * zkl_name_list() does not return node data: the ids are read with the
 * ZooKeeper client, one getData per candidate.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

char *queue_owner_info(char *const argv[]) {
  char *line = malloc(ZKL_INFO_MAX + 1), *joined;
  size_t size = sizeof "zklock:", used;
  int i;
  for (i = 0; argv[i]; i++)
    size += strlen(argv[i]) + 1;
  joined = malloc(size);
  if (!line || !joined) {
    free(line);
    free(joined);
    return NULL;
  }
  used = (size_t)sprintf(joined, "zklock:");
  for (i = 0; argv[i]; i++)
    used += (size_t)sprintf(joined + used, " %s", argv[i]);
  cli_printable(line, ZKL_INFO_MAX + 1, joined);
  free(joined);
  return line;
}

/* "12:01:07", or with the date when not today. */
static void since(char *buf, size_t len, int64_t unix_ms) {
  time_t t = (time_t)(unix_ms / 1000), now = time(NULL);
  struct tm tm, today;
  if (!localtime_r(&t, &tm) || !localtime_r(&now, &today)) {
    snprintf(buf, len, "?");
    return;
  }
  strftime(buf, len,
           tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday
               ? "%H:%M:%S"
               : "%Y-%m-%d %H:%M:%S",
           &tm);
}

/* ------------------------------------------------------------- the view */

bool queue_read_again(zkl_session *s, int rc, int64_t *deadline) {
  if (rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT)
    return false;
  if (*deadline == 0)
    *deadline = cli_now_ms() + zoo_recv_timeout(zkl_session_handle(s));
  return cli_now_ms() < *deadline;
}

/* A candidate's id: its node's data. NULL when it cannot be read. */
static char *read_id(zkl_session *s, const char *node) {
  char data[ZKL_ID_MAX + 1], *id;
  int64_t deadline = 0;
  int len, rc;
  if (!zkl_session_handle(s))
    return NULL; /* through the agent: the listing's own info stands */
  do {
    len = ZKL_ID_MAX;
    rc = zoo_get(zkl_session_handle(s), node, 0, data, &len, NULL);
  } while (queue_read_again(s, rc, &deadline));
  if (rc != ZOK || len < 0)
    return NULL;
  data[len] = '\0';
  id = malloc((size_t)len + 1);
  if (id)
    cli_printable(id, (size_t)len + 1, data);
  return id;
}

void queue_view_sessions(zkl_session *s, queue_view *v) {
  int i;
  if (!zkl_session_handle(s))
    return; /* through the agent: sessions unknown (0), as for a node gone */
  for (i = 0; i < v->count; i++) {
    struct Stat st;
    int64_t deadline = 0;
    int rc;
    do
      rc = zoo_exists(zkl_session_handle(s), v->e[i].p->node, 0, &st);
    while (queue_read_again(s, rc, &deadline));
    v->e[i].session = rc == ZOK ? st.ephemeralOwner : 0;
  }
}

void queue_view_free(queue_view *v) {
  int i;
  for (i = 0; i < v->count; i++)
    free(v->e[i].id);
  free(v->e);
  if (v->list)
    zkl_name_list_free(v->list);
  memset(v, 0, sizeof *v);
}

int queue_view_get(zkl_session *s, const char *name, queue_view *v) {
  int i, rc;
  memset(v, 0, sizeof *v);
  rc = zkl_name_list(s, name, &v->list, &v->count);
  if (rc != ZKL_OK)
    return rc;
  v->e = calloc((size_t)(v->count ? v->count : 1), sizeof *v->e);
  if (!v->e) {
    queue_view_free(v);
    return ZKL_ENOMEM;
  }
  for (i = 0; i < v->count; i++) {
    queue_entry *e = &v->e[i];
    e->p = &v->list[i];
    if (strcmp(e->p->kind, "latch") == 0)
      e->id = read_id(s, e->p->node);
    v->holders += e->p->holds;
  }
  return ZKL_OK;
}

void queue_describe(const queue_entry *e, bool with_since, char *buf,
                    size_t len) {
  char host[256], when[40];
  size_t n;
  cli_printable(host, sizeof host, e->p->host);
  if (e->id)
    n = (size_t)snprintf(buf, len, "%s", cli_quote(e->id));
  else if (host[0] && e->p->pid > 0)
    n = (size_t)snprintf(buf, len, "%s:%ld", host, e->p->pid);
  else
    n = (size_t)snprintf(buf, len, "an unknown owner");
  if (with_since && n < len) {
    since(when, sizeof when, e->p->queued_ms);
    snprintf(buf + n, len - n, " since %s", when);
  }
}

bool queue_describe_holders(const queue_view *v, char *buf, size_t len) {
  int i;
  size_t n;
  for (i = 0; i < v->count && !v->e[i].p->holds; i++)
    ;
  if (i == v->count)
    return false;
  queue_describe(&v->e[i], true, buf, len);
  n = strlen(buf);
  if (v->holders > 1 && n < len)
    snprintf(buf + n, len - n, " and %d more", v->holders - 1);
  return true;
}

bool queue_holder(zkl_session *s, const char *name, char *buf, size_t len) {
  queue_view v;
  bool found;
  if (queue_view_get(s, name, &v) != ZKL_OK)
    return false;
  found = queue_describe_holders(&v, buf, len);
  queue_view_free(&v);
  return found;
}

int queue_first_held(zkl_session *s, char *const *names, int count,
                     char *buf, size_t len) {
  int i;
  for (i = 0; i < count; i++)
    if (queue_holder(s, names[i], buf, len))
      return i;
  return -1;
}

int queue_other_limit(zkl_session *s, const char *name, int mine) {
  zkl_participant *list;
  int count, i, theirs = 0;
  if (zkl_name_list(s, name, &list, &count) != ZKL_OK)
    return 0;
  for (i = 0; i < count && !theirs; i++)
    if (list[i].limit > 0 &&
        list[i].limit != mine)
      theirs = list[i].limit;
  zkl_name_list_free(list);
  return theirs;
}

bool queue_describe_node(zkl_session *s, const char *name, const char *child,
                         char *buf, size_t len) {
  zkl_participant *list;
  int count, i;
  bool found = false;
  /* Disconnected, the listing would wait for the reconnect or the
   * client's verdict: not worth holding the main loop up for. */
  if (zoo_state(zkl_session_handle(s)) != ZOO_CONNECTED_STATE ||
      zkl_name_list(s, name, &list, &count) != ZKL_OK)
    return false;
  for (i = 0; i < count && !found; i++) {
    const char *slash = strrchr(list[i].node, '/');
    if (slash && strcmp(slash + 1, child) == 0) {
      queue_entry e;
      memset(&e, 0, sizeof e);
      e.p = &list[i];
      if (strcmp(e.p->kind, "latch") == 0)
        e.id = read_id(s, list[i].node);
      queue_describe(&e, false, buf, len);
      free(e.id);
      found = true;
    }
  }
  zkl_name_list_free(list);
  return found;
}

/* ------------------------------------------------------------ questions */

int queue_list(zkl_session *s, const char *name, bool no_header) {
  queue_view v;
  int i, rc;
  rc = queue_view_get(s, name, &v);
  if (rc != ZKL_OK)
    return rc;
  if (!no_header)
    printf("POS\tNODE\tTOKEN\tHOST\tPID\tSTARTED\tINFO\tQUEUED\tKIND\n");
  for (i = 0; i < v.count; i++) {
    const zkl_participant *p = v.e[i].p;
    char host[256], info[ZKL_ID_MAX + 1], pid[24], started[40], queued[40];
    cli_printable(host, sizeof host, p->host);
    cli_printable(info, sizeof info, v.e[i].id ? v.e[i].id : p->info);
    if (p->pid > 0)
      snprintf(pid, sizeof pid, "%ld", p->pid);
    else
      snprintf(pid, sizeof pid, "-");
    if (p->started_ms > 0)
      cli_iso_time(started, sizeof started, p->started_ms, false);
    else
      snprintf(started, sizeof started, "-");
    cli_iso_time(queued, sizeof queued, p->queued_ms, false);
    printf("%d\t%s\t%" PRId64 "\t%s\t%s\t%s\t%s\t%s\t%s\n", i, p->node,
           p->token, host[0] ? host : "-", pid, started, info[0] ? info : "-",
           queued, p->kind);
  }
  queue_view_free(&v);
  return fflush(stdout) == 0 ? ZKL_OK : ZKL_ESYSTEM;
}

int queue_leader(zkl_session *s, const char *name) {
  char id[ZKL_ID_MAX + 1], shown[ZKL_ID_MAX + 1];
  int64_t token;
  int rc = zkl_name_get_leader(s, name, id, sizeof id, &token);
  if (rc != ZKL_OK)
    return rc;
  cli_printable(shown, sizeof shown, id);
  printf("%s\t%" PRId64 "\n", shown, token);
  return fflush(stdout) == 0 ? ZKL_OK : ZKL_ESYSTEM;
}

int queue_revoke(zkl_session *s, const char *name) {
  queue_view v;
  int i, rc, asked = 0;
  rc = queue_view_get(s, name, &v);
  if (rc != ZKL_OK)
    return rc;
  /* Each holder by its node, so that exactly those asked are printed. */
  for (i = 0; i < v.count && rc == ZKL_OK; i++) {
    const char *child = strrchr(v.e[i].p->node, '/');
    if (!v.e[i].p->holds || !child)
      continue;
    rc = zkl_name_revoke(s, name, child + 1);
    if (rc == ZKL_OK) {
      printf("%s\n", v.e[i].p->node);
      asked++;
    } else if (rc == ZKL_ENOTHELD) {
      rc = ZKL_OK; /* it let go meanwhile: nobody to ask there */
    }
  }
  queue_view_free(&v);
  if (fflush(stdout) != 0 && rc == ZKL_OK)
    rc = ZKL_ESYSTEM;
  return rc == ZKL_OK && asked == 0 ? ZKL_ENOTHELD : rc;
}
