/* names.c - lock names, node names, sequence numbers and queue order. Pure
 * logic apart from the random bytes of the uuid; unit-tested on its own. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

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

int zkl__validate_name(const char *name) {
  const unsigned char *p = (const unsigned char *)name;
  size_t n, i, seg_start = 0;
  if (!name)
    return ZKL_EINVAL;
  n = strlen(name);
  if (n == 0 || n > ZKL_NAME_MAX)
    return ZKL_EINVAL;
  for (i = 0; i <= n; i++) {
    if (i == n || p[i] == '/') {
      size_t seg = i - seg_start;
      if (seg == 0)
        return ZKL_EINVAL; /* leading, trailing or doubled '/' */
      if ((seg == 1 && p[seg_start] == '.') ||
          (seg == 2 && p[seg_start] == '.' && p[seg_start + 1] == '.'))
        return ZKL_EINVAL;
      /* Under the parent of the lock named by the segments before it, this
       * segment would be read as a contender's node. */
      if (zkl__is_sequence_node(name + seg_start, seg))
        return ZKL_EINVAL;
      seg_start = i + 1;
      continue;
    }
    uint32_t cp;
    int len = utf8_decode(p + i, n - i, &cp);
    if (len == 0 || zk_refuses(cp))
      return ZKL_EINVAL;
    i += (size_t)len - 1;
  }
  return ZKL_OK;
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

int zkl__make_prefix(char *buf) {
  unsigned char u[16];
  if (random_bytes(u, sizeof u) != ZKL_OK)
    return ZKL_ESYSTEM;
  u[6] = (unsigned char)((u[6] & 0x0F) | 0x40); /* version 4 */
  u[8] = (unsigned char)((u[8] & 0x3F) | 0x80); /* RFC 4122 variant */
  snprintf(buf, ZKL_PREFIX_LEN + 1,
           "_c_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x-lock-",
           u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
           u[11], u[12], u[13], u[14], u[15]);
  return ZKL_OK;
}

static const char *last_occurrence(const char *s, const char *needle) {
  const char *found = NULL, *p = s;
  while ((p = strstr(p, needle)) != NULL) {
    found = p;
    p++;
  }
  return found;
}

/* The sequence suffix exactly as the server writes it, Java's "%010d" of a
 * signed 32-bit counter: ten digits, or after the wrap a minus sign and nine
 * or ten digits ("-000000005", "-2147483648"). Anything else (fewer digits,
 * more, a plus sign, trailing bytes) is not a sequence node: a container
 * named "lock-0" under a lock's parent must not pass for a contender. */
static int parse_suffix(const char *s, size_t n, int32_t *out) {
  int64_t v = 0;
  size_t i;
  bool neg = n > 0 && s[0] == '-';
  if (!(n == 10 || (neg && n == 11)))
    return 0;
  for (i = neg ? 1 : 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return 0;
    v = v * 10 + (s[i] - '0');
  }
  if (neg)
    v = -v;
  if (v < INT32_MIN || v > INT32_MAX)
    return 0;
  *out = (int32_t)v;
  return 1;
}

/* Every marker a node name of a recipe that libzklock speaks or recognises
 * ends in, before its sequence suffix: Curator's (lock-, __READ__,
 * __WRIT__, lease-, latch-), kazoo's (__lock__, __rlock__). */
static const char *const all_markers[] = {"lock-",    "__lock__", "__rlock__",
                                          "__READ__", "__WRIT__", "lease-",
                                          "latch-"};

int zkl__is_sequence_node(const char *name, size_t n) {
  size_t m, tail;
  int32_t seq;
  for (m = 0; m < sizeof all_markers / sizeof all_markers[0]; m++) {
    size_t mlen = strlen(all_markers[m]);
    for (tail = 10; tail <= 11; tail++)
      if (n >= mlen + tail &&
          memcmp(name + n - tail - mlen, all_markers[m], mlen) == 0 &&
          parse_suffix(name + n - tail, tail, &seq))
        return 1;
  }
  return 0;
}

int zkl__parse_seq(const char *child, int32_t *seq) {
  static const char *const markers[] = {"lock-", "__lock__"};
  size_t i;
  for (i = 0; i < sizeof markers / sizeof markers[0]; i++) {
    const char *m = last_occurrence(child, markers[i]);
    if (m) {
      const char *suffix = m + strlen(markers[i]);
      if (parse_suffix(suffix, strlen(suffix), seq))
        return 1;
    }
  }
  return 0;
}

/* Serial-number arithmetic (RFC 1982): a comes before b when b - a, taken
 * modulo 2^32, is below 2^31. Correct as long as the live nodes of one parent
 * span fewer than 2^31 sequence numbers. */
static int32_t seq_distance(int32_t from, int32_t to) {
  return (int32_t)((uint32_t)to - (uint32_t)from);
}

