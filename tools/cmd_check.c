#include <stdio.h>

#include "commands.h"

int wsnap_cmd_check(int argc, char **argv)
{
	fprintf(stderr, "wsnap: check: not implemented yet\n");
	return 4;
}
