# SPDX-License-Identifier: MIT
# bash completion for wsnap(1)                             -*- shell-script -*-
#
# Subcommands come from 'wsnap --help', each subcommand's options from
# 'wsnap help COMMAND' of the wsnap being completed, so the completion
# follows the installed program and cannot drift from it. An option's
# argument completes to directories where its help calls it DIR, to the
# choices where its usage line lists them (--compress none|gzip|...), and
# to nothing else; other words complete to file names.

# _wsnap_commands PROG: the subcommands of PROG's --help, one per line.
_wsnap_commands()
{
	"$1" --help 2>/dev/null | awk '
		/^commands:/ { on = 1; next }
		on && /^[^ ]/ { exit }
		on && $1 ~ /^[a-z][a-z-]*$/ { print $1 }'
}

# _wsnap_options PROG [COMMAND]: what the help of COMMAND (or of PROG)
# says about options, one per line: 'OPT' for a flag, 'OPT ARG' for an
# option that takes an argument named ARG, 'OPT ARG CHOICE...' where the
# usage lists the choices. Options are read from the indented lines that
# start with a dash ('  -v, --verbose  print ...', '  --skip P  ...'), and
# for the program itself from every --long word of its help too.
_wsnap_options()
{
	local prog=$1
	shift
	{
		if [[ $# -gt 0 ]]; then
			"$prog" help "$1"
		else
			"$prog" --help
		fi
	} 2>/dev/null | awk -v top=$(($# == 0)) '
		function add(opt, arg) {
			if (!(opt in argof) || arg != "")
				argof[opt] = arg
		}
		{
			line = $0
			while (match(line, /--[a-z][a-z-]* [a-z0-9]+(\|[a-z0-9]+)+/)) {
				w = substr(line, RSTART, RLENGTH)
				sp = index(w, " ")
				c = substr(w, sp + 1)
				gsub(/\|/, " ", c)
				choices[substr(w, 1, sp - 1)] = c
				line = substr(line, RSTART + RLENGTH)
			}
		}
		# an option line (-v, --verbose  text / -o OPT  text): the
		# option names, then an argument one space after them
		/^[ \t]+-/ {
			s = $0
			sub(/^[ \t]+/, "", s)
			n = 0
			while (match(s, /^--?[a-zA-Z][a-zA-Z-]*/)) {
				names[++n] = substr(s, 1, RLENGTH)
				s = substr(s, RLENGTH + 1)
				if (substr(s, 1, 2) != ", ")
					break
				s = substr(s, 3)
			}
			a = ""
			if (n && match(s, /^ [A-Z][A-Z0-9_]*/))
				a = substr(s, 2, RLENGTH - 1)
			else if (n && match(s, /^ [a-z0-9]+(\|[a-z0-9]+)+/))
				a = "CHOICE" # the choices themselves, as above
			for (k = 1; k <= n; k++)
				add(names[k], a)
		}
		top {
			line = $0
			while (match(line, /--[a-z][a-z-]*[a-z]/)) {
				add(substr(line, RSTART, RLENGTH), "")
				line = substr(line, RSTART + RLENGTH)
			}
		}
		END {
			add("--help", "")
			for (o in argof) {
				s = o
				if (argof[o] != "")
					s = s " " argof[o]
				if (argof[o] != "" && (o in choices))
					s = s " " choices[o]
				print s
			}
		}'
}

_wsnap()
{
	local prog=${1/#\~/$HOME} cur=${COMP_WORDS[COMP_CWORD]}
	local prev=${COMP_WORDS[COMP_CWORD - 1]} cmd= i w opts
	local -a words

	COMPREPLY=()
	# --opt=value: readline splits it into '--opt', '=', 'value'
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		[[ $w == -* ]] && continue
		cmd=$w
		break
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			opts=$(_wsnap_options "$prog" | awk '{ print $1 }')
		else
			opts="$(_wsnap_commands "$prog")"$'\nhelp'
		fi
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
		return 0
	fi
	if [[ $cmd == help ]]; then
		((COMP_CWORD == i + 1)) && mapfile -t COMPREPLY < <(compgen -W \
			"$(_wsnap_commands "$prog")" -- "$cur")
		return 0
	fi

	# the argument of an option
	if [[ $prev == -* ]]; then
		while read -r -a words; do
			[[ ${words[0]} == "$prev" && ${#words[@]} -ge 2 ]] ||
				continue
			compopt +o default 2>/dev/null || true
			if [[ ${#words[@]} -gt 2 ]]; then
				mapfile -t COMPREPLY < <(compgen -W \
					"${words[*]:2}" -- "$cur")
			elif [[ ${words[1]} == DIR ]]; then
				compopt -o filenames 2>/dev/null || true
				mapfile -t COMPREPLY < <(compgen -d -- "$cur")
			fi
			return 0
		done < <(_wsnap_options "$prog" "$cmd")
	fi

	# an option, unless after '--'
	for ((i = i + 1; i < COMP_CWORD; i++)); do
		[[ ${COMP_WORDS[i]} == -- ]] && return 0
	done
	if [[ $cur == -* ]]; then
		opts=$(_wsnap_options "$prog" "$cmd" | awk '{ print $1 }')
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
	fi
	return 0
} &&
	complete -o default -F _wsnap wsnap

# ex: filetype=sh
