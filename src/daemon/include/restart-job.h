/* SPDX-License-Identifier: MIT */
/* Restart or stop? systemd's job for our unit says (restart-job.c). */
#ifndef QMAPD_RESTART_JOB_H
#define QMAPD_RESTART_JOB_H

#include <stdbool.h>

/*
 * True when systemd runs a restart job for the unit this process belongs to; false when not
 * run by systemd, for any other job (stop, shutdown) and on any error. Blocks up to a second
 * or so per call: for the SIGTERM handler only.
 */
bool restart_job_pending(void);

#endif
