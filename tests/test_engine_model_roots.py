"""A server opens checkpoints only inside allowed folders, its refusal reveals nothing, and
every spelling of one folder is one folder."""

import os

import pytest

import attnviz.settings
from attnviz.engine import ModelError, allowed_model_roots, check_allowed_folder


@pytest.fixture
def roots(tmp_path):
    inside = tmp_path / "models"
    inside.mkdir()
    with attnviz.settings.override(model_roots=(str(inside),)):
        yield inside


def refusal(path) -> str:
    with pytest.raises(ModelError) as e:
        check_allowed_folder(str(path))
    return str(e.value)


def test_outside_folders_get_one_message_whether_they_exist_or_not(roots, tmp_path):
    messages = {refusal(p) for p in ("/etc", "/proc/self", "/definitely/not/here",
                                     tmp_path, roots / ".." / "..", "https://hub/bert-base")}
    assert len(messages) == 1 and "allowed folders" in messages.pop()


def test_symlink_out_of_the_roots_is_refused(roots):
    (roots / "escape").symlink_to("/etc")
    assert "allowed folders" in refusal(roots / "escape")


def test_inside_is_allowed_then_checked_as_a_checkpoint(roots):
    check_allowed_folder(str(roots / "some-bert"))  # allowed; the engine then checks files
    check_allowed_folder(str(roots))


def test_default_roots_are_home_and_working_folder(monkeypatch):
    monkeypatch.delenv("ATTNVIZ_MODEL_ROOTS", raising=False)
    try:
        attnviz.settings.reload()
        roots = allowed_model_roots()
    finally:
        monkeypatch.undo()
        attnviz.settings.reload()
    assert os.path.realpath(os.path.expanduser("~")) in map(str, roots)
    assert os.path.realpath(os.getcwd()) in map(str, roots)


def test_the_roots_come_from_the_environment_variable(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("ATTNVIZ_MODEL_ROOTS", os.pathsep.join([str(a), "", str(b)]))
    try:
        attnviz.settings.reload()
        roots = allowed_model_roots()
    finally:
        monkeypatch.undo()
        attnviz.settings.reload()
    assert roots == [a.resolve(), b.resolve()]


def test_spellings_of_one_folder_resolve_to_one_path(roots, monkeypatch):
    (roots / "m").mkdir()
    monkeypatch.chdir(roots)
    spellings = ["./m", "m//", str(roots / "m") + "/", str(roots / "m" / ".." / "m")]
    assert {check_allowed_folder(s) for s in spellings} == {roots.resolve() / "m"}
