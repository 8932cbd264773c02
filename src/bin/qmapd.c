/* SPDX-License-Identifier: MIT */
/* qmapd: the daemon. Loads the config, builds the data plane, runs one libev loop. */
#include <errno.h>
#include <ev.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "datapath.h"
#include "log.h"
#include "rtnl.h"

#define QMAPD_DEFAULT_CONFIG "/etc/qmapd/qmapd.conf"

struct qmapd {
	struct ev_loop *loop;
	struct config *config;
	struct rtnl *rtnl;
	struct datapath *dp;
	const char *stats_file;
	ev_signal sig_term;
	ev_signal sig_int;
	ev_signal sig_usr1;
};

static void qmapd_write_stats(struct qmapd *q)
{
	datapath_print_stats(q->dp, stderr, "<6>");
	if (!q->stats_file)
		return;

	/* Write beside and rename, so a reader never sees half a file. */
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", q->stats_file) >= (int)sizeof(tmp))
		return;
	FILE *f = fopen(tmp, "we");
	if (!f) {
		log_warning(errno, "cannot write statistics to %s", tmp);
		return;
	}
	datapath_print_stats(q->dp, f, "");
	if (fclose(f) != 0 || rename(tmp, q->stats_file) < 0)
		log_warning(errno, "cannot write statistics to %s", q->stats_file);
}

static void on_terminate(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	log_info("received %s, shutting down", strsignal(w->signum));
	ev_break(loop, EVBREAK_ALL);
}

static void on_usr1(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	qmapd_write_stats(w->data);
}

static void help(void)
{
	printf("Usage: qmapd [OPTIONS]\n\n"
	       "Userspace QMAP data plane for Qualcomm-style cellular modems.\n\n"
	       "  -c, --config PATH      configuration file (default " QMAPD_DEFAULT_CONFIG ")\n"
	       "      --stats-file PATH  also write counters there on SIGUSR1 and at exit\n"
	       "  -t, --check-config     parse the configuration, report errors, exit\n"
	       "  -v, --verbose          debug logging\n"
	       "  -h, --help             show this help\n"
	       "      --version          show the version\n\n"
	       "Signals: SIGTERM/SIGINT stop, SIGUSR1 prints the counters.\n");
}

static int parse_args(int argc, char **argv, const char **ret_config, const char **ret_stats,
		      bool *ret_check)
{
	enum { OPT_STATS = 0x100, OPT_VERSION };
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "stats-file", required_argument, NULL, OPT_STATS },
		{ "check-config", no_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:tvh", options, NULL)) >= 0) {
		switch (c) {
		case 'c':
			*ret_config = optarg;
			break;
		case OPT_STATS:
			*ret_stats = optarg;
			break;
		case 't':
			*ret_check = true;
			break;
		case 'v':
			log_set_max_level(LOG_DEBUG);
			break;
		case 'h':
			help();
			return 0;
		case OPT_VERSION:
			printf("qmapd " QMAPD_VERSION "\n");
			return 0;
		default:
			fprintf(stderr, "Try 'qmapd --help'.\n");
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "qmapd: unexpected argument '%s'\nTry 'qmapd --help'.\n",
			argv[optind]);
		return -EINVAL;
	}
	return 1;
}

int main(int argc, char **argv)
{
	struct qmapd q = {};
	const char *config_path = QMAPD_DEFAULT_CONFIG;
	bool check_only = false;
	char err[CONFIG_ERROR_MAX];
	int r;

	r = parse_args(argc, argv, &config_path, &q.stats_file, &check_only);
	if (r <= 0)
		return r == 0 ? EXIT_SUCCESS : 2;

	r = config_load_file(config_path, &q.config, err, sizeof(err));
	if (r < 0) {
		log_err(0, "%s", err);
		return EXIT_FAILURE;
	}
	if (check_only) {
		printf("%s: OK\n", config_path);
		config_free(q.config);
		return EXIT_SUCCESS;
	}

	/* The data path writes to devices and sockets that may go away: never die of SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);

	q.loop = ev_default_loop(EVFLAG_AUTO | EVFLAG_SIGNALFD);
	if (!q.loop) {
		log_err(0, "cannot create the event loop");
		goto finish;
	}
	r = rtnl_open(&q.rtnl);
	if (r < 0) {
		log_err(r, "cannot open rtnetlink");
		goto finish;
	}
	r = datapath_new(q.loop, q.rtnl, q.config, &q.dp);
	if (r < 0)
		goto finish;

	ev_signal_init(&q.sig_term, on_terminate, SIGTERM);
	ev_signal_init(&q.sig_int, on_terminate, SIGINT);
	ev_signal_init(&q.sig_usr1, on_usr1, SIGUSR1);
	q.sig_usr1.data = &q;
	ev_signal_start(q.loop, &q.sig_term);
	ev_signal_start(q.loop, &q.sig_int);
	ev_signal_start(q.loop, &q.sig_usr1);

	r = datapath_start(q.dp);
	if (r < 0)
		goto finish;
	log_info("qmapd %s: running with %u mux(es) on %s", QMAPD_VERSION, q.dp->n_mux,
		 q.config->device.device);

	ev_run(q.loop, 0);
	qmapd_write_stats(&q);
	r = 0;

finish:
	q.dp = datapath_free(q.dp);
	q.rtnl = rtnl_close(q.rtnl);
	config_free(q.config);
	if (q.loop)
		ev_loop_destroy(q.loop);
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
