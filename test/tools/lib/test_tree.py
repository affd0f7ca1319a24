"""The Fca-Stack-Patch trailer apply_patches writes into its commits (tools/lib/tree.py)."""

from __future__ import annotations

from expecttest import TestCase

from tools.lib.tree import StackMark, strip_stack_mark

MARK = StackMark("0003-x.patch", "a" * 40, "b" * 40)


class TestStackMark(TestCase):
    def test_mark_round_trips_through_a_message(self):
        self.assertEqual(StackMark.find(f"Subject\n\nBody.\n\n{MARK.line()}\n"), MARK)
        self.assertIsNone(StackMark.find("Subject\n\nFca-Stack-Patch: not a mark\n"))

    def test_strip_gives_back_the_message_apply_started_from(self):
        for message in (b"Subject\n", b"Subject\n\nBody.\n\nTest Plan: x\n", b"Subject\n\nSigned-off-by: A <a@b>\n"):
            marked = message + b"\n" + MARK.line().encode() + b"\n"
            self.assertEqual(strip_stack_mark(marked), message)

    def test_strip_keeps_what_was_added_after_the_mark(self):
        marked = f"Subject\n\n{MARK.line()}\n\nSigned-off-by: A <a@b>\n".encode()
        self.assertEqual(strip_stack_mark(marked), b"Subject\n\nSigned-off-by: A <a@b>\n")
