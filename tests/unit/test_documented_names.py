"""The service uses the libraries it is built on through the names they document: no
attribute with a leading underscore taken from another library's object or module, no
`from library import _name`, no import of a library's private module (`x._internal`), and no
method of a library's class overridden under a private name (which is how a server's or a
framework's internals get subclassed). Our own underscored names are ours to use.

Read from the source of app/ and worker/ (the overrides from the imported classes)."""
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
OURS = ("app", "worker")
SOURCES = sorted(path for package in OURS for path in (ROOT / package).rglob("*.py"))
# Underscored names that their libraries document for their users, and where:
DOCUMENTED = {
    # Flask, "Notes On Proxies": the object behind a proxy such as `request` or `g`.
    "_get_current_object",
    # marshmallow, "Custom Fields": a field class implements these two.
    "_serialize", "_deserialize",
    # Python, collections.namedtuple: its documented methods and attribute.
    "_fields", "_asdict", "_replace", "_make",
    # Python, logging HOWTO "Optimization": not collecting the caller's file and line.
    "_srcfile",
}


# Library modules whose documentation calls them internal, or which hold a server's inner
# workings that are configured, never subclassed or called.
INTERNAL_MODULES = ("gunicorn.workers",)


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def internal(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in INTERNAL_MODULES)


def ours(module: str) -> bool:
    return module.split(".")[0] in OURS


def relative(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


@functools.cache
def our_names() -> frozenset[str]:
    """Every underscored name our own code defines: functions, classes, variables, arguments
    and the attributes our classes set on themselves (`self._x = …`). An attribute set on
    another object (`worker._x = …`) is not ours for that: it may be a library's."""
    names = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return frozenset(name for name in names if private(name))


def library_subclass_selves(tree: ast.Module) -> set[int]:
    """The `self`/`cls` names (by node id) inside classes that subclass a library's class:
    there an underscored attribute we never set is the library's."""
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and not ours(node.module):
            imported.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update((alias.asname or alias.name).split(".")[0] for alias in node.names
                            if not ours(alias.name))
    selves = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base).split(".")[0].split("[")[0] in imported for base in node.bases):
            selves.update(id(name) for name in ast.walk(node)
                          if isinstance(name, ast.Name) and name.id in ("self", "cls"))
    return selves


def private_uses(source: str, where: str, own: frozenset[str]) -> list[str]:
    found = []
    tree = ast.parse(source)
    in_library_subclass = library_subclass_selves(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            taken_from_self = (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
                               and id(node.value) not in in_library_subclass)
            if not taken_from_self and node.attr not in own and node.attr not in DOCUMENTED:
                found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and private(node.args[1].value)
              and node.args[1].value not in own and node.args[1].value not in DOCUMENTED):
            found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and not ours(node.module):
            if any(private(part) for part in node.module.split(".")) or internal(node.module):
                found.append(f"{where}:{node.lineno} from {node.module} import …")
            found += [f"{where}:{node.lineno} from {node.module} import {alias.name}"
                      for alias in node.names if private(alias.name)]
        elif isinstance(node, ast.Import):
            found += [f"{where}:{node.lineno} import {alias.name}" for alias in node.names
                      if not ours(alias.name) and (internal(alias.name) or any(
                          private(part) for part in alias.name.split(".")))]
    return found


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_overrides(path: pathlib.Path) -> list[str]:
    """Methods of our classes that replace a library class's underscored method."""
    name = module_name(path)
    if name.endswith("__main__"):
        return []  # imported, it would run
    return overrides_in(sys.modules.get(name) or importlib.import_module(name), relative(path))


def overrides_in(module, where: str) -> list[str]:
    found = []
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ != module.__name__:
            continue
        libraries = [base for base in cls.__mro__[1:]
                     if not ours(base.__module__) and base.__module__ != "builtins"]
        for attribute, value in vars(cls).items():
            # Methods written in the class (not what a metaclass sets, such as a schema's
            # declared fields).
            function = getattr(value, "__func__", value)
            if not (inspect.isfunction(function) and function.__module__ == cls.__module__):
                continue
            replaced = next((base for base in libraries if attribute in vars(base)), None)
            if private(attribute) and attribute not in DOCUMENTED and replaced is not None:
                found.append(f"{where} {cls.__name__}.{attribute} replaces "
                             f"{replaced.__qualname__}.{attribute}")
    return found


def test_the_check_sees_a_private_name_taken_from_a_library():
    """The reader itself: each kind of use is found, our own names and self's are not."""
    source = ("import sqlalchemy.engine._row\n"
              "from gunicorn.workers import _gthread\n"
              "from flask_limiter import _version\n"
              "from app.web import rate_limit\n"
              "def f(limiter, request):\n"
              "    limiter._check_request_limit()\n"
              "    self._ours = getattr(request, '_cached_json')\n"
              "    return request._get_current_object(), rate_limit._count\n"
              "from gunicorn.workers.gthread import ThreadWorker\n"
              "class Worker(ThreadWorker):\n"
              "    def run(self):\n"
              "        self._mine = self._ours + self.nr\n"
              "        return self._keep_alive\n")
    found = private_uses(source, "sample.py", frozenset({"_count", "_ours", "_mine"}))
    assert {use.split(" ", 1)[1] for use in found} == {
        "import sqlalchemy.engine._row", "from gunicorn.workers import …",
        "from gunicorn.workers import _gthread", "from gunicorn.workers.gthread import …",
        "from flask_limiter import _version", "limiter._check_request_limit",
        "getattr(request, '_cached_json')", "self._keep_alive"}


def test_the_check_sees_a_librarys_private_method_replaced():
    from webargs.flaskparser import FlaskParser

    class Parser(FlaskParser):
        def _raw_load_json(self, req):
            return None

    Parser.__module__ = Parser._raw_load_json.__module__ = "app.sample"
    module = type(sys)("app.sample")
    module.Parser = Parser
    assert [use.split(" ", 1)[1] for use in overrides_in(module, "app/sample.py")] == [
        "Parser._raw_load_json replaces FlaskParser._raw_load_json"]


@pytest.mark.parametrize("path", SOURCES, ids=relative)
def test_no_name_a_library_does_not_document(path):
    found = private_uses(path.read_text(), relative(path), our_names()) + private_overrides(path)
    assert not found, "\n".join(found)
