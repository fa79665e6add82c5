/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proxyctl - run and steer tests/faultproxy from a C test (see proxyctl.h).
 *
 * The child's stdin and stdout are one end of a socketpair, so writes use
 * MSG_NOSIGNAL (no SIGPIPE in the test if the proxy died) and the proxy sees
 * EOF as soon as the test process is gone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "proxyctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 15000
#define QUIT_TIMEOUT_MS 3000
#define EXIT_TIMEOUT_MS 10000
#define MAX_WRAPPER_WORDS 32

struct proxyctl {
    pid_t pid;
    int fd;          /* our end of the child's stdin/stdout */
    int port;
    int broken;
    int fired_seen;
    int fired_taken;
    int last_fired_op;
    size_t inlen;
    char in[4096];
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = { fd, events, 0 };
        int r = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        return r < 0 ? -1 : r;
    }
}

/* One line from the child, without its newline.  0 ok, -1 timeout, -2 EOF or
 * error. */
static int get_line(proxyctl *p, char *line, size_t cap, long long deadline)
{
    for (;;) {
        char *nl = memchr(p->in, '\n', p->inlen);
        size_t take = nl ? (size_t)(nl - p->in) : (p->inlen == sizeof p->in ? p->inlen : (size_t)-1);
        if (take != (size_t)-1) {
            size_t n = take < cap - 1 ? take : cap - 1;
            memcpy(line, p->in, n);
            line[n] = '\0';
            if (n > 0 && line[n - 1] == '\r')
                line[n - 1] = '\0';
            size_t used = nl ? take + 1 : take;
            memmove(p->in, p->in + used, p->inlen - used);
            p->inlen -= used;
            return 0;
        }
        int r = wait_fd(p->fd, POLLIN, deadline);
        if (r == 0)
            return -1;
        if (r < 0)
            return -2;
        ssize_t n = recv(p->fd, p->in + p->inlen, sizeof p->in - p->inlen, 0);
        if (n > 0)
            p->inlen += (size_t)n;
        else if (n == 0)
            return -2;
        else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return -2;
    }
}

static int is_fired(proxyctl *p, const char *line)
{
    if (strncmp(line, "fired", 5) != 0 || (line[5] != ' ' && line[5] != '\0'))
        return 0;
    p->fired_seen++;
    int op;
    if (sscanf(line, "fired op %d", &op) == 1)
        p->last_fired_op = op;
    return 1;
}

