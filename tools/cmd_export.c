#include <stdio.h>

#include "commands.h"

int wsnap_cmd_export(int argc, char **argv)
{
	fprintf(stderr, "wsnap: export: not implemented yet\n");
	return 4;
}
