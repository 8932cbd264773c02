/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <net/if.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "rtnl.h"

/*
 * Requests are a few hundred bytes; replies are one ack or one RTM_NEWLINK (a few KiB with
 * IFLA_AF_SPEC even when stats are skipped). MNL_SOCKET_BUFFER_SIZE is only 4 KiB on 4 KiB
 * page systems, and a reply larger than the buffer is cut (MSG_TRUNC), so never go below
 * 16 KiB.
 */
#define RTNL_BUFFER_MIN 16384
/* The largest request built here (route: rtmsg + 3 attributes) is under 100 bytes. */
#define RTNL_REQUEST_MAX 256

struct rtnl {
	struct mnl_socket *nl;
	unsigned seq;
	uint32_t portid;
	size_t buf_size;
	char buf[];
};

/* What one request's replies carry back to rtnl_request(). */
struct rtnl_reply {
	unsigned seq;	  /* of the request; replies to an abandoned earlier one are skipped */
	int error;	  /* from NLMSG_ERROR: 0 or -errno */
	bool acked;	  /* NLMSG_ERROR seen (the ack ends every request) */
	char extack[256]; /* NLMSGERR_ATTR_MSG, for the debug log; longer texts are cut */
	mnl_cb_t data_cb;
	void *data;
};

int rtnl_open(struct rtnl **ret)
{
	size_t size = MNL_SOCKET_BUFFER_SIZE;
	struct rtnl *rtnl;
	int one = 1;

	if (!ret)
		return -EINVAL;
	if (size < RTNL_BUFFER_MIN)
		size = RTNL_BUFFER_MIN;

	rtnl = calloc(1, sizeof(*rtnl) + size);
	if (!rtnl)
		return -ENOMEM;
	rtnl->buf_size = size;

	rtnl->nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
	if (!rtnl->nl) {
		int r = negative_errno();
		free(rtnl);
		return r;
	}
	if (mnl_socket_bind(rtnl->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int r = negative_errno();
		rtnl_close(rtnl);
		return r;
	}
	/*
	 * Ask for the kernel's error text (extack) and do not have the request echoed back in
	 * error acks. Both are optional: an older kernel just leaves them out.
	 */
	(void)mnl_socket_setsockopt(rtnl->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)mnl_socket_setsockopt(rtnl->nl, NETLINK_CAP_ACK, &one, sizeof(one));

	rtnl->portid = mnl_socket_get_portid(rtnl->nl);
	/* A per-process start value keeps replies of a previous process's socket apart. */
	rtnl->seq = (unsigned)time(NULL);
	*ret = rtnl;
	return 0;
}

struct rtnl *rtnl_close(struct rtnl *rtnl)
{
	if (!rtnl)
		return NULL;
	if (rtnl->nl)
		mnl_socket_close(rtnl->nl);
	free(rtnl);
	return NULL;
}

static int rtnl_extack_attr_cb(const struct nlattr *attr, void *data)
{
	struct rtnl_reply *reply = data;

	if (mnl_attr_get_type(attr) != NLMSGERR_ATTR_MSG)
		return MNL_CB_OK;
	if (mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) < 0)
		return MNL_CB_OK; /* a malformed text is not worth failing the request for */
	snprintf(reply->extack, sizeof(reply->extack), "%s", mnl_attr_get_str(attr));
	return MNL_CB_OK;
}

static int rtnl_error_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rtnl_reply *reply = data;
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	size_t offset;

	if (nlh->nlmsg_seq != reply->seq)
		return MNL_CB_OK;
	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*err))) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	/* The kernel sends a positive errno only by mistake; treat it like a negative one. */
	reply->error = err->error > 0 ? -err->error : err->error;
	reply->acked = true;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return MNL_CB_STOP;
	/* The TLVs follow the echoed request unless the kernel capped it (NETLINK_CAP_ACK). */
	offset = sizeof(*err);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		offset += err->msg.nlmsg_len - sizeof(struct nlmsghdr);
	if (offset < mnl_nlmsg_get_payload_len(nlh))
		(void)mnl_attr_parse_payload((const char *)err + offset,
					     mnl_nlmsg_get_payload_len(nlh) - offset,
					     rtnl_extack_attr_cb, reply);
	return MNL_CB_STOP;
}

