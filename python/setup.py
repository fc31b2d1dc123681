"""Builds recur's _recur extension with the repository's CMake build and packages it.

The build directory is $RECUR_BUILD_DIR, or <repo>/build (configured Release with Ninja if it
is not configured yet); only the _recur target is built. No network: pybind11, numpy and the
compilers come from Debian packages (scripts/setup.sh). docs/python.md.
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("RECUR_BUILD_DIR", os.path.join(REPO, "build"))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", REPO, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                                   f"-DPython_EXECUTABLE={sys.executable}"])
        jobs = os.environ.get("RECUR_BUILD_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", build_dir, "-j", jobs, "--target", "_recur"])
        built = glob.glob(os.path.join(build_dir, "python", "recur", "_recur*.so"))
        if len(built) != 1:
            sys.exit(f"recur: expected one _recur*.so in {build_dir}/python/recur, found {built}")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


setup(
    packages=["recur"],
    ext_modules=[Extension("recur._recur", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
)
