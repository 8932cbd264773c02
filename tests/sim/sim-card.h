/* SPDX-License-Identifier: MIT */
/*
 * The simulated SIM card's PIN1 and PUK1 (TS 102 221 9.5 / TS 31.102), one for the QMI and
 * the MBIM face of qmapd-sim: PIN1 enabled or not, verified or not, 3 PIN tries and 10 PUK
 * tries as a fresh card has them; three wrong PINs block PIN1, a right PUK with a new PIN
 * opens it again and resets both counters, ten wrong PUKs block the card for good. Pure:
 * sim-qmi.c and sim-mbim.c put the outcome into their protocol's answers.
 */
#ifndef QMAPD_SIM_CARD_H
#define QMAPD_SIM_CARD_H

#include <stdbool.h>

#define SIM_CARD_PIN_MAX     8 /* TS 31.102: PINs are 4..8 digits */
#define SIM_CARD_PUK_LEN     8 /* TS 102 221: the unblock key is 8 digits */
#define SIM_CARD_PIN_RETRIES 3
#define SIM_CARD_PUK_RETRIES 10
/* PIN1 of a card started without --sim-pin (PIN1 disabled; EnablePin takes this one), and
 * the PUK of every simulated card. */
#define SIM_CARD_PIN_DEFAULT "1234"
#define SIM_CARD_PUK_DEFAULT "12345678"

enum sim_card_pin_state {
	SIM_CARD_PIN_DISABLED,
	SIM_CARD_PIN_ENABLED_NOT_VERIFIED,
	SIM_CARD_PIN_ENABLED_VERIFIED,
	SIM_CARD_PIN_BLOCKED,		  /* PUK1 needed */
	SIM_CARD_PIN_PERMANENTLY_BLOCKED, /* PUK1 used up: no code opens the card */
};

enum sim_card_result {
	SIM_CARD_OK,
	SIM_CARD_WRONG,	       /* a try less (of PIN1, or PUK1 for unblock) */
	SIM_CARD_BLOCKED,      /* PIN1 is blocked (now or already): PUK1 needed */
	SIM_CARD_DEAD,	       /* the card is blocked for good (now or already) */
	SIM_CARD_NO_EFFECT,    /* nothing to do: PIN1 disabled, or already as asked */
	SIM_CARD_NOT_INSERTED, /* no card */
	SIM_CARD_INVALID_CODE, /* not 4..8 digits (PUK: 8): never reaches the card */
};

struct sim_card {
	bool present;
	enum sim_card_pin_state pin1;
	char pin[SIM_CARD_PIN_MAX + 1];
	char puk[SIM_CARD_PUK_LEN + 1];
	unsigned pin_retries, puk_retries;
};

/* present: a card is in; pin: PIN1 enabled (locked at start) with it, "" or NULL disabled
 * (its PIN then SIM_CARD_PIN_DEFAULT). */
void sim_card_init(struct sim_card *c, bool present, const char *pin);
/* PIN1 keeps the PIN-protected files closed (enabled and not verified, or blocked). */
bool sim_card_locked(const struct sim_card *c);
/* PIN1 is enabled (ModemManager's SIM facility lock). */
bool sim_card_pin_enabled(const struct sim_card *c);

enum sim_card_result sim_card_verify(struct sim_card *c, const char *pin);
enum sim_card_result sim_card_unblock(struct sim_card *c, const char *puk, const char *new_pin);
enum sim_card_result sim_card_set_protection(struct sim_card *c, bool enable, const char *pin);
enum sim_card_result sim_card_change(struct sim_card *c, const char *old_pin, const char *new_pin);

#endif
