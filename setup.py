"""The one compiled part of wh: deflate block search in C (installer/wh/wheel/_blockscan.c).

Optional: where no C compiler is found, the build goes on without it and wh searches in
Python, with the same result (installer/wh/wheel/deflatetail.py). ``WH_PURE_PYTHON=1``
leaves it out on purpose: ``wh bundle`` builds wh's wheel that way, so that the wheel it
carries installs on any target (a Windows one, from a bundle made on Linux). Everything
else about the package is declared in pyproject.toml.
"""

import os

from setuptools import Extension, setup

BLOCKSCAN = Extension(
    "wh.wheel._blockscan",
    sources=["installer/wh/wheel/_blockscan.c"],
    optional=True,
    py_limited_api=True,
    define_macros=[("Py_LIMITED_API", "0x030A0000")],
)

if os.environ.get("WH_PURE_PYTHON") == "1":
    setup()
else:  # one build for every CPython from 3.10 on (the limited API): a cp310-abi3 wheel
    setup(ext_modules=[BLOCKSCAN], options={"bdist_wheel": {"py_limited_api": "cp310"}})