static int rtnl_done_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rtnl_reply *reply = data;

	return nlh->nlmsg_seq == reply->seq ? MNL_CB_STOP : MNL_CB_OK;
}

static int rtnl_data_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rtnl_reply *reply = data;

	if (!reply->data_cb || nlh->nlmsg_seq != reply->seq)
		return MNL_CB_OK;
	return reply->data_cb(nlh, reply->data);
}

/*
 * Send one request with NLM_F_ACK and read until its ack. data_cb sees every non-control
 * reply (RTM_GETLINK's RTM_NEWLINK). Returns 0, the kernel's -errno, or -errno of the
 * socket or of data_cb (which sets errno and returns MNL_CB_ERROR).
 */
static int rtnl_request(struct rtnl *rtnl, struct nlmsghdr *nlh, const char *what, mnl_cb_t data_cb,
			void *data)
{
	static mnl_cb_t ctl_cb[NLMSG_MIN_TYPE] = {
		[NLMSG_ERROR] = rtnl_error_cb,
		[NLMSG_DONE] = rtnl_done_cb,
	};
	struct rtnl_reply reply = { .data_cb = data_cb, .data = data };
	int r;

	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	/* 0 would match any reply in mnl_cb_run2(). */
	if (++rtnl->seq == 0)
		rtnl->seq = 1;
	reply.seq = nlh->nlmsg_seq = rtnl->seq;

	if (mnl_socket_sendto(rtnl->nl, nlh, nlh->nlmsg_len) < 0) {
		return log_debug_errno(negative_errno(), "rtnl: sending %s", what);
	}

	do {
		ssize_t n = mnl_socket_recvfrom(rtnl->nl, rtnl->buf, rtnl->buf_size);
		if (n < 0) {
			return log_debug_errno(negative_errno(), "rtnl: reading reply to %s", what);
		}
		/*
		 * Sequence 0 turns off libmnl's check, which would fail the whole read on a
		 * late reply to an abandoned request; the callbacks skip those instead.
		 */
		r = mnl_cb_run2(rtnl->buf, (size_t)n, 0, rtnl->portid, rtnl_data_cb, &reply, ctl_cb,
				MNL_ARRAY_SIZE(ctl_cb));
		if (r < 0) {
			return log_debug_errno(negative_errno(), "rtnl: parsing reply to %s", what);
		}
	} while (r > 0 && !reply.acked);

	if (!reply.acked) {
		/* NLMSG_DONE or a data callback stopped early; the ack is still queued. */
		log_debug("rtnl: %s: reply ended without an ack", what);
		return -EBADMSG;
	}
	if (reply.error < 0)
		log_debug("rtnl: %s: %s%s%s", what, strerror(-reply.error),
			  reply.extack[0] ? ": " : "", reply.extack);
	else if (reply.extack[0])
		log_debug("rtnl: %s: kernel warning: %s", what, reply.extack);
	return reply.error;
}

static struct nlmsghdr *rtnl_put_header(struct rtnl *rtnl, uint16_t type, uint16_t flags)
{
	struct nlmsghdr *nlh;

	/* Requests are small and built in the (zeroed) reply buffer before sending. */
	memset(rtnl->buf, 0, RTNL_REQUEST_MAX);
	nlh = mnl_nlmsg_put_header(rtnl->buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	return nlh;
}

int rtnl_link_set(struct rtnl *rtnl, int ifindex, uint32_t mtu, bool up, bool noarp)
{
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	char what[64];

	if (!rtnl || ifindex <= 0)
		return -EINVAL;

	nlh = rtnl_put_header(rtnl, RTM_NEWLINK, 0);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	ifi->ifi_change = IFF_UP | IFF_NOARP;
	ifi->ifi_flags = (up ? IFF_UP : 0) | (noarp ? IFF_NOARP : 0);
	/* The kernel applies IFLA_MTU before the flags, so the link comes up with its MTU. */
	if (mtu != 0)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);

