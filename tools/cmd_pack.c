#include <stdio.h>

#include "commands.h"

int wsnap_cmd_pack(int argc, char **argv)
{
	fprintf(stderr, "wsnap: pack: not implemented yet\n");
	return 4;
}
