"""Go behaviour reproduced bit for bit, each in exactly one place: durations, strcase, strconv,
kind plurals, pflag's command line and go-yaml's YAML. Imports nothing else of the package.

Other layers use the names below; `yaml` is a namespace (`gocompat.yaml.load`), its names being
too generic for this one."""

from ansible_operator.gocompat import yaml
from ansible_operator.gocompat.durations import (
    format_go_duration,
    format_go_duration_ns,
    parse_go_duration,
    parse_go_duration_ns,
)
from ansible_operator.gocompat.pflag import FlagError, Tokens, tokenise
from ansible_operator.gocompat.plural import pluralize
from ansible_operator.gocompat.strcase import map_to_snake, to_snake
from ansible_operator.gocompat.strconv import atoi, parse_bool, parse_int, quote

__all__ = [
    "FlagError",
    "Tokens",
    "atoi",
    "format_go_duration",
    "format_go_duration_ns",
    "map_to_snake",
    "parse_bool",
    "parse_go_duration",
    "parse_go_duration_ns",
    "parse_int",
    "pluralize",
    "quote",
    "to_snake",
    "tokenise",
    "yaml",
]
