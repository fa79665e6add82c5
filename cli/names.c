/*
 * names.c - lock names and connect strings, and why one is refused.
 *
 * The library decides whether a lock name is valid (zkl_name_check()); it
 * answers yes or no. A user who typed a bad name deserves the reason, so
 * names_why_bad() walks the rules of zkl_lock_new() in the order the
 * header gives them and names the first one that fails. It is a second
 * reading of the library's rules, kept in step with include/zklock.h: zklock
 * asks the library first and explains only what the library refused (a rule
 * added there and not here still refuses the name, with a generic reason).
 *
 * The connect string is checked here before the ZooKeeper client sees it,
 * for the same reason: the client says EINVAL and nothing more.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Code points the server refuses in paths (see zkl_lock_new()). */
static bool zk_refuses(unsigned cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) ||
         (cp >= 0xD800 && cp <= 0xF8FF) || cp >= 0xFFF0;
}

/* The sequence suffix as the server writes it ("%010d" of an int32): ten
 * digits, or a minus sign and nine or ten. */
static bool is_sequence_suffix(const char *s, size_t n) {
  size_t i = n > 0 && s[0] == '-' ? 1 : 0;
  if (!(n == 10 || (i == 1 && n == 11)))
    return false;
  for (; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

/* A segment the library could take for a contender's node: a marker of a
 * recipe it speaks or recognises, then a sequence suffix (zkl_lock_new()).
 * Returns the marker, or NULL. */
static const char *lock_node_marker(const char *seg, size_t n) {
  static const char *const markers[] = {"lock-",    "__lock__", "__rlock__",
                                        "__READ__", "__WRIT__", "lease-",
                                        "latch-"};
  size_t m, tail;
  for (m = 0; m < sizeof markers / sizeof markers[0]; m++) {
    size_t len = strlen(markers[m]);
    for (tail = 10; tail <= 11; tail++)
      if (n >= len + tail &&
          memcmp(seg + n - tail - len, markers[m], len) == 0 &&
          is_sequence_suffix(seg + n - tail, tail))
        return markers[m];
  }
  return NULL;
}

const char *names_why_bad(const char *name) {
  static char why[600];
  const unsigned char *p = (const unsigned char *)name;
  const char *marker;
  size_t n = strlen(name), i, seg = 0;
  if (n == 0)
    return "it is empty";
  if (n > ZKL_NAME_MAX) {
    snprintf(why, sizeof why, "it is %zu bytes long, more than %d", n,
             ZKL_NAME_MAX);
    return why;
  }
  if (p[0] == '/')
    return "it starts with '/' (names are relative to " ZKL_ROOT ")";
  if (p[n - 1] == '/')
    return "it ends with '/'";
  for (i = 0; i <= n; i++) {
    unsigned cp;
    int len;
    if (i == n || p[i] == '/') {
      size_t seg_len = i - seg;
      if (seg_len == 0) {
        snprintf(why, sizeof why, "it has an empty segment ('//' at byte %zu)",
                 i - 1);
        return why;
      }
      if (seg_len <= 2 && strncmp(name + seg, "..", seg_len) == 0) {
        snprintf(why, sizeof why, "it has a '%.*s' segment", (int)seg_len,
                 name + seg);
        return why;
      }
      if ((marker = lock_node_marker(name + seg, seg_len)) != NULL) {
        snprintf(why, sizeof why,
                 "its segment '%.*s' would pass for a contender's node (it "
                 "ends in %s and a sequence number)",
                 (int)seg_len, name + seg, marker);
        return why;
      }
      seg = i + 1;
      continue;
    }
    len = cli_utf8_decode(p + i, &cp);
    if (len == 0) {
      snprintf(why, sizeof why, "it is not valid UTF-8 (byte %zu is 0x%02x)",
               i, p[i]);
      return why;
    }
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
      char one[8];
      memcpy(one, p + i, (size_t)len);
      one[len] = '\0';
      snprintf(why, sizeof why, "it has a control character (%s at byte %zu)",
               cli_quote(one), i);
      return why;
    }
    if (zk_refuses(cp)) {
      snprintf(why, sizeof why,
               "it has U+%04X at byte %zu, a character ZooKeeper refuses in "
               "paths (U+D800 to U+F8FF, U+FFF0 and above)",
               cp, i);
      return why;
    }
    i += (size_t)len - 1;
  }
  return "the library refuses it (see zklock(1) for the rules)";
}

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
