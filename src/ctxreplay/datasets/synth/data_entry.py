"""Multi-record data-entry workload: support tickets, customer and order records, updates.

Planted dependencies:

- ``locator_handle``: a sender's email from a ticket, used to find the customer; an order id or
  customer id from a customer record, used in the next lookup; a new contact email from a ticket.
- ``verbatim_source``: a new delivery address line from the middle of a ticket thread, copied
  into ``update_record``.
- ``evidence_detail``: order totals, reported right away or in the end-of-day summary.
- ``live_state``: the label or refund reference that only the re-read after an update shows.
- ``recovery_routing``: a customer's long order list, truncated by the harness and read later.
- ``behavioural_contract``: a rule from the lead's first message, honoured in a later ticket; and
  a standing rule the lead adds in the 2nd to 4th turn ("From now on, never offer vouchers or
  discounts without asking me first"), honoured in the end-of-day summary.
"""

from __future__ import annotations

import json
import random
from typing import Any

from .builder import Rule, SessionBuilder
from .common import READ_FILE, TRUNCATION_NOTE, tool, tools_block, truncated
from .vocab import (
    CITIES,
    COMPANIES,
    EMAIL_DOMAINS,
    FIRST_NAMES,
    LAST_NAMES,
    PRODUCTS,
    STREETS,
    date,
)

NAME = "data-entry"

TOOLS = [
    tool("get_ticket", "Fetch a support ticket with its full message thread.", ticket_id=("string", "Ticket id.")),
    tool("find_customer", "Find a customer by email, phone or name.", query=("string", "Search text.")),
    tool("get_order", "Fetch an order with items, payment, shipping and history.", order_id=("string", "Order id.")),
    tool("list_orders", "List every order of a customer.", customer_id=("string", "Customer id.")),
    tool("update_record", "Update fields of an order or customer record.", id=("string", "Order or customer id."),
         fields=("object", "Field names and new values.")),
    tool("add_note", "Add an internal note to a record.", id=("string", "Record id."), text=("string", "Note.")),
    READ_FILE,
]  # fmt: skip

CONTRACTS = (
    ("Remember that refunds above EUR 500 need my approval before you apply them.",
     "above EUR 500 need my approval", "refund"),
    ("Never change the billing address on any record, only shipping addresses; finance owns billing data.",
     "change the billing address", "address"),
    ("Please add the ticket number to the internal note of every record you change.",
     "ticket number to the internal note", "any"),
)  # fmt: skip
#: Standing rules the lead adds mid-session; honoured in the end-of-day summary.
RULES = (
    Rule(
        "One more thing: from now on, don't mark any ticket as resolved, the late shift closes tickets.",
        "late shift closes tickets",
        "None of the tickets is marked resolved, since the late shift closes tickets.",
    ),
    Rule(
        "Also, from now on never offer vouchers or discounts without asking me first.",
        "vouchers or discounts",
        "No vouchers or discounts were offered to anyone.",
    ),
    Rule(
        "From now on, don't promise delivery dates to customers, the carriers are unreliable this month.",
        "promise delivery dates",
        "I did not promise delivery dates to any customer.",
    ),
)
CARRIERS = ("DHL Freight", "PostNL", "DPD", "GLS", "UPS", "Schenker")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2)


