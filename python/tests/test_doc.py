# SPDX-License-Identifier: MIT
"""The example session of doc/python.md runs and prints what the document
says it prints."""

from __future__ import annotations

import contextlib
import io
import os
import re
import unittest

from .support import TmpCase

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "doc", "python.md")


def example() -> tuple:
    """The first python block after '## Example session' and the plain
    block after it (its output)."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    part = text[text.index("## Example session") :]
    blocks = re.findall(r"```(\w*)\n(.*?)```", part, re.S)
    code = next(b for lang, b in blocks if lang == "python")
    output = next(b for lang, b in blocks if lang == "")
    return code, output


class DocExample(TmpCase):
    def test_example_session(self) -> None:
        self.require_fuse()
        os.makedirs(self.path("project/src"))
        self.write("project/README.md", b"# demo\n")
        self.write("project/old.txt", b"obsolete\n")
        self.write("project/src/app.py", b'print("hi")\n')
        code, want = example()
        cwd = os.getcwd()
        os.chdir(self.tmp)
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, DOC, "exec"), {})
        finally:
            os.chdir(cwd)
        self.assertEqual(out.getvalue(), want)
        self.assertNothingMounted()


if __name__ == "__main__":
    unittest.main()
