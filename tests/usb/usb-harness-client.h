/* SPDX-License-Identifier: MIT */
/*
 * Talking to a running tests/usb/usb-harness from a C test: commands go to its FIFO dir/usb.ctl,
 * counters come from dir/usb.stats, which it rewrites on the command "stats".
 */
#ifndef QMAPD_TEST_USB_HARNESS_CLIENT_H
#define QMAPD_TEST_USB_HARNESS_CLIENT_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One command line to the harness; the test cannot go on without it (exit 1). */
static inline void usb_harness_send(const char *dir, const char *cmd)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/usb.ctl", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || dprintf(fd, "%s\n", cmd) < 0) {
		fprintf(stderr, "cannot send '%s' to the harness: %m\n", cmd);
		exit(1);
	}
	close(fd);
}

/* The counter `key` (e.g. "1.class_sequence") as text in buf; false (buf "") if absent. */
static inline bool usb_harness_stat(const char *dir, const char *key, char *buf, size_t len)
{
	char path[512], line[512];
	size_t klen = strlen(key);
	bool found = false;
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/usb.stats", dir);
	unlink(path);
	usb_harness_send(dir, "stats");
	for (int i = 0; i < 100 && access(path, F_OK) < 0; i++)
		usleep(50000);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == '=') {
			const char *value = line + klen + 1;
			size_t n = strcspn(value, "\n");

			if (n >= len) /* cut to fit, as snprintf would */
				n = len - 1;
			memcpy(buf, value, n);
			buf[n] = '\0';
			found = true;
		}
	fclose(f);
	return found;
}

#endif
