#include <stdio.h>

#include "commands.h"

int wsnap_cmd_strip_prefix(int argc, char **argv)
{
	fprintf(stderr, "wsnap: strip-prefix: not implemented yet\n");
	return 4;
}
