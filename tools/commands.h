/* SPDX-License-Identifier: MIT */
/* The subcommands of wsnap. Each takes its argv (argv[0] is the subcommand
 * name) and returns the exit code of cli.md. */
#ifndef WSNAP_COMMANDS_H
#define WSNAP_COMMANDS_H

int wsnap_cmd_check(int argc, char **argv);
int wsnap_cmd_ls(int argc, char **argv);
int wsnap_cmd_mount(int argc, char **argv);
int wsnap_cmd_export(int argc, char **argv);
int wsnap_cmd_strip_prefix(int argc, char **argv);
int wsnap_cmd_diff(int argc, char **argv);
int wsnap_cmd_pack(int argc, char **argv);
int wsnap_cmd_hydrate(int argc, char **argv);
int wsnap_cmd_unmount(int argc, char **argv);
int wsnap_cmd_index(int argc, char **argv);

#endif