static int send_all(proxyctl *p, const char *s, size_t n, long long deadline)
{
    while (n > 0) {
        ssize_t w = send(p->fd, s, n, MSG_NOSIGNAL);
        if (w > 0) {
            s += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(p->fd, POLLOUT, deadline) <= 0)
                return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

int proxyctl_cmd(proxyctl *p, const char *cmd, char *buf, size_t len, int timeout_ms)
{
    char line[1024];
    if (buf && len > 0)
        buf[0] = '\0';
    if (!p || !cmd)
        return -1;
    if (p->broken) {
        fprintf(stderr, "proxyctl: '%s': the proxy no longer answers\n", cmd);
        return -1;
    }
    size_t n = strlen(cmd);
    if (n == 0 || n > 900 || strchr(cmd, '\n') || strspn(cmd, " \t\r") == n) {
        fprintf(stderr, "proxyctl: invalid command '%s'\n", cmd);
        return -1;
    }
    long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    memcpy(line, cmd, n);
    line[n] = '\n';
    if (send_all(p, line, n + 1, deadline) < 0) {
        fprintf(stderr, "proxyctl: cannot send '%s' to the proxy\n", cmd);
        p->broken = 1;
        return -1;
    }
    for (;;) {
        int r = get_line(p, line, sizeof line, deadline);
        if (r < 0) {
            fprintf(stderr, "proxyctl: '%s': %s\n", cmd,
                    r == -1 ? "no answer in time" : "the proxy is gone");
            p->broken = 1;
            return -1;
        }
        if (is_fired(p, line))
            continue;
        if (buf && len > 0) {
            strncpy(buf, line, len - 1);
            buf[len - 1] = '\0';
        }
        if (!strcmp(line, "ok") || !strncmp(line, "ok ", 3))
            return 0;
        return -1;
    }
}

int proxyctl_wait_fired(proxyctl *p, int timeout_ms)
{
    char line[1024];
    if (!p)
        return -1;
    long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (p->fired_taken >= p->fired_seen) {
        if (p->broken)
            return -1;
        int r = get_line(p, line, sizeof line, deadline);
        if (r == -1)
            return -1;
        if (r < 0) {
            p->broken = 1;
            return -1;
        }
        if (!is_fired(p, line))
            fprintf(stderr, "proxyctl: unexpected line from the proxy: '%s'\n", line);
    }
    p->fired_taken++;
    return 0;
}

int proxyctl_fired_count(const proxyctl *p)
{
    return p ? p->fired_seen : 0;
}

int proxyctl_last_fired_op(const proxyctl *p)
{
    return p ? p->last_fired_op : 0;
}

int proxyctl_port(const proxyctl *p)
{
    return p ? p->port : -1;
}

/* Reaps the child, killing it if it has not exited within timeout_ms. */
static int reap(pid_t pid, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;   /* ECHILD: reaped elsewhere (SIGCHLD ignored?) */
        if (r == 0 && now_ms() >= deadline) {
            fprintf(stderr, "proxyctl: proxy (pid %d) does not exit, killing it\n", (int)pid);
            kill(pid, SIGKILL);
            while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
                ;
            if (r != pid)
                return -1;
            break;
        }
        if (r == 0) {
            struct timespec ts = { 0, 10 * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

int proxyctl_pid(const proxyctl *p)
{
    return p ? (int)p->pid : -1;
}

int proxyctl_stop_status(proxyctl *p)
{
    if (!p)
        return -1;
    if (!p->broken)
        (void)proxyctl_cmd(p, "quit", NULL, 0, QUIT_TIMEOUT_MS);
    if (p->broken)
        kill(p->pid, SIGTERM);  /* it does not answer: ask harder */
    close(p->fd);    /* EOF: the proxy quits even if "quit" got lost */
    int st = reap(p->pid, EXIT_TIMEOUT_MS);
    free(p);
    return st;
}

void proxyctl_stop(proxyctl *p)
{
    (void)proxyctl_stop_status(p);
}

int proxyctl_start(proxyctl **out, const char *faultproxy_path, const char *target_host_port, int *port)
{
    return proxyctl_start_on(out, faultproxy_path, target_host_port, NULL, 0, port);
}

int proxyctl_start_on(proxyctl **out, const char *faultproxy_path, const char *target_host_port,
                      const char *listen_addr, int listen_port, int *port)
{
    char *argv[MAX_WRAPPER_WORDS + 6];
    char lport[16];
    int argc = 0;
    char *wrapper = NULL;
    int sv[2] = { -1, -1 };
    proxyctl *p = NULL;

    if (out)
        *out = NULL;
    if (!out || !faultproxy_path || !target_host_port) {
        fprintf(stderr, "proxyctl_start: bad arguments\n");
        return -1;
    }
    const char *w = getenv("FAULTPROXY_WRAPPER");
    if (w && *w) {
        wrapper = strdup(w);
        if (!wrapper)
            goto fail_nomem;
        char *save = NULL;
        for (char *t = strtok_r(wrapper, " \t", &save); t && argc < MAX_WRAPPER_WORDS;
             t = strtok_r(NULL, " \t", &save))
            argv[argc++] = t;
    }
    argv[argc++] = (char *)faultproxy_path;
    argv[argc++] = (char *)target_host_port;
    if (listen_addr || listen_port) {
        snprintf(lport, sizeof lport, "%d", listen_port);
        argv[argc++] = lport;
    }
    if (listen_addr)
        argv[argc++] = (char *)listen_addr;
    argv[argc] = NULL;

    p = calloc(1, sizeof *p);
    if (!p)
        goto fail_nomem;
    p->fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        fprintf(stderr, "proxyctl_start: socketpair: %s\n", strerror(errno));
        goto fail;
    }

    /* Everything the child needs is computed before fork: after it, only
     * async-signal-safe calls (the test may be multithreaded). */
    struct rlimit rl;
    long maxfd = 4096;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
        maxfd = (long)rl.rlim_cur;
    sigset_t none;
    sigemptyset(&none);
    pid_t parent = getpid();

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "proxyctl_start: fork: %s\n", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
            _exit(127);
        int fd = fcntl(sv[1], F_DUPFD, 3);   /* not CLOEXEC, not 0 or 1 */
        if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0)
            _exit(127);
        /* The test's own sockets (ZooKeeper connections!) must not live on
         * in the proxy. */
        int closed = -1;
#ifdef SYS_close_range
        closed = (int)syscall(SYS_close_range, 3u, ~0u, 0u);
#endif
        if (closed != 0)
            for (long i = 3; i < maxfd; i++)
                close((int)i);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(argv[0], argv);
        static const char msg[] = "proxyctl: cannot exec the proxy\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        _exit(127);
    }
    close(sv[1]);
    sv[1] = -1;
    p->pid = pid;
    p->fd = sv[0];
    sv[0] = -1;
    int fl = fcntl(p->fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(p->fd, F_SETFL, fl | O_NONBLOCK);
    free(wrapper);
    wrapper = NULL;

    char line[256];
    int r = get_line(p, line, sizeof line, now_ms() + START_TIMEOUT_MS);
    int prt = 0;
    if (r != 0 || sscanf(line, "PORT %d", &prt) != 1 || prt <= 0 || prt > 65535) {
        fprintf(stderr, "proxyctl_start: %s did not report its port (%s)\n", faultproxy_path,
                r == -1 ? "timeout" : r == -2 ? "it exited" : line);
        p->broken = 1;
        (void)proxyctl_stop_status(p);
        return -1;
    }
    p->port = prt;
    if (port)
        *port = prt;
    *out = p;
    return 0;

fail_nomem:
    fprintf(stderr, "proxyctl_start: out of memory\n");
fail:
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    free(p);
    free(wrapper);
    return -1;
}
