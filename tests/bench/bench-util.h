/* SPDX-License-Identifier: MIT */
/*
 * Small helpers the benchmark programs share: clocks, medians, sysctls, interface counters.
 * Header-only so that each benchmark stays one translation unit linked to the datapath library.
 */
#ifndef QMAPD_BENCH_UTIL_H
#define QMAPD_BENCH_UTIL_H

#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rtnl.h"

static inline double bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * CPU time of the calling thread, user + system: what the benchmarked code cost its core,
 * whatever else the shared machine ran meanwhile (time spent preempted is not counted).
 */
static inline double bench_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n); sorts v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline void bench_write_sysctl(const char *path, const char *value)
{
	FILE *f = fopen(path, "we");
	if (f) {
		fputs(value, f);
		fclose(f);
	}
}

/* Pin the calling thread (not the whole process) to one CPU. */
static inline int bench_pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Run a shell command built like printf (ip(8) setup); 0 if it exited 0, else -1, said why. */
static inline int __attribute__((format(printf, 1, 2))) bench_sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(cmd)) {
		fprintf(stderr, "command too long: %s...\n", cmd);
		return -1;
	}
	int st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		return -1;
	}
	return 0;
}

/*
 * Write `value` into a sysfs file (path below /sys) as seen from the network namespace ns_fd:
 * sysfs shows the namespace of whoever mounted it, so a child enters the namespace, mounts a
 * private sysfs over /sys and writes there. Returns 0 or -1.
 */
static inline int bench_netns_sysfs_write(int ns_fd, const char *path, const char *value)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd;
		if (setns(ns_fd, CLONE_NEWNET) < 0 || unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("sysfs", "/sys", "sysfs", 0, NULL) < 0)
			_exit(1);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, value, strlen(value)) != (ssize_t)strlen(value))
			_exit(2);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "cannot write '%s' to %s in the namespace\n", value, path);
		return -1;
	}
	return 0;
}

/*
 * A device's counters from /proc/net/dev, which shows the caller's network namespace (sysfs
 * would show the namespace that mounted it). Seen from the device: tx = what the kernel queued
 * for the reader of the TUN/TAP, tx_dropped = what it dropped because the queue was full.
 */
struct bench_ifstats {
	uint64_t rx_packets, rx_dropped, tx_packets, tx_dropped;
};

static inline int bench_ifstats(const char *ifname, struct bench_ifstats *ret)
{
	char line[512];
	size_t n = strlen(ifname);
	FILE *f = fopen("/proc/net/dev", "re");
	int r = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *p = line + strspn(line, " ");
		if (strncmp(p, ifname, n) != 0 || p[n] != ':')
			continue;
		unsigned long long v[16];
		if (sscanf(p + n + 1,
			   "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
			   "%llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			   &v[10], &v[11], &v[12], &v[13], &v[14], &v[15]) == 16) {
			ret->rx_packets = v[1];
			ret->rx_dropped = v[3];
			ret->tx_packets = v[9];
			ret->tx_dropped = v[11];
			r = 0;
		}
	}
	fclose(f);
	return r;
}

/*
 * Leave the caller's network namespace for a new one of its own with loopback up, and quiet
 * qmapd's logging. Returns 0; 77 (skip) when not root; 1 after saying on stderr what failed.
 */
static inline int bench_enter_netns(const char *prog, struct rtnl **rtnl)
{
	if (geteuid() != 0) {
		fprintf(stderr, "%s: needs root (network namespace, TUN/TAP)\n", prog);
		return 77;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		perror("unshare(CLONE_NEWNET)");
		return 1;
	}
	log_set_max_level(LOG_WARNING);
	if (rtnl_open(rtnl) < 0 || rtnl_link_set(*rtnl, 1, 0, true, false) < 0) {
		fprintf(stderr, "cannot set up rtnetlink/loopback\n");
		return 1;
	}
	return 0;
}

#endif
