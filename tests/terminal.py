"""A command run on a pseudo-terminal, as a user runs it, and the screen it leaves.

:func:`on_a_terminal` runs ``python run.py …`` with a pty as its controlling terminal (so the
live panel is drawn, and Ctrl-C typed into it is the terminal's SIGINT, echoed ``^C`` and all);
:func:`screen` replays what it wrote the way a terminal does (the cursor moves and line erases
rich redraws its panel with), so a test reads what the user is left looking at.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROWS, COLUMNS = 60, 140

_CSI = re.compile(r"\x1b\[([?0-9;]*)([@-~])")


def on_a_terminal(args: list[str], ctrl_c_when: Callable[[str], bool] | None = None,
                  timeout: float = 120) -> tuple[int, str]:
    """Run ``run.py args`` on a new pseudo-terminal; type Ctrl-C once ``ctrl_c_when`` is true of
    what it wrote so far. (exit status, everything it wrote, decoded)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))

    def controlling_terminal() -> None:  # in the child, after setsid: the pty is its terminal
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a CI shell may have left it ignored

    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args], stdin=slave,
                            stdout=slave, stderr=slave, cwd=ROOT, env=env,
                            start_new_session=True, preexec_fn=controlling_terminal)
    os.close(slave)
    out = b""
    typed = ctrl_c_when is None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: every end of the terminal is closed, the child is gone
                    break
                if not chunk:
                    break
                out += chunk
            if not typed and ctrl_c_when(out.decode("utf-8", "replace")):
                os.write(master, b"\x03")  # Ctrl-C, typed: the terminal signals and echoes it
                typed = True
        else:
            proc.kill()
        code = proc.wait(timeout=30)
    finally:
        os.close(master)
    return code, out.decode("utf-8", "replace")


def screen(text: str) -> list[str]:
    """The lines a terminal shows after ``text`` (an endless screen: nothing scrolls away).
    Knows what rich writes: text, CR, LF, backspace, cursor up/down/column, erase line;
    colours and other sequences change nothing here."""
    rows: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\x1b":
            match = _CSI.match(text, i)
            if match is None:
                i += 2
                continue
            arg, op = match[1], match[2]
            n = int(arg) if arg.isdigit() else 1
            if op == "A":
                row = max(0, row - n)
            elif op == "B":
                row += n
            elif op == "G":
                col = n - 1
            elif op == "K":
                while len(rows) <= row:
                    rows.append([])
                rows[row] = [] if arg == "2" else (rows[row][:col] if arg in ("", "0")
                                                  else [" "] * col + rows[row][col:])
            i = match.end()
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
        elif ch == "\b":
            col = max(0, col - 1)
        elif ch >= " ":
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
        i += 1
    return ["".join(line).rstrip() for line in rows]
