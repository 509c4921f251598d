"""The command line: ``python run.py SEEDS [options]``, ``minicrawl --demo``, ``minicrawl bloom``.

The crawl options are generated from :class:`minicrawl.options.Options`, so every library
setting is a flag with the same name, help text and default.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TextIO, TypedDict

from minicrawl.cli.outpaths import cannot_write_stdout, is_stdout, silence_stdout, writes_to_stdout
from minicrawl.errors import OneLineParser
from minicrawl.options import Options, OptionValue, bounds_text, option_fields
from minicrawl.redact import install_log_redaction, redact
from minicrawl.seeds import NoValidSeeds
from minicrawl.version import __version__

if TYPE_CHECKING:  # not imported at run time: a usage error need not load the crawler
    from minicrawl.crawler import Crawler
    from minicrawl.visited.make import Visited
    from minicrawl.watch.summary import Written

EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED = 0, 2, 130
EXIT_OUTPUT = EXIT_FAILED = 1  # the crawl ran, but failed: an output file (--out, --stats,
# --report), the state directory (a full disk), standard output (> /dev/full)
EXIT_REDIS = 3  # --redis: Redis unreachable, or the shared crawl's state lost
# --check-links found a broken link (--fail-on broken or warnings). Last in precedence: an
# interruption (130) and the crawl's own failures (3; 1) keep their codes, which say more
# (the list, where the crawl got to its end or was interrupted, is printed all the same)
EXIT_BROKEN = 1


class _Argument(TypedDict, total=False):
    """The keywords ``add_argument`` gets for the flag of one :class:`Options` field."""

    help: str
    dest: str
    action: str
    default: OptionValue
    metavar: str
    choices: tuple[str, ...]
    nargs: str
    const: str
    type: Callable[[str], object]  # int, float or str: the flag's text to its value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, options grouped as in :class:`Options`."""
    # allow_abbrev=False: argparse would silently take --check-link for --check-links (and a
    # prefix that works today is an "ambiguous option" error once an option shares it)
    parser = OneLineParser(
        prog="minicrawl",
        description="Crawl from seed URLs: a ToDo queue, worker threads and a Visited filter.",
        epilog="Also: 'minicrawl bloom --help' for the Bloom filter tools.",
        formatter_class=HelpFormatter, allow_abbrev=False)
    parser.add_argument("seeds", nargs="*", metavar="SEEDS",
                        help="seed URLs, or files with one URL per line (# starts a comment)")
    run = parser.add_argument_group("Run")
    run.add_argument("--demo", action="store_true",
                     help="serve a generated demo site on loopback and crawl it (no internet)")
    run.add_argument("--quiet", action="store_true",
                     help="no live view, no summary and no note on the pace, only warnings "
                          "and the broken links --check-links finds (the live view is also "
                          "off when stdout is not a terminal)")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="end with every statistic, one per line (as --stats writes them), "
                          "instead of the short summary")
    run.add_argument("--status", action="store_true",
                     help="with --redis and --crawl: print the shared crawl's stats and exit")
    parser.add_argument("--version", action="version", version=f"minicrawl {__version__}")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f in option_fields():
        meta = f.metadata
        group = groups.get(meta["group"]) or groups.setdefault(
            meta["group"], parser.add_argument_group(meta["group"]))
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        kwargs: _Argument = {"help": _help_with_bounds(meta["help"], meta, default),
                              "dest": f.name}
        if isinstance(default, bool):
            kwargs.update({"action": "store_true"})
        elif meta.get("action") == "append":
            kwargs.update({"action": "append", "default": [], "metavar": "VALUE"})
        else:
            kwargs.update({"type": _field_type(f), "default": default,
                           "metavar": meta.get("metavar", f.name.split("_")[-1].upper())})
            for name in ("choices", "nargs", "const"):  # e.g. --trace [FILE]: nargs="?"
                if name in meta:
                    kwargs[name] = meta[name]
        group.add_argument(flag, **kwargs)
    return parser


