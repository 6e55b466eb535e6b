"""The OS sandbox for shell commands run under ``--sandbox`` (Linux: Landlock + seccomp).

What a contained command may do:

- read and execute anything the user can;
- write (create, delete, rename, truncate...) only beneath the project root and a private
  temp folder (``TMPDIR``), plus the harmless devices ``/dev/null``, ``/dev/zero``, ``/dev/full``;
- no network unless the caller allows it: Landlock (ABI >= 4) refuses TCP bind and connect,
  and a seccomp filter refuses creating any socket other than AF_UNIX / AF_NETLINK (so UDP,
  raw and packet sockets too) and refuses ``io_uring_setup`` (io_uring can open sockets
  without the socket syscall);
- with Landlock ABI >= 6, no signals to processes outside the sandbox (clio itself, other
  programs of the user) and no connection to abstract unix sockets outside it.

- no read of clio's own folder (``$CLIO_HOME``) nor of the user's credential stores
  (clio/safety/hide.py), and no unix socket unless the network is allowed;
- in its own PID and mount namespaces where the kernel allows (clio/safety/namespaces.py).

Without ``--sandbox`` every command is still kept from reading ``$CLIO_HOME`` (``hide``):
Landlock with only the file read right handled.

The restriction is applied by a small wrapper process, ``python -m clio.safety.wrapper
--write R --write T [--net] [--hide H] [--ns] -- PROGRAM ARGS...`` (clio/safety/wrapper.py): it
restricts itself (no_new_privs, seccomp, Landlock) and then ``exec``s the program, so every
descendant inherits the restriction and nothing runs in a threaded parent between fork and exec.
If any step fails the wrapper exits with status 126 and never runs the program unconfined.

Landlock rules are an allow-list that only ever narrows: a process cannot lift them, and
``--yes`` has no way to widen them. Implemented with ctypes against the raw syscalls (no
dependency): the interface is five syscalls and a few structs, and the seccomp half is not
offered by any Python Landlock binding.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from clio.safety.hide import grant_except

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "PROVIDER_KEYS",
    "Availability",
    "availability",
    "contain",
    "hide",
    "is_credential_name",
    "make_undumpable",
    "landlock_abi",
    "scrub_env",
]

# --- the environment of every shell command (sandbox or not) ------------------------------

# Credentials of LLM providers: clio's own (OPENAI_API_KEY) and those of the endpoints users point
# it at. Also removed: every name ending in _API_KEY (CLIO_API_KEY, COHERE_API_KEY, ...).
PROVIDER_KEYS = frozenset({
    "OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN",
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENROUTER_API_KEY", "GROQ_API_KEY",
    "MISTRAL_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "DEEPSEEK_API_KEY", "TOGETHER_API_KEY",
    "TOGETHERAI_API_KEY", "FIREWORKS_API_KEY", "XAI_API_KEY", "PERPLEXITY_API_KEY", "COHERE_API_KEY",
    "CO_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACEHUB_API_TOKEN", "REPLICATE_API_TOKEN",
    "OLLAMA_API_KEY", "LITELLM_API_KEY", "LITELLM_MASTER_KEY", "CEREBRAS_API_KEY", "NVIDIA_API_KEY",
})  # fmt: skip


def is_credential_name(name: str) -> bool:
    """True for a variable that must not reach a shell command: a provider key or any ``*_API_KEY``."""
    upper = name.upper()
    return upper in PROVIDER_KEYS or upper.endswith("_API_KEY") or upper.endswith("_APIKEY")


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without clio's and other LLM providers' credentials."""
    return {k: v for k, v in env.items() if not is_credential_name(k)}


# --- syscall numbers (Landlock's are the same on every architecture) ---------------------
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
_LANDLOCK_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_PR_SET_DUMPABLE = 4
_SECCOMP_MODE_FILTER = 2

# --- Landlock access rights ---------------------------------------------------------------
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")

# --- seccomp -------------------------------------------------------------------------------
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_SYS_SOCKET = {"x86_64": 41, "aarch64": 198}
_SYS_IO_URING_SETUP = 425
_X32_SYSCALL_BIT = 0x40000000
_AF_UNIX = 1
_AF_NETLINK = 16
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_RET_K = 0x06

EXIT_SETUP_FAILED = 126


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