	snprintf(what, sizeof(what), "link %d set mtu %u%s%s", ifindex, mtu, up ? " up" : " down",
		 noarp ? " noarp" : "");
	return rtnl_request(rtnl, nlh, what, NULL, NULL);
}

struct link_mac {
	uint8_t mac[6];
	bool found;
};

static int rtnl_link_mac_attr_cb(const struct nlattr *attr, void *data)
{
	struct link_mac *lm = data;

	if (mnl_attr_get_type(attr) != IFLA_ADDRESS)
		return MNL_CB_OK;
	/* A TUN has no link-layer address; anything but 6 bytes is not Ethernet. */
	if (mnl_attr_get_payload_len(attr) != sizeof(lm->mac))
		return MNL_CB_OK;
	memcpy(lm->mac, mnl_attr_get_payload(attr), sizeof(lm->mac));
	lm->found = true;
	return MNL_CB_OK;
}

static int rtnl_link_mac_cb(const struct nlmsghdr *nlh, void *data)
{
	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	if (mnl_attr_parse(nlh, sizeof(struct ifinfomsg), rtnl_link_mac_attr_cb, data) < 0) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

int rtnl_link_get_mac(struct rtnl *rtnl, int ifindex, uint8_t mac[6])
{
	struct link_mac lm = { 0 };
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	char what[64];
	int r;

	if (!rtnl || ifindex <= 0 || !mac)
		return -EINVAL;

	nlh = rtnl_put_header(rtnl, RTM_GETLINK, 0);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	/* Statistics are most of a link message and not needed here. */
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);

	snprintf(what, sizeof(what), "link %d get address", ifindex);
	r = rtnl_request(rtnl, nlh, what, rtnl_link_mac_cb, &lm);
	if (r < 0)
		return r;
	if (!lm.found) {
		log_debug("rtnl: %s: no Ethernet address", what);
		return -ENODATA;
	}
	memcpy(mac, lm.mac, sizeof(lm.mac));
	return 0;
}

struct link_alias {
	char *buf;
	size_t len;
	int ifindex;
};

static int rtnl_link_alias_attr_cb(const struct nlattr *attr, void *data)
{
	struct link_alias *la = data;

	if (mnl_attr_get_type(attr) != IFLA_IFALIAS)
		return MNL_CB_OK;
	/* The kernel sends the alias NUL-terminated; anything else is not ours. */
	if (mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) < 0)
		return MNL_CB_OK;
	snprintf(la->buf, la->len, "%s", mnl_attr_get_str(attr));
	return MNL_CB_OK;
}

static int rtnl_link_alias_cb(const struct nlmsghdr *nlh, void *data)
{
	struct link_alias *la = data;
	const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	la->ifindex = ifi->ifi_index;
	if (mnl_attr_parse(nlh, sizeof(struct ifinfomsg), rtnl_link_alias_attr_cb, data) < 0) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

int rtnl_link_get_alias(struct rtnl *rtnl, const char *ifname, char *buf, size_t len,
			int *ret_ifindex)
{
	struct link_alias la = { .buf = buf, .len = len };
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	char what[64];
	int r;

	if (!rtnl || !ifname || !ifname[0] || strlen(ifname) >= IFNAMSIZ || !buf || len == 0)
		return -EINVAL;
	buf[0] = '\0';
	nlh = rtnl_put_header(rtnl, RTM_GETLINK, 0);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
	mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
	snprintf(what, sizeof(what), "link %s get alias", ifname);
	r = rtnl_request(rtnl, nlh, what, rtnl_link_alias_cb, &la);
	if (r < 0)
		return r;
	if (la.ifindex <= 0)
		return -ENODEV;
	if (ret_ifindex)
		*ret_ifindex = la.ifindex;
	return 0;
}

int rtnl_link_set_alias(struct rtnl *rtnl, int ifindex, const char *alias)
{
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	char what[64];

	if (!rtnl || ifindex <= 0 || !alias)
		return -EINVAL;
	nlh = rtnl_put_header(rtnl, RTM_SETLINK, 0);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	mnl_attr_put_strz(nlh, IFLA_IFALIAS, alias);
	snprintf(what, sizeof(what), "link %d set alias", ifindex);
	return rtnl_request(rtnl, nlh, what, NULL, NULL);
}

struct link_rx {
	uint64_t rx_packets;
	uint64_t tx_dropped;
	bool found;
};

static int rtnl_link_stats_attr_cb(const struct nlattr *attr, void *data)
{
	struct link_rx *lr = data;
	struct rtnl_link_stats64 st;

	if (mnl_attr_get_type(attr) != IFLA_STATS64 || mnl_attr_get_payload_len(attr) < sizeof(st))
		return MNL_CB_OK;
	memcpy(&st, mnl_attr_get_payload(attr), sizeof(st)); /* netlink aligns to 4 only */
	lr->rx_packets = st.rx_packets;
	lr->tx_dropped = st.tx_dropped;
	lr->found = true;
	return MNL_CB_OK;
}

static int rtnl_link_stats_cb(const struct nlmsghdr *nlh, void *data)
{
	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	if (mnl_attr_parse(nlh, sizeof(struct ifinfomsg), rtnl_link_stats_attr_cb, data) < 0) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	return MNL_CB_OK;
}

int rtnl_link_get_rx_packets(struct rtnl *rtnl, int ifindex, uint64_t *ret)
{
	uint64_t tx_dropped;

	return rtnl_link_get_counters(rtnl, ifindex, ret, &tx_dropped);
}

int rtnl_link_get_counters(struct rtnl *rtnl, int ifindex, uint64_t *ret_rx_packets,
			   uint64_t *ret_tx_dropped)
{
	struct link_rx lr = { 0 };
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	char what[64];
	int r;

	if (!rtnl || ifindex <= 0 || !ret_rx_packets || !ret_tx_dropped)
		return -EINVAL;
	nlh = rtnl_put_header(rtnl, RTM_GETLINK, 0);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	snprintf(what, sizeof(what), "link %d get stats", ifindex);
	r = rtnl_request(rtnl, nlh, what, rtnl_link_stats_cb, &lr);
	if (r < 0)
		return r;
	if (!lr.found)
		return -ENODATA;
	*ret_rx_packets = lr.rx_packets;
	*ret_tx_dropped = lr.tx_dropped;
	return 0;
}

int rtnl_link_get_gro(struct rtnl *rtnl, const char *ifname, bool *ret)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_GGRO };
	struct ifreq ifr = { .ifr_data = (void *)&ev };

	if (!rtnl || !ifname || strlen(ifname) >= sizeof(ifr.ifr_name) || !ret)
		return -EINVAL;
	memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
	/* Any socket reaches dev_ioctl() for SIOCETHTOOL, netlink ones included. */
	if (ioctl(mnl_socket_get_fd(rtnl->nl), SIOCETHTOOL, &ifr) < 0)
		return negative_errno();
	*ret = ev.data != 0;
	return 0;
}

int rtnl_link_set_xdp(struct rtnl *rtnl, int ifindex, int prog_fd)
{
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *nest;
	char what[64];

	if (!rtnl || ifindex <= 0 || prog_fd < -1)
		return -EINVAL;

	nlh = rtnl_put_header(rtnl, RTM_SETLINK, 0);
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	nest = mnl_attr_nest_start(nlh, IFLA_XDP);
	mnl_attr_put_u32(nlh, IFLA_XDP_FD, (uint32_t)prog_fd);
	/* Native mode: only the driver's own XDP hook makes tun build the skb with headroom. */
	mnl_attr_put_u32(nlh, IFLA_XDP_FLAGS, XDP_FLAGS_DRV_MODE);
	mnl_attr_nest_end(nlh, nest);

	if (prog_fd >= 0)
		snprintf(what, sizeof(what), "link %d attach xdp", ifindex);
	else
		snprintf(what, sizeof(what), "link %d detach xdp", ifindex);
	return rtnl_request(rtnl, nlh, what, NULL, NULL);
}

