#!/usr/bin/env python3
"""Runs a command and records its peak resident memory.

    peakrss.py OUTFILE CMD [ARGS...]

Standard input, output and error are the command's. Writes the child's peak
RSS in KiB (getrusage RUSAGE_CHILDREN ru_maxrss, Linux) to OUTFILE and exits
with the child's status (128 + signal when it was killed), so shell tests
can measure a command without depending on /usr/bin/time.
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
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(out, "w") as f:
        f.write("%d\n" % rss)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main())
