/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_names.c - a libFuzzer target for the code that reads untrusted
 * strings: lock-name validation, node-name parsing and ordering, and the
 * owner description read from nodes anyone may have written.
 *
 * Beyond "no crash, no out-of-bounds read" (the sanitizers' job), it checks
 * verdicts: every name is also judged by a second, deliberately different
 * validator written from ZooKeeper's rules (a byte-level UTF-8 state table
 * and a segment split), and the two must agree; ordering must be total and
 * consistent.
 *
 * Built two ways: with clang -fsanitize=fuzzer (configure --enable-fuzzing)
 * it is the fuzzer; without, tests/fuzz_corpus_main.c replays the corpus in
 * tests/fuzz-corpus/ as a plain test, where a file named valid-* must be
 * accepted and invalid-* refused.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_names.h"
#include "internal.h"

/* --------------------------------------------- the reference validator */

/* Code point of a well-formed UTF-8 sequence, by the table of RFC 3629
 * section 4 (valid byte ranges per position), or -1. */
static long ref_decode(const unsigned char *s, size_t n, size_t *used) {
  static const struct {
    unsigned char lead_lo, lead_hi, second_lo, second_hi;
    int len;
  } forms[] = {
      {0xC2, 0xDF, 0x80, 0xBF, 2}, {0xE0, 0xE0, 0xA0, 0xBF, 3},
      {0xE1, 0xEC, 0x80, 0xBF, 3}, {0xED, 0xED, 0x80, 0x9F, 3},
      {0xEE, 0xEF, 0x80, 0xBF, 3}, {0xF0, 0xF0, 0x90, 0xBF, 4},
      {0xF1, 0xF3, 0x80, 0xBF, 4}, {0xF4, 0xF4, 0x80, 0x8F, 4},
  };
  size_t f, i;
  if (s[0] < 0x80) {
    *used = 1;
    return s[0];
  }
  for (f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    long cp;
    if (s[0] < forms[f].lead_lo || s[0] > forms[f].lead_hi)
      continue;
    if (n < (size_t)forms[f].len || s[1] < forms[f].second_lo ||
        s[1] > forms[f].second_hi)
      return -1;
    for (i = 2; i < (size_t)forms[f].len; i++)
      if (s[i] < 0x80 || s[i] > 0xBF)
        return -1;
    cp = s[0] & (0xFF >> (forms[f].len + 1));
    for (i = 1; i < (size_t)forms[f].len; i++)
      cp = (cp << 6) | (s[i] & 0x3F);
    *used = (size_t)forms[f].len;
    return cp;
  }
  return -1;
}

/* ZooKeeper's PathUtils, as Java chars: a surrogate pair is refused, so is
 * every code point past the BMP. */
static int ref_char_ok(long cp) {
  if (cp <= 0x1F || (cp >= 0x7F && cp <= 0x9F))
    return 0;
  if (cp >= 0xD800 && cp <= 0xF8FF)
    return 0;
  if (cp >= 0xFFF0)
    return 0;
  return 1;
}

/* ZooKeeper's sequence suffix, "%010d" of an int32, by its shapes: ten
 * digits; '-' and nine digits; '-' and ten digits up to 2147483648. */
static int ref_suffix(const unsigned char *s, size_t n) {
  size_t digits = 0, i;
  for (i = 0; i < n; i++)
    if (s[i] >= '0' && s[i] <= '9')
      digits++;
  if (n == 10 && digits == 10)
    return memcmp(s, "2147483647", 10) <= 0;
  if (n == 10 && s[0] == '-' && digits == 9)
    return 1;
  if (n == 11 && s[0] == '-' && digits == 10)
    return memcmp(s + 1, "2147483648", 10) <= 0;
  return 0;
}

/* A segment that a queue recipe's listing would take for a node. */
static int ref_node_like(const unsigned char *seg, size_t n) {
  static const char *const markers[] = {"__rlock__", "__lock__", "__READ__",
                                        "__WRIT__", "lock-", "lease-",
                                        "latch-"};
  size_t m, at;
  for (m = 0; m < sizeof markers / sizeof markers[0]; m++) {
    size_t mlen = strlen(markers[m]);
    for (at = 0; at + mlen <= n; at++)
      if (memcmp(seg + at, markers[m], mlen) == 0 &&
          ref_suffix(seg + at + mlen, n - at - mlen))
        return 1;
  }
  return 0;
}

