#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a command and records its peak resident memory and CPU time.

    peakrss.py OUTFILE CMD [ARGS...]

Standard input, output and error are the command's. Writes one line to
OUTFILE: the child's peak RSS in KiB (getrusage RUSAGE_CHILDREN ru_maxrss,
Linux) and its CPU time (user + system) in milliseconds, and exits with the
child's status (128 + signal when it was killed), so shell tests can measure
a command without depending on /usr/bin/time.
"""
import os
import resource
import sys


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: peakrss.py OUTFILE CMD [ARGS...]\n")
        return 2
    out, argv = sys.argv[1], sys.argv[2:]
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status = os.waitpid(pid, 0)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_ms = int((ru.ru_utime + ru.ru_stime) * 1000)
    with open(out, "w") as f:
        f.write("%d %d\n" % (ru.ru_maxrss, cpu_ms))
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main())
