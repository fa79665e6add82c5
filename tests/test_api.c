/* SPDX-License-Identifier: Apache-2.0 */
/* test_api.c - small parts of the API: why a name is refused, and the
 * lease deadline a holder can hand to a watchdog (zklock's keeper). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

static void test_name_explain(void) {
  static const struct {
    const char *name, *because;
  } bad[] = {{"", "empty"},
             {"/", "the root of the tree"},
             {"/zookeeper/quota", "under /zookeeper"},
             {"/locks", "the parent of every relative name"},
             {"a/", "ends with '/'"},
             {"a//b", "empty segment"},
             {"a/../b", "'..' segment"},
             {"a\tb", "control character (U+0009 at byte 1)"},
             {"\xc3\x28", "not valid UTF-8"},
             {"\xee\x80\x80", "ZooKeeper refuses"},
             {"nest/lock-0000000000", "pass for a contender's node"},
             {NULL, NULL}};
  char why[200], long_name[ZKL_NAME_MAX + 2];
  int i;
  for (i = 0; bad[i].name; i++) {
    CU_ASSERT_EQUAL(zkl_name_explain(bad[i].name, why, sizeof why),
                    ZKL_EINVAL);
    if (!strstr(why, bad[i].because))
      printf("\n    %d: '%s' does not say '%s'", i, why, bad[i].because);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].because));
    /* the same verdict as zkl_name_check() */
    CU_ASSERT_EQUAL(zkl_name_check(bad[i].name), ZKL_EINVAL);
  }
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  CU_ASSERT_EQUAL(zkl_name_explain(long_name, why, sizeof why), ZKL_EINVAL);
  CU_ASSERT_PTR_NOT_NULL(strstr(why, "256 bytes long"));
  CU_ASSERT_EQUAL(zkl_name_explain("app/db", why, sizeof why), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(why, "");
  /* a small buffer is cut, never overrun */
  CU_ASSERT_EQUAL(zkl_name_explain("a//b", why, 5), ZKL_EINVAL);
  CU_ASSERT_EQUAL(strlen(why), 4);
  CU_ASSERT_EQUAL(zkl_name_explain("a", NULL, 10), ZKL_EINVAL);
}

static void test_lease_deadline(void) {
  char name[64];
  int64_t opened = zkt_now_ms(), deadline;
  zkl_session *s = zkt_session(6000);
  zkl_lock *l;
  zkt_name(name, sizeof name, "api-deadline");
  CU_ASSERT_EQUAL(zkl_session_lease_deadline(s), 0); /* nothing held */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  deadline = zkl_session_lease_deadline(s);
  /* A new session's lease counts from when it began opening (its creation
   * went through the leader), plus T, minus the default margin (T/10); a
   * grant needs half of T - margin - P, P = 0.275 T: 1.87 s. */
  CU_ASSERT(deadline >= opened + 6000 - 600);
  CU_ASSERT(deadline <= zkt_now_ms() + 6000 - 600);
  CU_ASSERT(deadline - zkt_now_ms() >= (6000 - 600 - 1651) / 2);
  CU_ASSERT_EQUAL(zkl_session_set_lease_margin(s, -1), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_lease_deadline(s), 0); /* lease off */
  CU_ASSERT_EQUAL(zkl_session_set_lease_margin(s, 0), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_lease_deadline(s), 0);
  CU_ASSERT_EQUAL(zkl_session_lease_deadline(NULL), 0);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* What zkl_session_close() says of how far it got. */
static void test_close_result(void) {
  char hosts[64];
  proxyctl *px;
  zkl_session *s;
  int port;
  CU_ASSERT_EQUAL(zkl_session_close(NULL, NULL), ZKL_EINVAL);
  s = zkt_session(6000);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_DONE);
  s = zkt_session(6000);
  CU_ASSERT_EQUAL_FATAL(zkt_expire(s), 0);
  CU_ASSERT_NOT_EQUAL(zkl__debug_wait_dead(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_EXPIRED);
  /* cut off: the server cannot be told; it expires the session itself */
  CU_ASSERT_FATAL(proxyctl_start(&px, ZKL_TEST_BUILDDIR "/tests/faultproxy",
                                 zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  CU_ASSERT_EQUAL_FATAL(zkt_open(&s, hosts, 6000, 0, 0), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "refuse", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "reset", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(s, false, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_UNREACHED);
  proxyctl_stop(px);
}

int main(void) {
  static const zkt_test tests[] = {
      {"why a name is refused", test_name_explain},
      {"the lease deadline", test_lease_deadline},
      {"what close says", test_close_result},
      {NULL, NULL}};
  return zkt_main("api", tests);
}