static int rtnl_prefix_check(const struct config_prefix *p)
{
	if (!p)
		return -EINVAL;
	switch (p->family) {
	case AF_INET:
		return p->prefixlen <= 32 ? 0 : -EINVAL;
	case AF_INET6:
		return p->prefixlen <= 128 ? 0 : -EINVAL;
	default:
		return -EAFNOSUPPORT;
	}
}

static size_t rtnl_prefix_addr_len(const struct config_prefix *p)
{
	return p->family == AF_INET ? sizeof(p->addr.v4) : sizeof(p->addr.v6);
}

static void rtnl_prefix_format(const struct config_prefix *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(p->family, &p->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, len, "%s/%u", a, p->prefixlen);
}

static int rtnl_addr_change(struct rtnl *rtnl, int ifindex, const struct config_prefix *addr,
			    bool add)
{
	char what[INET6_ADDRSTRLEN + 64], p[INET6_ADDRSTRLEN + 8];
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	int r;

	if (!rtnl || ifindex <= 0)
		return -EINVAL;
	r = rtnl_prefix_check(addr);
	if (r < 0)
		return r;

	if (add)
		nlh = rtnl_put_header(rtnl, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
	else
		nlh = rtnl_put_header(rtnl, RTM_DELADDR, 0);
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)addr->family;
	ifa->ifa_prefixlen = addr->prefixlen;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (uint32_t)ifindex;

	if (addr->family == AF_INET) {
		/* Point-to-point semantics are not wanted: local == peer address. */
		mnl_attr_put(nlh, IFA_LOCAL, rtnl_prefix_addr_len(addr), &addr->addr);
		mnl_attr_put(nlh, IFA_ADDRESS, rtnl_prefix_addr_len(addr), &addr->addr);
	} else {
		mnl_attr_put(nlh, IFA_ADDRESS, rtnl_prefix_addr_len(addr), &addr->addr);
		/*
		 * The network assigned the address; duplicate detection would only keep it
		 * tentative (unusable) for a second.
		 */
		if (add) {
			ifa->ifa_flags = IFA_F_NODAD;
			mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
		}
	}

	rtnl_prefix_format(addr, p, sizeof(p));
	snprintf(what, sizeof(what), "link %d %s address %s", ifindex, add ? "add" : "delete", p);
	return rtnl_request(rtnl, nlh, what, NULL, NULL);
}

int rtnl_addr_add(struct rtnl *rtnl, int ifindex, const struct config_prefix *addr)
{
	return rtnl_addr_change(rtnl, ifindex, addr, true);
}

int rtnl_addr_del(struct rtnl *rtnl, int ifindex, const struct config_prefix *addr)
{
	return rtnl_addr_change(rtnl, ifindex, addr, false);
}

int rtnl_route_add(struct rtnl *rtnl, int ifindex, const struct config_prefix *dst, uint32_t metric)
{
	char what[INET6_ADDRSTRLEN + 64], p[INET6_ADDRSTRLEN + 8];
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	int r;

	if (!rtnl || ifindex <= 0)
		return -EINVAL;
	r = rtnl_prefix_check(dst);
	if (r < 0)
		return r;

	nlh = rtnl_put_header(rtnl, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = (uint8_t)dst->family;
	rtm->rtm_dst_len = dst->prefixlen;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;

	/* A default route (prefix length 0) carries no destination. */
	if (dst->prefixlen > 0)
		mnl_attr_put(nlh, RTA_DST, rtnl_prefix_addr_len(dst), &dst->addr);
	mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
	mnl_attr_put_u32(nlh, RTA_PRIORITY, metric);

	rtnl_prefix_format(dst, p, sizeof(p));
	snprintf(what, sizeof(what), "link %d add route %s metric %u", ifindex, p, metric);
	return rtnl_request(rtnl, nlh, what, NULL, NULL);
}
