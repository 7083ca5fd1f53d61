"""Collection code compiled once and kept across warm runs; edited source is compiled anew."""

from __future__ import annotations

import marshal

import pytest
from ansible.utils.collection_loader import _collection_finder

from ansible_operator.runner.warm import cachedir
from ansible_operator.runner.warm.patches import code_cache

pytestmark = pytest.mark.ansible_core

SOURCE = "ANSWER = 42\n"


@pytest.fixture
def kept_compile(tmp_path, monkeypatch):
    monkeypatch.setattr(cachedir, "directory", str(tmp_path))
    monkeypatch.setattr(_collection_finder, "compile", None, raising=False)
    code_cache.install()
    return _collection_finder.compile, tmp_path / "code"


def run(code) -> dict:
    namespace: dict = {}
    exec(code, namespace)
    return namespace


def test_the_first_compile_is_kept_and_later_ones_load_it(kept_compile):
    compile_, directory = kept_compile
    code = compile_(source=SOURCE, filename="/c/m.py", mode="exec", flags=0, dont_inherit=True)
    assert run(code)["ANSWER"] == 42 and code.co_filename == "/c/m.py"
    [entry] = directory.iterdir()
    assert marshal.loads(entry.read_bytes()) == code

    # A later compile of the same source comes from the kept file: planted code shows through.
    entry.write_bytes(marshal.dumps(compile("ANSWER = 'planted'\n", "/c/m.py", "exec")))
    again = compile_(source=SOURCE, filename="/c/m.py", mode="exec", flags=0, dont_inherit=True)
    assert run(again)["ANSWER"] == "planted"


def test_edited_source_or_another_file_is_compiled_anew(kept_compile):
    compile_, directory = kept_compile
    compile_(source=SOURCE, filename="/c/m.py", mode="exec", flags=0, dont_inherit=True)
    edited = compile_(source=b"ANSWER = 43\n", filename="/c/m.py", mode="exec", dont_inherit=True)
    assert run(edited)["ANSWER"] == 43
    moved = compile_(source=SOURCE, filename="/d/m.py", mode="exec", flags=0, dont_inherit=True)
    assert moved.co_filename == "/d/m.py"
    assert len(list(directory.iterdir())) == 3


def test_the_collection_loader_compiles_through_it(kept_compile):
    _, directory = kept_compile
    loader = object.__new__(_collection_finder._AnsibleCollectionPkgLoaderBase)
    loader._compiled_code = None
    loader.get_filename = lambda fullname: "/c/thing.py"
    loader.get_source = lambda fullname: SOURCE
    code = loader.get_code("ansible_collections.ns.col.plugins.module_utils.thing")
    assert run(code)["ANSWER"] == 42
    assert len(list(directory.iterdir())) == 1
