"""`gate config` and `gate schema`: the effective configuration and the shipped JSON Schemas."""

import sys

from gates.commands import Invocation
from gates.infra.console import emit_json
from gates.infra.errors import OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def add_arguments(parser: "argparse.ArgumentParser", name: str) -> None:
    if name == 'config':
        parser.add_argument("--format", choices=("yaml", "json"), default="yaml",
                            help="the effective configuration as YAML (default) or JSON")
    elif name == 'schema':
        from gates.infra.schemas import NAMES

        parser.add_argument("name", choices=NAMES, help="which schema to print")


def run(args: "argparse.Namespace", run: Invocation) -> int:
    return {'config': _config, 'schema': _schema}[args.command](args, run)


def _config(args: "argparse.Namespace", run: Invocation) -> int:
    config = run.config()
    if args.format == "json":
        emit_json(dict(config))
        return OK
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    sys.stdout.write(f"# effective configuration ({'from ' + config.source if config.source else 'defaults'})\n")
    yaml.dump(dict(config), sys.stdout)
    return OK


def _schema(args: "argparse.Namespace", run: Invocation) -> int:
    from gates.infra import schemas

    sys.stdout.write(schemas.schema_bytes(args.name).decode("utf-8"))
    return OK
