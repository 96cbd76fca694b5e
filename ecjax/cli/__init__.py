"""The ``ecjax`` command."""

from ecjax._src.cli import (
    COMMANDS,
    EXIT_CLOSED_PIPE,
    OPTION_RULES,
    build_parser,
    check_option_rules,
    compilation_cache_dir,
    main,
)

__all__ = [
    "COMMANDS",
    "EXIT_CLOSED_PIPE",
    "OPTION_RULES",
    "build_parser",
    "check_option_rules",
    "compilation_cache_dir",
    "main",
]