class ContainmentError(OSError):
    """A step of setting up the sandbox failed; the command must not run."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _syscall(libc: ctypes.CDLL, *args: object) -> int:
    fn = libc.syscall
    fn.restype = ctypes.c_long
    return int(fn(*args))


@lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = _libc()
    except OSError:
        return 0
    version = _syscall(libc, _SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                       ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))  # fmt: skip
    return max(version, 0)


def _machine() -> str:
    return os.uname().machine.lower()


class Availability(NamedTuple):
    """Whether shell commands can be contained here, and one line saying how (or why not)."""

    available: bool
    abi: int
    network_blocked: bool  # all sockets but AF_UNIX/AF_NETLINK refused (seccomp) or at least TCP (ABI >= 4)
    reason: str


@lru_cache(maxsize=1)
def availability() -> Availability:
    """Checked once per process with the ``landlock_create_ruleset`` version query."""
    if not sys.platform.startswith("linux"):
        return Availability(False, 0, False,
                            f"no OS sandbox on {sys.platform} (Linux Landlock only); every shell command will ask")  # fmt: skip
    abi = landlock_abi()
    if abi < 1:
        return Availability(
            False, 0, False,
            "no OS sandbox: this kernel has no Landlock (Linux >= 5.13 with landlock in the LSM list); "
            "every shell command will ask",
        )  # fmt: skip
    seccomp = _machine() in _AUDIT_ARCH
    if seccomp and abi >= 4:
        net = "network blocked"
    elif seccomp:
        net = "network blocked (seccomp)"
    elif abi >= 4:
        net = "TCP blocked, UDP not (no seccomp filter for this CPU)"
    else:
        net = "network NOT blocked (Landlock ABI < 4, no seccomp filter for this CPU)"
    return Availability(
        True, abi, seccomp or abi >= 4,
        f"OS sandbox: Landlock ABI {abi}; shell writes confined to the project and a private temp folder, {net}",
    )  # fmt: skip


# --- the restriction itself (runs in the wrapper process) ---------------------------------


def _handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _add_path(libc: ctypes.CDLL, ruleset_fd: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        attr = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        if _syscall(libc, _SYS_LANDLOCK_ADD_RULE, ruleset_fd, _LANDLOCK_RULE_PATH_BENEATH,
                    ctypes.byref(attr), ctypes.c_uint32(0)) < 0:  # fmt: skip
            err = ctypes.get_errno()
            raise ContainmentError(err, f"landlock_add_rule({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def _no_new_privs(libc: ctypes.CDLL) -> None:
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise ContainmentError(err, f"prctl(NO_NEW_PRIVS): {os.strerror(err)}")


def _landlock(
    libc: ctypes.CDLL, abi: int, writable: Sequence[str], network: bool, hidden: Sequence[str] = (),
    walked: Sequence[Sequence[object]] | None = None,
    hidden_real: Sequence[str] | None = None,
) -> None:
    fs = _handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=fs, handled_access_net=0, scoped=0)
    size = 8
    if abi >= 4 and not network:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # handled, never granted: refused
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_SIGNAL | (0 if network else SCOPE_ABSTRACT_UNIX_SOCKET)
        size = 24
    ruleset_fd = _syscall(libc, _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                          ctypes.c_uint32(0))  # fmt: skip
    if ruleset_fd < 0:
        err = ctypes.get_errno()
        raise ContainmentError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    try:
        grant_except(lambda p, a: _add_path(libc, ruleset_fd, p, a), hidden, _READ & fs, walked, hidden_real)
        for dev in _DEVICES:
            if os.path.exists(dev):
                _add_path(libc, ruleset_fd, dev, (FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE) & fs)
        for path in writable:
            _add_path(libc, ruleset_fd, path, fs)
        if _syscall(libc, _SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, ctypes.c_uint32(0)) < 0:
            err = ctypes.get_errno()
            raise ContainmentError(err, f"landlock_restrict_self: {os.strerror(err)}")
    finally:
        os.close(ruleset_fd)


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> _SockFilter:
    return _SockFilter(code=code, jt=jt, jf=jf, k=k)


def seccomp_program(machine: str, *, unix: bool = True) -> list[_SockFilter]:
    """BPF: refuse socket() for every family but AF_UNIX/AF_NETLINK, and io_uring_setup (EACCES/EPERM).

    ``unix=False`` refuses AF_UNIX too: a socket file (the docker socket, an ssh agent, a listener
    another program opened) carries data out as well as TCP does, and Landlock cannot see its
    address; ``socketpair`` stays allowed. Syscalls of a foreign ABI (x32, 32-bit compat) are
    refused with ENOSYS: their numbers differ and 32-bit x86 reaches sockets through
    socketcall(2), which the filter cannot inspect."""
    arch, nr_socket = _AUDIT_ARCH[machine], _SYS_SOCKET[machine]
    deny = _SECCOMP_RET_ERRNO | errno.EACCES
    prog = [
        _bpf(_BPF_LD_W_ABS, 4),  # 0: arch
        _bpf(_BPF_JEQ_K, arch, jt=1, jf=0),  # 1
        _bpf(_BPF_RET_K, _SECCOMP_RET_ERRNO | errno.ENOSYS),  # 2: foreign ABI
        _bpf(_BPF_LD_W_ABS, 0),  # 3: syscall number
        _bpf(_BPF_JGE_K, _X32_SYSCALL_BIT, jt=0, jf=1),  # 4
        _bpf(_BPF_RET_K, _SECCOMP_RET_ERRNO | errno.ENOSYS),  # 5: x32
        _bpf(_BPF_JEQ_K, _SYS_IO_URING_SETUP, jt=0, jf=1),  # 6
        _bpf(_BPF_RET_K, _SECCOMP_RET_ERRNO | errno.EPERM),  # 7
        _bpf(_BPF_JEQ_K, nr_socket, jt=1, jf=0),  # 8
        _bpf(_BPF_RET_K, _SECCOMP_RET_ALLOW),  # 9: anything else
        _bpf(_BPF_LD_W_ABS, 16),  # 10: args[0] (the family; low 32 bits, little endian)
        _bpf(_BPF_JEQ_K, _AF_UNIX if unix else 0xFFFF, jt=2, jf=0),  # 11 (0xFFFF: no such family)
        _bpf(_BPF_JEQ_K, _AF_NETLINK, jt=1, jf=0),  # 12
        _bpf(_BPF_RET_K, deny),  # 13
        _bpf(_BPF_RET_K, _SECCOMP_RET_ALLOW),  # 14
    ]
    return prog


def _seccomp(libc: ctypes.CDLL, machine: str, unix: bool = True) -> None:
    prog = seccomp_program(machine, unix=unix)
    filters = (_SockFilter * len(prog))(*prog)
    fprog = _SockFprog(len=len(prog), filter=ctypes.cast(filters, ctypes.POINTER(_SockFilter)))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise ContainmentError(err, f"seccomp: {os.strerror(err)}")


def contain(
    writable: Sequence[str | Path],
    *,
    network: bool = False,
    hidden: Sequence[str] = (),
    walked: Sequence[Sequence[object]] | None = None,
    hidden_real: Sequence[str] | None = None,
) -> None:
    """Restrict the calling process (and every process it will start) for good.

    ``hidden``: paths it may not read at all. Without ``network`` no socket but AF_NETLINK can be
    made (no TCP, UDP, raw, packet nor unix socket). Raises ContainmentError when the kernel
    refuses a step; the caller must then not go on. ``walked``: what an earlier walk of
    ``hidden`` found to grant (clio/safety/hide.py ``walk``; checked before use)."""
    abi = landlock_abi()
    if abi < 1:
        raise ContainmentError(errno.ENOSYS, "Landlock is not available in this kernel")
    paths = [os.path.realpath(p) for p in writable]
    libc = _libc()
    _no_new_privs(libc)
    machine = _machine()
    if not network and machine in _AUDIT_ARCH:
        _seccomp(libc, machine, unix=False)
    _landlock(libc, abi, paths, network, hidden, walked, hidden_real)


def hide(
    hidden: Sequence[str],
    walked: Sequence[Sequence[object]] | None = None,
    hidden_real: Sequence[str] | None = None,
) -> None:
    """Only keep the calling process from reading the files under ``hidden`` (what every command
    gets without ``--sandbox``): Landlock handles just the file read right (and REFER, which
    Landlock always denies otherwise), granted everywhere else. Writing stays as the user may."""
    abi = landlock_abi()
    if abi < 1:
        raise ContainmentError(errno.ENOSYS, "Landlock is not available in this kernel")
    fs = FS_READ_FILE | (FS_REFER if abi >= 2 else 0)
    libc = _libc()
    _no_new_privs(libc)
    attr = _RulesetAttr(handled_access_fs=fs, handled_access_net=0, scoped=0)
    ruleset_fd = _syscall(libc, _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8),
                          ctypes.c_uint32(0))  # fmt: skip
    if ruleset_fd < 0:
        err = ctypes.get_errno()
        raise ContainmentError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    try:
        grant_except(lambda p, a: _add_path(libc, ruleset_fd, p, a), hidden, fs, walked, hidden_real)
        if _syscall(libc, _SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, ctypes.c_uint32(0)) < 0:
            err = ctypes.get_errno()
            raise ContainmentError(err, f"landlock_restrict_self: {os.strerror(err)}")
    finally:
        os.close(ruleset_fd)


def make_undumpable() -> None:
    """Make this process non-dumpable: its ``/proc/PID/environ``, ``mem``, ``maps`` and ptrace are
    then closed to other processes of the same user (only root gets in). Every clio process
    calls it first thing, before any key is read; commands it starts are dumpable again after
    their ``exec``, so nothing else changes for them."""
    if not sys.platform.startswith("linux"):
        return
    try:
        _libc().prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass
