"""The Databricks bundle option: exactly its files, a configuration Databricks' own models
accept, and jobs whose entry point and parameters the generated wheel and CLI take.

Offline: no workspace and no Databricks CLI. The jobs are loaded with databricks-bundles'
models of bundle resources (an unknown key, a wrong type or a value outside an enum fails);
the bundle's own sections, which those models leave out, with the keys the CLI's JSON schema
allows them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from configparser import ConfigParser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import BIN_DIR, CHOICES, bake, clean_template, run_tool
from databricks.bundles.jobs import Job
from test_generated_files import TEMPLATE_LEFTOVER, expected_files, generated_files, text_files

PACKAGE = "page_views_pipeline"
BUNDLE_FILES = {
    "databricks.yml",
    "resources/pipeline_job.yml",
    "resources/upgrade_jobs.yml",
    "docs/DATABRICKS.md",
}
# A cluster's machines cannot share a SQLite file, so a SQLite project keeps the filesystem
# store for its jobs.
JOB_LEDGER = {"sqlite": "filesystem", "postgres": "postgres", "filesystem": "filesystem"}
# One bundle writes a Delta table, which the runtime ships: the same jobs, checked the same way.
SINK = {"sqlite": "parquet", "postgres": "parquet", "filesystem": "delta"}
# What each job runs after its settings options: (command, subcommand).
JOB_COMMANDS = {
    "pipeline": ("run", None),
    "upgrade_plan": ("upgrade", "plan"),
    "upgrade_apply": ("upgrade", "apply"),
}
REFERENCE = re.compile(r"\$\{([^}]*)\}")


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A project with the bundle for each ledger store: the jobs' ledger follows the choice."""
    root = tmp_path_factory.mktemp("databricks")
    return {
        store: bake(
            root / store, offset_store=store, sink_format=SINK[store], databricks_bundle="yes"
        )
        for store in CHOICES["offset_store"]
    }


@dataclass(frozen=True)
class Bundle:
    root: dict[str, Any]  # databricks.yml
    jobs: dict[str, tuple[Path, dict[str, Any]]]  # name: (file it is defined in, definition)


def load_bundle(project: Path) -> Bundle:
    root: dict[str, Any] = yaml.safe_load((project / "databricks.yml").read_text())
    jobs: dict[str, tuple[Path, dict[str, Any]]] = {}
    for pattern in root["include"]:
        for path in sorted(project.glob(pattern)):
            document = yaml.safe_load(path.read_text())
            assert list(document) == ["resources"], path.name
            assert list(document["resources"]) == ["jobs"], path.name
            for name, job in document["resources"]["jobs"].items():
                assert name not in jobs, f"{name} is defined twice"
                jobs[name] = (path, job)
    return Bundle(root, jobs)


def the_task(job: dict[str, Any]) -> dict[str, Any]:
    [task] = job["tasks"]
    assert isinstance(task, dict)
    return task


# --- the files -------------------------------------------------------------------------


@pytest.mark.parametrize("store", CHOICES["offset_store"])
def test_the_bundle_option_bakes_exactly_its_files(bundles: dict[str, Path], store: str) -> None:
    combination = {
        **{f: v[0] for f, v in CHOICES.items()},
        "offset_store": store,
        "sink_format": SINK[store],
    }
    expected = expected_files(combination) | BUNDLE_FILES
    if store == "sqlite":
        expected |= expected_files({**combination, "offset_store": "filesystem"})
    assert generated_files(bundles[store]) == expected


def test_the_default_bake_has_no_bundle(tmp_path: Path) -> None:
    project = bake(tmp_path)
    assert BUNDLE_FILES & generated_files(project) == set()
    assert not (project / "resources").exists(), "an empty resources/ is left behind"


def test_no_template_syntax_is_left_in_the_bundle(bundles: dict[str, Path]) -> None:
    leftovers = [
        f"{store}/{name}: {match.group()!r}"
        for store, project in bundles.items()
        for name in sorted(text_files(project) - {".cookiecutter.json"})
        for match in TEMPLATE_LEFTOVER.finditer((project / name).read_text(encoding="utf-8"))
    ]
    assert leftovers == []


# --- the answer ------------------------------------------------------------------------


