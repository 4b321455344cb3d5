"""Closes the app's windows as a window manager does when the user clicks their close
button: a WM_DELETE_WINDOW message to each top-level window with the given title.
(WebDriver's Close Window kills the app instead, and Xvfb runs no window manager.)

    python3 close_window.py TITLE
"""

import sys

from Xlib import X, display
from Xlib.protocol import event


def windows_titled(window, title):
    for child in window.query_tree().children:
        if child.get_wm_name() == title:
            yield child
        yield from windows_titled(child, title)


def main(title):
    screen = display.Display()
    protocols = screen.intern_atom("WM_PROTOCOLS")
    delete = screen.intern_atom("WM_DELETE_WINDOW")
    targets = list(windows_titled(screen.screen().root, title))
    if not targets:
        sys.exit(f"no window titled {title!r}")
    for window in targets:
        message = event.ClientMessage(window=window, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0]))
        window.send_event(message, event_mask=X.NoEventMask)
    screen.flush()


if __name__ == "__main__":
    main(sys.argv[1])
