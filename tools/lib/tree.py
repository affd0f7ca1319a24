"""A PyTorch source tree the stack is applied to: a git checkout or a plain dir.

Both kinds answer the same questions (how many patches of the stack are
applied, is the base the pin) and do the same things (check, apply, revert)
all-or-nothing:

* git: the new commits are built in a temporary index and a temporary object
  dir (``git apply --cached`` + ``commit-tree``, ``git am -k`` semantics: author,
  date, subject and body kept), so a conflict leaves the repository untouched.
  Only after every patch applied are the objects moved in and the working tree
  and branch moved (``read-tree -m -u`` + ``update-ref``), under a journal.
* plain: the stack is applied to copies in a scratch dir; the results are
  written back under a journal holding the originals.

A run killed half-way leaves the journal; the next run restores the tree from
it before doing anything else.

Every commit apply makes carries a ``Fca-Stack-Patch:`` trailer (see
:class:`StackMark`): the patch it was made from and the ``git patch-id --stable``
of that patch and of the commit's own diff.  That is how the stack's commits are
told from the user's, by content: a commit is the tool's own (and may be replaced
by a newer version of its patch) only while its diff is still the one it was made
with.  A commit without the trailer counts as a patch of the stack when its
patch-id equals the patch file's.  ``--3way`` merges a patch that does not apply
as is against the pin's blobs (the patches' ``index`` lines name them).
"""

from __future__ import annotations

from pathlib import Path

from . import ui
from .git_tree import MAX_COMMITS_ON_TOP, GitTree
from .plain_tree import PlainTree
from .shell import Shell
from .tree_base import TRAILER, StackMark, Tree, TreeState, check_writable, strip_stack_mark

__all__ = ["MAX_COMMITS_ON_TOP", "TRAILER", "GitTree", "PlainTree", "StackMark", "Tree", "TreeState", "check_writable",
           "open_tree", "strip_stack_mark"]


def open_tree(path: Path, sh: Shell) -> Tree:
    path = Path(path).resolve()
    if not path.is_dir():
        raise ui.UserError(f"{path} is not a directory; pass --torch-src with a PyTorch v2.6.0 checkout")
    if (path / ".git").exists():
        return GitTree(path, sh)
    return PlainTree(path, sh)