def _help_with_bounds(text: str, meta: Mapping[str, object], default: object = 0) -> str:
    """The field's help ``text``, the bounds in its ``meta`` added to the default the help
    ends with (None: "none")."""
    bounds = bounds_text(meta)
    if not bounds:
        return text
    if text.endswith(")") and "(default" in text:  # "(default: no limit)"
        return f"{text[:-1]}; {bounds})"
    return f"{text} (default: {'none' if default is None else '%(default)s'}; {bounds})"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default, said the way a person would say it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "(default" in text or action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        default = action.default
        shown = ("off" if default is False else "none" if default in (None, [])
                 else "%(default)s")
        return f"{text} (default: {shown})"


def _field_type(f: dataclasses.Field) -> type:
    annotation = str(f.type)
    for name, kind in (("int", int), ("float", float)):
        if annotation.startswith(name):
            return kind
    return str


def options_from_args(args: argparse.Namespace) -> Options:
    """The :class:`Options` named on the command line."""
    return Options(**{f.name: getattr(args, f.name) for f in option_fields()})


def crawl_and_report(seeds: list[str], quiet: bool = False,
                     options: Options | None = None, verbose: bool = False,
                     pace_note: bool = False, on_start: Callable[[], None] | None = None,
                     demo: int | None = None,
                     **settings: OptionValue) -> tuple[int, Crawler | None]:
    """Crawl ``seeds`` with a live view (on a terminal) and print the summary (``verbose``:
    every statistic); (exit code, the crawler that ran, or None if it could not start or
    failed). ``pace_note``: say at the start how the default pace per host bounds the crawl.
    ``on_start``: called once the crawl could start (its options, seeds and state accepted),
    before anything is printed (the demo's banner). ``demo``: the port the demo's site is
    served on (``--demo``), for its state's mark.
    ``settings`` change ``options`` as keywords of :class:`Options` (``threads=4``)."""
    from minicrawl.crawler import Crawler  # here: a usage error need not load the crawler
    from minicrawl.errors import RedisUnavailable
    from minicrawl.state.db import StateUnwritable
    from minicrawl.state.store import StateError
    from minicrawl.watch.broken import broken_lines
    from minicrawl.watch.summary import format_summary, short_summary
    from minicrawl.watch.view import LiveView, wants_live_view

    try:
        if settings:  # what Crawler(seeds, options, **settings) would do with them
            options = (options or Options()).replace(**settings)
        crawler = Crawler(seeds, options, demo=demo)
    except StateUnwritable as e:  # a full disk as the state opens: a failure, not a usage error
        fail(e)
        return EXIT_FAILED, None
    except (NoValidSeeds, StateError, ValueError) as e:
        # ValueError: settings that only fail once combined with what they meet: a Redis crawl
        # whose filter needs more shards than --visited-shards gives, or whose Visited was
        # started with other settings (VisitedMismatch)
        fail(e)
        return EXIT_USAGE, None
    except RedisUnavailable as e:
        fail(e)
        return EXIT_REDIS, None
    code = EXIT_OK
    if on_start is not None:
        on_start()
    if pace_note:
        print(pace_note_text(crawler.options), file=sys.stderr)
    # An output on standard output (--out -) keeps it for itself: the summary goes to stderr.
    data_on_stdout = writes_to_stdout(crawler.options)
    view = LiveView(crawler.watched, enabled=wants_live_view(
        quiet, sys.stdout, trace_to_stdout=data_on_stdout or (
            crawler.options.trace is not None and is_stdout(crawler.options.trace))))
    try:
        with view:
            stats = crawler.run()
    except StateError as e:  # the state dir failed mid-crawl (a full disk): a failure during
        fail(e)  # the crawl, not a usage error; what it journaled is kept
        return EXIT_FAILED, None
    except RedisUnavailable as e:  # Redis lost mid-crawl; the items in flight wait in Redis
        fail(e)
        return EXIT_REDIS, None
    opts = crawler.options
    broken = crawler.broken_links if opts.check_links else None
    interrupted = bool(crawler.stats["interrupted"])
    if interrupted:
        code = EXIT_INTERRUPTED
    elif crawler.output_failures:  # each already told in its own line; the summary still comes
        code = EXIT_OUTPUT
    elif broken is not None and opts.fail_on != "never" and (
            broken.counts.any or opts.fail_on == "warnings" and broken.counts.warnings):
        code = EXIT_BROKEN
    summary = sys.stderr if data_on_stdout else sys.stdout
    try:
        # The broken links are what --check-links is run for: listed with --quiet too (a CI
        # job wants the list that failed it), unless there are none to list; the warnings
        # after them (with --quiet: when they fail it, --fail-on warnings)
        if broken is not None and (not quiet or broken.counts.any or not broken.complete or (
                opts.fail_on == "warnings" and broken.counts.warnings)):
            for line in broken_lines(broken, interrupted):
                say(line, summary)
        if not quiet:
            if verbose:
                say(format_summary(stats), summary)
                if opts.report:
                    say(f"Report: {opts.report}", summary)
            else:
                say(short_summary(stats, crawler.first_problems.problems,
                                  written(opts, crawler.output_failures),
                                  this_run=opts.state is not None,
                                  broken=broken.counts if broken is not None else None,
                                  fail_on=opts.fail_on), summary)
    finally:
        if crawler.broken_links is not None:  # its scratch file: read, and freed
            crawler.broken_links.close()
    return code, crawler


