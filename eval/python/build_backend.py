"""PEP 517 backend for `pip install .` and `make wheel`: builds with the Makefile and packs the
package, its compiled core and libsensealign.so into a wheel for this interpreter and machine.

Only the standard library: building needs nothing beyond `make deps`' Debian packages. The core
finds libsensealign.so beside itself (its rpath starts with $ORIGIN); the library's own
dependencies (OpenBLAS, HDF5, fmt, CUDA when built with it) are the system's, so a wheel installs
on machines of the same kind as the one that built it.
"""
import base64
import hashlib
import io
import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "sensealign"
with open(os.path.join(ROOT, "pyproject.toml"), "rb") as _f:
    VERSION = tomllib.load(_f)["project"]["version"]
SUMMARY = "Sense-aware contextual embeddings (ELMo, SaELMo, BERT) and their cross-lingual alignment"
# Tested with numpy 1.26 (Debian 12, PyPI) and 2.4 (PyPI).
REQUIRES = ["numpy>=1.21"]
EXTRAS = {"torch": ["torch"], "flair": ["flair>=0.15,<0.16"]}


def _tag():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{plat}"


def _metadata():
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {VERSION}", f"Summary: {SUMMARY}",
             f"Requires-Python: =={sys.version_info.major}.{sys.version_info.minor}.*"]
    lines += [f"Requires-Dist: {r}" for r in REQUIRES]
    for extra, reqs in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f"Requires-Dist: {r}; extra == \"{extra}\"" for r in reqs]
    return "\n".join(lines) + "\n"


def _build():
    """`make python`: the core for Debian's python3, whose headers and pybind11 `make deps` installs.
    A virtual environment of any Python with the same version takes the same core."""
    jobs = str(os.cpu_count() or 1)
    subprocess.run(["make", "-C", ROOT, f"-j{jobs}", "python"], check=True, stdout=sys.stderr)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not os.path.exists(os.path.join(ROOT, "bin", NAME, f"_core{suffix}")):
        raise RuntimeError(f"sensealign wheel: the core is built for Debian's /usr/bin/python3; this Python "
                           f"({sys.version.split()[0]}, {suffix}) needs the same version")
    files = {}
    pkg = os.path.join(ROOT, "eval", "python", NAME)
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py"):
            files[f"{NAME}/{f}"] = os.path.join(pkg, f)
    files[f"{NAME}/_core{suffix}"] = os.path.join(ROOT, "bin", NAME, f"_core{suffix}")
    files[f"{NAME}/libsensealign.so"] = os.path.join(ROOT, "build", "libsensealign.so")
    for arc, path in files.items():
        if not os.path.exists(path):
            raise RuntimeError(f"sensealign wheel: {path} was not built (make python)")
    return files


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = _build()
    dist_info = f"{NAME}-{VERSION}.dist-info"
    name = f"{NAME}-{VERSION}-{_tag()}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        def add(arc, data, mode=0o644):
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))  # fixed: the same build, the same bytes
            info.external_attr = (mode | 0o100000) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            record.append(_record_line(arc, data))
        for arc, path in files.items():
            with open(path, "rb") as f:
                add(arc, f.read(), 0o755 if arc.endswith(".so") else 0o644)
        add(f"{dist_info}/METADATA", _metadata().encode())
        add(f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: sensealign build_backend\nRoot-Is-Purelib: false\n"
                                   f"Tag: {_tag()}\n").encode())
        record.append(f"{dist_info}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        z.writestr(info, "\n".join(record) + "\n")
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = os.path.join(metadata_directory, f"{NAME}-{VERSION}.dist-info")
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "w") as f:
        f.write(_metadata())
    return os.path.basename(dist_info)


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("sensealign: no source distribution; build a wheel from the checkout (pip install . or make wheel)")


if __name__ == "__main__":  # make wheel: python3 eval/python/build_backend.py DIST_DIR
    print(os.path.join(sys.argv[1], build_wheel(sys.argv[1])))
