#include <stdio.h>

#include "commands.h"

int wsnap_cmd_unmount(int argc, char **argv)
{
	fprintf(stderr, "wsnap: unmount: not implemented yet\n");
	return 4;
}
