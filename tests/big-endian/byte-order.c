/* SPDX-License-Identifier: MIT */
/* Prints the byte order this program runs with, found from memory, not from the compiler's
 * macros: tests/big-endian/big-endian.sh checks that the cross-built tests really run big-endian. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	const uint32_t v = 0x01020304;
	uint8_t b[4];

	memcpy(b, &v, sizeof(b));
	if (b[0] == 0x01 && b[3] == 0x04)
		puts("big-endian");
	else if (b[0] == 0x04 && b[3] == 0x01)
		puts("little-endian");
	else
		puts("unknown");
	return 0;
}
