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

from .anchor_pool import AnchorPool
from .builder import Rule, SessionBuilder, Step
from .common import READ_FILE, tool, truncated
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
from .workload import ReadBack, Truncated, Workload

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

#: Rules of the lead's first message, by the kind of ticket that can honour them; ``honour`` is
#: what the agent says (or writes as the note's lead) when it does.
CONTRACTS = (
    ("refund", Rule("Remember that refunds above EUR 500 need my approval before you apply them.",
                    "above EUR 500 need my approval",
                    "That refund is over the limit: refunds above EUR 500 need my approval from you, so I have not applied it. Shall I go ahead?")),
    ("address", Rule("Never change the billing address on any record, only shipping addresses; finance owns billing data.",
                     "change the billing address",
                     "The customer also asked to update the invoice address, but you told me never to change the billing address, so I left it for finance.")),
    ("any", Rule("Please add the ticket number to the internal note of every record you change.",
                 "ticket number to the internal note",
                 "Adding the ticket number to the internal note, as you asked.")),
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


#: A ticket's sender: (first name, last name, email).
Sender = tuple[str, str, str]
Record = dict[str, Any]

CHATTER = (
    "Thanks for getting back to me so quickly.", "We are still waiting for an update on this.",
    "Our receiving team works Monday to Friday, 7:00 to 15:30.", "Please confirm once this is done.",
    "I tried calling but the line was busy.", "Could you also send the delivery note by email?",
    "The previous parcel was left at the wrong gate.", "Our purchase order reference is on the invoice.",
    "We need this before the end of the month for our audit.", "Happy to provide more details if needed.",
)  # fmt: skip
AGENT_LINES = (
    "Thank you for your message, we are looking into it.", "Could you confirm the order date?",
    "I have forwarded this to our logistics team.", "We apologise for the inconvenience.",
)  # fmt: skip
NOTES = ("prefers morning deliveries", "asked for paper invoices", "VAT id verified", "key account, handle with care", "called about a late parcel")  # fmt: skip
ORDER_NOTE = "order id from the customer record's order list"
#: How the moved customer's long order list is read back: right away, or once the lead asks.
ORDERS_READ_NOW = ReadBack(
    "The list was cut; reading the rest from the saved file.",
    "truncated order list names its saved CSV; read right away",
    "Two more packed orders still list the old warehouse; they are not shipped yet, so they can "
    "be changed the same way.",
)
ORDERS_READ_LATER = ReadBack(
    None,
    "truncated order list names its saved CSV; read a turn later",
    "In the rest of the list, a couple of packed orders still point at the old warehouse.",
    before="The first 25 orders are all delivered; the harness cut the list there.",
    ask="Please check the rest of the list as well.",
)


class Records:
    """Fabricates the support desk's records: customers, orders and ticket threads."""

    def __init__(self, rng: random.Random, pool: AnchorPool, shop: str) -> None:
        self.rng = rng
        self.pool = pool
        self.agent = f"agent@{shop.lower().replace(' ', '')}.com"

    def address(self) -> str:
        """A street address in one of the cities."""
        rng = self.rng
        city, cc, zip_ = rng.choice(CITIES)
        return f"{rng.choice(STREETS)} {rng.randint(2, 240)}, {zip_} {city}, {cc}"

    def customer(self, email: str, first: str, last: str) -> Record:
        """find_customer's record (its recent orders are filled by ``recent``)."""
        rng = self.rng
        return {
            "customer_id": self.pool.customer_id(),
            "name": f"{first} {last}",
            "company": rng.choice(COMPANIES),
            "email": email,
            "phone": f"+{rng.choice((31, 49, 33, 39, 48, 46))} {rng.randint(10, 99)} {rng.randint(1000000, 9999999)}",
            "tier": rng.choice(("standard", "silver", "gold")),
            "billing_address": self.address(),
            "shipping_address": self.address(),
            "created_at": f"{date(rng, rng.choice((2019, 2020, 2021, 2022)))}T{rng.randint(8, 17):02d}:{rng.randint(0, 59):02d}:00Z",
            "marketing_opt_in": rng.random() < 0.4,
            "notes": [f"{date(rng, 2024)}: {rng.choice(NOTES)}" for _ in range(rng.randint(1, 3))],
            "recent_orders": [],
        }  # fmt: skip

    def order_lines(self) -> list[Record]:
        """Two to six items with quantities and prices."""
        rng = self.rng
        out = []
        for product in rng.sample(PRODUCTS, rng.randint(2, 6)):
            qty = rng.randint(1, 12)
            unit = rng.uniform(9, 420)
            out.append({"sku": f"{product[:3].upper()}-{rng.randint(1000, 9999)}", "description": product, "qty": qty,
                        "unit_price_eur": f"{unit:.2f}", "line_total_eur": f"{qty * unit:,.2f}"})  # fmt: skip
        return out

    def order(
        self, order_id: str, cust: Record, total: str, label: str, extra: Record | None = None
    ) -> Record:
        """get_order's record: items, payment, shipping (with the carrier label), history."""
        rng = self.rng
        items = self.order_lines()
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

    def recent(self, cust: Record, include: list[str]) -> None:
        """Fill the customer's recent orders: ``include`` among random others."""
        rng = self.rng
        ids = [*include, *(self.pool.order_id() for _ in range(rng.randint(10, 24)))]
        rng.shuffle(ids)
        cust["recent_orders"] = [{"order_id": i, "date": date(rng, 2025), "status": rng.choice(("delivered", "delivered", "shipped", "packed", "cancelled")), "items": rng.randint(1, 9)} for i in ids]  # fmt: skip

    def sender(self) -> Sender:
        """A ticket's sender: a name and a fresh email address."""
        first, last = self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES)
        return first, last, self.pool.email(first, last, self.rng.choice(EMAIL_DOMAINS))

    def message(self, who: str, body: str) -> str:
        """One dated message of a ticket thread."""
        rng = self.rng
        return f"--- {who} · {date(rng, 2025)} {rng.randint(8, 18):02d}:{rng.randint(10, 59)}\n{body}\n"  # fmt: skip

    def ticket_text(
        self, tid: str, email: str, subject: str, middle: str, pre: int, post: int
    ) -> str:
        """get_ticket output: the customer's ``middle`` message between ``pre`` and ``post``."""
        rng, msg, agent = self.rng, self.message, self.agent
        before = [msg(email if i % 2 == 0 else agent,
                      " ".join(rng.sample(CHATTER if i % 2 == 0 else AGENT_LINES, 3))) for i in range(pre)]  # fmt: skip
        after = [msg(email if i % 2 else agent,
                     " ".join(rng.sample(AGENT_LINES if i % 2 == 0 else CHATTER, 3))) for i in range(post)]  # fmt: skip
        head = f"Ticket {tid} · priority {rng.choice(('normal', 'high'))} · channel email\nSubject: {subject}\nFrom: {email}\n\n"  # fmt: skip
        return head + "\n".join([*before, msg(email, middle), *after])

    def balanced_ticket(self, tid: str, email: str, subject: str, middle: str, span: str) -> str:
        """A ticket thread with ``span`` in its middle (a verbatim source)."""
        pre, post = 2, 2
        for _ in range(12):
            text = self.ticket_text(tid, email, subject, middle, pre, post)
            at = text.find(span)
            if at < 0.36 * len(text):
                pre += 1
            elif at + len(span) > 0.64 * len(text):
                post += 1
            else:
                return text
        return text


