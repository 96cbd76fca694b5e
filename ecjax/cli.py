"""The ``ecjax`` command."""

from __future__ import annotations

import argparse
import sys


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ecjax", description="Evaluate classifiers by expected cost and utility yield.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the main job on data the package carries or generates")
    demo.add_argument("--seed", type=int, default=0, help="key for the generated screening data (default 0)")
    return parser


def main(argv=None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "demo":
        from ecjax import demo

        demo.run(seed=args.seed)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
