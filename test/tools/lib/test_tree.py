"""The Fca-Stack-Patch trailer apply_patches writes into its commits, and the Tree protocol both kinds of
tree follow (tools/lib/tree.py)."""

from __future__ import annotations

from expecttest import TestCase

from tools.lib.shell import Shell
from tools.lib.tree import GitTree, PlainTree, StackMark, Tree, open_tree, strip_stack_mark

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


def _protocol_members() -> set[str]:
    return {n for n in vars(Tree) if not n.startswith("_")} | set(Tree.__annotations__)


def test_open_tree_gives_a_git_or_a_plain_tree_with_every_member_of_the_tree_protocol(tmp_path):
    sh = Shell(verbose=False, testing=True)
    plain, repo = tmp_path / "plain", tmp_path / "repo"
    plain.mkdir()
    repo.mkdir()
    sh.git("init", "-q", cwd=repo)
    trees = [open_tree(plain, sh), open_tree(repo, sh)]
    assert [type(t) for t in trees] == [PlainTree, GitTree] and [t.kind for t in trees] == ["plain", "git"]
    for tree in trees:
        missing = sorted(n for n in _protocol_members() if not hasattr(tree, n))
        assert not missing, f"{type(tree).__name__} lacks {missing}"