def test_an_answer_outside_the_choices_is_refused_in_one_line(
    tmp_path: Path, bundles: dict[str, Path]
) -> None:
    # A replayed answers file skips cookiecutter's own check of the choices: the hook's
    # is the one left.
    recorded = json.loads((bundles["sqlite"] / ".cookiecutter.json").read_text())
    recorded["cookiecutter"]["databricks_bundle"] = "maybe"
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(recorded))
    result = subprocess.run(
        [
            str(BIN_DIR / "cookiecutter"), str(clean_template()),
            "--replay-file", str(answers), "-o", str(tmp_path / "out"),
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR: ")]
    assert errors == ["ERROR: databricks_bundle='maybe': must be one of no, yes"], result.stderr
    assert not any((tmp_path / "out").glob("*")), "nothing may be generated from bad input"


# --- the configuration, against Databricks' models -------------------------------------


@dataclass(frozen=True)
class Each:
    """A mapping whose keys the bundle names, each value matching ``spec``."""

    spec: object


# Sections the bundle does not use, so not modelled here: using one fails until its keys
# are added from the CLI's schema.
NOT_MODELLED = object()
SCALAR = (str, int, bool)
# The keys and types of the bundle's own sections, from the Databricks CLI's JSON schema
# (bundle/schema/jsonschema.json: config.Bundle, config.Artifact, config.Target,
# config.Workspace, variable.Variable), which closes each of them (additionalProperties:
# false). The enums are the values the bundle configuration reference documents.
WORKSPACE = {
    **dict.fromkeys(
        [
            "account_id", "artifact_path", "auth_type", "azure_client_id", "azure_environment",
            "azure_login_app_id", "azure_tenant_id", "azure_workspace_resource_id", "client_id",
            "file_path", "google_service_account", "host", "profile", "resource_path",
            "root_path", "state_path", "workspace_id",
        ],
        str,
    ),
    "azure_use_msi": bool,
    "experimental_is_unified_host": bool,
}  # fmt: skip
BUNDLE = {
    "name": str,
    "cluster_id": str,
    "compute_id": str,
    "databricks_cli_version": str,
    "uuid": str,
    "deployment": NOT_MODELLED,
    "engine": NOT_MODELLED,
    "git": NOT_MODELLED,
}
ARTIFACT = {
    "type": frozenset({"whl", "jar"}),
    "build": str,
    "path": str,
    "executable": frozenset({"bash", "sh", "cmd"}),
    "dynamic_version": bool,
    "files": NOT_MODELLED,
}
VARIABLE = {
    "description": str,
    "default": SCALAR,
    "type": frozenset({"complex"}),
    "lookup": NOT_MODELLED,
}
TARGET = {
    "default": bool,
    "mode": frozenset({"development", "production"}),
    "workspace": WORKSPACE,
    "variables": Each(SCALAR),
    "artifacts": Each(ARTIFACT),
    "bundle": BUNDLE,
    "cluster_id": str,
    "compute_id": str,
    **dict.fromkeys(["git", "permissions", "presets", "resources", "run_as", "sync"], NOT_MODELLED),
}
ROOT = {
    "bundle": BUNDLE,
    "include": [str],
    "variables": Each(VARIABLE),
    "artifacts": Each(ARTIFACT),
    "targets": Each(TARGET),
    "workspace": WORKSPACE,
    # The jobs are checked with databricks-bundles, below.
    "resources": NOT_MODELLED,
    **dict.fromkeys(
        ["experimental", "permissions", "presets", "python", "run_as", "scripts", "sync"],
        NOT_MODELLED,
    ),
}


def shape_problems(value: object, spec: object, where: str) -> Iterator[str]:
    if spec is NOT_MODELLED:
        yield f"{where}: not modelled by this test; add its keys from the CLI's schema"
    elif isinstance(spec, Each):
        if not isinstance(value, dict):
            yield f"{where}: {value!r} is not a mapping"
            return
        for key, item in value.items():
            yield from shape_problems(item, spec.spec, f"{where}.{key}")
    elif isinstance(spec, dict):
        if not isinstance(value, dict):
            yield f"{where}: {value!r} is not a mapping"
            return
        for key, item in value.items():
            if key in spec:
                yield from shape_problems(item, spec[key], f"{where}.{key}")
            else:
                yield f"{where}: unknown key {key!r}"
    elif isinstance(spec, list):
        if not isinstance(value, list):
            yield f"{where}: {value!r} is not a list"
            return
        for index, item in enumerate(value):
            yield from shape_problems(item, spec[0], f"{where}[{index}]")
    elif isinstance(spec, frozenset):
        if value not in spec:
            yield f"{where}: {value!r} is not one of {', '.join(sorted(spec))}"
    else:
        # Exact types: YAML's `yes` or `1` where a string is meant is a mistake here.
        types = spec if isinstance(spec, tuple) else (spec,)
        if type(value) not in types:
            yield f"{where}: {value!r} is not a {' or '.join(t.__name__ for t in types)}"


def job_problems(name: str, job: dict[str, Any]) -> list[str]:
    try:
        loaded = Job.from_dict(job)  # type: ignore[arg-type]  # checking is the point
    except (ValueError, TypeError) as error:
        return [f"resources.jobs.{name}: {error}"]
    # The models coerce scalars (str() of a list, int() of a bool); what they return must be
    # what was written, types included.
    if json.dumps(loaded.as_dict(), sort_keys=True) != json.dumps(job, sort_keys=True):
        return [f"resources.jobs.{name}: Databricks' model reads it as {loaded.as_dict()}"]
    return []


@pytest.mark.parametrize("store", CHOICES["offset_store"])
def test_every_rendered_yaml_is_valid_bundle_configuration(
    bundles: dict[str, Path], store: str
) -> None:
    bundle = load_bundle(bundles[store])
    problems = list(shape_problems(bundle.root, ROOT, "databricks.yml"))
    for name, (_, job) in bundle.jobs.items():
        problems += job_problems(name, job)
    assert not problems, "\n".join(problems)
    assert set(bundle.jobs) == set(JOB_COMMANDS)
    assert {path.name for path, _ in bundle.jobs.values()} == {
        Path(name).name for name in BUNDLE_FILES if name.startswith("resources/")
    }


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda job: job.update(max_concurent_runs=1), "Unexpected field 'max_concurent_runs'"),
        (lambda job: job.update(max_concurrent_runs="one"), "invalid literal for int()"),
        (lambda job: job.update(max_concurrent_runs=True), "reads it as"),
        (lambda job: job["continuous"].update(pause_status="STOPPED"), "not a valid PauseStatus"),
        (lambda job: job["tasks"][0]["python_wheel_task"].update(parameters="run"), "list"),
        (lambda job: job["job_clusters"][0]["new_cluster"].update(spark_version=[17]), "reads it"),
    ],
    ids=[
        "unknown-key",
        "not-an-int",
        "bool-for-int",
        "not-in-enum",
        "str-for-list",
        "list-for-str",
    ],
)
def test_the_job_check_fails_a_broken_job(
    bundles: dict[str, Path], breakage: Callable[[dict[str, Any]], object], message: str
) -> None:
    _, job = load_bundle(bundles["sqlite"]).jobs["pipeline"]
    assert job_problems("pipeline", job) == []
    breakage(job)
    [problem] = job_problems("pipeline", job)
    assert message in problem


