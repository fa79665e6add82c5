/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.c - connect strings, and why one is refused; a lock's parent znode.
 *
 * Lock names are the library's business: zkl_name_explain() says why one is
 * refused, and options.c quotes the name itself when it echoes it.
 *
 * The connect string is checked here before the ZooKeeper client sees it:
 * the client says EINVAL and nothing more.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void names_parent(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/%s", ZKL_ROOT, name);
}

/* ------------------------------------------------------- connect strings */

static bool all_digits(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return false;
  return true;
}

const char *names_parse_hosts(const char *hosts, host_list *out) {
  static char why[800];
  const char *slash = strchr(hosts, '/'), *p = hosts, *end;
  const unsigned char *c;
  memset(out, 0, sizeof *out);
  for (c = (const unsigned char *)hosts; *c; c++)
    if (*c <= 0x20 || *c == 0x7f)
      return *c == ' ' ? "it has a space" : "it has a control character";
  end = slash ? slash : hosts + strlen(hosts);
  if (slash) {
    if (strlen(slash) >= sizeof out->chroot)
      return "its chroot is too long";
    strcpy(out->chroot, slash);
  }
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p)), *colon;
    size_t len = (size_t)((comma ? comma : end) - p);
    char entry[300];
    host_entry *h;
    if (len == 0) { /* "a:1,,b:2": the client skips empty entries too */
      p++;
      continue;
    }
    if (len >= sizeof entry)
      return "a host in it is too long";
    memcpy(entry, p, len);
    entry[len] = '\0';
    colon = strrchr(entry, ':');
    if (!colon) {
      snprintf(why, sizeof why, "%s has no port (host:port expected)",
               cli_quote(entry));
      return why;
    }
    if (colon == entry) {
      snprintf(why, sizeof why, "%s has no host before the port",
               cli_quote(entry));
      return why;
    }
    if (!all_digits(colon + 1) || strlen(colon + 1) > 5 ||
        atoi(colon + 1) < 1 || atoi(colon + 1) > 65535) {
      snprintf(why, sizeof why, "the port of %s is not a number from 1 to "
               "65535", cli_quote(entry));
      return why;
    }
    if (out->count == HOSTS_MAX) {
      snprintf(why, sizeof why, "it has more than %d hosts", HOSTS_MAX);
      return why;
    }
    h = &out->host[out->count++];
    snprintf(h->host, sizeof h->host, "%.*s", (int)(colon - entry), entry);
    snprintf(h->port, sizeof h->port, "%s", colon + 1);
    p += len;
  }
  if (out->count == 0)
    return "it has no host:port";
  return NULL;
}
