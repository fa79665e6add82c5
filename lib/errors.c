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

/* ZooKeeper's codes that pass through (zookeeper.h's enum ZOO_ERRORS, as
 * Debian's client has it): the client names none of them. */
#define ZKL_ZOO_CODES(XX)                                                      \
  XX(ZSYSTEMERROR) XX(ZRUNTIMEINCONSISTENCY) XX(ZDATAINCONSISTENCY)            \
  XX(ZCONNECTIONLOSS) XX(ZMARSHALLINGERROR) XX(ZUNIMPLEMENTED)                 \
  XX(ZOPERATIONTIMEOUT) XX(ZBADARGUMENTS) XX(ZINVALIDSTATE)                    \
  XX(ZNEWCONFIGNOQUORUM) XX(ZRECONFIGINPROGRESS) XX(ZSSLCONNECTIONERROR)       \
  XX(ZAPIERROR) XX(ZNONODE) XX(ZNOAUTH) XX(ZBADVERSION)                        \
  XX(ZNOCHILDRENFOREPHEMERALS) XX(ZNODEEXISTS) XX(ZNOTEMPTY)                   \
  XX(ZSESSIONEXPIRED) XX(ZINVALIDCALLBACK) XX(ZINVALIDACL) XX(ZAUTHFAILED)     \
  XX(ZCLOSING) XX(ZNOTHING) XX(ZSESSIONMOVED) XX(ZNOTREADONLY)                 \
  XX(ZEPHEMERALONLOCALSESSION) XX(ZNOWATCHER) XX(ZRECONFIGDISABLED)            \
  XX(ZSESSIONCLOSEDREQUIRESASLAUTH) XX(ZTHROTTLEDOP)

/* A code's name for logs and messages that a program or a person matches
 * on (as libuv's uv_err_name): the sentence of zkl_strerror() may be
 * reworded, the name never is. */
const char *zkl_errname(int rc) {
  switch (rc) {
  case ZKL_OK:
    return "ZKL_OK";
#define ZKL_XX_NAME_(name, value, text) \
  case ZKL_##name:                      \
    return "ZKL_" #name;
    ZKL_ERRNO_MAP(ZKL_XX_NAME_)
#undef ZKL_XX_NAME_
#define ZKL_ZOO_NAME_(name) \
  case name:                \
    return #name;
    ZKL_ZOO_CODES(ZKL_ZOO_NAME_)
#undef ZKL_ZOO_NAME_
  default:
    return "";
  }
}
