#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python tarfile peer of bench/run.sh.

  pytar.py list ARCHIVE          read every member header (tarfile.getmembers)
  pytar.py extract ARCHIVE DEST  tarfile.extractall(DEST, filter="data")
"""
import sys
import tarfile


def main(argv):
    if len(argv) >= 2 and argv[0] == "list":
        with tarfile.open(argv[1], "r:*") as tf:
            n = len(tf.getmembers())
        print(n)
        return 0
    if len(argv) >= 3 and argv[0] == "extract":
        with tarfile.open(argv[1], "r:*") as tf:
            tf.extractall(argv[2], filter="data")
        return 0
    print("usage: pytar.py list ARCHIVE | extract ARCHIVE DEST",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
