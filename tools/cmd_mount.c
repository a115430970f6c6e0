#include <stdio.h>

#include "commands.h"

int wsnap_cmd_mount(int argc, char **argv)
{
	fprintf(stderr, "wsnap: mount: not implemented yet\n");
	return 4;
}
