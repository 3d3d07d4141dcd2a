"""The kernel build's refusals carry their data as fields: each message, hint and detail is
derived from them (in the words wh build used before they had fields), and so is the JSON
(its "fields"); the raising sites hand over the data they found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from wh import errors
from wh.cli.build import build
from wh.errors import (
    BuildBackendError,
    BuildError,
    BuildOptionError,
    CMakeError,
    ConditionError,
    CudaVersionError,
    EmitError,
    EnvironmentBlockError,
    PatchError,
    RecipeError,
    RecipeLoadError,
    RecipeRefusedError,
    RegistrationError,
    SourceError,
    SourcePinError,
    ToolMissingError,
    ToolOutputError,
    VariantError,
    WheelCheckError,
)
from wh.kernels.envblock import fit
from wh.kernels.operations import from_table, guard_macro
from wh.kernels.recipe import parse_choices, parse_recipe
from wh.kernels.toolchain import require_cuda

SRC = Path("/src/sgl")
OUT = Path("/out/tree")
SPEC = ">=12.4,<13.1"

# (error, message, hint, details, fields)
CASES: list[tuple[BuildError, str, str, list[str], dict[str, object]]] = [
    (
        RecipeError("[[operations]]", "tables", value="operations"),
        "[[operations]] must be an array of tables ([[operations]])",
        "",
        [],
        {"where": "[[operations]]", "rule": "tables", "value": "operations"},
    ),
    (
        RecipeError("r.toml", "table", key="[source]"),
        "r.toml: [source] must be a table",
        "",
        [],
        {"where": "r.toml", "rule": "table", "key": "[source]"},
    ),
    (
        RecipeError("[[patches]][2]", "table"),
        "[[patches]][2] must be a table",
        "",
        [],
        {"where": "[[patches]][2]", "rule": "table"},
    ),
    (
        RecipeError("[recipe].archs", "strings"),
        "[recipe].archs must be a list of strings",
        "",
        [],
        {"where": "[recipe].archs", "rule": "strings"},
    ),
    (
        RecipeError("[[operations]][1]", "strings", key="commands"),
        "[[operations]][1]: commands must be a list of strings",
        "",
        [],
        {"where": "[[operations]][1]", "rule": "strings", "key": "commands"},
    ),
    (
        RecipeError("[defines].X", "scalar"),
        "[defines].X must be a string, integer or boolean",
        "",
        [],
        {"where": "[defines].X", "rule": "scalar"},
    ),
    (
        RecipeError("[[patches]][0]", "lacks", missing=["anchor", "replacement"]),
        "[[patches]][0] lacks anchor, replacement",
        "",
        [],
        {"where": "[[patches]][0]", "rule": "lacks", "missing": ["anchor", "replacement"]},
    ),
    (
        RecipeError("variants.fa3.on.refused", "refused", allowed=["windows", "linux"]),
        "variants.fa3.on.refused must map windows/linux to the reason (a string)",
        "",
        [],
        {"where": "variants.fa3.on.refused", "rule": "refused", "allowed": ["windows", "linux"]},
    ),
    (
        RecipeError("r.toml", "required", key="[recipe].name"),
        "r.toml: [recipe].name is required (a string)",
        "",
        [],
        {"where": "r.toml", "rule": "required", "key": "[recipe].name"},
    ),
    (
        RecipeError("r.toml", "specifier", key="[recipe].cuda", problem="Invalid specifier: 'x'"),
        "r.toml: [recipe].cuda is not a version specifier: Invalid specifier: 'x'",
        "",
        [],
        {
            "where": "r.toml",
            "rule": "specifier",
            "key": "[recipe].cuda",
            "problem": "Invalid specifier: 'x'",
        },
    ),
    (
        RecipeError("[[operations]][3]", "bool", key="optional"),
        "[[operations]][3]: optional must be true or false",
        "",
        [],
        {"where": "[[operations]][3]", "rule": "bool", "key": "optional"},
    ),
    (
        RecipeError("[[operations]][0]", "needs", key="source", value="exclude-source"),
        "[[operations]][0]: op 'exclude-source' needs source (a non-empty string)",
        "",
        [],
        {
            "where": "[[operations]][0]",
            "rule": "needs",
            "key": "source",
            "value": "exclude-source",
        },
    ),
    (
        RecipeError("[[operations]][4]", "empty-switch", value="SW"),
        "[[operations]][4]: under-switch SW names no commands and no items",
        "",
        [],
        {"where": "[[operations]][4]", "rule": "empty-switch", "value": "SW"},
    ),
    (
        RecipeError("[[operations]][5]", "unknown-op", value=None, allowed=["a-op", "b-op"]),
        "[[operations]][5]: unknown op None",
        "ops: a-op, b-op; or a [[patches]] text patch",
        [],
        {
            "where": "[[operations]][5]",
            "rule": "unknown-op",
            "value": None,
            "allowed": ["a-op", "b-op"],
        },
    ),
    (
        RecipeError("", "command", key="SW", value="include"),
        "under-switch SW: command 'include' is not NAME(FIRST_ARGUMENT)",
        'e.g. "include(cmake/flashmla.cmake)", "FetchContent_Declare(repo-mscclpp)"',
        [],
        {"where": "", "rule": "command", "key": "SW", "value": "include"},
    ),
    (
        RecipeError("[checks].environment", "environment", value="venv", allowed=["a", "b"]),
        "[checks].environment must be 'a' or 'b', not 'venv'",
        "use 'build' when the module imports packages of the build environment",
        [],
        {
            "where": "[checks].environment",
            "rule": "environment",
            "value": "venv",
            "allowed": ["a", "b"],
        },
    ),
    (
        RecipeLoadError("x/r.toml", "no-file"),
        "recipe file x/r.toml does not exist",
        "",
        [],
        {"recipe": "x/r.toml", "rule": "no-file"},
    ),
    (
        RecipeLoadError("nosuch", "unknown", shipped=["a", "b"]),
        "no shipped recipe named 'nosuch'",
        "shipped recipes: a, b; or pass a path to a .toml",
        [],
        {"recipe": "nosuch", "rule": "unknown", "shipped": ["a", "b"]},
    ),
    (
        RecipeLoadError("r.toml", "toml", problem="Expected '='"),
        "recipe r.toml is not valid TOML: Expected '='",
        "",
        [],
        {"recipe": "r.toml", "rule": "toml", "problem": "Expected '='"},
    ),
    (
        VariantError("sgl", ["x", "y"], ["fa3"]),
        "recipe sgl has no variant x, y",
        "variants: fa3",
        [],
        {"recipe": "sgl", "unknown": ["x", "y"], "variants": ["fa3"]},
    ),
    (
        VariantError("plain", ["x"], []),
        "recipe plain has no variant x",
        "variants: none",
        [],
        {"recipe": "plain", "unknown": ["x"], "variants": []},
    ),
    (
        BuildOptionError("--target-os", "macos", "unknown", allowed=["windows", "linux"]),
        "--target-os 'macos' is not known",
        "use windows or linux",
        [],
        {
            "option": "--target-os",
            "value": "macos",
            "rule": "unknown",
            "allowed": ["windows", "linux"],
        },
    ),
    (
        BuildOptionError("--variant", "fa3=maybe", "on-off"),
        "--variant 'fa3=maybe': the value must be on or off",
        "",
        [],
        {"option": "--variant", "value": "fa3=maybe", "rule": "on-off"},
    ),
    (
        BuildOptionError("--target-os", "windows", "other-machine", platform="linux-gcc"),
        "--target-os windows: this machine builds for linux-gcc only",
        "use --check or --emit OUT for a preview of another platform",
        [],
        {
            "option": "--target-os",
            "value": "windows",
            "rule": "other-machine",
            "platform": "linux-gcc",
        },
    ),
    (
        EmitError(OUT, "file"),
        f"--emit {OUT} is a file",
        "emit to a new or empty folder",
        [],
        {"out": str(OUT), "rule": "file"},
    ),
    (
        EmitError(OUT, "inside", tree=SRC),
        f"--emit {OUT} is inside the source tree {SRC}",
        "emit to a folder outside it",
        [],
        {"out": str(OUT), "rule": "inside", "tree": str(SRC)},
    ),
    (
        EmitError(OUT, "occupied"),
        f"--emit {OUT}: the folder exists and holds another tree",
        "remove it or emit to a new folder (wh never overwrites a tree)",
        [],
        {"out": str(OUT), "rule": "occupied"},
    ),
    (
        SourceError("missing", path=SRC),
        f"source {SRC} does not exist",
        "pass --source PATH",
        [],
        {"rule": "missing", "path": str(SRC)},
    ),
    (
        SourceError("no-path", recipe="sgl"),
        "recipe sgl names no source path",
        "pass --source PATH (the folder or archive of the pinned source)",
        [],
        {"rule": "no-path", "recipe": "sgl"},
    ),
    (
        SourceError("project-itself", path=SRC, project=SRC / "k", subdirectory="k"),
        f"{SRC / 'k'} does not exist: --source {SRC} looks like the project itself",
        "pass the folder above it (the checkout root): the recipe's project is its 'k' subfolder",
        [],
        {
            "rule": "project-itself",
            "path": str(SRC),
            "project": str(SRC / "k"),
            "subdirectory": "k",
        },
    ),
    (
        SourceError("unpinned", path=SRC, recipe="sgl", problems=["inputs_sha256: a != b"]),
        f"the source at {SRC} is not the one recipe sgl was checked against",
        "use the pinned revision, or pass --allow-unpinned to try the recipe's"
        " operations on this tree (each one still reports what it finds)",
        ["inputs_sha256: a != b"],
        {
            "rule": "unpinned",
            "path": str(SRC),
            "recipe": "sgl",
            "problems": ["inputs_sha256: a != b"],
        },
    ),
    (
        SourcePinError(SRC, "tree_sha256", "aa", "bb"),
        f"the source at {SRC} does not match the recipe's pinned tree_sha256",
        "use the pinned source, or update the recipe's pin if the change is intended",
        ["expected: aa", "found: bb"],
        {"path": str(SRC), "pin": "tree_sha256", "expected": "aa", "found": "bb"},
    ),
    (
        ToolMissingError("cuobjdump"),
        "cuobjdump not found: cannot check the wheel's CUDA architectures",
        "pip install nvidia-cuda-cuobjdump (in wh's dev extra), or put the CUDA bin on PATH",
        [],
        {"tool": "cuobjdump", "looked": []},
    ),
    (
        ToolMissingError("nvcc", looked=["looked on PATH"]),
        "nvcc not found",
        "install the CUDA toolkit or set CUDA_HOME",
        ["looked on PATH"],
        {"tool": "nvcc", "looked": ["looked on PATH"]},
    ),
    (
        ToolMissingError("g++"),
        "no host C++ compiler (g++) found",
        "install gcc/g++ (e.g. apt-get install build-essential) or set CXX",
        [],
        {"tool": "g++", "looked": []},
    ),
    (
        ToolMissingError("cuda"),
        "no CUDA toolkit found (no CUDA_PATH_Vxx_y variable)",
        "install the CUDA toolkit for Windows; its installer sets CUDA_PATH_V12_8 etc.",
        [],
        {"tool": "cuda", "looked": []},
    ),
    (
        ToolMissingError("msvc", looked=["vswhere -requires X returned nothing"]),
        "no Visual Studio with the C++ x64 tools found",
        "install 'Desktop development with C++' (VS 2022 Build Tools is enough)",
        ["vswhere -requires X returned nothing"],
        {"tool": "msvc", "looked": ["vswhere -requires X returned nothing"]},
    ),
    (
        ToolOutputError("cuobjdump", "sgl/_C.so", output=["fatal"]),
        "cuobjdump could not read sgl/_C.so",
        "",
        ["fatal"],
        {"tool": "cuobjdump", "subject": "sgl/_C.so", "output": ["fatal"]},
    ),
    (
        ToolOutputError("nvcc", output=["nvcc: NVIDIA (R)"]),
        "cannot read the CUDA version from nvcc --version",
        "",
        ["nvcc: NVIDIA (R)"],
        {"tool": "nvcc", "subject": "", "output": ["nvcc: NVIDIA (R)"]},
    ),
    (
        ToolOutputError("vswhere", "Expecting value: line 1 column 1 (char 0)"),
        "vswhere printed something that is not JSON: Expecting value: line 1 column 1 (char 0)",
        "",
        [],
        {"tool": "vswhere", "subject": "Expecting value: line 1 column 1 (char 0)", "output": []},
    ),
    (
        ToolOutputError("vcvarsall", "VS 2022 Build Tools"),
        "vcvarsall.bat x64 of VS 2022 Build Tools did not set up the compiler",
        "",
        [],
        {"tool": "vcvarsall", "subject": "VS 2022 Build Tools", "output": []},
    ),
    (
        CudaVersionError("spec", spec=SPEC, found="11.8", where="/usr/bin/nvcc"),
        f"CUDA 11.8 at /usr/bin/nvcc does not satisfy the recipe's cuda = {SPEC!r}",
        "install a matching CUDA toolkit, point CUDA_HOME (Linux) or WH_CUDA_VERSION"
        " (Windows) at it, or adjust the recipe",
        [f"expected: cuda {SPEC}", "found: 11.8 (/usr/bin/nvcc)"],
        {"rule": "spec", "spec": SPEC, "found": "11.8", "where": "/usr/bin/nvcc"},
    ),
    (
        CudaVersionError("not-installed", wanted="12.6", installed=["12.4", "12.8"]),
        "WH_CUDA_VERSION=12.6 but that CUDA is not installed",
        "set WH_CUDA_VERSION to one of the installed versions",
        ["installed: 12.4, 12.8"],
        {"rule": "not-installed", "wanted": "12.6", "installed": ["12.4", "12.8"]},
    ),
    (
        CudaVersionError("none-fits", spec=SPEC, installed=["11.8"]),
        f"no installed CUDA satisfies the recipe's cuda = {SPEC!r}",
        "install a matching CUDA toolkit, or set WH_CUDA_VERSION",
        [f"expected: cuda {SPEC}", "found: 11.8"],
        {"rule": "none-fits", "spec": SPEC, "installed": ["11.8"]},
    ),
    (
        CudaVersionError("option", wanted="12.8", found="13.0.88"),
        "--cuda-version 12.8: the toolkit found is CUDA 13.0.88",
        "a build uses the toolkit it finds: set CUDA_HOME (Linux) or"
        " WH_CUDA_VERSION (Windows), or use --check/--emit for a preview",
        [],
        {"rule": "option", "found": "13.0.88", "wanted": "12.8"},
    ),
    (
        CMakeError("cmake/x.cmake", "unreadable", problem="unbalanced ( at line 3"),
        "cannot read cmake/x.cmake as CMake: unbalanced ( at line 3",
        "",
        [],
        {"path": "cmake/x.cmake", "rule": "unreadable", "problem": "unbalanced ( at line 3"},
    ),
    (
        CMakeError(
            "CMakeLists.txt", "cannot-move", line=12, items=["a.cu", "b.cu"], command="foreach"
        ),
        "CMakeLists.txt:12: cannot move a.cu, b.cu out of foreach()",
        "move it by hand or with a text patch",
        [],
        {
            "path": "CMakeLists.txt",
            "rule": "cannot-move",
            "line": 12,
            "items": ["a.cu", "b.cu"],
            "command": "foreach",
        },
    ),
    (
        CMakeError(str(SRC), "no-cmakelists"),
        f"{SRC} has no CMakeLists.txt",
        "pass the source root; the recipe's [source] subdirectory names the project",
        [],
        {"path": str(SRC), "rule": "no-cmakelists"},
    ),
    (
        ConditionError("defined(", "cpp-unreadable"),
        "cannot read preprocessor condition 'defined('",
        "",
        [],
        {"expr": "defined(", "rule": "cpp-unreadable"},
    ),
    (
        ConditionError("A &&", "cpp-incomplete"),
        "incomplete preprocessor condition 'A &&'",
        "",
        [],
        {"expr": "A &&", "rule": "cpp-incomplete"},
    ),
    (
        ConditionError("A AND", "cmake-incomplete"),
        "incomplete CMake condition 'A AND'",
        "",
        [],
        {"expr": "A AND", "rule": "cmake-incomplete"},
    ),
    (
        ConditionError("APPLE", "no-guard", known={"NOT X": "_X", "NOT Y": "_Y"}),
        "no preprocessor guard is known for if(APPLE)",
        "use NOT X (#ifndef _X) or NOT Y (#ifndef _Y)",
        [],
        {"expr": "APPLE", "rule": "no-guard", "known": {"NOT X": "_X", "NOT Y": "_Y"}},
    ),
    (
        RegistrationError("csrc/ext.cc", "no-block"),
        "csrc/ext.cc: no TORCH_LIBRARY/TORCH_LIBRARY_FRAGMENT block with m.def/m.impl found",
        "point [registration] source at the file that registers the extension's ops",
        [],
        {"file": "csrc/ext.cc", "rule": "no-block"},
    ),
    (
        RegistrationError(
            "csrc/ext.cc", "mixed", op="shm", guards=[("a.cu", "_WIN32"), ("b.cu", "_MSC_VER")]
        ),
        "csrc/ext.cc: op shm is implemented in files excluded under different conditions",
        "exclude them under one condition",
        ["a.cu: #ifndef _WIN32", "b.cu: #ifndef _MSC_VER"],
        {
            "file": "csrc/ext.cc",
            "rule": "mixed",
            "op": "shm",
            "guards": [{"file": "a.cu", "macro": "_WIN32"}, {"file": "b.cu", "macro": "_MSC_VER"}],
        },
    ),
    (
        RegistrationError("csrc/ext.cc", "shared-line", op="shm", line=40),
        "csrc/ext.cc:40: the registration of shm shares its line with other code",
        "put each m.def/m.impl statement on lines of its own",
        [],
        {"file": "csrc/ext.cc", "rule": "shared-line", "op": "shm", "line": 40},
    ),
    (
        RegistrationError("csrc/ext.cc", "missing", project=SRC),
        f"registration source csrc/ext.cc not found in {SRC}",
        "",
        [],
        {"file": "csrc/ext.cc", "rule": "missing", "project": str(SRC)},
    ),
    (
        RegistrationError("csrc/ext.cc", "unmapped", missing=["a.cu", "b.cu"]),
        "cannot tell which ops the excluded sources implement: a.cu, b.cu not in the tree",
        "the recipe excludes a file this source does not have: check --source",
        [],
        {"file": "csrc/ext.cc", "rule": "unmapped", "missing": ["a.cu", "b.cu"]},
    ),
    (
        RegistrationError("", "unbalanced", brackets="{}", offset=812),
        "unbalanced {} from offset 812",
        "",
        [],
        {"file": "", "rule": "unbalanced", "brackets": "{}", "offset": 812},
    ),
    (
        PatchError("malformed", file="CMakeLists.txt"),
        "patch for CMakeLists.txt is malformed",
        "a patch needs a non-empty anchor, a non-empty replacement and count >= 1",
        [],
        {"rule": "malformed", "file": "CMakeLists.txt"},
    ),
    (
        PatchError("not-applicable", problems=["a: anchor not found", "b: anchor not found"]),
        "2 patch(es) cannot be applied",
        "the source moved: update the recipe's anchors (or the pinned source)",
        ["a: anchor not found", "b: anchor not found"],
        {"rule": "not-applicable", "problems": ["a: anchor not found", "b: anchor not found"]},
    ),
    (
        PatchError("read-back", problems=["a: applied"]),
        "patched files do not read back as patched",
        "another process may be writing the source tree",
        ["a: applied"],
        {"rule": "read-back", "problems": ["a: applied"]},
    ),
    (
        PatchError("read-back-copy", path=OUT, problems=["CMakeLists.txt"]),
        f"the patched copy at {OUT} does not read back as patched",
        "another process may be writing the work folder",
        ["CMakeLists.txt"],
        {"rule": "read-back-copy", "path": str(OUT), "problems": ["CMakeLists.txt"]},
    ),
    (
        PatchError("not-clean", recipe="sgl", path=SRC, problems=["x: not found"]),
        f"recipe sgl does not apply cleanly to {SRC}: nothing was written",
        "run with --check to see every operation; update the recipe for this tree",
        ["x: not found"],
        {"rule": "not-clean", "path": str(SRC), "recipe": "sgl", "problems": ["x: not found"]},
    ),
    (
        RecipeRefusedError("sgl", "windows", "--variant fa3=on: no MSVC"),
        "recipe sgl cannot be built for windows: --variant fa3=on: no MSVC",
        "",
        [],
        {"recipe": "sgl", "target_os": "windows", "reason": "--variant fa3=on: no MSVC"},
    ),
    (
        WheelCheckError("not-a-wheel.whl", "name"),
        "the build produced an invalid wheel name not-a-wheel.whl",
        "",
        [],
        {"wheel": "not-a-wheel.whl", "rule": "name"},
    ),
    (
        WheelCheckError("k-1.0-py3-none-any.whl", "promise", problems=["version: expected 2.0"]),
        "the built wheel k-1.0-py3-none-any.whl is not what the recipe promises",
        "check the recipe's version/dist and the project's pyproject (wheel.py-api)",
        ["version: expected 2.0"],
        {
            "wheel": "k-1.0-py3-none-any.whl",
            "rule": "promise",
            "problems": ["version: expected 2.0"],
        },
    ),
    (
        WheelCheckError("k.whl", "import", module="k._C", problems=["ImportError: libx.so"]),
        "the built wheel installs but `import k._C` fails",
        "a missing DLL/.so or an unresolved symbol: check the registered ops and link flags",
        ["ImportError: libx.so"],
        {
            "wheel": "k.whl",
            "rule": "import",
            "module": "k._C",
            "problems": ["ImportError: libx.so"],
        },
    ),
    (
        WheelCheckError("k.whl", "archs", archs=["86", "90"], problems=["no sm_90"]),
        "k.whl holds the wrong CUDA architectures (asked for 86, 90)",
        "look for an architecture list or a version auto-trigger that the recipe does not patch",
        ["no sm_90"],
        {"wheel": "k.whl", "rule": "archs", "archs": ["86", "90"], "problems": ["no sm_90"]},
    ),
    (
        BuildBackendError("sgl", "failed", output=["nvcc fatal"]),
        "building sgl failed",
        "read the compiler output above; rerun with --check"
        " to see the patch and registration state",
        ["nvcc fatal"],
        {"recipe": "sgl", "rule": "failed", "output": ["nvcc fatal"]},
    ),
    (
        BuildBackendError("sgl", "wheel-count", wheels=2, folder=OUT),
        f"the build of sgl produced 2 wheels in {OUT}, expected 1",
        "check that the project's build backend is scikit-build-core and that the build finished",
        [],
        {"recipe": "sgl", "rule": "wheel-count", "wheels": 2, "folder": str(OUT)},
    ),
    (
        EnvironmentBlockError(40000, 32767, [("PATH", 30000), ("INCLUDE", 9000)]),
        "the build environment needs 40000 characters; Windows allows 32767",
        "shorten or unset the largest variables (PATH entries from old installs,"
        " INCLUDE/LIB from repeated vcvarsall runs) and open a fresh shell",
        ["PATH: 30000 characters", "INCLUDE: 9000 characters"],
        {
            "size": 40000,
            "limit": 32767,
            "largest": [{"name": "PATH", "length": 30000}, {"name": "INCLUDE", "length": 9000}],
        },
    ),
]


@pytest.mark.parametrize(
    ("error", "message", "hint", "details", "fields"),
    CASES,
    ids=[f"{type(c[0]).__name__}-{getattr(c[0], 'rule', '')}" for c in CASES],
)
def test_build_error_text_and_json_come_from_its_fields(
    error: BuildError, message: str, hint: str, details: list[str], fields: dict[str, object]
) -> None:
    assert (error.message, error.hint, list(error.details)) == (message, hint, details)
    assert error.exit_code == 11
    out = error.to_json()
    assert out["error"] == "build"
    assert out["message"] == message and out["hint"] == hint and out["details"] == details
    assert out["fields"] == fields
    json.dumps(out)  # every field is a JSON value


def test_every_kernel_build_error_and_each_of_its_texts_has_a_case() -> None:
    """A new subclass (or a new rule of one) is not left without a case above."""
    classes = {
        c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, BuildError)
    } - {BuildError}
    covered: dict[type, set[str]] = {}
    for error, *_ in CASES:
        covered.setdefault(type(error), set()).add(str(getattr(error, "rule", "")))
    assert classes == set(covered)
    for cls, rules in covered.items():
        texts = getattr(cls, "_TEXT", None)
        if isinstance(texts, dict) and cls is not ToolMissingError and cls is not ToolOutputError:
            assert set(texts) == rules, cls
        elif texts is not None:  # keyed by the tool
            tools = {str(getattr(e, "tool", "")) for e, *_ in CASES if type(e) is cls}
            assert set(texts) == tools, cls


# ---------------------------------------------------------------- the raising sites


def _raised(call: object) -> BuildError:
    assert callable(call)
    with pytest.raises(BuildError) as err:
        call()
    return err.value


def test_a_recipe_value_of_the_wrong_kind_names_where_and_the_rule() -> None:
    err = _raised(lambda: parse_recipe({"recipe": {"name": "r", "version": "1"}, "source": []}))
    assert isinstance(err, RecipeError)
    assert err.fields() == {"where": "recipe", "rule": "table", "key": "[source]"}
    assert err.message == "recipe: [source] must be a table"
    err = _raised(lambda: parse_recipe({"recipe": {"name": "r", "version": "1", "cuda": "~"}}))
    assert isinstance(err, RecipeError) and err.rule == "specifier" and err.problem
    assert err.key == "[recipe].cuda"


def test_an_operation_table_names_its_op_and_the_allowed_ones() -> None:
    err = _raised(lambda: from_table({"op": "exclude"}, "[[operations]][0]", ()))
    assert isinstance(err, RecipeError) and err.rule == "unknown-op"
    assert err.fields()["value"] == "exclude"
    assert "exclude-source" in err.allowed and "text-patch" not in err.allowed
    assert err.hint == f"ops: {', '.join(err.allowed)}; or a [[patches]] text patch"
    err = _raised(lambda: from_table({"op": "under-switch", "switch": "S"}, "w", ()))
    assert isinstance(err, RecipeError) and err.fields() == {
        "where": "w",
        "rule": "empty-switch",
        "value": "S",
    }
    err = _raised(lambda: from_table({"op": 3}, "w", ()))
    assert isinstance(err, RecipeError) and err.message == "w: unknown op 3"


def test_the_guard_condition_error_lists_the_conditions_that_have_a_guard() -> None:
    err = _raised(lambda: guard_macro("APPLE"))
    assert isinstance(err, ConditionError)
    assert err.known == {"NOT MSVC": "_MSC_VER", "NOT WIN32": "_WIN32"}
    assert err.hint == "use NOT MSVC (#ifndef _MSC_VER) or NOT WIN32 (#ifndef _WIN32)"


def test_option_and_toolchain_sites_hand_over_what_they_found() -> None:
    err = _raised(lambda: parse_choices(["fa3=maybe"]))
    assert isinstance(err, BuildOptionError)
    assert (err.option, err.value, err.rule) == ("--variant", "fa3=maybe", "on-off")
    from packaging.specifiers import SpecifierSet

    err = _raised(lambda: require_cuda("11.8", SpecifierSet(SPEC), "/opt/cuda/bin/nvcc"))
    assert isinstance(err, CudaVersionError)
    assert (err.found, err.where) == ("11.8", "/opt/cuda/bin/nvcc")
    assert SpecifierSet(err.spec) == SpecifierSet(SPEC)
    err = _raised(lambda: fit({"PATH": "x" * 100, "LIB": "y" * 50}, limit=20))
    assert isinstance(err, EnvironmentBlockError)
    assert (err.limit, err.largest) == (20, (("PATH", 100), ("LIB", 50)))
    assert err.size > 20


def test_wh_build_json_carries_the_fields() -> None:
    result = CliRunner().invoke(build, ["no-such-recipe", "--check", "--json"])
    assert result.exit_code == 11
    out = json.loads(result.output)
    assert out["fields"]["recipe"] == "no-such-recipe" and out["fields"]["rule"] == "unknown"
    assert "sgl-kernel" in out["fields"]["shipped"]
    assert (
        out["hint"]
        == f"shipped recipes: {', '.join(out['fields']['shipped'])}; or pass a path to a .toml"
    )
