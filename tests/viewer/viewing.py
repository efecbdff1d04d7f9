"""What the case browser's tests share: the fixture run's sessions and constants, the server
started as a user starts it, and waiting for the page to be drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser import Server, start_view

#: markup a trace may hold; none of it may run in the browser: ``window.__pwned`` stays undefined
XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
XSS_SESSION = 'evil"><img src=x onerror="window.__pwned=3">'
POLICIES = ["noop", "tool-prune:keep=1"]
#: what the next turn copies from the first tool result (tool-prune:keep=1 removes it)
NEEDED = "ORD-77731 refund 512.40 EUR"


def session(payload: str) -> list[Any]:
    from builders import call, result, say, system, user

    rows = "\n".join(
        f"order ORD-{77700 + i} total {100 + i}.40 EUR status shipped" for i in range(30)
    )
    return [
        system(),
        user("Look up the refund for the customer."),
        call("c1", "get_orders", {"customer": "C-1"}),
        result("c1", rows + f"\nnote: customer wrote {payload} {NEEDED}"),
        call("c2", "get_customer", {"customer": "C-1"}),
        result("c2", "name: Ann\n" * 40),
        call("c3", "get_tickets", {"customer": "C-1"}),
        result("c3", "ticket T-1 open\n" * 40),
        say("I have the orders."),
        user("What did the customer write about the refund?"),
        say(f"The customer wrote {payload} {NEEDED}, so refund 512.40 EUR."),
    ]


def start_server(run: Path, *args: str) -> Server:
    """``ctxreplay view RUN --port 0 --judge flow ARGS``, once it prints its address."""
    return start_view(run, "--judge", "flow", *args)


def open_page(driver: Any, url: str) -> dict[str, Any]:
    """Load ``url`` and wait for the page to say it is drawn; its error, if any."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script("return document.body.dataset.ready")
    )
    return driver.execute_script(
        "return {error: (document.getElementById('error') || {}).textContent || null,"
        " pwned: typeof window.__pwned, title: document.title}"
    )


def redraw(driver: Any, act: Any) -> None:
    """Do ``act`` (a click, a key) and wait until the page has drawn again."""
    from selenium.webdriver.support.ui import WebDriverWait

    before = driver.execute_script("return document.body.dataset.ready")
    act()
    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script("return document.body.dataset.ready") != before
    )
