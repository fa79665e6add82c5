/* SPDX-License-Identifier: Apache-2.0 */
/*
 * msg.c - what zklock says on stderr, and how it shows what the user typed.
 *
 * User input goes back to the user only through cli_quote(): a lock name or
 * an option value with an ESC or a tab in it must show as "\x1b" or "\t",
 * never reach the terminal as a control sequence. Text that came from
 * ZooKeeper nodes (host names, owner descriptions) goes out through
 * cli_printable() instead: it is a field of tab-separated output, so it
 * must stay one field of one line, and keep its length.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

bool cli_verbose;

static void vmsg(const char *fmt, va_list ap) {
  char line[2048];
  vsnprintf(line, sizeof line, fmt, ap);
  fprintf(stderr, "zklock: %s\n", line);
}

void cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

void cli_iso_time(char *buf, size_t len, int64_t unix_ms, bool with_ms) {
  time_t t = (time_t)(unix_ms / 1000);
  struct tm tm;
  char zone[8];
  size_t n;
  if (!localtime_r(&t, &tm) ||
      (n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)) == 0 ||
      !strftime(zone, sizeof zone, "%z", &tm) || strlen(zone) != 5) {
    snprintf(buf, len, "-");
    return;
  }
  if (with_ms)
    n += (size_t)snprintf(buf + n, len - n, ".%03d", (int)(unix_ms % 1000));
  /* %z is "+0100"; the extended format wants "+01:00" */
  if (n < len)
    snprintf(buf + n, len - n, "%.3s:%s", zone, zone + 3);
}

static void verbose_at(const struct timespec *at, const char *fmt,
                       va_list ap) {
  char line[2048], when[48];
  cli_iso_time(when, sizeof when,
               (int64_t)at->tv_sec * 1000 + at->tv_nsec / 1000000, true);
  vsnprintf(line, sizeof line, fmt, ap);
  fprintf(stderr, "zklock: %s %s\n", when, line);
}

void cli_verbose_msg(const char *fmt, ...) {
  struct timespec now;
  va_list ap;
  if (!cli_verbose)
    return;
  clock_gettime(CLOCK_REALTIME, &now);
  va_start(ap, fmt);
  verbose_at(&now, fmt, ap);
  va_end(ap);
}

void cli_verbose_at(const struct timespec *at, const char *fmt, ...) {
  va_list ap;
  if (!cli_verbose)
    return;
  va_start(ap, fmt);
  verbose_at(at, fmt, ap);
  va_end(ap);
}

void cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
  exit(EXIT_USAGE);
}

/* The length of the valid UTF-8 character at s, its code point in *cp; 0
 * for an invalid, overlong, surrogate or truncated sequence, or at the
 * NUL. */
static int utf8_decode(const unsigned char *s, unsigned *cp) {
  unsigned c = s[0];
  int len, i;
  if (c < 0x80) {
    *cp = c;
    return c ? 1 : 0;
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
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0; /* also stops at the terminating NUL */
    c = (c << 6) | (s[i] & 0x3Fu);
  }
  if ((len == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) ||
      (len == 4 && (c < 0x10000 || c > 0x10FFFF)))
    return 0;
  *cp = c;
  return len;
}

#define QUOTE_SHOWN 200 /* bytes of input shown before "..." */

const char *cli_quote(const char *s) {
  static char bufs[4][QUOTE_SHOWN * 6 + 8];
  static int next;
  char *out = bufs[next];
  const unsigned char *p = (const unsigned char *)s;
  size_t n = 0;
  next = (next + 1) % 4;
  out[n++] = '\'';
  while (*p && p - (const unsigned char *)s < QUOTE_SHOWN) {
    unsigned cp;
    int len;
    if (*p == '\\' || *p == '\'') {
      out[n++] = '\\';
      out[n++] = (char)*p++;
    } else if (*p == '\t') {
      memcpy(out + n, "\\t", 2);
      n += 2;
      p++;
    } else if (*p == '\n') {
      memcpy(out + n, "\\n", 2);
      n += 2;
      p++;
    } else if (*p < 0x20 || *p == 0x7F) {
      n += (size_t)sprintf(out + n, "\\x%02x", *p++);
    } else if (*p < 0x80) {
      out[n++] = (char)*p++;
    } else if ((len = utf8_decode(p, &cp)) == 0) {
      n += (size_t)sprintf(out + n, "\\x%02x", *p++); /* not UTF-8 */
    } else if (cp <= 0x9F) {
      n += (size_t)sprintf(out + n, "\\u%04x", cp); /* C1: CSI and co. */
      p += len;
    } else {
      memcpy(out + n, p, (size_t)len);
      n += (size_t)len;
      p += len;
    }
  }
  if (*p) {
    memcpy(out + n, "...", 3);
    n += 3;
  }
  out[n++] = '\'';
  out[n] = '\0';
  return out;
}

void cli_printable(char *out, size_t len, const char *s) {
  size_t n = 0;
  for (; *s && n + 1 < len; s++)
    out[n++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
  if (((unsigned char)*s & 0xc0) == 0x80) { /* cut inside a character */
    while (n > 0 && ((unsigned char)out[n - 1] & 0xc0) == 0x80)
      n--;
    if (n > 0)
      n--; /* its first byte */
  }
  out[n] = '\0';
}

const char *cli_duration(int64_t ms) {
  static char bufs[4][32];
  static int next;
  char *out = bufs[next];
  next = (next + 1) % 4;
  if (ms < 1000 && ms > -1000)
    snprintf(out, sizeof bufs[0], "%lld ms", (long long)ms);
  else
    snprintf(out, sizeof bufs[0], "%.1f s", (double)ms / 1000);
  return out;
}
