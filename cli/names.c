/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.c - connect strings, and why one is refused; a lock's parent znode.
 *
 * Lock names are the library's business: zkl_name_explain() says why one is
 * refused, and options.c quotes the name itself when it echoes it.
 *
 * The connect string is checked here before the ZooKeeper client sees it:
 * the client says EINVAL and nothing more. And it is rewritten for the
 * client: a host without a port gets 2181 (the client refuses a host
 * without one), and an IPv6 address in brackets loses them (the client
 * splits "host:port" at the last ':', and would look up "[::1]" as a host
 * name). This parser is the command's own: the library hands its
 * connect string to the client as it is.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The port of a host given without one, as kazoo and Curator have it. */
#define DEFAULT_PORT "2181"

void names_parent(char *buf, size_t len, const char *name) {
  if (name[0] == '/') /* a full path: its own znode */
    snprintf(buf, len, "%s", name);
  else
    snprintf(buf, len, "%s/%s", ZKL_ROOT, name);
}

void names_prefix_parent(char *buf, size_t len, const char *prefix) {
  if (*prefix)
    names_parent(buf, len, prefix);
  else /* --list /: every relative name */
    snprintf(buf, len, "%s", ZKL_ROOT);
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

/* Appends "host:port" (or ",host:port") to out->connect; false when it
 * does not fit. */
static bool add_connect(host_list *out, const host_entry *h) {
  size_t used = strlen(out->connect);
  int n = snprintf(out->connect + used, sizeof out->connect - used, "%s%s:%s",
                   used ? "," : "", h->host, h->port);
  return n >= 0 && (size_t)n < sizeof out->connect - used;
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
    const char *comma = memchr(p, ',', (size_t)(end - p)), *host, *port;
    size_t len = (size_t)((comma ? comma : end) - p), host_len;
    char entry[300];
    host_entry *h;
    bool bracketed = false;
    if (len == 0) { /* "a:1,,b:2": the client skips empty entries too */
      p++;
      continue;
    }
    if (len >= sizeof entry)
      return "a host in it is too long";
    memcpy(entry, p, len);
    entry[len] = '\0';
    host = entry;
    if (entry[0] == '[') { /* "[v6]" or "[v6]:port" */
      const char *close = strchr(entry, ']');
      if (!close || (close[1] && close[1] != ':')) {
        snprintf(why, sizeof why,
                 "%s is neither [IPv6-address] nor [IPv6-address]:port",
                 cli_quote(entry));
        return why;
      }
      bracketed = true;
      host = entry + 1;
      host_len = (size_t)(close - host);
      port = close[1] ? close + 2 : DEFAULT_PORT;
    } else { /* "host" or "host:port", split at the last ':' as the client
              * splits it */
      const char *colon = strrchr(entry, ':');
      host_len = colon ? (size_t)(colon - entry) : len;
      port = colon ? colon + 1 : DEFAULT_PORT;
    }
    if (host_len == 0) {
      snprintf(why, sizeof why, "%s has no host before the port",
               cli_quote(entry));
      return why;
    }
    if (!all_digits(port) || strlen(port) > 5 || atoi(port) < 1 ||
        atoi(port) > 65535) {
      snprintf(why, sizeof why, "the port of %s is not a number from 1 to "
               "65535", cli_quote(entry));
      return why;
    }
    if (out->count == HOSTS_MAX) {
      snprintf(why, sizeof why, "it has more than %d hosts", HOSTS_MAX);
      return why;
    }
    h = &out->host[out->count++];
    snprintf(h->host, sizeof h->host, "%.*s", (int)host_len, host);
    snprintf(h->port, sizeof h->port, "%s", port);
    h->bracketed = bracketed;
    if (!add_connect(out, h))
      return "it is too long";
    p += len;
  }
  if (out->count == 0)
    return "it has no host";
  if (strlen(out->connect) + strlen(out->chroot) >= sizeof out->connect)
    return "it is too long";
  strcat(out->connect, out->chroot);
  return NULL;
}
