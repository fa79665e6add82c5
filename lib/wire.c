/* SPDX-License-Identifier: Apache-2.0 */
/* wire.c - frames of the agent's protocol (wire.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "wire.h"

static void put(zkl_wbuf *b, const void *p, size_t n) {
  if (b->failed)
    return;
  if (b->len + n > (size_t)ZKL_WIRE_MAX + 4) {
    b->failed = b->too_big = true;
    return;
  }
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    unsigned char *d;
    while (cap < b->len + n)
      cap *= 2;
    d = realloc(b->data, cap);
    if (!d) {
      b->failed = true;
      return;
    }
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

static void put_u32(zkl_wbuf *b, uint32_t v) {
  unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 8), (unsigned char)v};
  put(b, x, 4);
}

void zkl__wire_begin(zkl_wbuf *b, int type, uint32_t request) {
  unsigned char h[4] = {ZKL_WIRE_VERSION, (unsigned char)type, 0, 0};
  b->len = 0;
  b->failed = b->too_big = false;
  put_u32(b, 0); /* the length, filled in at the end */
  put(b, h, 4);
  put_u32(b, request);
}

void zkl__wire_i32(zkl_wbuf *b, int32_t v) { put_u32(b, (uint32_t)v); }

void zkl__wire_i64(zkl_wbuf *b, int64_t v) {
  put_u32(b, (uint32_t)((uint64_t)v >> 32));
  put_u32(b, (uint32_t)(uint64_t)v);
}

void zkl__wire_str(zkl_wbuf *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  put_u32(b, (uint32_t)n);
  if (n)
    put(b, s, n);
}

void zkl__wire_bytes(zkl_wbuf *b, const void *p, size_t n) {
  if (n > ZKL_WIRE_MAX) {
    b->failed = b->too_big = true; /* would not fit in any frame */
    return;
  }
  put_u32(b, (uint32_t)n);
  if (n)
    put(b, p, n);
}

bool zkl__wire_end(zkl_wbuf *b) {
  size_t n;
  if (b->failed || b->len < 4 + ZKL_WIRE_HEADER)
    return false;
  n = b->len - 4;
  if (n > ZKL_WIRE_MAX)
    return false;
  b->data[0] = (unsigned char)(n >> 24);
  b->data[1] = (unsigned char)(n >> 16);
  b->data[2] = (unsigned char)(n >> 8);
  b->data[3] = (unsigned char)n;
  return true;
}

void zkl__wire_free(zkl_wbuf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

long zkl__wire_frame_size(const unsigned char *data, size_t len) {
  uint32_t n;
  if (len < 4)
    return 0;
  n = get_u32(data);
  if (n < ZKL_WIRE_HEADER || n > ZKL_WIRE_MAX)
    return -1;
  return (long)n + 4;
}

bool zkl__wire_open(zkl_rframe *f, const unsigned char *data, size_t size) {
  memset(f, 0, sizeof *f);
  if (size < 4 + ZKL_WIRE_HEADER || data[6] != 0 || data[7] != 0)
    return false;
  f->version = data[4];
  f->type = data[5];
  f->request = get_u32(data + 8);
  f->p = data + 4 + ZKL_WIRE_HEADER;
  f->end = data + size;
  /* Every str or bytes field of the body fits in the body's size plus
   * one NUL each, and each takes at least its 4-byte length: room enough,
   * once. */
  f->room = (size_t)(f->end - f->p) + (size_t)(f->end - f->p) / 4 + 1;
  f->strings = malloc(f->room);
  return f->strings != NULL;
}

int32_t zkl__wire_get_i32(zkl_rframe *f) {
  uint32_t v;
  if (f->bad || f->end - f->p < 4) {
    f->bad = true;
    return 0;
  }
  v = get_u32(f->p);
  f->p += 4;
  return (int32_t)v;
}

int64_t zkl__wire_get_i64(zkl_rframe *f) {
  uint64_t hi, lo;
  if (f->bad || f->end - f->p < 8) {
    f->bad = true;
    return 0;
  }
  hi = get_u32(f->p);
  lo = get_u32(f->p + 4);
  f->p += 8;
  return (int64_t)(hi << 32 | lo);
}

/* A str or bytes field, copied (NUL-terminated) into f->strings. */
static const char *get_counted(zkl_rframe *f, bool nul_allowed,
                               uint32_t *len) {
  uint32_t n;
  char *s;
  *len = 0;
  if (f->bad || f->end - f->p < 4) {
    f->bad = true;
    return "";
  }
  n = get_u32(f->p);
  if ((uint64_t)n > (uint64_t)(f->end - f->p - 4) ||
      f->used + n + 1 > f->room ||
      (!nul_allowed && memchr(f->p + 4, 0, n))) {
    f->bad = true;
    return "";
  }
  *len = n;
  s = f->strings + f->used;
  memcpy(s, f->p + 4, n);
  s[n] = 0;
  f->used += n + 1;
  f->p += 4 + n;
  return s;
}

const char *zkl__wire_get_str(zkl_rframe *f) {
  uint32_t n;
  return get_counted(f, false, &n);
}

const void *zkl__wire_get_bytes(zkl_rframe *f, uint32_t *len) {
  return get_counted(f, true, len);
}

bool zkl__wire_done(const zkl_rframe *f) { return !f->bad && f->p == f->end; }

void zkl__wire_close(zkl_rframe *f) {
  free(f->strings);
  f->strings = NULL;
}
