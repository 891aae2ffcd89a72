"""`pipeline CMD` builds the parser of CMD alone, importing that command's module and what it
needs: a short command does not pay for the worker, the dashboard or the plug-ins at start-up."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pg_pipeline.cli import COMMANDS, build_parser, core_command

#: What `pipeline status` must not import: the worker and its models, the dashboard, the
#: extras' libraries and the document stages (a plug-in); nor the job and run pages of the
#: admin reads, nor the TOML and cron parsers (it reads no config file and no schedule's
#: expression), ~13 ms of its start-up; nor the rate limits' declarations (~1.4 ms).
HEAVY = (
    "pg_pipeline.admin.jobs",
    "pg_pipeline.admin.runs",
    "tomllib",
    "cronsim",
    "pydantic",
    "jsonschema",
    "psycopg_pool",
    "starlette",
    "jinja2",
    "uvicorn",
    "prometheus_client",
    "opentelemetry",
    "pg_pipeline_documents",
    "pg_pipeline.worker",
    "pg_pipeline.dashboard",
    "pg_pipeline.stage",
    "pg_pipeline.enqueue",
    "pg_pipeline.waits",
    "pg_pipeline.limits",
)


def subcommands(parser: object) -> list[str]:
    [sub] = [a for a in getattr(parser, "_actions", []) if a.dest == "command"]
    return list(sub.choices)


def status_process(code: str) -> str:
    """The last line `code` prints, run in a process of its own against a closed database."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={"DATABASE_URL": "postgresql://app@127.0.0.1:1/shop", "PIPELINE_APP": ""},
    )
    return done.stdout.splitlines()[-1]


def test_status_imports_none_of_the_heavy_modules() -> None:
    # A process of its own: this one has imported everything already. The database is closed
    # (exit 1 after the imports, before any statement).
    code = textwrap.dedent(
        """
        import json, sys
        from pg_pipeline.cli import main
        code = main(["status"])
        print(json.dumps([code, sorted(sys.modules)]))
        """
    )
    exit_code, modules = json.loads(status_process(code))
    assert exit_code == 1
    assert "pg_pipeline.commands.status" in modules
    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == []


def test_status_makes_the_classes_of_few_dataclasses() -> None:
    # Making a dataclass compiles its methods (a frozen one six, ~0.6 ms): the read model's rows
    # are NamedTuples (pipeline/admin/status.py). What status loads may make this many at most.
    code = textwrap.dedent(
        """
        import dataclasses, inspect, json, sys
        from pg_pipeline.cli import main
        main(["status"])
        made = {
            f"{v.__module__}.{v.__qualname__}"
            for name, module in list(sys.modules.items())
            if name.startswith("pg_pipeline")
            for v in vars(module).values()
            if inspect.isclass(v) and dataclasses.is_dataclass(v) and v.__module__ == name
        }
        print(json.dumps(sorted(made)))
        """
    )
    made = json.loads(status_process(code))
    assert "pg_pipeline.admin.status.Status" in made
    assert len(made) <= 5, made


def test_each_command_name_is_the_one_its_module_adds() -> None:
    assert subcommands(build_parser())[: len(COMMANDS)] == list(COMMANDS)
    for name in COMMANDS:
        assert subcommands(build_parser(name)) == [name]


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["status"], "status"),
        (["status", "--json"], "status"),
        (["--log-level", "DEBUG", "db-url"], "db-url"),
        (["--log-level=DEBUG", "jobs", "list"], "jobs"),
        # Read by the whole parser: help, an abbreviated option, a plug-in's or no command.
        (["-h", "status"], None),
        (["--log", "DEBUG", "status"], None),
        (["--log-levelx", "status"], None),
        (["submit", "a.pdf"], None),
        (["--log-level"], None),
        ([], None),
    ],
)
def test_the_command_is_found_only_where_argparse_finds_it(
    argv: list[str], command: str | None
) -> None:
    assert core_command(argv) == command


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "--json"],
        ["--log-level", "debug", "jobs", "list", "--status", "failed", "--limit", "5"],
        ["worker", "--concurrency", "3"],
        ["runs", "waiting"],
    ],
)
def test_a_command_s_own_parser_reads_its_arguments_as_the_whole_parser(argv: list[str]) -> None:
    command = core_command(argv)
    assert command is not None
    assert vars(build_parser(command).parse_args(argv)) == vars(build_parser().parse_args(argv))
