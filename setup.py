"""Build step: the package as pyproject.toml describes it, plus the common kernels compiled for
this machine (``numgrad/_prebuild.py``), so that a program's first run does not compile them.

Set NUMGRAD_PREBUILD=0 to skip it. A failure to compile is a warning, never a failed install.
"""

import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        if os.environ.get("NUMGRAD_PREBUILD", "1").strip().lower() in ("0", "off", "no", "false"):
            return
        # an editable install imports the package from this source tree
        root = HERE if getattr(self, "editable_mode", False) else os.path.abspath(self.build_lib)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
        print("numgrad: compiling the common kernels for this machine (numgrad/_prebuilt)",
              flush=True)
        try:
            subprocess.run([sys.executable, "-m", "numgrad._prebuild",
                            os.path.join(root, "numgrad", "_prebuilt")],
                           env=env, cwd=root, check=True, timeout=1800)
        except Exception as exc:  # the kernels then compile on first use, as before
            print(f"numgrad: WARNING: the common kernels were not precompiled ({exc}); they "
                  "compile when first used", file=sys.stderr, flush=True)


setup(cmdclass={"build_py": BuildPyWithKernels})
