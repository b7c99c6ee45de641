"""On SASL_SSL with ACLs: the pipeline and its upgrade, exact, with no password anywhere;
and every way a login can be wrong refused in one line, within seconds.

The broker is the plugin's ``secured_kafka``: Apache Kafka with TLS from a throwaway CA,
SCRAM-SHA-512 and PLAIN users, and KRaft's StandardAuthorizer. The pipeline's user is
allowed Describe and Read on its topic and nothing else, which is all either connector
needs. Each connector logs in with a mechanism of its own and its password from a place
of its own (an environment variable, a file), so that both ways are proven.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import pyspark_kafka_upgrade.testing._oracle as oracle
import support.pipelines as pipelines
import support.plans as plans
from pyspark_kafka_upgrade import testing
from pyspark_kafka_upgrade._adapters.ledger.opening import open_store
from pyspark_kafka_upgrade._application.run.run_command import RunRequest, run_pipeline
from pyspark_kafka_upgrade._application.upgrade.plan_file import read_plan_file
from pyspark_kafka_upgrade._core.settings import load_settings
from pyspark_kafka_upgrade._domain.values.layout import GenerationLayout
from pyspark_kafka_upgrade._example.pipeline import PROJECT
from pyspark_kafka_upgrade.testing._kafka.secured import Login, SecuredKafka
from pyspark_kafka_upgrade.testing._secret_search import assert_no_secret
from support.example import main

pytestmark = pytest.mark.integration

GRID = oracle.Grid(size_ms=10 * pipelines.MINUTE_MS)
DELAY_MS = 5 * pipelines.MINUTE_MS
ARTICLES = ["a1", "a2"]
VERSION_2 = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
PASSWORD_ENV = "PIPELINE_KAFKA_PASSWORD"
# A refusal is one line within seconds: the access check answers in about half a second;
# the rest is room for a machine busy with Spark.
REFUSAL_DEADLINE_S = 10.0


@dataclass(frozen=True)
class Pipeline:
    """How one test's pipeline logs in, and the --set options that say so."""

    login: Login
    options: list[str]


