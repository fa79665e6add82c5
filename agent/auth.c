/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth.c - the agent's ZooKeeper identity (zklockd(8), --auth-file): the
 * credentials its session shows, read from a file that only the agent can
 * read, and added to every session it opens (the first, and each one after
 * an expiry: ZooKeeper forgets a session's credentials with the session;
 * the C client shows them again itself on a reconnection within one).
 *
 * Why a file: a secret on the command line is in every user's ps, and one
 * in the environment is in /proc/PID/environ for the agent's own user and
 * root and in everything the agent might start. Why the checks: the policy
 * protects locks only from users who cannot show the agent's credentials
 * themselves (docs/agent.md, "Who may do what"), so a file that others can
 * read, or that another user owns and could rewrite, is refused rather
 * than used. Under systemd, LoadCredential= hands the file to the dynamic
 * user with mode 0400 (zklockd(8), EXAMPLES).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

#define AUTH_FILE_MAX 4096

void auth_free(agent_auth *a) {
  if (!a)
    return;
  if (a->credentials) {
    /* not left in freed memory for the next allocation to show */
    memset(a->credentials, 0, (size_t)a->len);
    free(a->credentials);
  }
  free(a->scheme);
  free(a);
}

/* The one line of text[0..n) that is neither blank nor a comment, cut at
 * its end; NULL with err set when there is none or more than one. */
static char *the_line(char *text, char *err, size_t errlen) {
  char *line, *save = NULL, *found = NULL;
  for (line = strtok_r(text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] == '\r')
      line[--len] = '\0';
    if (len == 0 || line[0] == '#')
      continue;
    if (found) {
      snprintf(err, errlen, "more than one line of credentials");
      return NULL;
    }
    found = line;
  }
  if (!found)
    snprintf(err, errlen, "no credentials (a line SCHEME:CREDENTIALS, "
                          "e.g. digest:USER:PASSWORD)");
  return found;
}

agent_auth *auth_load(const char *path, char *err, size_t errlen) {
  char text[AUTH_FILE_MAX + 1], *line, *colon;
  agent_auth *a = NULL;
  struct stat st;
  ssize_t n;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  size_t got = 0;
  if (fd < 0) {
    snprintf(err, errlen, "--auth-file %s: %s", path, strerror(errno));
    return NULL;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "--auth-file %s: not a regular file", path);
    goto fail;
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    snprintf(err, errlen,
             "--auth-file %s: mode %04o: users other than its owner may "
             "read or change it (chmod 600 it)",
             path, (unsigned)(st.st_mode & 07777));
    goto fail;
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    snprintf(err, errlen,
             "--auth-file %s: owned by uid %ld, neither the agent's (%ld) "
             "nor root's: its owner could show or change the credentials",
             path, (long)st.st_uid, (long)geteuid());
    goto fail;
  }
  while (got < AUTH_FILE_MAX &&
         (n = read(fd, text + got, AUTH_FILE_MAX - got)) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      snprintf(err, errlen, "--auth-file %s: %s", path, strerror(errno));
      goto fail;
    }
    got += (size_t)n;
  }
  text[got] = '\0';
  if (got == AUTH_FILE_MAX || strlen(text) != got) {
    snprintf(err, errlen, "--auth-file %s: %s", path,
             got == AUTH_FILE_MAX ? "longer than 4 KiB" : "a NUL in it");
    goto fail;
  }
  if (!(line = the_line(text, err, errlen))) {
    char why[256];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "--auth-file %s: %s", path, why);
    goto fail;
  }
  if (!(colon = strchr(line, ':')) || colon == line || !colon[1]) {
    snprintf(err, errlen,
             "--auth-file %s: not SCHEME:CREDENTIALS (e.g. "
             "digest:USER:PASSWORD)",
             path);
    goto fail;
  }
  *colon = '\0';
  if (!(a = calloc(1, sizeof *a)) || !(a->scheme = strdup(line)) ||
      !(a->credentials = strdup(colon + 1))) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  a->len = (int)strlen(a->credentials);
  memset(text, 0, sizeof text);
  close(fd);
  return a;
fail:
  memset(text, 0, sizeof text);
  auth_free(a);
  close(fd);
  return NULL;
}

int auth_open(zkl_session **out, const zkl_session_options *o,
              const agent_auth *a) {
  zkl_session *s;
  int rc = zkl_session_open(&s, o);
  if (rc != ZKL_OK || !a) {
    if (rc == ZKL_OK)
      *out = s;
    return rc;
  }
  /* Before the session serves anything: no node is created without them. */
  if ((rc = zkl_session_add_auth(s, a->scheme, a->credentials, a->len)) !=
      ZKL_OK) {
    zkl_session_close(s, NULL);
    return rc;
  }
  *out = s;
  return ZKL_OK;
}
