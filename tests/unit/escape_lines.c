/* SPDX-License-Identifier: MIT */
/*
 * escape_lines: the escaping of tools/json.c (what ls, diff and error
 * messages print) on names read from standard input, for
 * tests/data/escape_vs_repr.py.
 *
 * The first output line is "unicode VERSION", the Unicode version of the
 * generated printability table. Then, for each input line (a name in hex,
 * two digits per byte), two lines: the name as wsnap_put_escaped writes it
 * with WSNAP_ESC_REPR and with WSNAP_ESC_BARE. Neither escaping ever
 * writes a raw newline, so the output splits back into lines.
 * Exits 1 on a malformed line or a write error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "json.h"

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int main(void)
{
	char *line = NULL;
	size_t cap = 0, len, i;
	ssize_t got;
	int hi, lo, rc = 0;

	printf("unicode %s\n", wsnap_escape_unicode_version());
	while ((got = getline(&line, &cap, stdin)) > 0) {
		len = (size_t)got;
		if (line[len - 1] == '\n')
			len--;
		if (len % 2) {
			rc = 1;
			break;
		}
		/* decode in place: byte i comes from digits 2i and 2i+1 */
		for (i = 0; i < len / 2; i++) {
			hi = hex_value(line[2 * i]);
			lo = hex_value(line[2 * i + 1]);
			if (hi < 0 || lo < 0) {
				rc = 1;
				goto out;
			}
			line[i] = (char)(hi << 4 | lo);
		}
		wsnap_put_escaped(stdout, WSNAP_ESC_REPR, line, len / 2);
		putchar('\n');
		wsnap_put_escaped(stdout, WSNAP_ESC_BARE, line, len / 2);
		putchar('\n');
	}
out:
	free(line);
	if (fclose(stdout) != 0)
		rc = 1;
	if (rc)
		fprintf(stderr, "escape_lines: malformed input or write "
				"error\n");
	return rc;
}