# The outputs the summary says were written, in this order: (flag, the Options field).
OUTPUTS = (("--out", "out"), ("--links", "links"), ("--stats", "stats"), ("--report", "report"),
           ("--trace", "trace"), ("--warc", "warc"), ("--save-pages", "save_pages"),
           ("--mirror", "mirror"),
           ("--state", "state"))


def written(options: Options, failures: list[str]) -> list[Written]:
    """The output files and directories ``options`` name (not standard output), each with
    whether writing it failed (its flag in ``failures``)."""
    from minicrawl.watch.summary import Written

    return [Written(flag, redact(str(path)), flag in failures) for flag, name in OUTPUTS
            if (path := getattr(options, name)) is not None and not is_stdout(str(path))]


def say(text: str, stream: TextIO) -> None:
    """Print ``text`` to ``stream``; what its encoding cannot write (an ASCII terminal, a link's
    text in another script) as a backslash escape rather than a traceback."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # (an encoding Python does not know: leave the text to the stream)
        pass
    print(text, file=stream)


def fail(error: Exception | str) -> None:
    """The one stderr line for an error that ends the command (passwords redacted)."""
    print(f"minicrawl: {redact(str(error))}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``minicrawl`` and ``run.py``; returns the exit status (argparse's
    ``SystemExit`` for ``--help``, ``--version`` and a usage error is raised on)."""
    try:
        code = _main(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:  # Ctrl-C outside a crawl, or a third one while it wraps up
        print("minicrawl: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except SystemExit:  # stdout flushed first: --help > /dev/full is one line, exit 1
        failed = _flush_stdout()
        if failed is not None:
            return failed
        raise
    except BrokenPipeError:  # `minicrawl … | head`: the reader left, which is no error of ours
        silence_stdout()  # so the exit-time flush does not fail again
        return EXIT_OK
    except OSError as e:
        if e.filename is not None:  # a file's error: a bug to see with its traceback
            raise
        return stdout_failed(e)
    failed = _flush_stdout()
    return code if failed is None else failed


def _flush_stdout() -> int | None:
    """Flush stdout now, not at exit (where a failure is Python's "Exception ignored" and exit
    120); None, or the exit status of a stdout that cannot be written."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    except OSError as e:
        return stdout_failed(e)
    return None


def stdout_failed(error: OSError) -> int:
    """Standard output cannot be written (``> /dev/full``): told once, on stderr; exit 1."""
    silence_stdout()  # what is still buffered must not fail again at exit
    fail(cannot_write_stdout(error))
    return EXIT_FAILED


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "bloom":
        from minicrawl.cli.bloom import main as bloom_main

        return bloom_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.demo:  # other defaults for the demo's loopback site; flags given still win
        from minicrawl.demo import DEMO_DEFAULTS

        parser.set_defaults(**DEMO_DEFAULTS)
        args = parser.parse_args(argv)
    try:
        options = options_from_args(args)
    except ValueError as e:  # a value Options.validate refuses: a usage error, like argparse's
        parser.error(str(e))
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    install_log_redaction()  # on the handler too: urllib3's records pass no minicrawl filter
    # SIGTERM stops the crawl the way Ctrl-C does: pages in flight finish, files are complete.
    signal.signal(signal.SIGTERM, lambda *_: _raise_interrupt())
    if options.trace and options.trace.startswith(("http://", "https://")):
        # "--trace URL" reads the URL as the trace file: say so instead of crawling nothing.
        parser.error(f"--trace took {options.trace!r} as its FILE; put --trace after the seeds "
                     "or write --trace - for stdout")
    if args.verbose and args.quiet:
        parser.error("--verbose prints every statistic at the end, --quiet no summary at all: "
                     "give one of them")
    if args.demo:
        from minicrawl.demo import DemoRefused, run_demo

        def crawl(seeds: list[str], started: Callable[[], None], port: int
                  ) -> tuple[int, Visited | None]:
            code, crawler = crawl_and_report(seeds, quiet=args.quiet, options=options,
                                             verbose=args.verbose, on_start=started,
                                             demo=port)
            return code, crawler.visited if crawler else None

        try:  # the demo's lines go where the summary goes (stderr when an output has stdout)
            return run_demo(crawl, sitemaps=options.sitemaps, max_depth=options.max_depth,
                            capped=bool(options.max_pages or options.max_pages_per_host),
                            state=options.state, recrawl=options.recrawl, quiet=args.quiet,
                            out=sys.stderr if writes_to_stdout(options) else sys.stdout)
        except DemoRefused as e:  # --state's port taken: a usage error, as a refused state is
            fail(e)
            return EXIT_USAGE
    if args.status:
        if not options.redis:
            parser.error("--status reads a shared crawl: give --redis URL (and --crawl NAME)")
        from minicrawl.errors import RedisUnavailable
        from minicrawl.redis.crawl import print_status

        try:
            return print_status(options)
        except RedisUnavailable as e:
            fail(e)
            return EXIT_REDIS
    if not args.seeds:
        parser.error("give seed URLs or seed files (or --demo)")
    # The polite defaults bound a crawl of one site to a few pages a second: said once, unless
    # the pace was chosen (--delay or --per-host given) or --quiet.
    note = not args.quiet and not _given(argv, PACE_FIELDS)
    code, _ = crawl_and_report(args.seeds, quiet=args.quiet, options=options,
                               verbose=args.verbose, pace_note=note)
    return code


PACE_FIELDS = ("delay", "per_host")  # the options that set the pace per host


def _given(argv: list[str], names: tuple[str, ...]) -> bool:
    """Whether the command line gives any of the options ``names`` (in any spelling argparse
    takes: ``--delay=0`` too), whatever the value (the default's own too)."""
    unset = object()
    probe = build_parser()
    probe.set_defaults(**dict.fromkeys(names, unset))
    args = probe.parse_args(argv)
    return any(getattr(args, name) is not unset for name in names)


def pace_note_text(options: Options) -> str:
    """The line that says how the pace per host bounds the crawl, and how to change it."""
    per_second = f"{1 / options.delay:g} requests a second" if options.delay else "no gap"
    return (f"minicrawl: pace per host: a request every {options.delay:g} s at most "
            f"(--delay), {options.per_host} at once (--per-host): {per_second} to each host "
            f"at most, polite to someone else's site; a site of your own can take more: "
            f"--delay 0 --per-host 8")


def _raise_interrupt() -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
