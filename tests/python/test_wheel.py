"""The wheel (`make wheel`, what `pip install .` builds): installed into a fresh virtual environment,
`import sensealign` works there without PYTHONPATH or the checkout, and embeds as bin/embed does.
The environment sees Debian's numpy (--system-site-packages) so that nothing is downloaded."""
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import SENTENCES


def test_the_wheel_installs_into_a_fresh_environment_and_embeds_as_bin_embed(tiny_run, root, tmp_path):
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, os.path.join(root, "eval", "python", "build_backend.py"), str(dist)],
                           cwd=root, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = built.stdout.strip().splitlines()[-1]
    assert os.path.basename(wheel).startswith("sensealign-") and wheel.endswith(".whl")
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env)], check=True)
    py = str(env / "bin" / "python")
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-deps", "-q", wheel], env=clean,
                         capture_output=True, text=True)
    if pip.returncode != 0 and "No module named pip" in pip.stderr:
        pytest.skip("this Python's venv has no pip (Debian: python3-venv, which make deps installs)")
    assert pip.returncode == 0, pip.stderr
    inp = tmp_path / "in.txt"
    inp.write_text("".join(s + "\n" for s in SENTENCES))
    out = tmp_path / "out.hdf5"
    subprocess.run([os.path.join(root, "bin", "embed"), "--model", tiny_run, "--input", str(inp), "--output", str(out),
                    "--device", "cpu", "--batch-size", "3"], check=True, cwd=root, capture_output=True)
    script = (
        "import sys, numpy as np, sensealign\n"
        "assert 'site-packages' in sensealign.__file__, sensealign.__file__\n"
        "m = sensealign.load(sys.argv[1], device='cpu')\n"
        "v = m.embed([l.split() for l in open(sys.argv[2])], batch_size=3)\n"
        "np.savez(sys.argv[3], *v)\n")
    got = tmp_path / "got.npz"
    ran = subprocess.run([py, "-c", script, tiny_run, str(inp), str(got)], env=clean, cwd=str(tmp_path),
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    arrays = np.load(got)
    with h5py.File(out, "r") as f:
        assert len(arrays.files) == len(SENTENCES)
        for i in range(len(SENTENCES)):
            np.testing.assert_array_equal(arrays[f"arr_{i}"], f[str(i)][()])
