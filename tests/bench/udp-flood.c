/* SPDX-License-Identifier: MIT */
/*
 * qmapd-bench-udp-flood: UDP datagrams to one destination from many source ports, for
 * tests/bench/headroom.sh's per-packet traffic. Each datagram of a round goes out from a
 * different socket (a different flow), so neither qmapd's GRO (at most GRO_MAX_FLOWS held,
 * merging only consecutive segments of a flow) nor the kernel can coalesce them: every packet
 * takes the per-packet path, as many small flows do in production.
 * Usage: qmapd-bench-udp-flood -d IPV4 [-p PORT] [-f FLOWS] [-s PAYLOAD] [-t SECONDS]
 * Prints "sent=N errors=N seconds=S" at the end. Send errors (ENOBUFS from a full TUN queue,
 * ICMP-induced ECONNREFUSED) are counted, not fatal: the receiver's counters are the figure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench-util.h"

int main(int argc, char **argv)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(9) };
	unsigned flows = 256, payload = 1000;
	double seconds = 5;
	int opt;

	while ((opt = getopt(argc, argv, "d:p:f:s:t:")) != -1) {
		switch (opt) {
		case 'd':
			if (inet_pton(AF_INET, optarg, &dst.sin_addr) != 1) {
				fprintf(stderr, "bad address %s\n", optarg);
				return 2;
			}
			break;
		case 'p':
			dst.sin_port = htons((uint16_t)atoi(optarg));
			break;
		case 'f':
			flows = (unsigned)atoi(optarg);
			break;
		case 's':
			payload = (unsigned)atoi(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s -d IPV4 [-p PORT] [-f FLOWS] [-s PAYLOAD] "
				"[-t SECONDS]\n",
				argv[0]);
			return 2;
		}
	}
	if (!dst.sin_addr.s_addr || flows < 1 || flows > 4096 || payload < 1 || payload > 1472) {
		fprintf(stderr, "need -d, 1..4096 flows, 1..1472 bytes of payload\n");
		return 2;
	}

	int *fd = calloc(flows, sizeof(*fd));
	char *buf = calloc(1, payload);
	if (!fd || !buf)
		return 1;
	for (unsigned i = 0; i < flows; i++) {
		/* Connected: the kernel picks a distinct ephemeral source port per socket. */
		fd[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&dst, sizeof(dst)) < 0) {
			perror("socket/connect");
			return 1;
		}
	}

	uint64_t sent = 0, errors = 0;
	double start = bench_now_ns(), end = start + seconds * 1e9, now = start;
	while (now < end) {
		/* A round over every flow between clock reads keeps the clock off the profile. */
		for (unsigned i = 0; i < flows; i++) {
			memcpy(buf, &sent, sizeof(sent) < payload ? sizeof(sent) : payload);
			if (send(fd[i], buf, payload, 0) == (ssize_t)payload)
				sent++;
			else
				errors++;
		}
		now = bench_now_ns();
	}
	printf("sent=%llu errors=%llu seconds=%.3f\n", (unsigned long long)sent,
	       (unsigned long long)errors, (now - start) / 1e9);
	for (unsigned i = 0; i < flows; i++)
		close(fd[i]);
	free(fd);
	free(buf);
	return 0;
}
