#include <stdio.h>

#include "commands.h"

int wsnap_cmd_diff(int argc, char **argv)
{
	fprintf(stderr, "wsnap: diff: not implemented yet\n");
	return 4;
}
