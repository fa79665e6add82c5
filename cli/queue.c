/*
 * queue.c - the queue of a lock as zkl_participants() shows it: the lines
 * of --list, the waiting status, and the holder named when zklock gives
 * up.
 *
 * The status is refreshed when the queue changes, not on a clock: a child
 * watch on /locks/NAME (set through the session's own handle) wakes the
 * main loop, which lists the participants again (a blocking call, so never
 * from the watcher) and sets the watch again. The watch is set before the
 * acquire starts; ZooKeeper answers a session's requests in order, so the
 * creation of our own node fires it.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

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

/* ISO 8601 local time with the offset, "2024-05-01T12:01:07+02:00". */
static void iso_time(char *buf, size_t len, int64_t unix_ms) {
  time_t t = (time_t)(unix_ms / 1000);
  struct tm tm;
  char zone[8];
  if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm) ||
      !strftime(zone, sizeof zone, "%z", &tm) || strlen(zone) != 5) {
    snprintf(buf, len, "-");
    return;
  }
  /* %z is "+0200"; the extended format wants "+02:00" */
  snprintf(buf + strlen(buf), len - strlen(buf), "%.3s:%s", zone, zone + 3);
}

/* ------------------------------------------------------------------ list */

int queue_list(zkl_session *s, const char *name, bool no_header) {
  zkl_participant *list;
  int count, i, rc;
  rc = zkl_participants(s, name, &list, &count);
  if (rc != ZKL_OK)
    return rc;
  if (!no_header)
    printf("POS\tNODE\tTOKEN\tHOST\tPID\tSTARTED\tINFO\tQUEUED\n");
  for (i = 0; i < count; i++) {
    const zkl_participant *p = &list[i];
    char host[256], info[ZKL_INFO_MAX + 1], pid[24], started[40], queued[40];
    cli_printable(host, sizeof host, p->host);
    cli_printable(info, sizeof info, p->info);
    if (p->pid > 0)
      snprintf(pid, sizeof pid, "%ld", p->pid);
    else
      snprintf(pid, sizeof pid, "-");
    if (p->started_ms > 0)
      iso_time(started, sizeof started, p->started_ms);
    else
      snprintf(started, sizeof started, "-");
    iso_time(queued, sizeof queued, p->queued_ms);
    printf("%d\t%s\t%" PRId64 "\t%s\t%s\t%s\t%s\t%s\n", i, p->node,
           p->token, host[0] ? host : "-", pid, started, info[0] ? info : "-",
           queued);
  }
  zkl_participants_free(list);
  return fflush(stdout) == 0 ? ZKL_OK : ZKL_ESYSTEM;
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

/* "db1:4242 since 12:01:07": the holder as the waiting line and the -n
 * message show it. */
static void describe_holder(char *buf, size_t len, const zkl_participant *h) {
  char host[256], when[40];
  cli_printable(host, sizeof host, h->host);
  since(when, sizeof when, h->queued_ms);
  if (host[0] && h->pid > 0)
    snprintf(buf, len, "%s:%ld since %s", host, h->pid, when);
  else
    snprintf(buf, len, "an unknown owner since %s", when);
}

bool queue_holder(zkl_session *s, const char *name, char *buf, size_t len) {
  zkl_participant *list;
  int count;
  if (zkl_participants(s, name, &list, &count) != ZKL_OK)
    return false;
  if (count > 0)
    describe_holder(buf, len, &list[0]);
  zkl_participants_free(list);
  return count > 0;
}

/* ---------------------------------------------------------------- status */

static struct {
  int mode; /* 0 none, 1 one line, 2 in place */
  bool done;
  zkl_session *s;
  zkl_lock *l;
  char parent[ZKL_PATH_MAX];
  char shown[1024];    /* the line on the terminal now ("" none) */
  bool plain_escapes; /* TERM=dumb: no "erase line", pad with spaces */
} st;

static void watcher(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  (void)zh;
  (void)state;
  (void)path;
  (void)ctx;
  if (type != ZOO_SESSION_EVENT) /* session events go to every watcher */
    ev_post_queue_changed();
}

static void exists_done(int rc, const struct Stat *stat, const void *data) {
  (void)stat;
  (void)data;
  if (rc == ZOK) /* the parent appeared meanwhile: list it */
    ev_post_queue_changed();
}

static void children_done(int rc, const struct String_vector *names,
                          const void *data) {
  (void)names;
  (void)data;
  /* No parent yet (a fresh name): watch for it to appear. */
  if (rc == ZNONODE)
    zoo_awexists(zkl_session_handle(st.s), st.parent, watcher, NULL,
                 exists_done, NULL);
}

void status_init(int mode, zkl_session *s, zkl_lock *l) {
  const char *term = getenv("TERM");
  st.mode = mode;
  st.s = s;
  st.l = l;
  st.plain_escapes = !term || !*term || strcmp(term, "dumb") == 0;
  names_parent(st.parent, sizeof st.parent, zkl_lock_name(l));
}

void status_arm(void) {
  if (st.mode == 0 || st.done)
    return;
  zoo_awget_children(zkl_session_handle(st.s), st.parent, watcher, NULL,
                     children_done, NULL);
}

static void show(const char *line) {
  char buf[1200];
  size_t len = strlen(line), old = strlen(st.shown), n, width = 0;
  struct winsize ws;
  if (st.mode == 1) {
    fprintf(stderr, "zklock: %s\n", line);
    st.done = true; /* one line, and no more watching */
    return;
  }
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
    width = ws.ws_col - 1; /* the last column would wrap on some terminals */
  if (width && len + 8 > width)
    len = width > 8 ? width - 8 : 0;
  if (len == old && strncmp(line, st.shown, len) == 0)
    return;
  n = (size_t)snprintf(buf, sizeof buf, "\rzklock: %.*s%s", (int)len, line,
                       st.plain_escapes ? "" : "\033[K");
  if (st.plain_escapes)
    while (old > len && n + 1 < sizeof buf) {
      buf[n++] = ' ';
      old--;
    }
  buf[n] = '\0';
  fputs(buf, stderr);
  snprintf(st.shown, sizeof st.shown, "%.*s", (int)len, line);
}

void status_refresh(void) {
  char own[ZKL_PATH_MAX], line[1024], holder[400];
  zkl_participant *list;
  int count, i, ahead = -1;
  if (st.mode == 0 || st.done)
    return;
  status_arm(); /* first, so that no change after the listing is missed */
  if (zkl_participants(st.s, zkl_lock_name(st.l), &list, &count) != ZKL_OK)
    return; /* it is only the status: the next change tries again */
  /* Only now: the server tells the watch of our node's creation before it
   * answers the create, but answers the listing after it; so once the
   * listing is back, the library knows its node if it was created. */
  if (zkl_lock_node_path(st.l, own, sizeof own) != ZKL_OK) {
    zkl_participants_free(list);
    return; /* no node yet: its creation fires the watch */
  }
  for (i = 0; i < count; i++)
    if (strcmp(list[i].node, own) == 0)
      ahead = i;
  if (ahead > 0) {
    describe_holder(holder, sizeof holder, &list[0]);
    snprintf(line, sizeof line, "waiting for %s: %d ahead, held by %s",
             st.parent, ahead, holder);
    show(line);
  }
  zkl_participants_free(list);
}

void status_clear(void) {
  size_t old = strlen(st.shown);
  st.done = true;
  if (st.mode != 2 || old == 0)
    return;
  if (st.plain_escapes) {
    fputc('\r', stderr);
    old += sizeof "zklock: " - 1;
    while (old-- > 0)
      fputc(' ', stderr);
    fputc('\r', stderr);
  } else {
    fputs("\r\033[K", stderr);
  }
  st.shown[0] = '\0';
}
