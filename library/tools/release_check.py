"""Build the library's sdist and wheel and check them as a user would get them.

1. ``python -m build`` writes both into ``--dist``; ``twine check --strict`` reads their
   metadata and README as the index will render it.
2. A fresh virtualenv installs the wheel (with ``--with-spark``, its ``spark`` extra) and
   imports the public API there, outside this checkout; with ``--pytest`` it also installs
   pytest and runs a trivial test, so the plugin is shown to load where pyspark is absent.
3. With ``--tag``, the tag must be ``library-v<__version__>``.

The release job runs it before publishing (trusted publishing, on a ``library-v*`` tag):

    python tools/release_check.py --dist dist --tag "$GITHUB_REF_NAME" --with-spark
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    # Run as a script (python tools/release_check.py): the tools package is beside it.
    sys.path.insert(0, str(LIBRARY))
from tools.api_check import version_text  # noqa: E402 - the path above, for a script

PACKAGE = "pyspark_kafka_upgrade"
TIMEOUT_S = 900

# What a fresh environment imports of the public API; steps and output need pyspark.
_WITHOUT_SPARK = f"""
import sys
import {PACKAGE} as package, {PACKAGE}.cli, {PACKAGE}.testing as testing
assert package.__version__ == sys.argv[1], (package.__version__, sys.argv[1])
for name in package.__all__:
    getattr(package, name)
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & {{"pyspark", "py4j"}})
assert not heavy, f"importing the public API loaded {{heavy}}"
print("public API imported:", len(package.__all__), "names;", len(testing.__all__), "testing names")
"""
_WITH_SPARK = f"""
import {PACKAGE}.steps as steps, {PACKAGE}.output as output, {PACKAGE}.testing as testing
for module in (steps, output, testing):
    for name in module.__all__:
        getattr(module, name)
print("steps, output and testing: every name resolves")
"""
_TRIVIAL_TEST = "def test_arithmetic():\n    assert 1 + 1 == 2\n"


def _run(command: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"release check: `{' '.join(command)}` exited {done.returncode}\n"
            f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done.stdout


def version() -> str:
    return version_text(LIBRARY / "src")


def build(dist: Path) -> list[Path]:
    dist.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist), "."], LIBRARY)
    built = sorted(dist.glob(f"{PACKAGE}-{version()}*"))
    wheels = [path for path in built if path.suffix == ".whl"]
    if len(wheels) != 1 or len(built) != 2:
        raise SystemExit(
            f"release check: expected one sdist and one wheel in {dist}, found {built}"
        )
    _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, built)])
    return built


def check_in_fresh_environment(wheel: Path, with_spark: bool, with_pytest: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="release-check-") as scratch:
        home = Path(scratch)
        venv.create(home / "venv", with_pip=True)
        python = str(home / "venv" / "bin" / "python")
        requirement = f"{wheel}[spark]" if with_spark else str(wheel)
        _run([python, "-m", "pip", "install", "--quiet", requirement, *(["pytest"] * with_pytest)])
        # From the scratch directory, so that this checkout's src/ is not what is imported.
        print(_run([python, "-c", _WITHOUT_SPARK, version()], home).strip())
        if with_spark:
            print(_run([python, "-c", _WITH_SPARK], home).strip())
        if with_pytest:
            (home / "test_trivial.py").write_text(_TRIVIAL_TEST)
            print(
                _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], home)
                .strip()
                .splitlines()[-1]
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dist", type=Path, default=LIBRARY / "dist", help="where to build")
    parser.add_argument("--tag", help="the release tag, which must be library-v<version>")
    parser.add_argument("--with-spark", action="store_true", help="install the spark extra too")
    parser.add_argument("--pytest", action="store_true", help="run a trivial test there too")
    args = parser.parse_args(argv)
    expected = f"library-v{version()}"
    if args.tag is not None and args.tag != expected:
        raise SystemExit(f"release check: the tag {args.tag} is not {expected}, the version in src")
    built = build(args.dist.resolve())
    print("built and checked:", ", ".join(path.name for path in built))
    wheel = next(path for path in built if path.suffix == ".whl")
    check_in_fresh_environment(wheel, args.with_spark, args.pytest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
