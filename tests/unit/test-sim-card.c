/* SPDX-License-Identifier: MIT */
/*
 * qmapd-sim's SIM card (sim-card.h): PIN1 verified, three wrong PINs block it and a right
 * PIN then no longer opens it, a wrong PUK costs a PUK try, a right PUK sets the new PIN
 * and resets both counters, ten wrong PUKs block the card for good; PIN1 protection on and
 * off and the change of PIN1 need the right PIN and cost a try when it is wrong; malformed
 * codes never count; a missing card answers nothing else.
 */
#include <stdbool.h>
#include <string.h>

#include "sim-card.h"
#include "test-case.h"

TEST(verify_and_block)
{
	struct sim_card c;

	sim_card_init(&c, true, "2468");
	EXPECT_TRUE(sim_card_locked(&c) && sim_card_pin_enabled(&c));
	EXPECT_EQ(sim_card_verify(&c, "12"), SIM_CARD_INVALID_CODE);
	EXPECT_EQ(sim_card_verify(&c, "123456789"), SIM_CARD_INVALID_CODE);
	EXPECT_EQ(c.pin_retries, SIM_CARD_PIN_RETRIES);
	EXPECT_EQ(sim_card_verify(&c, "0000"), SIM_CARD_WRONG);
	EXPECT_EQ(c.pin_retries, 2);
	EXPECT_EQ(sim_card_verify(&c, "2468"), SIM_CARD_OK);
	EXPECT_EQ(c.pin_retries, 3);
	EXPECT_TRUE(!sim_card_locked(&c));

	sim_card_init(&c, true, "2468");
	EXPECT_EQ(sim_card_verify(&c, "0000"), SIM_CARD_WRONG);
	EXPECT_EQ(sim_card_verify(&c, "0000"), SIM_CARD_WRONG);
	EXPECT_EQ(sim_card_verify(&c, "0000"), SIM_CARD_BLOCKED);
	EXPECT_EQ(c.pin1, SIM_CARD_PIN_BLOCKED);
	EXPECT_EQ(c.pin_retries, 0);
	EXPECT_EQ(sim_card_verify(&c, "2468"), SIM_CARD_BLOCKED);
	EXPECT_TRUE(sim_card_locked(&c));
}

TEST(unblock)
{
	struct sim_card c;

	sim_card_init(&c, true, "2468");
	for (int i = 0; i < 3; i++)
		sim_card_verify(&c, "0000");
	EXPECT_EQ(sim_card_unblock(&c, "1234567", "1111"), SIM_CARD_INVALID_CODE);
	EXPECT_EQ(sim_card_unblock(&c, "87654321", "1111"), SIM_CARD_WRONG);
	EXPECT_EQ(c.puk_retries, SIM_CARD_PUK_RETRIES - 1);
	EXPECT_EQ(sim_card_unblock(&c, SIM_CARD_PUK_DEFAULT, "1111"), SIM_CARD_OK);
	EXPECT_EQ(c.pin1, SIM_CARD_PIN_ENABLED_VERIFIED);
	EXPECT_EQ(c.pin_retries, SIM_CARD_PIN_RETRIES);
	EXPECT_EQ(c.puk_retries, SIM_CARD_PUK_RETRIES);
	EXPECT_TRUE(strcmp(c.pin, "1111") == 0);

	/* Ten wrong PUKs: the card is blocked for good, the right PUK no longer helps. */
	for (int i = 0; i < SIM_CARD_PUK_RETRIES - 1; i++)
		EXPECT_EQ(sim_card_unblock(&c, "87654321", "1111"), SIM_CARD_WRONG);
	EXPECT_EQ(sim_card_unblock(&c, "87654321", "1111"), SIM_CARD_DEAD);
	EXPECT_EQ(c.pin1, SIM_CARD_PIN_PERMANENTLY_BLOCKED);
	EXPECT_EQ(sim_card_unblock(&c, SIM_CARD_PUK_DEFAULT, "1111"), SIM_CARD_DEAD);
	EXPECT_EQ(sim_card_verify(&c, "1111"), SIM_CARD_DEAD);
	EXPECT_TRUE(sim_card_locked(&c));
}

TEST(protection_and_change)
{
	struct sim_card c;

	sim_card_init(&c, true, NULL);
	EXPECT_TRUE(!sim_card_locked(&c) && !sim_card_pin_enabled(&c));
	EXPECT_EQ(sim_card_verify(&c, SIM_CARD_PIN_DEFAULT), SIM_CARD_NO_EFFECT);
	EXPECT_EQ(sim_card_change(&c, SIM_CARD_PIN_DEFAULT, "5555"), SIM_CARD_NO_EFFECT);
	EXPECT_EQ(sim_card_set_protection(&c, false, SIM_CARD_PIN_DEFAULT), SIM_CARD_NO_EFFECT);
	EXPECT_EQ(sim_card_set_protection(&c, true, "0000"), SIM_CARD_WRONG);
	EXPECT_EQ(c.pin_retries, 2);
	EXPECT_TRUE(!sim_card_pin_enabled(&c));
	EXPECT_EQ(sim_card_set_protection(&c, true, SIM_CARD_PIN_DEFAULT), SIM_CARD_OK);
	EXPECT_TRUE(sim_card_pin_enabled(&c) && !sim_card_locked(&c));
	EXPECT_EQ(c.pin_retries, 3);
	EXPECT_EQ(sim_card_change(&c, "0000", "5555"), SIM_CARD_WRONG);
	EXPECT_EQ(sim_card_change(&c, SIM_CARD_PIN_DEFAULT, "5555"), SIM_CARD_OK);
	EXPECT_TRUE(strcmp(c.pin, "5555") == 0);
	EXPECT_EQ(sim_card_set_protection(&c, false, SIM_CARD_PIN_DEFAULT), SIM_CARD_WRONG);
	EXPECT_EQ(sim_card_set_protection(&c, false, "5555"), SIM_CARD_OK);
	EXPECT_TRUE(!sim_card_pin_enabled(&c));
}

TEST(no_card)
{
	struct sim_card c;

	sim_card_init(&c, false, "2468");
	EXPECT_TRUE(!sim_card_locked(&c) && !sim_card_pin_enabled(&c));
	EXPECT_EQ(sim_card_verify(&c, "2468"), SIM_CARD_NOT_INSERTED);
	EXPECT_EQ(sim_card_unblock(&c, SIM_CARD_PUK_DEFAULT, "2468"), SIM_CARD_NOT_INSERTED);
	EXPECT_EQ(sim_card_set_protection(&c, false, "2468"), SIM_CARD_NOT_INSERTED);
	EXPECT_EQ(sim_card_change(&c, "2468", "1111"), SIM_CARD_NOT_INSERTED);
}
