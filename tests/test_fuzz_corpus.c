/* SPDX-License-Identifier: Apache-2.0 */
/* test_fuzz_corpus.c - replays tests/fuzz-corpus/ through the fuzz target
 * as a plain unit test (no clang needed): nothing may crash, the two name
 * validators must agree, and files named valid-* / invalid-* must get that
 * verdict. Under `make check` with sanitizers or valgrind, this is also the
 * out-of-bounds check of the corpus. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_names.h"
#include "internal.h"
#include "zktest.h"

#define CORPUS ZKL_TEST_SRCDIR "/tests/fuzz-corpus"

/* The file's bytes in an allocation of exactly their size, no terminator,
 * as the fuzzer hands them over: a read past the end is caught by ASan and
 * valgrind. */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  long n;
  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(n ? (size_t)n : 1)) != NULL)
    *len = fread(buf, 1, (size_t)n, f);
  fclose(f);
  return buf;
}

static void test_corpus(void) {
  DIR *d = opendir(CORPUS);
  struct dirent *e;
  int files = 0, valid = 0, invalid = 0;
  CU_ASSERT_PTR_NOT_NULL_FATAL(d);
  while ((e = readdir(d)) != NULL) {
    char path[1024];
    unsigned char *data;
    size_t len = 0;
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", CORPUS, e->d_name);
    data = slurp(path, &len);
    CU_ASSERT_PTR_NOT_NULL(data);
    if (!data)
      continue;
    files++;
    LLVMFuzzerTestOneInput(data, len); /* aborts on a disagreement */
    {
      char *name = malloc(len + 1);
      CU_ASSERT_PTR_NOT_NULL_FATAL(name);
      memcpy(name, data, len);
      name[len] = '\0';
      free(data);
      data = (unsigned char *)name;
    }
    if (strncmp(e->d_name, "valid-", 6) == 0) {
      valid++;
      if (zkl__validate_name((char *)data) != ZKL_OK)
        fprintf(stderr, "refused: %s\n", e->d_name);
      CU_ASSERT_EQUAL(zkl__validate_name((char *)data), ZKL_OK);
    } else if (strncmp(e->d_name, "invalid-", 8) == 0) {
      invalid++;
      if (zkl__validate_name((char *)data) != ZKL_EINVAL)
        fprintf(stderr, "accepted: %s\n", e->d_name);
      CU_ASSERT_EQUAL(zkl__validate_name((char *)data), ZKL_EINVAL);
    }
    free(data);
  }
  closedir(d);
  printf("\n    %d corpus files, %d valid names, %d invalid names\n", files,
         valid, invalid);
  CU_ASSERT(files >= 40);
  /* the verdict checks above ran for both kinds (else they checked
   * nothing: a corpus renamed without the prefixes passed) */
  CU_ASSERT(valid > 0);
  CU_ASSERT(invalid > 0);
}

/* The reference validator itself, on a few known cases. */
static void test_reference(void) {
  CU_ASSERT(fuzz_reference_valid("a/b", 3));
  CU_ASSERT(fuzz_reference_valid("/a/b", 4));
  CU_ASSERT(fuzz_reference_valid("/locks/a", 8));
  CU_ASSERT(!fuzz_reference_valid("/", 1));
  CU_ASSERT(!fuzz_reference_valid("/locks", 6));
  CU_ASSERT(!fuzz_reference_valid("/zookeeper/q", 12));
  CU_ASSERT(!fuzz_reference_valid("/a/locks", 8));
  CU_ASSERT(!fuzz_reference_valid("a/./b", 5));
  CU_ASSERT(!fuzz_reference_valid("\xed\xa0\x80", 3));
  CU_ASSERT(fuzz_reference_valid("\xef\xbf\xaf", 3));
  CU_ASSERT(!fuzz_reference_valid("", 0));
}

int main(void) {
  static const zkt_test tests[] = {{"corpus replay", test_corpus},
                                   {"reference validator", test_reference},
                                   {NULL, NULL}};
  return zkt_main("fuzz-corpus", tests);
}
