"""Parsing format-patch files: touched/created paths and hunk lookup for errors."""

from __future__ import annotations

from expecttest import TestCase

from tools.lib import patchfile
from tools.lib.pin import ABSENT, Manifest
from tools.lib.ui import UserError

SAMPLE = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: A Very Long Author Name That Folds
 <author@example.com>
Date: Sat, 1 Feb 2025 12:00:00 +0000
Subject: [compiled autograd] Add a thing to the engine and a brand new file
 that continues

Body.

Test Plan: tests
---
diff --git a/torch/csrc/autograd/engine.cpp b/torch/csrc/autograd/engine.cpp
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- a/torch/csrc/autograd/engine.cpp
+++ b/torch/csrc/autograd/engine.cpp
@@ -10,6 +10,7 @@ namespace torch::autograd {
 a
+b
 c
@@ -200,3 +201,4 @@ void Engine::foo() {
 x
+y
diff --git a/torch/csrc/dynamo/new.cpp b/torch/csrc/dynamo/new.cpp
new file mode 100644
index 0000000000000000000000000000000000000000..3333333333333333333333333333333333333333
--- /dev/null
+++ b/torch/csrc/dynamo/new.cpp
@@ -0,0 +1 @@
+new
"""


class TestPatchFile(TestCase):
    def test_headers_unfold(self):
        pf = patchfile.parse(SAMPLE, "0001-x.patch")
        self.assertExpectedInline(
            pf.subject, """[compiled autograd] Add a thing to the engine and a brand new file that continues"""
        )
        self.assertEqual(pf.author, "A Very Long Author Name That Folds <author@example.com>")

    def test_message_is_the_subject_and_the_body_up_to_the_patch(self):
        pf = patchfile.parse(SAMPLE)
        self.assertExpectedInline(pf.message, """\
[compiled autograd] Add a thing to the engine and a brand new file that continues

Body.

Test Plan: tests
""")
        # export's format-patch --no-stat writes no `---` line: the body ends at the first diff
        no_stat = patchfile.parse(SAMPLE.replace("Test Plan: tests\n---\n", "Test Plan: tests\n"))
        self.assertEqual(no_stat.message, pf.message)

    def test_touched_and_created(self):
        pf = patchfile.parse(SAMPLE)
        self.assertEqual(pf.touched, ("torch/csrc/autograd/engine.cpp", "torch/csrc/dynamo/new.cpp"))
        self.assertEqual(pf.created, ("torch/csrc/dynamo/new.cpp",))

    def test_hunk_at_names_the_failing_hunk(self):
        pf = patchfile.parse(SAMPLE)
        hunk = pf.hunk_at("torch/csrc/autograd/engine.cpp", 200)
        assert hunk is not None
        self.assertEqual((hunk.index, hunk.header), (2, "@@ -200,3 +201,4 @@ void Engine::foo() {"))
        self.assertIsNone(pf.hunk_at("torch/csrc/autograd/engine.cpp", 5000))

    def test_pre_image_blob_and_mode_come_from_the_index_line(self):
        changed, created = patchfile.parse(SAMPLE).files
        self.assertEqual((changed.old_blob, changed.old_mode), ("1" * 40, "100644"))
        self.assertEqual((created.old_blob, created.old_mode), (None, None))

    def test_slugify_is_deterministic_and_bounded(self):
        self.assertEqual(patchfile.slugify("[compiled autograd] Proxy validate_outputs!"), "compiled-autograd-proxy-validate-outputs")
        self.assertLessEqual(len(patchfile.slugify("word " * 40)), 60)
        self.assertEqual(patchfile.slugify("!!!"), "patch")


class TestManifest(TestCase):
    def test_round_trip_and_mismatch(self):
        m = Manifest.from_contents({"a.txt": b"a\n", "gone.cpp": None})
        text = m.render()
        self.assertEqual(Manifest.parse(text), m)
        self.assertEqual(m.mismatches({"a.txt": b"a\n", "gone.cpp": None}), [])
        bad = m.mismatches({"a.txt": b"b\n", "gone.cpp": b"x"})
        self.assertEqual([b[0] for b in bad], ["a.txt", "gone.cpp"])
        self.assertEqual(bad[1][1], ABSENT)

    def test_malformed_line_is_a_clear_error(self):
        with self.assertRaisesRegex(UserError, r"pin.sha256:3: malformed line"):
            Manifest.parse("# c\n\nnot-a-hash  path\n", "pin.sha256")
