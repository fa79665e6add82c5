/* SPDX-License-Identifier: Apache-2.0 */
/* errors.c - the error table and the version. */
#include "config.h"

#include "common.h"

#define ZKL_STR_(x) #x
#define ZKL_STR(x) ZKL_STR_(x)

unsigned zkl_version(void) { return ZKL_VERSION_HEX; }

const char *zkl_version_string(void) {
  return ZKL_STR(ZKL_VERSION_MAJOR) "." ZKL_STR(ZKL_VERSION_MINOR) "." ZKL_STR(
      ZKL_VERSION_PATCH);
}

const char *zkl_strerror(int rc) {
  switch (rc) {
  case ZKL_OK:
    return "success";
#define ZKL_XX_CASE_(name, value, text) \
  case ZKL_##name:                      \
    return text;
    ZKL_ERRNO_MAP(ZKL_XX_CASE_)
#undef ZKL_XX_CASE_
  default:
    break;
  }
  /* ZooKeeper's codes run from ZSYSTEMERROR (-1) to about -130; zerror()
   * answers "unknown error" for holes in that range, which is still a
   * sentence. Outside it nothing is ours or ZooKeeper's. */
  if (rc < 0 && rc > -1000)
    return zerror(rc);
  return "unknown error code";
}
