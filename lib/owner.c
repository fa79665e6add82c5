/* SPDX-License-Identifier: Apache-2.0 */
/* owner.c - the owner description written into each lock node (who holds
 * or waits: host, pid, process start time, a line of the user's), and its
 * reading back from nodes anyone may have written. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

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

void zkl__parse_owner(const char *data, int len, int kind, zkl_owner *out,
                      zkl_node_facts *facts) {
  const char *p = data, *end = data + (len > 0 ? len : 0);
  const zkl_node_kind *k =
      kind >= 0 && kind < zkl__node_kind_count ? &zkl__node_kinds[kind] : NULL;
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
      } else if (k && k->data_key && facts && klen == strlen(k->data_key) &&
                 memcmp(p, k->data_key, klen) == 0) {
        k->data_fact(eq + 1, vlen, facts); /* a fact of its kind's */
      }
    }
    p = nl + 1;
  }
}