def test_the_root_check_fails_a_broken_root(bundles: dict[str, Path]) -> None:
    root = load_bundle(bundles["sqlite"]).root
    root["artifacts"]["default"]["buid"] = root["artifacts"]["default"].pop("build")
    root["targets"]["prod"]["mode"] = "staging"
    root["variables"]["num_workers"]["default"] = [2]
    assert list(shape_problems(root, ROOT, "databricks.yml")) == [
        "databricks.yml.variables.num_workers.default: [2] is not a str or int or bool",
        "databricks.yml.artifacts.default: unknown key 'buid'",
        "databricks.yml.targets.prod.mode: 'staging' is not one of development, production",
    ]


def test_every_reference_names_a_declared_variable_and_every_variable_is_used(
    bundles: dict[str, Path],
) -> None:
    bundle = load_bundle(bundles["postgres"])
    text = "\n".join(
        [(bundles["postgres"] / "databricks.yml").read_text()]
        + [path.read_text() for path in {path for path, _ in bundle.jobs.values()}]
    )
    references = set(REFERENCE.findall(text))
    declared = set(bundle.root["variables"])
    used = {ref.removeprefix("var.") for ref in references if ref.startswith("var.")}
    assert used == declared
    assert references - {f"var.{name}" for name in used} <= {
        "bundle.name",
        "bundle.target",
        "workspace.current_user.userName",
    }
    for target in bundle.root["targets"].values():
        assert set(target.get("variables", {})) <= declared


