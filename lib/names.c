/* SPDX-License-Identifier: Apache-2.0 */
/* names.c - lock names, node names and sequence numbers. Pure logic apart
 * from the random bytes of the uuid; unit-tested on its own. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/* Decodes one UTF-8 sequence at s (n bytes left). Returns its length and
 * sets *cp, or 0 for an invalid, overlong or truncated sequence. */
static int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
  uint32_t c = s[0];
  int len, i;
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    c &= 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    c &= 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    c &= 0x07;
  } else {
    return 0;
  }
  if (n < (size_t)len)
    return 0;
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    c = (c << 6) | (s[i] & 0x3F);
  }
  if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)))
    return 0;
  *cp = c;
  return len;
}

/* The server validates paths as Java strings and refuses these code points
 * (PathUtils.validatePath). Anything beyond the BMP becomes a surrogate pair
 * in Java, which falls in the refused range too. */
static bool zk_refuses(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) ||
         (cp >= 0xD800 && cp <= 0xF8FF) || cp >= 0xFFF0;
}

/* Checks name against the rules of zkl_lock_new(); when it breaks one and
 * why is not NULL, says which in why (len bytes). */
static int check_name(const char *name, char *why, size_t len) {
  const unsigned char *p = (const unsigned char *)name;
  size_t n, i, seg_start, first;
#define REFUSE(...)                                                           \
  do {                                                                        \
    if (why)                                                                  \
      snprintf(why, len, __VA_ARGS__);                                        \
    return ZKL_EINVAL;                                                        \
  } while (0)
  if (!name)
    REFUSE("no name (NULL)");
  n = strlen(name);
  if (n == 0)
    REFUSE("it is empty");
  if (n > ZKL_NAME_MAX)
    REFUSE("it is %zu bytes long, more than %d", n, ZKL_NAME_MAX);
  /* A full path names its own znode: it is checked as a name whose segments
   * start after its '/', under the tree's root rather than ZKL_ROOT. */
  first = p[0] == '/' ? 1 : 0;
  if (first && n == 1)
    REFUSE("it is '/', the root of the tree");
  if (first && zkl__path_is_under(name, "/zookeeper"))
    REFUSE("it is under /zookeeper, which the server keeps for itself");
  if (first && strcmp(name, ZKL_ROOT) == 0)
    REFUSE("it is %s, the parent of every relative name", ZKL_ROOT);
  if (p[n - 1] == '/')
    REFUSE("it ends with '/'");
  for (i = seg_start = first; i <= n; i++) {
    if (i == n || p[i] == '/') {
      size_t seg = i - seg_start;
      if (seg == 0)
        REFUSE("it has an empty segment ('//' at byte %zu)", i - 1);
      if ((seg == 1 && p[seg_start] == '.') ||
          (seg == 2 && p[seg_start] == '.' && p[seg_start + 1] == '.'))
        REFUSE("it has a '%.*s' segment", (int)seg, name + seg_start);
      /* Under the parent of the lock named by the segments before it, this
       * segment would be read as a contender's node. */
      if (zkl__is_sequence_node(name + seg_start, seg))
        REFUSE("its segment at byte %zu would pass for a contender's node "
               "(a recipe's marker and a sequence number)",
               seg_start);
      /* Under the lock named by the segments before it, this segment is
       * a semaphore's place (kinds.c): a lock there would be its gate, or
       * a node its leases count. */
      if (seg_start > first) {
        int place;
        for (place = 0; place < ZKL_PLACE_COUNT; place++) {
          const char *dir = zkl__place_dir((zkl_place)place);
          if (dir && strlen(dir) == seg &&
              memcmp(name + seg_start, dir, seg) == 0)
            REFUSE("its segment '%s' at byte %zu is a %s under the lock "
                   "before it",
                   dir, seg_start, zkl__places[place].word);
        }
      }
      seg_start = i + 1;
      continue;
    }
    uint32_t cp;
    int clen = utf8_decode(p + i, n - i, &cp);
    if (clen == 0)
      REFUSE("it is not valid UTF-8 (byte %zu is 0x%02x)", i, p[i]);
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
      REFUSE("it has a control character (U+%04X at byte %zu)", (unsigned)cp,
             i);
    if (zk_refuses(cp))
      REFUSE("it has U+%04X at byte %zu, a character ZooKeeper refuses in "
             "paths (U+D800 to U+F8FF, U+FFF0 and above)",
             (unsigned)cp, i);
    i += (size_t)clen - 1;
  }
#undef REFUSE
  return ZKL_OK;
}

int zkl__validate_name(const char *name) { return check_name(name, NULL, 0); }

bool zkl__path_is_under(const char *path, const char *top) {
  size_t n = strlen(top);
  return strncmp(path, top, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void zkl__name_path(char *buf, size_t len, const char *name,
                    const char *dir) {
  snprintf(buf, len, "%s%s%s%s%s", name[0] == '/' ? "" : ZKL_ROOT,
           name[0] == '/' ? "" : "/", name, dir ? "/" : "", dir ? dir : "");
}

size_t zkl__first_parent(const char *queue) {
  /* ZKL_ROOT is everyone's: the first parent a lock makes, always open */
  return zkl__path_is_under(queue, ZKL_ROOT) ? strlen(ZKL_ROOT) : 1;
}

int zkl_name_explain(const char *name, char *why, size_t len) {
  int rc;
  if (!why || len == 0)
    return ZKL_EINVAL;
  why[0] = '\0';
  rc = check_name(name, why, len);
  return rc;
}

int zkl_name_check(const char *name) { return zkl__validate_name(name); }

static int random_bytes(unsigned char *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = getrandom(buf + got, len - got, 0);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return ZKL_ESYSTEM;
    }
    got += (size_t)r;
  }
  return ZKL_OK;
}

int zkl__make_prefix_with(char *buf, const char *marker) {
  /* 64 random bits, as 16 hex digits: no dash (Curator finds the marker
   * after the id), no letter of a marker, and 20 bytes shorter than a
   * uuid in every listing of a long queue. Unique enough: a prefix is only
   * ever looked for among the nodes of one queue. */
  static const char hex[] = "0123456789abcdef";
  unsigned char u[ZKL_ID_HEX / 2];
  char *p = buf;
  size_t i;
  if (random_bytes(u, sizeof u) != ZKL_OK)
    return ZKL_ESYSTEM;
  memcpy(p, "_c_", 3);
  p += 3;
  for (i = 0; i < sizeof u; i++) {
    *p++ = hex[u[i] >> 4];
    *p++ = hex[u[i] & 0x0F];
  }
  *p++ = '-';
  snprintf(p, ZKL_PREFIX_MAX - (size_t)(p - buf), "%s", marker);
  return ZKL_OK;
}

int zkl__make_prefix(char *buf) {
  char tmp[ZKL_PREFIX_MAX];
  int rc = zkl__make_prefix_with(tmp, zkl__node_kinds[0].marker);
  if (rc == ZKL_OK)
    memcpy(buf, tmp, ZKL_PREFIX_LEN + 1);
  return rc;
}
