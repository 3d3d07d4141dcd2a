"""The kernel32 calls wh makes on Windows, bound once through ctypes: a read handle that
leaves the file renamable and deletable (every share mode), and a file's NTFS change time.

Each call takes the kernel32 object as an argument, so tests stand in for Windows
(``tests/test_windows.py``); ``kernel32()`` is the real one, typed so that a 64-bit
HANDLE is not cut to an int, and made once per process (the change time is read for
every stat key of the caches).
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

GENERIC_READ = 0x80000000
FILE_READ_ATTRIBUTES = 0x80
FILE_SHARE_ALL = 0x1 | 0x2 | 0x4  # READ | WRITE | DELETE
OPEN_EXISTING = 3
FILE_FLAG_SEQUENTIAL_SCAN = 0x08000000
FILE_FLAG_BACKUP_SEMANTICS = 0x02000000  # needed to open a folder
FILE_BASIC_INFO = 0  # FILE_INFO_BY_HANDLE_CLASS.FileBasicInfo
INVALID_HANDLE = (None, -1, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)
_BINARY = getattr(os, "O_BINARY", 0)


@functools.cache
def kernel32() -> Any:  # pragma: no cover - Windows only
    from ctypes import wintypes

    k = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    k.CreateFileW.restype = ctypes.c_void_p
    k.CreateFileW.argtypes = [
        wintypes.LPCWSTR,
        wintypes.DWORD,
        wintypes.DWORD,
        ctypes.c_void_p,
        wintypes.DWORD,
        wintypes.DWORD,
        wintypes.HANDLE,
    ]
    k.CloseHandle.argtypes = [wintypes.HANDLE]
    k.GetFileInformationByHandleEx.argtypes = [
        wintypes.HANDLE,
        ctypes.c_int,
        ctypes.c_void_p,
        wintypes.DWORD,
    ]
    return k


def open_shared(path: str, kernel32: Any, msvcrt: Any) -> int:
    """``CreateFileW`` for reading with every share mode, as a C runtime descriptor."""
    handle = kernel32.CreateFileW(
        path, GENERIC_READ, FILE_SHARE_ALL, None, OPEN_EXISTING, FILE_FLAG_SEQUENTIAL_SCAN, None
    )
    if handle in INVALID_HANDLE:
        code = kernel32.GetLastError()
        raise OSError(0, f"cannot open {path} (WinError {code})", path, code)
    try:
        return int(msvcrt.open_osfhandle(handle, os.O_RDONLY | _BINARY))
    except OSError:
        kernel32.CloseHandle(handle)
        raise


def change_time(path: str, kernel32: Any) -> int | None:
    """``FILE_BASIC_INFO.ChangeTime`` of ``path`` (100 ns units), or None where it cannot
    be read. Opened for attributes only, with every share mode: nobody is kept out."""
    handle = kernel32.CreateFileW(
        path, FILE_READ_ATTRIBUTES, FILE_SHARE_ALL, None, OPEN_EXISTING,
        FILE_FLAG_BACKUP_SEMANTICS, None,
    )  # fmt: skip
    if handle in INVALID_HANDLE:
        return None
    try:
        info = (ctypes.c_longlong * 5)()  # creation, access, write, change; attributes
        ok = kernel32.GetFileInformationByHandleEx(
            handle, FILE_BASIC_INFO, info, ctypes.sizeof(info)
        )
        return int(info[3]) if ok else None
    finally:
        kernel32.CloseHandle(handle)