def test_the_jobs_run_on_classic_compute_with_a_spark_4_runtime(bundles: dict[str, Path]) -> None:
    bundle = load_bundle(bundles["sqlite"])
    runtime = bundle.root["variables"]["spark_version"]["default"]
    # Databricks Runtime 17.3 LTS is Spark 4.0 and Scala 2.13 only.
    assert re.fullmatch(r"(\d+)\.(\d+)\.x-scala2\.13", runtime), runtime
    assert int(runtime.split(".")[0]) >= 17
    for name, (_, job) in bundle.jobs.items():
        # Serverless would be an `environments` entry and a task without a cluster.
        assert "environments" not in job, name
        clusters = {c["job_cluster_key"]: c["new_cluster"] for c in job["job_clusters"]}
        task = the_task(job)
        assert set(task) >= {"job_cluster_key", "python_wheel_task", "libraries"}, name
        cluster = clusters[task["job_cluster_key"]]
        assert cluster["spark_version"] == "${var.spark_version}", name
        # Standard (shared) access runs Python through Spark Connect: no _jvm.
        assert cluster["data_security_mode"] == "SINGLE_USER", name
    assert bundle.jobs["pipeline"][1]["continuous"] == {
        "pause_status": "${var.pipeline_pause_status}"
    }
    for name in ("upgrade_plan", "upgrade_apply"):
        assert "continuous" not in bundle.jobs[name][1] and "schedule" not in bundle.jobs[name][1]


def test_every_task_installs_the_library_and_the_wheel_the_artifact_builds(
    bundles: dict[str, Path],
) -> None:
    project = bundles["sqlite"]
    bundle = load_bundle(project)
    [artifact] = bundle.root["artifacts"].values()
    assert artifact["type"] == "whl"
    assert "pip wheel --no-deps --wheel-dir dist ." in artifact["build"]
    dist = (project / artifact["path"] / "dist").resolve()
    wheels = (project / "wheels").resolve()
    for name, (path, job) in bundle.jobs.items():
        # A library path is relative to the file that names it, not to databricks.yml. The
        # pinned library first: the project's wheel depends on it, and no index holds it.
        libraries = [(path.parent / entry["whl"]).resolve() for entry in the_task(job)["libraries"]]
        assert libraries == [wheels / "*.whl", dist / "*.whl"], name
        assert list(wheels.glob("pyspark_kafka_upgrade-*.whl")), "no library wheel beside it"


# --- the jobs, against the generated wheel and command line ----------------------------


def test_the_wheel_provides_every_tasks_package_and_entry_point(
    bundles: dict[str, Path], tmp_path: Path
) -> None:
    project = bundles["sqlite"]
    scripts = tomllib.loads((project / "pyproject.toml").read_text())["project"]["scripts"]
    # Offline: the build backend from the template's own tooling, not an isolated build.
    build = "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))"
    result = run_tool([sys.executable, "-c", build, str(tmp_path)], cwd=project)
    wheel = tmp_path / result.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        console_scripts = ConfigParser()
        console_scripts.read_string(archive.read(entry_points).decode())
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            line.split(":", 1)[1].strip()
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
    # The runtime brings Spark: pyspark from PyPI installed over it would shadow it. Only
    # the `spark` extra, for local runs, asks for it.
    assert [r for r in requires if re.match(r"pyspark\b(?!-)", r)] == [
        "pyspark<4.3,>=4.0; extra == 'spark'"
    ], requires
    # Databricks finds the entry point in the metadata of the distribution package_name names.
    distribution = entry_points.split("/")[0].removesuffix(".dist-info").rsplit("-", 1)[0]
    for name, (_, job) in load_bundle(project).jobs.items():
        task = the_task(job)["python_wheel_task"]
        package, entry_point = task["package_name"], task["entry_point"]
        assert package == PACKAGE == distribution, name
        assert f"{package}/cli.py" in names
        # console, not main: Databricks ignores the entry point's return value, so the exit
        # code must be raised for a refused command to fail its run.
        assert scripts[entry_point] == f"{package}.cli:console", name
        assert console_scripts["console_scripts"][entry_point] == f"{package}.cli:console", name


