/* SPDX-License-Identifier: MIT */
/* A link's DNS servers as resolv.conf lines, for resolvconf or dnsmasq (dns.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dns-internal.h"
#include "macro.h"

#define DNS_FILE_MODE 0644
#define DNS_DIR_MODE  0755

static int file_path(char *buf, size_t len, const char *dir, const struct dns_link *l,
		     const char *suffix)
{
	int n = snprintf(buf, len, "%s/%s.conf%s", dir, l->ifname, suffix);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int dns_file_write(const char *dir, const struct dns_link *l)
{
	char path[256], tmp[sizeof(path) + 4], text[INET6_ADDRSTRLEN];
	int r;

	if (file_path(path, sizeof(path), dir, l, "") < 0 ||
	    file_path(tmp, sizeof(tmp), dir, l, ".tmp") < 0)
		return -ENAMETOOLONG;
	/* The umask of the service (0077) would keep dnsmasq out: modes are set, not asked. */
	if (mkdir(dir, DNS_DIR_MODE) == 0)
		(void)chmod(dir, DNS_DIR_MODE);
	else if (errno != EEXIST)
		return -errno;

	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, DNS_FILE_MODE);
	if (fd < 0)
		return -errno;
	FILE *f = fdopen(fd, "w");
	if (!f)
		return -errno;
	fd = -1; /* the FILE owns it */
	fprintf(f, "# DNS servers the network gave %s (qmapd); removed when its session ends.\n",
		l->ifname);
	for (unsigned i = 0; i < l->n_servers; i++) {
		inet_ntop(l->servers[i].family, &l->servers[i].addr, text, sizeof(text));
		fprintf(f, "nameserver %s\n", text);
	}
	r = fchmod(fileno(f), DNS_FILE_MODE) < 0 ? -errno : 0;
	if (fflush(f) != 0 && r == 0)
		r = -errno;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int dns_file_remove(const char *dir, const struct dns_link *l)
{
	char path[256];

	if (file_path(path, sizeof(path), dir, l, "") < 0)
		return -ENAMETOOLONG;
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}