def login_for(
    connector: str,
    secured_kafka: SecuredKafka,
    topic: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Pipeline:
    """The built-in connector logs in by SCRAM, its password in an environment variable;
    the pykafka source by PLAIN, its password in a file outside the pipeline's root."""
    if connector == "builtin":
        login = secured_kafka.add_scram_user(
            f"pipeline-{secrets.token_hex(4)}", f"sentinel-scram-{secrets.token_hex(12)}"
        )
        monkeypatch.setenv(PASSWORD_ENV, login.password)
        source = f"kafka.sasl_password_env={PASSWORD_ENV}"
    else:
        login = secured_kafka.plain_user
        password_file = tmp_path / "secret" / "kafka-password"
        password_file.parent.mkdir()
        password_file.write_text(login.password + "\n")
        source = f"kafka.sasl_password_file={password_file}"
    secured_kafka.allow(login.user, topic, ["Describe", "Read"])
    client_options = secured_kafka.client_options(login)
    options = [
        *(f"kafka.options.{key}={value}" for key, value in client_options.items()),
        f"kafka.sasl_username={login.user}",
        source,
        f"kafka.connector={connector}",
    ]
    return Pipeline(login, options)


@pytest.mark.parametrize("connector", ["builtin", "python"])
def test_the_pipeline_and_its_upgrade_run_on_sasl_ssl_and_no_password_is_left_anywhere(
    connector: str,
    secured_kafka: SecuredKafka,
    spark: SparkSession,
    spark_event_log: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="pyspark_kafka_upgrade")
    admin = secured_kafka.admin_client
    bootstrap = secured_kafka.bootstrap_servers
    topic = testing.unique_topic(f"secured-{connector}")
    testing.create_topic(bootstrap, topic, 2, client=admin)
    pipeline = login_for(connector, secured_kafka, topic, tmp_path, monkeypatch)
    times = [pipelines.BASE_MS + i * pipelines.MINUTE_MS for i in range(60)]
    events = pipelines.page_views(ARTICLES, times, partitions=2)
    log = oracle.EventLog(bootstrap, client=admin)
    log.produce(topic, events[:40])
    base = pipelines.pipeline_overrides(tmp_path, bootstrap, topic, *pipeline.options)
    version_1 = load_settings(PROJECT, env={}, overrides=base).settings
    version_2 = load_settings(PROJECT, env={}, overrides=[*base, VERSION_2]).settings
    as_options = [f"--set={option}" for option in [*base, VERSION_2]]
    printed: list[str] = []
    outputs: dict[str, str] = {}

    def command(name: str, argv: list[str]) -> str:
        capfd.readouterr()
        assert main([*as_options, *argv]) == 0, capfd.readouterr().err
        captured = capfd.readouterr()
        outputs[f"stdout of {name}"] = captured.out
        outputs[f"stderr of {name}"] = captured.err
        return captured.out

    # Version 1 reads the first 40 events and stops with the 10:30-10:40 windows open.
    run_pipeline(RunRequest(settings=version_1, available_now=True, echo=printed.append), spark)
    plan_file = tmp_path / "plan.json"
    command("upgrade plan", ["upgrade", "plan", "--out", str(plan_file)])
    # The plan's scans logged in too: they found the open windows' records to replay.
    plan = read_plan_file(plan_file)
    assert plans.restart_offsets(plan, topic) == {"0": 15, "1": 15}
    assert plan.records_to_replay == 10
    command("upgrade apply", ["upgrade", "apply", str(plan_file)])
    log.produce(topic, events[40:])
    run_pipeline(RunRequest(settings=version_2, available_now=True, echo=printed.append), spark)
    config = command("config show", ["config", "show"])
    checkpoint = command("checkpoint show", ["checkpoint", "show", "--json"])

    # Exact against the oracle: nothing lost, nothing written by both generations.
    with open_store(version_1.ledger, spark=lambda: spark) as store:
        last = store.last_batch(version_1.pipeline.name, 2)
        ledger_rows = json.dumps(
            [
                [batch.to_json() for batch in store.batches(version_1.pipeline.name, generation)]
                for generation in (1, 2)
            ]
            + [generation.to_json() for generation in store.generations(version_1.pipeline.name)]
        )
    assert last is not None and last.batch_watermark_ms == times[-1] - DELAY_MS
    root = version_1.pipeline.root
    expected = oracle.expected_counts(
        log.events,
        GRID,
        written_through_ms=oracle.final_watermark_ms(GenerationLayout(root, 2).checkpoint),
    )
    written = {
        f"generation {n}": oracle.written_rows(spark, GenerationLayout(root, n).output)
        for n in (1, 2)
    }
    assert sum(expected.values()) >= 50, "the oracle expects almost nothing"
    oracle.Comparison(expected, written, log.events, GRID).check()
    assert pipeline.login.user in config and "kafka.sasl_password_env" in config
    assert json.loads(checkpoint)["last_committed"] is not None

    # No password anywhere: not in what was printed or logged, not in the ledger, the plan,
    # the files of every generation, the event log, the settings shown.
    searched = assert_no_secret(
        pipeline.login.password,
        files=[tmp_path / "pipeline", plan_file, tmp_path / "ledger.sqlite", spark_event_log],
        texts={
            **outputs,
            "run's progress lines": "\n".join(printed),
            **logged_by_source_line(caplog),
            "stdout and stderr of the JVM and the runs": "".join(capfd.readouterr()),
            "the ledger's rows": ledger_rows,
        },
    )
    assert searched > 20, "the search looked at almost nothing"
    assert any(spark_event_log.iterdir()), "Spark wrote no event log"


def logged_by_source_line(caplog: pytest.LogCaptureFixture) -> dict[str, str]:
    """The pytest log, grouped by the source line that logged: a leak names that line."""
    texts: dict[str, str] = {}
    for record in caplog.records:
        where = f"the pytest log: {record.name} at {record.pathname}:{record.lineno}"
        texts[where] = texts.get(where, "") + caplog.handler.format(record) + "\n"
    return texts


def refused(argv: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, float]:
    capfd.readouterr()
    started = time.monotonic()
    code = main(argv)
    return code, capfd.readouterr().err, time.monotonic() - started


@pytest.mark.parametrize("connector", ["builtin", "python"])
def test_every_wrong_login_is_refused_in_one_line_within_seconds(
    connector: str,
    secured_kafka: SecuredKafka,
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    admin = secured_kafka.admin_client
    bootstrap = secured_kafka.bootstrap_servers
    topic = testing.unique_topic(f"refused-{connector}")
    testing.create_topic(bootstrap, topic, 1, client=admin)
    times = [pipelines.BASE_MS + i * pipelines.MINUTE_MS for i in range(20)]
    testing.produce(bootstrap, topic, pipelines.page_views(ARTICLES, times, 1), client=admin)
    # The pipeline's own user ran generation 1, so that `upgrade plan` gets as far as Kafka.
    reader = secured_kafka.add_scram_user(
        f"reader-{secrets.token_hex(4)}", f"sentinel-{secrets.token_hex(12)}"
    )
    secured_kafka.allow(reader.user, topic, ["Describe", "Read"])
    # A user who may log in and describe the topic, but not read it.
    describer = secured_kafka.add_scram_user(
        f"describer-{secrets.token_hex(4)}", f"sentinel-{secrets.token_hex(12)}"
    )
    secured_kafka.allow(describer.user, topic, ["Describe"])
    wrong = f"sentinel-wrong-{secrets.token_hex(12)}"
    monkeypatch.setenv("READER_PASSWORD", reader.password)
    monkeypatch.setenv("DESCRIBER_PASSWORD", describer.password)
    monkeypatch.setenv("WRONG_PASSWORD", wrong)
    good = {
        **{f"kafka.options.{k}": v for k, v in secured_kafka.client_options(reader).items()},
        "kafka.sasl_username": reader.user,
        "kafka.sasl_password_env": "READER_PASSWORD",
        "kafka.connector": connector,
    }
    base = pipelines.pipeline_overrides(tmp_path, bootstrap, topic, *as_pairs(good))
    settings = load_settings(PROJECT, env={}, overrides=base).settings
    run_pipeline(RunRequest(settings=settings, available_now=True, echo=lambda _: None), spark)
    plaintext = secured_kafka.plaintext_bootstrap_servers
    cases = {
        "wrong password": (
            {"kafka.sasl_password_env": "WRONG_PASSWORD"},
            f"Kafka refused the login of user '{reader.user}' (SCRAM-SHA-512) at {bootstrap}: "
            "wrong password or unknown user",
        ),
        "unknown user": (
            {"kafka.sasl_username": "nobody-at-all"},
            f"Kafka refused the login of user 'nobody-at-all' (SCRAM-SHA-512) at {bootstrap}",
        ),
        "untrusted certificate": (
            {"kafka.options.ssl.truststore.location": str(secured_kafka.tls.untrusted_ca)},
            f"the broker at {bootstrap} shows a certificate this client does not trust",
        ),
        "missing ACL": (
            {
                "kafka.sasl_username": describer.user,
                "kafka.sasl_password_env": "DESCRIBER_PASSWORD",
            },
            f"user '{describer.user}' (SCRAM-SHA-512) may not Read topic '{topic}' at {bootstrap}",
        ),
        "SASL on a plaintext listener": (
            {"kafka.bootstrap_servers": plaintext},
            f"the broker at {plaintext} closed the TLS handshake: it is a PLAINTEXT listener, "
            "but kafka.options sets security.protocol SASL_SSL",
        ),
    }
    errors = []
    for case, (changes, message) in cases.items():
        options = [f"--set={o}" for o in [*base, *as_pairs(changes), VERSION_2]]
        for argv in (["run", "--available-now"], ["upgrade", "plan"]):
            code, err, took = refused([*options, *argv], capfd)
            where = f"{case}, {' '.join(argv)}"
            assert code == 2, f"{where}: exit {code}\n{err}"
            assert err.count("\n") == 1 and err.startswith(f"{PROJECT.command}: error: "), (
                f"{where}: not one line:\n{err}"
            )
            assert message in err, f"{where}: {err}"
            assert "Exception" not in err and "\tat " not in err, f"{where}: a Java stack"
            assert took < REFUSAL_DEADLINE_S, f"{where}: took {took:.1f} s"
            errors.append(err)
    refusals = {"the refusals": "".join(errors)}
    for password in (reader.password, describer.password, wrong):
        assert_no_secret(password, texts=refusals)


def as_pairs(settings: dict[str, str]) -> list[str]:
    return [f"{key}={value}" for key, value in settings.items()]
