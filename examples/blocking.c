/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blocking.c - the blocking API: take a lock, use its fencing token, release.
 *
 *   usage: blocking [HOSTS [NAME]]     (default 127.0.0.1:2181, "example")
 */
#include <inttypes.h>
#include <stdio.h>
#include <zklock.h>

int main(int argc, char **argv) {
  const char *hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
  const char *name = argc > 2 ? argv[2] : "example";
  zkl_session_options o;
  zkl_session *session;
  zkl_lock *lock;
  zkl_close_outcome how;
  int64_t token;
  int rc;

  zkl_session_options_init(&o);
  o.hosts = hosts; /* the session timeout: ZKL_SESSION_TIMEOUT_DEFAULT_MS */
  rc = zkl_session_open(&session, &o);
  if (rc != ZKL_OK) {
    fprintf(stderr, "cannot connect to %s: %s\n", hosts, zkl_strerror(rc));
    return 1;
  }
  rc = zkl_lock_new(&lock, session, name);
  if (rc != ZKL_OK) {
    fprintf(stderr, "bad lock name %s: %s\n", name, zkl_strerror(rc));
    zkl_session_close(session, NULL);
    return 1;
  }

  rc = zkl_lock_acquire(lock, 30000, &token); /* wait up to 30 s */
  if (rc == ZKL_OK) {
    /* Hand the token to every resource you write to: one that remembers the
     * highest token it accepted refuses a holder that lost the lock. */
    printf("holding %s with fencing token %" PRId64 "\n", name, token);
    rc = zkl_lock_release(lock);
    if (rc != ZKL_OK)
      fprintf(stderr, "release: %s\n", zkl_strerror(rc));
  } else {
    fprintf(stderr, "acquire: %s\n", zkl_strerror(rc));
  }

  zkl_lock_free(lock);
  zkl_session_close(session, &how);
  if (how == ZKL_CLOSE_UNREACHED)
    fprintf(stderr, "the lock's node goes when the session expires\n");
  return rc == ZKL_OK ? 0 : 1;
}