def settings_parameters(name: str, job: dict[str, Any]) -> list[str]:
    """The parameters before the job's command: --config and the --set overrides."""
    parameters: list[str] = the_task(job)["python_wheel_task"]["parameters"]
    return parameters[: parameters.index(JOB_COMMANDS[name][0])]


def test_the_upgrade_jobs_plan_and_apply_with_the_pipelines_settings(
    bundles: dict[str, Path],
) -> None:
    jobs = {name: job for name, (_, job) in load_bundle(bundles["sqlite"]).jobs.items()}
    pipeline = settings_parameters("pipeline", jobs["pipeline"])
    assert "--set=kafka.connector=builtin" in pipeline
    for name in ("upgrade_plan", "upgrade_apply"):
        assert settings_parameters(name, jobs[name]) == pipeline, name


PARSE = """
import json, sys
from pyspark_kafka_upgrade.cli._parser import parse_args
from pyspark_kafka_upgrade._application import config_show as configuration
from pyspark_kafka_upgrade._adapters.ledger.opening import installed_stores
from {package}.pipeline import PROJECT

report = {{}}
for name, parameters in json.loads(sys.argv[1]).items():
    args = parse_args(PROJECT, parameters)
    settings = configuration.load(PROJECT, args.config, args.overrides).settings
    report[name] = {{
        "command": [args.command, getattr(args, "upgrade_command", None)],
        "plan": str(getattr(args, "plan", None)),
        "out": str(getattr(args, "out", None)),
        "connector": settings.kafka.connector,
        "root": settings.pipeline.root,
        "local_storage_on_cluster": settings.pipeline.local_storage_on_cluster,
        "ledger": [settings.ledger.store, settings.ledger.location],
        "installed": installed_stores(),
    }}
print(json.dumps(report))
"""


@pytest.mark.parametrize("store", CHOICES["offset_store"])
def test_every_tasks_parameters_run_its_command_with_the_generated_cli(
    bundles: dict[str, Path], store: str, tmp_path: Path
) -> None:
    project = bundles[store]
    bundle = load_bundle(project)
    settings_file = tmp_path / "pipeline.toml"
    settings_file.write_text('[kafka]\nbootstrap_servers = "broker:9092"\n')
    volume = "/Volumes/main/pipelines/files/page-views-pipeline/prod"
    ledger = "postgresql://localhost:5432/pipelines" if store == "postgres" else f"{volume}/ledger"
    values = {
        **{n: v["default"] for n, v in bundle.root["variables"].items() if "default" in v},
        "settings_file": str(settings_file),
        "pipeline_root": volume,
        "ledger_location": ledger,
        "upgrade_plan": f"{volume}/upgrade-plan.json",
        "node_type_id": "i3.xlarge",
    }

    def resolve(parameter: str) -> str:
        return REFERENCE.sub(lambda m: str(values[m.group(1).removeprefix("var.")]), parameter)

    parameters = {
        name: [resolve(p) for p in the_task(job)["python_wheel_task"]["parameters"]]
        for name, (_, job) in bundle.jobs.items()
    }
    result = run_tool(
        [sys.executable, "-c", PARSE.format(package=PACKAGE), json.dumps(parameters)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(project / "src")},
    )
    report = json.loads(result.stdout)
    for name, (command, subcommand) in JOB_COMMANDS.items():
        assert report[name]["command"] == [command, subcommand], name
        assert report[name]["connector"] == "builtin", name
        assert report[name]["root"] == volume, name
        assert report[name]["local_storage_on_cluster"] is True, name
        assert report[name]["ledger"] == [JOB_LEDGER[store], ledger], name
        # The store the job names is one this project was generated with.
        assert JOB_LEDGER[store] in report[name]["installed"], name
    assert report["upgrade_plan"]["out"] == values["upgrade_plan"]
    assert report["upgrade_apply"]["plan"] == values["upgrade_plan"]


def test_the_docs_name_every_job_and_variable_without_a_default(bundles: dict[str, Path]) -> None:
    project = bundles["postgres"]
    docs = (project / "docs" / "DATABRICKS.md").read_text()
    bundle = load_bundle(project)
    for name in bundle.jobs:
        assert f"`{name}`" in docs, name
    for name, variable in bundle.root["variables"].items():
        if "default" not in variable:
            assert f"`{name}`" in docs, name
    assert "Classic compute only" in docs
    assert "databricks bundle validate -t dev" in docs
    assert "databricks bundle deploy -t dev" in docs
