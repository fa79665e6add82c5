/*
 * heartbeat.c - zklock's own proof that its session is alive, from which
 * it computes the lease deadline that it and its watchdog enforce.
 *
 * The library keeps a lease (see zkl_session_set_lease_margin()) but does
 * not tell anyone its deadline, and the watchdog, another process, needs
 * one. So zklock keeps its own, by the library's rule: a request sent at
 * time t that the server answered reached the server at t or later, so the
 * server cannot expire the session before t + T; zklock calls the lock lost
 * at t + T - m, m being the library's default margin (T/10 within 100..2000
 * ms), and the watchdog acts m/2 later, should zklock not have. To keep t
 * recent while the command runs, zklock sends a cheap read (exists "/")
 * every T/6, as the library does for its own lease. Until the library
 * exports its deadline, that is one extra read per T/6 per running zklock.
 *
 * The completion runs on the ZooKeeper completion thread: it only records
 * under the mutex and wakes the main loop. The state is static, so a
 * completion that comes late (as the session closes) finds it still there.
 */
#include "config.h"

#include <pthread.h>

#include "cli.h"

static struct {
  pthread_mutex_t mu;
  zkl_session *s;
  int timeout_ms, margin_ms;
  int64_t proven_ms;   /* the server heard the session at or after this */
  bool inflight;       /* a ping is on its way (one at a time)... */
  int64_t inflight_ms; /* ... sent then */
  int64_t last_sent_ms;
  bool again;          /* a ping was asked for while one was in flight */
} hb = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, false, 0, 0, false};

void hb_init(zkl_session *s, int64_t proven_ms) {
  int t = zkl_session_timeout(s), m = t / 10;
  pthread_mutex_lock(&hb.mu);
  hb.s = s;
  hb.timeout_ms = t;
  hb.margin_ms = m < 100 ? 100 : m > 2000 ? 2000 : m;
  hb.proven_ms = proven_ms;
  pthread_mutex_unlock(&hb.mu);
}

void hb_prove(int64_t sent_ms) {
  pthread_mutex_lock(&hb.mu);
  if (sent_ms > hb.proven_ms)
    hb.proven_ms = sent_ms;
  pthread_mutex_unlock(&hb.mu);
}

int64_t hb_proven(void) {
  int64_t v;
  pthread_mutex_lock(&hb.mu);
  v = hb.proven_ms;
  pthread_mutex_unlock(&hb.mu);
  return v;
}

int hb_timeout(void) { return hb.timeout_ms; } /* set before any thread */
int hb_margin(void) { return hb.margin_ms; }

int64_t hb_deadline(void) {
  return hb_proven() + hb.timeout_ms - hb.margin_ms;
}

static void ping_done(int rc, const struct Stat *stat, const void *data) {
  int64_t sent;
  (void)stat;
  (void)data;
  pthread_mutex_lock(&hb.mu);
  sent = hb.inflight_ms;
  /* Any answer of the server's proves it heard us; a connection loss or
   * an expiry does not. */
  if ((rc == ZOK || rc == ZNONODE) && sent > hb.proven_ms)
    hb.proven_ms = sent;
  /* Lost with the connection: ask again at once. The client holds a
   * request made while it reconnects and sends it first thing, so the
   * proof comes back with the connection, not a tick later. */
  if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT)
    hb.again = true;
  hb.inflight = false;
  pthread_mutex_unlock(&hb.mu);
  ev_wake();
}

/* Called with hb.mu held; the completion cannot run before it is let go. */
static void send_ping_locked(int64_t now) {
  if (zoo_aexists(zkl_session_handle(hb.s), "/", 0, ping_done, NULL) == ZOK) {
    hb.inflight = true;
    hb.inflight_ms = now;
  }
  hb.last_sent_ms = now;
  hb.again = false;
}

void hb_ping_now(void) {
  pthread_mutex_lock(&hb.mu);
  if (hb.inflight)
    hb.again = true;
  else
    send_ping_locked(cli_now_ms());
  pthread_mutex_unlock(&hb.mu);
}

int64_t hb_tick(int64_t now) {
  int64_t due;
  pthread_mutex_lock(&hb.mu);
  /* From the latest proof or the latest try, whichever is later: a ping
   * that failed (connection down) is not retried in a tight loop. */
  due = (hb.proven_ms > hb.last_sent_ms ? hb.proven_ms : hb.last_sent_ms) +
        hb.timeout_ms / 6;
  if (!hb.inflight && (hb.again || now >= due)) {
    send_ping_locked(now);
    due = now + hb.timeout_ms / 6;
  }
  pthread_mutex_unlock(&hb.mu);
  return due > now ? due : now + hb.timeout_ms / 6;
}
