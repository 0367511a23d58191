"""A temporary repository tree for the tests of the repository's check scripts
(test_check_layering.py, test_check_doc_paths.py): files written under self.root, removed
after each test."""
import os
import tempfile
import unittest


class FakeTreeCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
