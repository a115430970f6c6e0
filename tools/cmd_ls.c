#include <stdio.h>

#include "commands.h"

int wsnap_cmd_ls(int argc, char **argv)
{
	fprintf(stderr, "wsnap: ls: not implemented yet\n");
	return 4;
}