class DataEntry(Workload):
    """A lead's escalations: tickets of a few kinds, one follow-up, an end-of-day summary."""

    NAME = NAME
    TOOLS = TOOLS

    shop: str
    records: Records
    contract_kind: str  # which ticket can honour the first-turn contract
    contract: Rule

    def __init__(self, b: SessionBuilder) -> None:
        super().__init__(b)
        self.summary: list[str] = []  # one line per ticket, for the end-of-day summary
        self.later_evidence: list[tuple[str, int]] = []  # (order total, seq of its record)
        self.first_turn = -1
        self.turn_no = 0
        self.honoured = False  # the first-turn contract was honoured
        self.ask: str | None = None  # the lead's question that opens the next turn
        self.moved_customer: Record | None = None  # the customer with the new warehouse

    def build(self) -> str:
        """A status ticket first, then the others in a random order, then the summary."""
        rng = self.rng
        self.brief()
        # the first ticket is a status enquiry; later ones in a random order
        self.ticket_status()
        later = [
            self.ticket_address,
            self.ticket_refund,
            *rng.sample(
                [self.ticket_email, self.ticket_refund, self.ticket_status], rng.randint(1, 3)
            ),
        ]
        rng.shuffle(later)
        followed = False
        for ticket in later:
            ticket()
            if ticket == self.ticket_address and not followed:
                followed = True
                self.orders_followup()
        return self.end_of_day()

    def brief(self) -> None:
        """The shop, the system prompt, the lead's rule and the standing rule."""
        rng = self.rng
        self.shop = rng.choice(
            ("Officedeck", "Deskline Supply", "WorkWell Direct", "Bureau Express")
        )
        self.records = Records(rng, self.pool, self.shop)
        self.system(
            f"You are a customer-operations agent for {self.shop}, a B2B office equipment "
            "supplier. You work through support tickets: look up customers and orders, correct "
            "records with update_record, and report exactly what you changed. Never guess ids: "
            "look them up."
        )
        self.contract_kind, self.contract = rng.choice(CONTRACTS)
        self.b.standing_rule(rng.choice(RULES))

    # --- steps every ticket shares ---------------------------------------------------------------
    def open_turn(self, text: str) -> int:
        """The lead's next message: the first carries the contract, others a pending question."""
        self.turn_no += 1
        if self.turn_no == 1:
            self.first_turn = self.b.user(
                f"Morning! Please work through today's escalations. {self.contract.sentence} "
                f"First one: {text}"
            )
            return self.first_turn
        ask, self.ask = self.ask, None
        return self.b.user(f"{ask} {text}" if ask else text)

    def lookup(
        self,
        tid: str,
        subject: str,
        middle: str,
        span: str | None,
        who: Sender,
        with_orders: list[str],
    ) -> tuple[Step, Step, Record]:
        """get_ticket then find_customer; plants the email locator."""
        rng, records = self.rng, self.records
        first, last, email = who
        text = (
            records.balanced_ticket(tid, email, subject, middle, span)
            if span
            else records.ticket_text(tid, email, subject, middle, rng.randint(2, 6), rng.randint(1, 4))
        )  # fmt: skip
        tk = self.b.call("get_ticket", {"ticket_id": tid}, text)
        cust = records.customer(email, first, last)
        records.recent(cust, with_orders)
        fc = self.b.call("find_customer", {"query": email}, _dumps({"matches": 1, "customers": [cust]}),
                         text="Looking up the sender.")  # fmt: skip
        self.b.plant(
            "locator_handle",
            email,
            tk.result_seq,
            fc.call_seq,
            "sender email from the ticket, used to find the customer",
        )
        return tk, fc, cust

    def new_ticket(self) -> tuple[str, Sender]:
        """A fresh ticket id and the customer who wrote it."""
        return self.pool.ticket_id(), self.records.sender()

    def order_ticket(
        self, tid: str, who: Sender, request: str, subject: str, middle: str
    ) -> tuple[Step, Record, str]:
        """The lead's request, then a ticket about the sender's latest order: the customer
        lookup, the customer record and that order's id."""
        self.open_turn(request)
        oid = self.pool.order_id()
        _, found, cust = self.lookup(tid, subject, middle, None, who, [oid])
        return found, cust, oid

    def get_order(self, order: Record, found: Step, text: str) -> Step:
        """get_order with an id copied from the customer record's order list."""
        oid = order["order_id"]
        go = self.b.call("get_order", {"order_id": oid}, _dumps(order), text=text)
        self.b.plant("locator_handle", oid, found.result_seq, go.call_seq, ORDER_NOTE)
        return go

    def plant_contract_at(self, need_seq: int) -> None:
        """The first-turn contract is honoured by message ``need_seq``."""
        self.plant_contract(self.contract, self.first_turn, need_seq)
        self.honoured = True

    def honour_note(self, record: str, tid: str) -> None:
        """Under the note rule, the first changed record after turn 1 gets the ticket number."""
        if self.contract_kind == "any" and self.turn_no > 1 and not self.honoured:
            n = self.b.call("add_note", {"id": record, "text": f"{tid}: updated on customer request"}, f"Note added to {record}.",
                            text=self.contract.honour)  # fmt: skip
            self.plant_contract_at(n.call_seq)

    # --- ticket kinds ----------------------------------------------------------------------------
    def ticket_status(self) -> None:
        """Where is my order? The order total is evidence for the end-of-day summary."""
        rng, pool = self.rng, self.pool
        tid, who = self.new_ticket()
        first, last, _ = who
        fc, cust, oid = self.order_ticket(
            tid,
            who,
            f"{tid}, a customer asking where their order is.",
            "Where is my order?",
            f"Hi, our last order still hasn't arrived. Can you tell me where it is?\n{first} {last}",
        )
        total = pool.amount(1_000, 9_000)
        label = pool.label_id()
        order = self.records.order(oid, cust, total, label, {"status": "shipped", "tracking_eta": date(rng, 2025)})  # fmt: skip
        go = self.get_order(order, fc, "Their most recent order is the one still in transit.")
        self.b.say(
            f"The order shipped and is in transit with the carrier; I replied to {first} with the tracking details."
        )  # fmt: skip
        self.later_evidence.append((total, go.result_seq))
        self.summary.append("status enquiry answered with tracking details")

    def ticket_address(self) -> None:
        """A new delivery address copied from the middle of the thread; a new label results."""
        rng, pool = self.rng, self.pool
        tid, who = self.new_ticket()
        first, last, _ = who
        self.open_turn(
            f"Next: {tid}. The customer says the parcel must go to a new warehouse address."
        )
        city, cc, zip_ = rng.choice(CITIES)
        new_addr = f"Attn: Receiving Dock {rng.randint(2, 14)}, {rng.choice(STREETS)} {rng.randint(100, 1999)}, Unit {rng.randint(2, 40)}{rng.choice('ABCDE')}, {zip_} {city}, {cc}"  # fmt: skip
        new_addr = pool.fresh(lambda: new_addr)
        invoice_ask = self.contract_kind == "address" and self.turn_no > 1
        middle = (f"Hello, we have moved our warehouse. Please deliver the open order to:\n{new_addr}\n"
                  "The old address is no longer staffed." + (" Could you update our invoice address as well?" if invoice_ask else "")
                  + f"\nBest regards, {first} {last}")  # fmt: skip
        oid = pool.order_id()
        tk, fc, cust = self.lookup(tid, "New delivery address", middle, new_addr, who, [oid])
        total = pool.amount(1_000, 9_000)
        old_label, new_label = pool.label_id(), pool.label_id()
        order = self.records.order(oid, cust, total, old_label, {"status": "packed"})
        self.get_order(order, fc, "The open order in their list is the one still packed.")
        up = self.b.call("update_record", {"id": oid, "fields": {"shipping_address": new_addr}},
                         f"Updated {oid}: shipping_address.", text="Copying the new address exactly as the customer wrote it.")  # fmt: skip
        self.b.plant(
            "verbatim_source",
            new_addr,
            tk.result_seq,
            up.call_seq,
            "address line from the middle of the ticket thread, copied into update_record",
        )
        self.honour_note(oid, tid)
        self.confirm_label(order, new_addr, new_label, invoice_ask)
        self.summary.append("delivery address changed for a moved warehouse, label regenerated")
        self.moved_customer = cust

    def confirm_label(
        self, order: Record, new_addr: str, new_label: str, invoice_ask: bool
    ) -> None:
        """Re-read the order: only this read shows the regenerated label (now or asked later)."""
        oid = order["order_id"]
        shipping = {**order["shipping"], "address": new_addr, "label": new_label, "label_regenerated": True}  # fmt: skip
        g2 = self.b.call(
            "get_order",
            {"order_id": oid},
            _dumps({**order, "shipping": shipping}),
            text="Checking the order after the change.",
        )
        note = "label id only the re-read after the update shows"
        if invoice_ask and not self.honoured:
            n = self.b.say(f"Done: {oid} now ships to the new warehouse, with new label {new_label}. {self.contract.honour}")  # fmt: skip
            self.plant_contract_at(n)
        elif self.rng.random() < 0.4:  # the lead asks for the label in the next turn
            self.b.say(
                f"Done: {oid} now ships to the new warehouse address and the carrier label was regenerated."
            )  # fmt: skip
            self.ask = (
                f"Quick one first: what's the new label id for {oid}? The warehouse wants it."
            )
            plant = ("live_state", new_label, g2.result_seq, f"{note}; asked a turn later")
            self.b.answer_next(f"The new label id is {new_label}.", plant)
            return
        else:
            n = self.b.say(
                f"Done: {oid} now ships to the new warehouse address, and the carrier label was regenerated as {new_label}."
            )  # fmt: skip
        self.b.plant("live_state", new_label, g2.result_seq, n, note)

    def ticket_refund(self) -> None:
        """A damaged item: the order total is reported; under the refund rule, maybe a pause."""
        rng, pool = self.rng, self.pool
        tid, who = self.new_ticket()
        first, last, _ = who
        product = rng.choice(PRODUCTS)
        big = self.contract_kind == "refund" and self.turn_no >= 1 and not self.honoured
        fc, cust, oid = self.order_ticket(
            tid,
            who,
            f"Next: {tid}, a refund request for a damaged item.",
            "Damaged item",
            f"The {product} in our last order arrived damaged. We would like a refund for it.\n{first} {last}",
        )  # fmt: skip
        total = pool.amount(1_000, 9_000)
        order = self.records.order(oid, cust, total, pool.label_id(), {"status": "delivered"})
        price = rng.uniform(520, 980) if big else rng.uniform(40, 480)
        refund = f"{price:.2f}"
        order["items"][0].update(
            {"description": product, "qty": 1, "unit_price_eur": refund, "line_total_eur": refund}
        )
        go = self.get_order(order, fc, "Finding the order with the damaged item.")
        over_limit = big and self.turn_no > 1
        text = f"The order total is EUR {total}; the damaged {product} is EUR {refund}"
        n = self.b.say(
            f"{text}. {self.contract.honour}"
            if over_limit
            else f"{text}, so I'll refund that line."
        )
        self.b.plant(
            "evidence_detail",
            total,
            go.result_seq,
            n,
            "order total from the order record, reported right away",
        )
        if over_limit:
            self.plant_contract_at(n)
            self.open_turn("Approved, go ahead with that refund.")
        self.register_refund(order, refund, tid)
        self.summary.append("refund for a damaged item approved and registered")

    def register_refund(self, order: Record, refund: str, tid: str) -> None:
        """A wrong field name, a retry, then a re-read that alone shows the refund reference."""
        oid = order["order_id"]
        self.b.call("update_record", {"id": oid, "fields": {"refund_status": "approved", "refund_amount": refund}},
                    "Error: unknown field 'refund_amount' on order records. Did you mean 'refund_amount_eur'? No changes were made.",
                    error=True)  # fmt: skip
        self.b.call("update_record", {"id": oid, "fields": {"refund_status": "approved", "refund_amount_eur": refund, "refund_reason": "damaged_in_transit"}},
                    f"Updated {oid}: refund_status, refund_amount_eur, refund_reason.", text="Wrong field name; retrying.")  # fmt: skip
        self.honour_note(oid, tid)
        ref = self.pool.refund_id()
        o2 = {**order, "refund": {"status": "approved", "amount_eur": refund, "reference": ref}}
        g2 = self.b.call(
            "get_order", {"order_id": oid}, _dumps(o2), text="Confirming the refund was registered."
        )
        n = self.b.say(
            f"Refund registered under {ref} for EUR {refund}; the customer will see it in three to five business days."
        )  # fmt: skip
        self.b.plant(
            "live_state",
            ref,
            g2.result_seq,
            n,
            "refund reference only the re-read after the update shows",
        )

    def ticket_email(self) -> None:
        """A new contact email from the ticket and the customer id from the record, written."""
        rng, pool = self.rng, self.pool
        tid, who = self.new_ticket()
        first, last, _ = who
        new_email = pool.email(first, last, rng.choice(EMAIL_DOMAINS))
        self.open_turn(f"Next: {tid}. Someone wants their account email changed.")
        tk, fc, cust = self.lookup(tid, "Change of contact email",
                                   f"Our domain is changing. Please use {new_email} for everything from now on, including invoices.\n{first} {last}",
                                   None, who, [])  # fmt: skip
        cid = cust["customer_id"]
        up = self.b.call("update_record", {"id": cid, "fields": {"email": new_email}}, f"Updated {cid}: email.",
                         text="Updating the contact email to the one in the ticket.")  # fmt: skip
        self.b.plant(
            "locator_handle",
            new_email,
            tk.result_seq,
            up.call_seq,
            "new email address from the ticket body, written into the record",
        )
        self.b.plant(
            "locator_handle",
            cid,
            fc.result_seq,
            up.call_seq,
            "customer id from the find_customer result",
        )
        self.honour_note(cid, tid)
        self.b.say(
            "Contact email updated; invoices will go to the new address from the next billing run."
        )
        self.summary.append("contact email changed after a domain move")

    def orders_followup(self) -> None:
        """The moved customer's other orders: a long list, truncated, read back."""
        rng, cust = self.rng, self.moved_customer
        assert cust is not None  # follows the address ticket
        cid = cust["customer_id"]
        self.open_turn(
            f"For {cust['name']} (the customer with the new warehouse): check whether any of their other open "
            "orders still go to the old address."
        )  # fmt: skip
        self.b.call(
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
        route = self.pool.output_path(f"orders-{cid.lower()}", "csv")
        keep = 25
        lo = self.b.call("list_orders", {"customer_id": cid}, truncated(lines, keep, route))
        how = ORDERS_READ_NOW if rng.random() < 0.5 else ORDERS_READ_LATER
        self.read_back(Truncated(route, lo.result_seq, lines, keep), how, ask=self.open_turn)
        self.summary.append("checked the remaining orders of the moved customer")

    def end_of_day(self) -> str:
        """The summary: the first enquiry's total (evidence) and the standing rule."""
        self.open_turn("Thanks! Give me a short end-of-day summary with the amounts involved.")
        total, src = self.later_evidence[0]
        n = self.b.say(
            (
                "End of day:\n"
                + "\n".join(f"- {s}" for s in self.summary)
                + f"\n- the order in the first enquiry was EUR {total}, paid and in transit.\n"
                + self.b.rule_honour()
            ).rstrip()
        )
        self.b.plant(
            "evidence_detail",
            total,
            src,
            n,
            "order total from an earlier ticket, used in the end-of-day summary",
        )
        self.b.plant_rule(n)
        return f"{len(self.summary)} support tickets at {self.shop}"


#: The script ``WORKLOADS`` runs for this workload.
build = DataEntry.script