int fuzz_reference_valid(const char *name, size_t n) {
  const unsigned char *s = (const unsigned char *)name;
  size_t i, start, first = 0;
  if (n == 0 || n > 255)
    return 0;
  if (s[0] == '/') { /* a full path: segments after the '/' */
    static const char *const kept[] = {"/zookeeper", "/locks"};
    size_t k;
    for (k = 0; k < 2; k++) {
      size_t kl = strlen(kept[k]);
      if (n >= kl && memcmp(s, kept[k], kl) == 0 &&
          (n == kl || (k == 0 && s[kl] == '/')))
        return 0; /* /zookeeper and under; /locks itself */
    }
    first = 1;
  }
  /* segments */
  for (start = first, i = first; i <= n; i++) {
    if (i < n && s[i] != '/')
      continue;
    if (i == start)
      return 0;
    if (i - start == 1 && s[start] == '.')
      return 0;
    if (i - start == 2 && s[start] == '.' && s[start + 1] == '.')
      return 0;
    if (ref_node_like(s + start, i - start))
      return 0;
    /* a semaphore's gate or leases under the lock before it */
    if (start > first && ((i - start == 5 && memcmp(s + start, "locks", 5) == 0) ||
                      (i - start == 6 && memcmp(s + start, "leases", 6) == 0)))
      return 0;
    start = i + 1;
  }
  /* characters */
  for (i = 0; i < n;) {
    size_t used;
    long cp = ref_decode(s + i, n - i, &used);
    if (cp < 0 || !ref_char_ok(cp))
      return 0;
    i += used;
  }
  return 1;
}

/* -------------------------------------------------------------- target */

/* Every node kind of every place, so that all of the queue code is
 * fuzzed. */
static int node_kind_anywhere(const char *name, int32_t *seq) {
  int place;
  for (place = 0; place < ZKL_PLACE_COUNT; place++) {
    zkl_nodes nodes = {(zkl_place)place, ZKL_FAMILIES_ALL};
    int k = zkl__node_kind_of(name, &nodes, seq);
    if (k >= 0)
      return k;
  }
  return -1;
}

static void check_order(char **names, int count) {
  int i, j;
  zkl_queue q;
  zkl_nodes nodes = {ZKL_PLACE_NAME, ZKL_FAMILIES_ALL};
  for (i = 0; i < count; i++) {
    int32_t seq;
    int is_node = zkl__node_kind_of(names[i], &nodes, &seq) >= 0;
    if (zkl__queue_build(names, count, &nodes, names[i], NULL, &q) != ZKL_OK)
      return;
    /* a node is in its own queue, exactly once; anything else is not */
    if (is_node != (q.own >= 0))
      abort();
    if (q.own >= 0 && strcmp(q.entries[q.own].name, names[i]) != 0)
      abort();
    if (q.count > count || q.n_duplicates != 0)
      abort();
    /* the queue up to our node is the full queue's beginning */
    {
      zkl_queue head;
      if (zkl__queue_build_ahead(names, count, &nodes, names[i], NULL,
                                 &head) != ZKL_OK) {
        zkl__queue_free(&q);
        return;
      }
      if (head.own != q.own ||
          head.count != (q.own >= 0 ? q.own + 1 : q.count))
        abort();
      for (j = 0; j < head.count; j++)
        if (strcmp(head.entries[j].name, q.entries[j].name) != 0)
          abort();
      zkl__queue_free(&head);
    }
    /* entries hold only nodes, each with the kind of its marker */
    for (j = 0; j < q.count; j++)
      if (zkl__node_kind_of(q.entries[j].name, &nodes, &seq) !=
              q.entries[j].kind ||
          seq != q.entries[j].seq)
        abort();
    /* ordered around the contender's own number (serial arithmetic): no
     * entry before it has a later number, none after it an earlier one */
    for (j = 0; q.own >= 0 && j < q.count; j++) {
      int32_t d = zkl__seq_distance(q.entries[q.own].seq, q.entries[j].seq);
      if ((j < q.own && d > 0) || (j > q.own && d < 0))
        abort();
    }
    zkl__queue_free(&q);
  }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  char *name = malloc(size + 1), *p, *names[64];
  int count = 0, ours, ref;
  zkl_owner owner;
  if (!name)
    return 0;
  memcpy(name, data, size);
  name[size] = '\0';

  /* 1. the whole input as a lock name (up to the first NUL: C strings) */
  ours = zkl__validate_name(name) == ZKL_OK;
  ref = fuzz_reference_valid(name, strlen(name));
  if (ours != ref) {
    fprintf(stderr, "validators disagree (ours %d, reference %d)\n", ours,
            ref);
    abort();
  }

  /* 2. the input as node data */
  {
    zkl_node_facts facts = {0};
    int kind;
    for (kind = -1; kind < zkl__node_kind_count; kind++)
      zkl__parse_owner((const char *)data, (int)size, kind, &owner, &facts);
    if (facts.limit < 0)
      abort();
  }
  if (strlen(owner.host) >= sizeof owner.host ||
      strlen(owner.info) >= sizeof owner.info)
    abort();

  /* 3. the input as a listing: one child name per line */
  for (p = name; p && count < 64;) {
    char *nl = strchr(p, '\n');
    if (nl)
      *nl = '\0';
    names[count++] = p;
    p = nl ? nl + 1 : NULL;
  }
  check_order(names, count);
  {
    int32_t seq;
    int i;
    for (i = 0; i < count; i++) {
      zkl__parse_seq(names[i], &seq);
      node_kind_anywhere(names[i], &seq);
    }
  }
  free(name);
  return 0;
}
