/* SPDX-License-Identifier: MIT */
/* The simulated SIM card's PIN1 and PUK1 (sim-card.h). */
#include <stdio.h>
#include <string.h>

#include "sim-card.h"

static bool is_code(const char *s, size_t min, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	return n >= min && n <= max && strspn(s, "0123456789") == n;
}

void sim_card_init(struct sim_card *c, bool present, const char *pin)
{
	bool enabled = pin && *pin;

	*c = (struct sim_card){ .present = present,
				.pin1 = enabled ? SIM_CARD_PIN_ENABLED_NOT_VERIFIED
						: SIM_CARD_PIN_DISABLED,
				.pin_retries = SIM_CARD_PIN_RETRIES,
				.puk_retries = SIM_CARD_PUK_RETRIES };
	snprintf(c->pin, sizeof(c->pin), "%s", enabled ? pin : SIM_CARD_PIN_DEFAULT);
	snprintf(c->puk, sizeof(c->puk), "%s", SIM_CARD_PUK_DEFAULT);
}

bool sim_card_locked(const struct sim_card *c)
{
	return c->present && c->pin1 != SIM_CARD_PIN_DISABLED &&
	       c->pin1 != SIM_CARD_PIN_ENABLED_VERIFIED;
}

bool sim_card_pin_enabled(const struct sim_card *c)
{
	return c->present && c->pin1 != SIM_CARD_PIN_DISABLED;
}

/* What a blocked card answers to any PIN1 command before the code is even compared. */
static enum sim_card_result blocked(const struct sim_card *c)
{
	if (c->pin1 == SIM_CARD_PIN_PERMANENTLY_BLOCKED)
		return SIM_CARD_DEAD;
	if (c->pin1 == SIM_CARD_PIN_BLOCKED)
		return SIM_CARD_BLOCKED;
	return SIM_CARD_OK;
}

/* Compare with PIN1: a wrong one costs a try, the last one blocks PIN1. */
static enum sim_card_result check_pin(struct sim_card *c, const char *pin)
{
	if (strcmp(pin, c->pin) == 0) {
		c->pin_retries = SIM_CARD_PIN_RETRIES;
		return SIM_CARD_OK;
	}
	if (c->pin_retries > 0)
		c->pin_retries--;
	if (c->pin_retries == 0) {
		c->pin1 = SIM_CARD_PIN_BLOCKED;
		return SIM_CARD_BLOCKED;
	}
	return SIM_CARD_WRONG;
}

enum sim_card_result sim_card_verify(struct sim_card *c, const char *pin)
{
	if (!c->present)
		return SIM_CARD_NOT_INSERTED;
	if (!is_code(pin, 4, SIM_CARD_PIN_MAX))
		return SIM_CARD_INVALID_CODE;
	enum sim_card_result r = blocked(c);
	if (r != SIM_CARD_OK)
		return r;
	if (c->pin1 == SIM_CARD_PIN_DISABLED)
		return SIM_CARD_NO_EFFECT;
	r = check_pin(c, pin);
	if (r == SIM_CARD_OK)
		c->pin1 = SIM_CARD_PIN_ENABLED_VERIFIED;
	return r;
}

/* TS 102 221 UNBLOCK PIN: works whether or not PIN1 is blocked; a right PUK sets the new
 * PIN, verified, and resets both counters; the last wrong one blocks the card for good. */
enum sim_card_result sim_card_unblock(struct sim_card *c, const char *puk, const char *new_pin)
{
	if (!c->present)
		return SIM_CARD_NOT_INSERTED;
	if (!is_code(puk, SIM_CARD_PUK_LEN, SIM_CARD_PUK_LEN) ||
	    !is_code(new_pin, 4, SIM_CARD_PIN_MAX))
		return SIM_CARD_INVALID_CODE;
	if (c->pin1 == SIM_CARD_PIN_PERMANENTLY_BLOCKED)
		return SIM_CARD_DEAD;
	if (strcmp(puk, c->puk) != 0) {
		if (c->puk_retries > 0)
			c->puk_retries--;
		if (c->puk_retries == 0) {
			c->pin1 = SIM_CARD_PIN_PERMANENTLY_BLOCKED;
			c->pin_retries = 0;
			return SIM_CARD_DEAD;
		}
		return SIM_CARD_WRONG;
	}
	snprintf(c->pin, sizeof(c->pin), "%s", new_pin);
	c->pin_retries = SIM_CARD_PIN_RETRIES;
	c->puk_retries = SIM_CARD_PUK_RETRIES;
	if (c->pin1 != SIM_CARD_PIN_DISABLED)
		c->pin1 = SIM_CARD_PIN_ENABLED_VERIFIED;
	return SIM_CARD_OK;
}

enum sim_card_result sim_card_set_protection(struct sim_card *c, bool enable, const char *pin)
{
	if (!c->present)
		return SIM_CARD_NOT_INSERTED;
	if (!is_code(pin, 4, SIM_CARD_PIN_MAX))
		return SIM_CARD_INVALID_CODE;
	enum sim_card_result r = blocked(c);
	if (r != SIM_CARD_OK)
		return r;
	if (enable == (c->pin1 != SIM_CARD_PIN_DISABLED))
		return SIM_CARD_NO_EFFECT;
	r = check_pin(c, pin);
	if (r == SIM_CARD_OK)
		c->pin1 = enable ? SIM_CARD_PIN_ENABLED_VERIFIED : SIM_CARD_PIN_DISABLED;
	return r;
}

/* TS 102 221 CHANGE PIN on a disabled PIN1 is refused (69 84): NO_EFFECT here. */
enum sim_card_result sim_card_change(struct sim_card *c, const char *old_pin, const char *new_pin)
{
	if (!c->present)
		return SIM_CARD_NOT_INSERTED;
	if (!is_code(old_pin, 4, SIM_CARD_PIN_MAX) || !is_code(new_pin, 4, SIM_CARD_PIN_MAX))
		return SIM_CARD_INVALID_CODE;
	enum sim_card_result r = blocked(c);
	if (r != SIM_CARD_OK)
		return r;
	if (c->pin1 == SIM_CARD_PIN_DISABLED)
		return SIM_CARD_NO_EFFECT;
	r = check_pin(c, old_pin);
	if (r == SIM_CARD_OK) {
		snprintf(c->pin, sizeof(c->pin), "%s", new_pin);
		c->pin1 = SIM_CARD_PIN_ENABLED_VERIFIED;
	}
	return r;
}
