/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policy.c - who may do what through the agent (zklockd(8), CONFIGURATION).
 *
 * A rule is ACTION PREFIX WHO...: lock, list, break or write; a prefix
 * ("*": everything); and the processes it names (user:, group:, uid:,
 * gid:, or * for anyone). A call is allowed when a rule of its action has a
 * prefix of the name and names the caller. Users and groups are resolved
 * when the file is read: a reload picks up renamed accounts.
 *
 * lock, list and break match lock names, a prefix as text ("app." covers
 * "app.jobs"). write matches znode paths (a guarded write's ops, run with
 * the agent's ZooKeeper identity) by whole components: "/app/data" covers
 * itself and "/app/data/x", never "/app/database".
 *
 * No write rule covers ZKL_ROOT or below: the lock tree's nodes are the
 * agent's own, each some client's hold, and an op there could delete
 * another client's (the agent's identity may; a caller's ACL does not
 * stop it). Locks named by an absolute path keep their queues elsewhere:
 * write rules must keep clear of those (zklockd(8)).
 *
 * The default without a file: anyone may lock and list any name, as anyone
 * who can reach ZooKeeper could; only root and the agent's own user may
 * break or revoke (a break ends somebody else's hold), and only they may
 * write (the agent's identity may write where the caller's may not).
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

typedef struct who {
  enum { WHO_ANY, WHO_UID, WHO_GID } kind;
  unsigned long id;
} who;

typedef struct rule {
  int action;
  char *prefix; /* "" for every name */
  who *whos;
  int n_whos;
} rule;

struct policy {
  rule *rules;
  int n_rules;
};

static const char *const action_names[POLICY_ACTIONS] = {"lock", "list",
                                                         "break", "write"};

void policy_free(policy *p) {
  int i;
  if (!p)
    return;
  for (i = 0; i < p->n_rules; i++) {
    free(p->rules[i].prefix);
    free(p->rules[i].whos);
  }
  free(p->rules);
  free(p);
}

static rule *add_rule(policy *p, int action, const char *prefix) {
  rule *r = realloc(p->rules, (size_t)(p->n_rules + 1) * sizeof *r);
  if (!r)
    return NULL;
  p->rules = r;
  r = &p->rules[p->n_rules];
  memset(r, 0, sizeof *r);
  r->action = action;
  r->prefix = strdup(strcmp(prefix, "*") == 0 ? "" : prefix);
  if (!r->prefix)
    return NULL;
  p->n_rules++;
  return r;
}

static bool add_who(rule *r, int kind, unsigned long id) {
  who *w = realloc(r->whos, (size_t)(r->n_whos + 1) * sizeof *w);
  if (!w)
    return false;
  r->whos = w;
  w[r->n_whos].kind = kind;
  w[r->n_whos].id = id;
  r->n_whos++;
  return true;
}

static bool parse_number(const char *s, unsigned long *out) {
  char *end;
  if (!*s || *s == '-' || *s == '+')
    return false;
  errno = 0;
  *out = strtoul(s, &end, 10);
  return errno == 0 && *end == 0;
}

/* One WHO word into r; false with err set when it names nobody known. */
static bool parse_who(rule *r, const char *word, char *err, size_t errlen) {
  unsigned long id;
  if (strcmp(word, "*") == 0)
    return add_who(r, WHO_ANY, 0);
  if (strncmp(word, "uid:", 4) == 0 && parse_number(word + 4, &id))
    return add_who(r, WHO_UID, id);
  if (strncmp(word, "gid:", 4) == 0 && parse_number(word + 4, &id))
    return add_who(r, WHO_GID, id);
  if (strncmp(word, "user:", 5) == 0) {
    struct passwd *pw = getpwnam(word + 5);
    if (pw)
      return add_who(r, WHO_UID, pw->pw_uid);
    snprintf(err, errlen, "no user named '%s'", word + 5);
    return false;
  }
  if (strncmp(word, "group:", 6) == 0) {
    struct group *gr = getgrnam(word + 6);
    if (gr)
      return add_who(r, WHO_GID, gr->gr_gid);
    snprintf(err, errlen, "no group named '%s'", word + 6);
    return false;
  }
  snprintf(err, errlen,
           "'%s' is not user:NAME, group:NAME, uid:N, gid:N or *", word);
  return false;
}

static policy *builtin(uid_t agent_uid) {
  policy *p = calloc(1, sizeof *p);
  rule *r;
  if (!p)
    return NULL;
  if (!(r = add_rule(p, POLICY_LOCK, "*")) || !add_who(r, WHO_ANY, 0) ||
      !(r = add_rule(p, POLICY_LIST, "*")) || !add_who(r, WHO_ANY, 0) ||
      !(r = add_rule(p, POLICY_BREAK, "*")) || !add_who(r, WHO_UID, 0) ||
      !add_who(r, WHO_UID, agent_uid) ||
      !(r = add_rule(p, POLICY_WRITE, "*")) || !add_who(r, WHO_UID, 0) ||
      !add_who(r, WHO_UID, agent_uid)) {
    policy_free(p);
    return NULL;
  }
  return p;
}

policy *policy_load(const char *path, uid_t agent_uid, char *err,
                    size_t errlen) {
  FILE *f;
  policy *p;
  char line[1024];
  int lineno = 0;
  if (!path)
    return builtin(agent_uid);
  if (!(f = fopen(path, "r"))) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  if (!(p = calloc(1, sizeof *p))) {
    fclose(f);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  while (fgets(line, sizeof line, f)) {
    char why[256] = "";
    char *save = NULL, *word, *prefix;
    int action;
    rule *r;
    lineno++;
    if (!strchr(line, '\n') && !feof(f)) {
      snprintf(why, sizeof why, "line too long");
      goto bad;
    }
    if (!(word = strtok_r(line, " \t\r\n", &save)) || word[0] == '#')
      continue;
    for (action = 0; action < POLICY_ACTIONS; action++)
      if (strcmp(word, action_names[action]) == 0)
        break;
    if (action == POLICY_ACTIONS) {
      snprintf(why, sizeof why, "'%s' is not lock, list, break or write",
               word);
      goto bad;
    }
    if (!(prefix = strtok_r(NULL, " \t\r\n", &save))) {
      snprintf(why, sizeof why, "a rule needs a name prefix and who");
      goto bad;
    }
    if (action == POLICY_WRITE && strcmp(prefix, "*") != 0 &&
        prefix[0] != '/') {
      snprintf(why, sizeof why, "a write rule's prefix is a path: '%s'",
               prefix);
      goto bad;
    }
    if (!(r = add_rule(p, action, prefix))) {
      snprintf(why, sizeof why, "out of memory");
      goto bad;
    }
    while ((word = strtok_r(NULL, " \t\r\n", &save)))
      if (!parse_who(r, word, why, sizeof why))
        goto bad;
    if (r->n_whos == 0) {
      snprintf(why, sizeof why, "a rule needs at least one WHO");
      goto bad;
    }
    continue;
  bad:
    snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
    fclose(f);
    policy_free(p);
    return NULL;
  }
  fclose(f);
  return p;
}

/* Whether gid is among the groups of uid's account (supplementary). */
static bool in_group(uid_t uid, gid_t gid, gid_t want) {
  struct passwd pw, *found = NULL;
  char buf[4096];
  gid_t groups[256];
  int n = 256, i;
  if (gid == want)
    return true;
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || !found)
    return false;
  if (getgrouplist(pw.pw_name, gid, groups, &n) < 0)
    n = 256; /* more than room for: look at those we have */
  for (i = 0; i < n; i++)
    if (groups[i] == want)
      return true;
  return false;
}

/* Whether a rule's prefix covers name: as text for names; by whole
 * components for a path ("/a/b" covers "/a/b" and "/a/b/c", not "/a/bc";
 * a trailing '/' and "/" itself cover what is below them). */
static bool covers(const rule *r, const char *name) {
  size_t n = strlen(r->prefix);
  if (strncmp(name, r->prefix, n) != 0)
    return false;
  if (r->action != POLICY_WRITE || n == 0 || r->prefix[n - 1] == '/')
    return true;
  return name[n] == 0 || name[n] == '/';
}

bool policy_allows(const policy *p, int action, const char *name, uid_t uid,
                   gid_t gid) {
  static const size_t root_len = sizeof ZKL_ROOT - 1;
  int i, j;
  if (action == POLICY_WRITE && strncmp(name, ZKL_ROOT, root_len) == 0 &&
      (name[root_len] == 0 || name[root_len] == '/'))
    return false; /* the lock tree: see above */
  for (i = 0; i < p->n_rules; i++) {
    const rule *r = &p->rules[i];
    if (r->action != action || !covers(r, name))
      continue;
    for (j = 0; j < r->n_whos; j++) {
      const who *w = &r->whos[j];
      if (w->kind == WHO_ANY || (w->kind == WHO_UID && w->id == uid) ||
          (w->kind == WHO_GID && in_group(uid, gid, (gid_t)w->id)))
        return true;
    }
  }
  return false;
}
