#include <stdio.h>

#include "commands.h"

int wsnap_cmd_hydrate(int argc, char **argv)
{
	fprintf(stderr, "wsnap: hydrate: not implemented yet\n");
	return 4;
}