void zkl__standing(char *const *names, int count, const char *own,
                   const char *prefix, zkl_standing *out, int *dup) {
  int32_t own_seq = 0, seq;
  int32_t best_rel = 0;
  int i;
  out->own_found = false;
  out->n_before = 0;
  out->pred = -1;
  out->n_duplicates = 0;
  if (!zkl__parse_seq(own, &own_seq))
    return;
  for (i = 0; i < count; i++) {
    const char *name = names[i];
    if (strcmp(name, own) == 0) {
      out->own_found = true;
      continue;
    }
    if (prefix && strncmp(name, prefix, strlen(prefix)) == 0) {
      if (dup)
        dup[out->n_duplicates] = i;
      out->n_duplicates++;
      continue;
    }
    if (!zkl__parse_seq(name, &seq))
      continue;
    int32_t rel = seq_distance(own_seq, seq); /* < 0: before us */
    if (rel > 0 || (rel == 0 && strcmp(name, own) > 0))
      continue;
    out->n_before++;
    if (out->pred < 0 || rel > best_rel ||
        (rel == best_rel && strcmp(name, names[out->pred]) > 0)) {
      out->pred = i;
      best_rel = rel;
    }
  }
}

typedef struct {
  const char *name;
  int32_t rel;
} ordered;

static int cmp_ordered(const void *a, const void *b) {
  const ordered *x = a, *y = b;
  if (x->rel != y->rel)
    return x->rel < y->rel ? -1 : 1;
  return strcmp(x->name, y->name);
}

int zkl__queue_order(const char **names, int count) {
  ordered *tmp;
  int kept = 0, i;
  int32_t ref = 0, seq;
  bool have_ref = false;
  if (count <= 0)
    return 0;
  tmp = malloc(sizeof *tmp * (size_t)count);
  if (!tmp)
    return -1;
  for (i = 0; i < count; i++) {
    if (!zkl__parse_seq(names[i], &seq))
      continue;
    if (!have_ref) {
      ref = seq; /* any member works as the origin inside a 2^31 window */
      have_ref = true;
    }
    tmp[kept].name = names[i];
    tmp[kept].rel = seq_distance(ref, seq);
    kept++;
  }
  qsort(tmp, (size_t)kept, sizeof *tmp, cmp_ordered);
  for (i = 0; i < kept; i++)
    names[i] = tmp[i].name;
  free(tmp);
  return kept;
}

/* When this process started, in Unix ms, from /proc (Linux); 0 if unknown.
 * With the pid it names the process even after the pid is reused. */
static int64_t process_start_ms(void) {
  FILE *f;
  char line[1024], *p;
  unsigned long long start_ticks = 0, boot = 0;
  long hz = sysconf(_SC_CLK_TCK);
  int field;
  f = fopen("/proc/self/stat", "r");
  if (!f)
    return 0;
  p = fgets(line, sizeof line, f);
  fclose(f);
  if (!p || !(p = strrchr(line, ')')))
    return 0;
  /* fields after the command name: 3 (state) onwards; starttime is 22 */
  for (field = 3, p += 2; *p && field < 22; p++)
    if (*p == ' ')
      field++;
  if (field != 22 || sscanf(p, "%llu", &start_ticks) != 1)
    return 0;
  f = fopen("/proc/stat", "r");
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "btime %llu", &boot) == 1)
      break;
  fclose(f);
  if (!boot || hz <= 0)
    return 0;
  return (int64_t)boot * 1000 + (int64_t)(start_ticks * 1000ULL / (unsigned long long)hz);
}

int zkl__owner_data(char *buf, size_t len) {
  char host[128];
  int n;
  if (gethostname(host, sizeof host) != 0)
    strcpy(host, "unknown");
  host[sizeof host - 1] = '\0';
  n = snprintf(buf, len, "host=%s\npid=%ld\nstart=%lld\n", host,
               (long)getpid(), (long long)process_start_ms());
  if (n < 0)
    n = 0;
  if ((size_t)n >= len)
    n = (int)len - 1;
  return n;
}

int zkl__validate_info(const char *info) {
  const unsigned char *p = (const unsigned char *)info;
  size_t n = 0;
  if (!info)
    return ZKL_OK;
  for (; *p; p++, n++)
    if (*p < 0x20 || *p == 0x7f || n >= ZKL_INFO_MAX)
      return ZKL_EINVAL; /* one line, the node data stays small */
  return ZKL_OK;
}

void zkl__parse_owner(const char *data, int len, zkl_owner *out) {
  const char *p = data, *end = data + (len > 0 ? len : 0);
  memset(out, 0, sizeof *out);
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eq;
    size_t klen, vlen;
    if (!nl)
      nl = end;
    eq = memchr(p, '=', (size_t)(nl - p));
    if (eq) {
      klen = (size_t)(eq - p);
      vlen = (size_t)(nl - eq - 1);
      if (klen == 4 && memcmp(p, "host", 4) == 0) {
        if (vlen >= sizeof out->host)
          vlen = sizeof out->host - 1;
        memcpy(out->host, eq + 1, vlen);
        out->host[vlen] = '\0';
      } else if (klen == 4 && memcmp(p, "info", 4) == 0) {
        if (vlen >= sizeof out->info)
          vlen = sizeof out->info - 1;
        memcpy(out->info, eq + 1, vlen);
        out->info[vlen] = '\0';
      } else if ((klen == 3 && memcmp(p, "pid", 3) == 0) ||
                 (klen == 5 && memcmp(p, "start", 5) == 0)) {
        /* node data is not NUL-terminated: parse a bounded copy */
        char num[24];
        if (vlen >= sizeof num)
          vlen = sizeof num - 1;
        memcpy(num, eq + 1, vlen);
        num[vlen] = '\0';
        if (klen == 3)
          out->pid = strtol(num, NULL, 10);
        else
          out->start_ms = strtoll(num, NULL, 10);
      }
    }
    p = nl + 1;
  }
}