def build(b: SessionBuilder) -> str:
    rng = b.rng
    pool = b.pool
    shop = rng.choice(("Officedeck", "Deskline Supply", "WorkWell Direct", "Bureau Express"))
    b.system(
        f"You are a customer-operations agent for {shop}, a B2B office equipment supplier. You work "
        "through support tickets: look up customers and orders, correct records with update_record, "
        "and report exactly what you changed. Never guess ids: look them up.\n"
        f"{TRUNCATION_NOTE}\n\n# Tools\n{tools_block(TOOLS)}"
    )
    contract = rng.choice(CONTRACTS)
    b.standing_rule(rng.choice(RULES))
    summary: list[str] = []
    later_evidence: list[tuple[str, int]] = []
    first_turn = -1

    # --- records ---------------------------------------------------------------------------------
    def address(rng_: random.Random) -> str:
        city, cc, zip_ = rng_.choice(CITIES)
        return f"{rng_.choice(STREETS)} {rng_.randint(2, 240)}, {zip_} {city}, {cc}"

    def customer(email: str, first: str, last: str) -> dict[str, Any]:
        return {
            "customer_id": pool.customer_id(),
            "name": f"{first} {last}",
            "company": rng.choice(COMPANIES),
            "email": email,
            "phone": f"+{rng.choice((31, 49, 33, 39, 48, 46))} {rng.randint(10, 99)} {rng.randint(1000000, 9999999)}",
            "tier": rng.choice(("standard", "silver", "gold")),
            "billing_address": address(rng),
            "shipping_address": address(rng),
            "created_at": f"{date(rng, rng.choice((2019, 2020, 2021, 2022)))}T{rng.randint(8, 17):02d}:{rng.randint(0, 59):02d}:00Z",
            "marketing_opt_in": rng.random() < 0.4,
            "notes": [f"{date(rng, 2024)}: {rng.choice(('prefers morning deliveries', 'asked for paper invoices', 'VAT id verified', 'key account, handle with care', 'called about a late parcel'))}" for _ in range(rng.randint(1, 3))],
            "recent_orders": [],
        }  # fmt: skip

    def order_lines() -> list[dict[str, Any]]:
        out = []
        for product in rng.sample(PRODUCTS, rng.randint(2, 6)):
            qty = rng.randint(1, 12)
            unit = rng.uniform(9, 420)
            out.append({"sku": f"{product[:3].upper()}-{rng.randint(1000, 9999)}", "description": product, "qty": qty,
                        "unit_price_eur": f"{unit:.2f}", "line_total_eur": f"{qty * unit:,.2f}"})  # fmt: skip
        return out

    def order(
        order_id: str,
        cust: dict[str, Any],
        total: str,
        label: str,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        items = order_lines()
        history = [{"at": f"2025-0{rng.randint(1, 6)}-{rng.randint(10, 28)}T{rng.randint(8, 18):02d}:{rng.randint(10, 59)}:00Z", "status": s}
                   for s in ("placed", "paid", rng.choice(("picking", "packed", "shipped")))]  # fmt: skip
        o = {
            "order_id": order_id,
            "customer_id": cust["customer_id"],
            "placed_at": history[0]["at"],
            "status": history[-1]["status"],
            "items": items,
            "shipping_eur": f"{rng.uniform(0, 60):.2f}",
            "vat_rate": rng.choice(("21%", "19%", "20%", "23%")),
            "total_eur": total,
            "payment": {
                "method": rng.choice(("invoice", "card", "SEPA direct debit")),
                "captured_eur": total,
            },
            "shipping": {
                "carrier": rng.choice(CARRIERS),
                "address": cust["shipping_address"],
                "label": label,
            },
            "status_history": history,
        }
        o.update(extra or {})
        return o

    def recent(cust: dict[str, Any], include: list[str]) -> None:
        ids = [*include, *(pool.order_id() for _ in range(rng.randint(10, 24)))]
        rng.shuffle(ids)
        cust["recent_orders"] = [{"order_id": i, "date": date(rng, 2025), "status": rng.choice(("delivered", "delivered", "shipped", "packed", "cancelled")), "items": rng.randint(1, 9)} for i in ids]  # fmt: skip

    def sender() -> tuple[str, str, str]:
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        return first, last, pool.email(first, last, rng.choice(EMAIL_DOMAINS))

    def ticket_text(tid: str, email: str, subject: str, middle: str, pre: int, post: int) -> str:
        def msg(who: str, body: str) -> str:
            return f"--- {who} · {date(rng, 2025)} {rng.randint(8, 18):02d}:{rng.randint(10, 59)}\n{body}\n"

        chatter = (
            "Thanks for getting back to me so quickly.", "We are still waiting for an update on this.",
            "Our receiving team works Monday to Friday, 7:00 to 15:30.", "Please confirm once this is done.",
            "I tried calling but the line was busy.", "Could you also send the delivery note by email?",
            "The previous parcel was left at the wrong gate.", "Our purchase order reference is on the invoice.",
            "We need this before the end of the month for our audit.", "Happy to provide more details if needed.",
        )  # fmt: skip
        agent = (
            "Thank you for your message, we are looking into it.", "Could you confirm the order date?",
            "I have forwarded this to our logistics team.", "We apologise for the inconvenience.",
        )  # fmt: skip
        before = [msg(email if i % 2 == 0 else f"agent@{shop.lower().replace(' ', '')}.com",
                      " ".join(rng.sample(chatter if i % 2 == 0 else agent, 3))) for i in range(pre)]  # fmt: skip
        after = [msg(email if i % 2 else f"agent@{shop.lower().replace(' ', '')}.com",
                     " ".join(rng.sample(agent if i % 2 == 0 else chatter, 3))) for i in range(post)]  # fmt: skip
        head = f"Ticket {tid} · priority {rng.choice(('normal', 'high'))} · channel email\nSubject: {subject}\nFrom: {email}\n\n"
        return head + "\n".join([*before, msg(email, middle), *after])

    def balanced_ticket(tid: str, email: str, subject: str, middle: str, span: str) -> str:
        pre, post = 2, 2
        for _ in range(12):
            text = ticket_text(tid, email, subject, middle, pre, post)
            at = text.find(span)
            if at < 0.36 * len(text):
                pre += 1
            elif at + len(span) > 0.64 * len(text):
                post += 1
            else:
                return text
        return text

    turn_no = 0

    def open_turn(text: str) -> int:
        nonlocal turn_no, first_turn
        turn_no += 1
        if turn_no == 1:
            seq = b.user(
                f"Morning! Please work through today's escalations. {contract[0]} First one: {text}"
            )
            first_turn = seq
            return seq
        ask = state.pop("ask", None)
        return b.user(f"{ask} {text}" if ask else text)

    def lookup(
        tid: str,
        subject: str,
        middle: str,
        span: str | None,
        who: tuple[str, str, str],
        with_orders: list[str],
    ):
        """get_ticket then find_customer; plants the email locator."""
        first, last, email = who
        text = (
            balanced_ticket(tid, email, subject, middle, span)
            if span
            else ticket_text(tid, email, subject, middle, rng.randint(2, 6), rng.randint(1, 4))
        )
        tk = b.call("get_ticket", {"ticket_id": tid}, text)
        cust = customer(email, first, last)
        recent(cust, with_orders)
        fc = b.call("find_customer", {"query": email}, _dumps({"matches": 1, "customers": [cust]}),
                    text="Looking up the sender.")  # fmt: skip
        b.plant(
            "locator_handle",
            email,
            tk.result_seq,
            fc.call_seq,
            "sender email from the ticket, used to find the customer",
        )
        return tk, fc, cust

    def honour_note(record: str, tid: str) -> None:
        if contract[2] == "any" and turn_no > 1 and not state["honoured"]:
            n = b.call("add_note", {"id": record, "text": f"{tid}: updated on customer request"}, f"Note added to {record}.",
                       text="Adding the ticket number to the internal note, as you asked.")  # fmt: skip
            b.plant(
                "behavioural_contract",
                contract[1],
                first_turn,
                n.call_seq,
                f"user constraint: {contract[0]}",
            )
            state["honoured"] = True

    state: dict[str, Any] = {"honoured": False}

    # --- ticket kinds ----------------------------------------------------------------------------
    def ticket_status() -> None:
        tid = pool.ticket_id()
        first, last, email = sender()
        open_turn(f"{tid}, a customer asking where their order is.")
        oid = pool.order_id()
        _, fc, cust = lookup(
            tid,
            "Where is my order?",
            f"Hi, our last order still hasn't arrived. Can you tell me where it is?\n{first} {last}",
            None,
            (first, last, email),
            [oid],
        )
        total = pool.amount(1_000, 9_000)
        label = pool.label_id()
        go = b.call("get_order", {"order_id": oid}, _dumps(order(oid, cust, total, label, {"status": "shipped", "tracking_eta": date(rng, 2025)})),
                    text="Their most recent order is the one still in transit.")  # fmt: skip
        b.plant(
            "locator_handle",
            oid,
            fc.result_seq,
            go.call_seq,
            "order id from the customer record's order list",
        )
        b.say(
            f"The order shipped and is in transit with the carrier; I replied to {first} with the tracking details."
        )
        later_evidence.append((total, go.result_seq))
        summary.append("status enquiry answered with tracking details")

    def ticket_address() -> None:
        tid = pool.ticket_id()
        first, last, email = sender()
        open_turn(f"Next: {tid}. The customer says the parcel must go to a new warehouse address.")
        city, cc, zip_ = rng.choice(CITIES)
        new_addr = f"Attn: Receiving Dock {rng.randint(2, 14)}, {rng.choice(STREETS)} {rng.randint(100, 1999)}, Unit {rng.randint(2, 40)}{rng.choice('ABCDE')}, {zip_} {city}, {cc}"
        new_addr = pool.fresh(lambda: new_addr)
        invoice_ask = contract[2] == "address" and turn_no > 1
        middle = (f"Hello, we have moved our warehouse. Please deliver the open order to:\n{new_addr}\n"
                  "The old address is no longer staffed." + (" Could you update our invoice address as well?" if invoice_ask else "")
                  + f"\nBest regards, {first} {last}")  # fmt: skip
        oid = pool.order_id()
        tk, fc, cust = lookup(
            tid, "New delivery address", middle, new_addr, (first, last, email), [oid]
        )
        total = pool.amount(1_000, 9_000)
        old_label, new_label = pool.label_id(), pool.label_id()
        o = order(oid, cust, total, old_label, {"status": "packed"})
        go = b.call(
            "get_order",
            {"order_id": oid},
            _dumps(o),
            text="The open order in their list is the one still packed.",
        )
        b.plant(
            "locator_handle",
            oid,
            fc.result_seq,
            go.call_seq,
            "order id from the customer record's order list",
        )
        up = b.call("update_record", {"id": oid, "fields": {"shipping_address": new_addr}},
                    f"Updated {oid}: shipping_address.", text="Copying the new address exactly as the customer wrote it.")  # fmt: skip
        b.plant(
            "verbatim_source",
            new_addr,
            tk.result_seq,
            up.call_seq,
            "address line from the middle of the ticket thread, copied into update_record",
        )
        honour_note(oid, tid)
        after = {
            **o,
            "shipping": {
                **o["shipping"],
                "address": new_addr,
                "label": new_label,
                "label_regenerated": True,
            },
        }
        g2 = b.call(
            "get_order",
            {"order_id": oid},
            _dumps(after),
            text="Checking the order after the change.",
        )
        if invoice_ask and not state["honoured"]:
            n = b.say(f"Done: {oid} now ships to the new warehouse, with new label {new_label}. The customer also asked to "
                      "update the invoice address, but you told me never to change the billing address, so I left it "
                      "for finance.")  # fmt: skip
            b.plant(
                "behavioural_contract",
                contract[1],
                first_turn,
                n,
                f"user constraint: {contract[0]}",
            )
            state["honoured"] = True
        elif rng.random() < 0.4:  # the lead asks for the label in the next turn
            b.say(
                f"Done: {oid} now ships to the new warehouse address and the carrier label was regenerated."
            )
            state["ask"] = (
                f"Quick one first: what's the new label id for {oid}? The warehouse wants it."
            )
            b.answer_next(
                f"The new label id is {new_label}.",
                (
                    "live_state",
                    new_label,
                    g2.result_seq,
                    "label id only the re-read after the update shows; asked a turn later",
                ),
            )
            n = None
        else:
            n = b.say(
                f"Done: {oid} now ships to the new warehouse address, and the carrier label was regenerated as {new_label}."
            )
        if n is not None:
            b.plant(
                "live_state",
                new_label,
                g2.result_seq,
                n,
                "label id only the re-read after the update shows",
            )
        summary.append("delivery address changed for a moved warehouse, label regenerated")
        state["address_customer"] = cust

    def ticket_refund() -> None:
        tid = pool.ticket_id()
        first, last, email = sender()
        product = rng.choice(PRODUCTS)
        big = contract[2] == "refund" and turn_no >= 1 and not state["honoured"]
        open_turn(f"Next: {tid}, a refund request for a damaged item.")
        oid = pool.order_id()
        _, fc, cust = lookup(
            tid,
            "Damaged item",
            f"The {product} in our last order arrived damaged. We would like a refund for it.\n{first} {last}",
            None,
            (first, last, email),
            [oid],
        )
        total = pool.amount(1_000, 9_000)
        o = order(oid, cust, total, pool.label_id(), {"status": "delivered"})
        price = rng.uniform(520, 980) if big else rng.uniform(40, 480)
        o["items"][0].update(
            {
                "description": product,
                "qty": 1,
                "unit_price_eur": f"{price:.2f}",
                "line_total_eur": f"{price:.2f}",
            }
        )
        go = b.call(
            "get_order",
            {"order_id": oid},
            _dumps(o),
            text="Finding the order with the damaged item.",
        )
        b.plant(
            "locator_handle",
            oid,
            fc.result_seq,
            go.call_seq,
            "order id from the customer record's order list",
        )
        refund = f"{price:.2f}"
        if big and turn_no > 1:
            n = b.say(f"The order total is EUR {total}; the damaged {product} is EUR {refund}. That refund is over the limit: "
                      "refunds above EUR 500 need my approval from you, so I have not applied it. Shall I go ahead?")  # fmt: skip
            b.plant(
                "evidence_detail",
                total,
                go.result_seq,
                n,
                "order total from the order record, reported right away",
            )
            b.plant(
                "behavioural_contract",
                contract[1],
                first_turn,
                n,
                f"user constraint: {contract[0]}",
            )
            state["honoured"] = True
            open_turn("Approved, go ahead with that refund.")
        else:
            n = b.say(
                f"The order total is EUR {total}; the damaged {product} is EUR {refund}, so I'll refund that line."
            )
            b.plant(
                "evidence_detail",
                total,
                go.result_seq,
                n,
                "order total from the order record, reported right away",
            )
        b.call("update_record", {"id": oid, "fields": {"refund_status": "approved", "refund_amount": refund}},
               "Error: unknown field 'refund_amount' on order records. Did you mean 'refund_amount_eur'? No changes were made.",
               error=True)  # fmt: skip
        b.call("update_record", {"id": oid, "fields": {"refund_status": "approved", "refund_amount_eur": refund, "refund_reason": "damaged_in_transit"}},
               f"Updated {oid}: refund_status, refund_amount_eur, refund_reason.", text="Wrong field name; retrying.")  # fmt: skip
        honour_note(oid, tid)
        ref = pool.refund_id()
        o2 = {**o, "refund": {"status": "approved", "amount_eur": refund, "reference": ref}}
        g2 = b.call(
            "get_order", {"order_id": oid}, _dumps(o2), text="Confirming the refund was registered."
        )
        n = b.say(
            f"Refund registered under {ref} for EUR {refund}; the customer will see it in three to five business days."
        )
        b.plant(
            "live_state",
            ref,
            g2.result_seq,
            n,
            "refund reference only the re-read after the update shows",
        )
        summary.append("refund for a damaged item approved and registered")

    def ticket_email() -> None:
        tid = pool.ticket_id()
        first, last, email = sender()
        new_email = pool.email(first, last, rng.choice(EMAIL_DOMAINS))
        open_turn(f"Next: {tid}. Someone wants their account email changed.")
        tk, fc, cust = lookup(tid, "Change of contact email",
                              f"Our domain is changing. Please use {new_email} for everything from now on, including invoices.\n{first} {last}",
                              None, (first, last, email), [])  # fmt: skip
        cid = cust["customer_id"]
        up = b.call("update_record", {"id": cid, "fields": {"email": new_email}}, f"Updated {cid}: email.",
                    text="Updating the contact email to the one in the ticket.")  # fmt: skip
        b.plant(
            "locator_handle",
            new_email,
            tk.result_seq,
            up.call_seq,
            "new email address from the ticket body, written into the record",
        )
        b.plant(
            "locator_handle",
            cid,
            fc.result_seq,
            up.call_seq,
            "customer id from the find_customer result",
        )
        honour_note(cid, tid)
        b.say(
            "Contact email updated; invoices will go to the new address from the next billing run."
        )
        summary.append("contact email changed after a domain move")

    def orders_followup() -> None:
        cust = state["address_customer"]
        cid = cust["customer_id"]
        open_turn(
            f"For {cust['name']} (the customer with the new warehouse): check whether any of their other open "
            "orders still go to the old address."
        )
        b.call(
            "find_customer",
            {"query": cust["name"]},
            _dumps({"matches": 1, "customers": [cust]}),
            text="Looking the customer up again to get their id.",
        )
        lines = ["order_id,placed_at,status,items,ship_to"]
        for _ in range(rng.randint(120, 260)):
            lines.append(f"ORD-{rng.randint(10000, 99999)}-{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')},"
                         f"{date(rng, rng.choice((2023, 2024, 2025)))},{rng.choice(('delivered', 'delivered', 'delivered', 'cancelled', 'packed'))},"
                         f"{rng.randint(1, 9)},{rng.choice(('old warehouse', 'head office', 'store 2'))}")  # fmt: skip
        route = pool.output_path(f"orders-{cid.lower()}", "csv")
        keep = 25
        lo = b.call("list_orders", {"customer_id": cid}, truncated(lines, keep, route))
        if rng.random() < 0.5:
            rd = b.call("read_file", {"path": route, "offset": keep, "limit": len(lines) - keep},
                        "\n".join(f"{i:6d}\t{x}" for i, x in enumerate(lines[keep:], keep + 1)),
                        text="The list was cut; reading the rest from the saved file.")  # fmt: skip
            b.plant(
                "recovery_routing",
                route,
                lo.result_seq,
                rd.call_seq,
                "truncated order list names its saved CSV; read right away",
            )
            b.say(
                "Two more packed orders still list the old warehouse; they are not shipped yet, so they can be changed the same way."
            )
        else:
            b.say("The first 25 orders are all delivered; the harness cut the list there.")
            open_turn("Please check the rest of the list as well.")
            rd = b.call(
                "read_file",
                {"path": route, "offset": keep, "limit": len(lines) - keep},
                "\n".join(f"{i:6d}\t{x}" for i, x in enumerate(lines[keep:], keep + 1)),
            )
            b.plant(
                "recovery_routing",
                route,
                lo.result_seq,
                rd.call_seq,
                "truncated order list names its saved CSV; read a turn later",
            )
            b.say(
                "In the rest of the list, a couple of packed orders still point at the old warehouse."
            )
        summary.append("checked the remaining orders of the moved customer")

    # the first ticket is a status enquiry; later ones in a random order
    ticket_status()
    later = [
        ticket_address,
        ticket_refund,
        *rng.sample([ticket_email, ticket_refund, ticket_status], rng.randint(1, 3)),
    ]
    rng.shuffle(later)
    for t in later:
        t()
        if t is ticket_address and "followed" not in state:
            state["followed"] = True
            orders_followup()
    open_turn("Thanks! Give me a short end-of-day summary with the amounts involved.")
    total, src = later_evidence[0]
    n = b.say(
        (
            "End of day:\n"
            + "\n".join(f"- {s}" for s in summary)
            + f"\n- the order in the first enquiry was EUR {total}, paid and in transit.\n"
            + b.rule_honour()
        ).rstrip()
    )
    b.plant(
        "evidence_detail",
        total,
        src,
        n,
        "order total from an earlier ticket, used in the end-of-day summary",
    )
    b.plant_rule(n)
    return f"{len(summary)} support tickets at {shop}"
