"""``ctxreplay view``: the case browser, served on 127.0.0.1 or written as a static site."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..viewer import MAX_PAGES
from .app import main
from .options import folder, judge, option, quiet

#: the port the browser listens on unless told (0: one the system picks)
DEFAULT_PORT = 8642


@main.command("view")
@folder("run")
@option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT,
        help="Port on 127.0.0.1 (0: any free port; the address is printed).")  # fmt: skip
@option("--open", is_flag=True, help="Open the address in a web browser.")
@option("--bundle", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="Write the pages as a static site into this folder (opens from disk) instead of "
        "serving them.")  # fmt: skip
@option("--policy", multiple=True,
        help="Only these policies (label or name; repeatable) [default: every policy].")  # fmt: skip
@option("--max-pages", type=click.IntRange(min=1), default=MAX_PAGES,
        help="With --bundle: the most case pages (one per case and policy) it may write.")  # fmt: skip
@option("--redact", is_flag=True, help="With --bundle: every trace text replaced by its length.")
@judge(default=None, help="Whose losses, strict no-impact and recoveries the grid shows "
       "[default: the run's only judge, else the default judge].")  # fmt: skip
@option("--label", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="Label a sample of the cases; the labels are saved into this folder in the deps: "
        "format (cases.jsonl, dependencies.jsonl) as they are made.")  # fmt: skip
@option("--sample", type=click.IntRange(min=1), default=20, help="Cases to label (with --label).")
@option("--seed", type=int, default=0, help="Seed of the labelling sample (with --label).")
@quiet
def view_cmd(
    run: Path,
    port: int,
    open: bool,
    bundle: Path | None,
    policy: tuple[str, ...],
    max_pages: int,
    redact: bool,
    judge: str | None,
    label: Path | None,
    sample: int,
    seed: int,
    quiet: bool,
) -> None:
    """Browse a run case by case: a grid of every (case, policy) to sort and filter, each case's
    prefix beside its view with the losses linked to the future turns that needed them, policy
    A/B, the frontier, and (--label) a labelling mode whose labels `calibrate --against deps:`
    reads. A labelling session started again in the same folder resumes its sample."""
    from ..errors import CtxreplayError
    from ..viewer.pages import Pages

    if redact and bundle is None:
        raise CtxreplayError("--redact applies to a bundle: add --bundle DIR")
    if bundle is not None and label is not None:
        raise CtxreplayError("--label needs the server: a bundle cannot save labels")
    pages = Pages(
        run, judge=judge, redact=redact, labels=label, sample=sample, seed=seed, policies=policy
    )
    if bundle is not None:
        from ..viewer.bundle import write_bundle

        written = write_bundle(pages, bundle, progress=not quiet, max_pages=max_pages)
        counts = ", ".join(f"{n:,} {what}" for what, n in written.items())
        click.echo(f"wrote {bundle / 'index.html'} ({counts}); open it in a browser")
        return
    from ..viewer.server import bind, serve

    sock = bind(port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    what = f"{pages.grid.frame.height:,} pairs"
    if pages.labelling is not None:
        what += f"; labelling {len(pages.labelling.state['sample'])} cases into {label}"
    click.echo(f"ctxreplay view: {url} ({what}; Ctrl-C stops)")
    sys.stdout.flush()  # the address is read by whoever started the server
    if open:
        import webbrowser

        webbrowser.open(url + ("?page=label" if label is not None else ""))
    try:
        serve(pages, sock)
    finally:
        sock.close()
