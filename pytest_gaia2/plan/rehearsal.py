"""A Gaia2-shaped pool for rehearsing offline: up to 800 scenarios, 160 per split, spread evenly
over the ten universes, that the reference image replays in seconds.

The real benchmark is 800 scenarios in five splits of 160 over ten universes. A team rehearses
its N=10/40/160 steps, budgets, probes, comparisons and shards on this pool before paying for
a model. Each split has the shape of its real counterpart (search only answers, execution
writes, adaptability reacts to an environment event, time writes on a schedule, ambiguity asks
before it acts), with one simulated model call per oracle action, so a priced run has a cost
that differs by split. Scheduled delays stay within 10 seconds; ``duration`` is declared as the
shipped scenarios declare it.

Scenario ``j`` of a split depends only on the seed, the split and ``j``: a pool of 40 is the
first 8 of each split of the pool of 800 with the same seed, byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import random
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_gaia2.plan.builder import (
    ScenarioBuilder,
    calendar_event,
    calendar_state,
    contact,
    contacts_state,
    conversation,
    dumps,
    email,
    email_state,
    message,
    messaging_state,
)
from pytest_gaia2.store.console import CommandError
from pytest_gaia2.store.names import SPLITS

PER_SPLIT = 160
UNIVERSES = tuple(range(21, 31))
"""Gaia2's ten universes: ``scenario_universe_21_...`` to ``scenario_universe_30_...``."""
MAX_COUNT = PER_SPLIT * len(SPLITS)
DEFAULT_COUNT = MAX_COUNT
MODEL = "gaia2-reference"
"""The model the reference image's simulated calls name, priced by the pool's price file."""
USAGE = "20000,2000,8000"
"""GAIA2_REF_USAGE for a rehearsal: tokens of each simulated call (prompt, completion, cached)."""
PRICES = {"input": 3.0, "output": 15.0, "cached_input": 0.3}
"""USD per million tokens: about $0.07 a call, so $0.07 (search) to $0.34 a scenario."""
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_IDS = 36**6
PRICE_FILE = "prices.toml"
README = "README.md"

FIRST = ("Aino", "Bram", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hugo", "Ines", "Jasper", "Kemal", "Lucia")
LAST = ("Korhonen", "Visser", "Galli", "Orlov", "Hart", "Nazari", "Berg", "Lemaire", "Sousa", "Quinn", "Arslan")
JOBS = ("Pharmacist", "Pilot", "Baker", "Translator", "Geologist", "Nurse", "Editor", "Plumber", "Chemist")
PLACES = (
    ("Helsinki", "Finland", "Mannerheimintie 12, 00100 Helsinki", "+358 40"),
    ("Utrecht", "Netherlands", "Oudegracht 88, 3511 AV Utrecht", "+31 6"),
    ("Turin", "Italy", "Via Po 17, 10124 Torino", "+39 347"),
    ("Riga", "Latvia", "Brivibas iela 40, Riga LV-1050", "+371 29"),
    ("Bristol", "United Kingdom", "21 Park Street, Bristol BS1 5NT", "+44 7700"),
    ("Lyon", "France", "8 Rue Merciere, 69002 Lyon", "+33 6"),
    ("Gdansk", "Poland", "Dluga 45, 80-827 Gdansk", "+48 601"),
    ("Ghent", "Belgium", "Korenmarkt 3, 9000 Gent", "+32 470"),
    ("Braga", "Portugal", "Rua do Souto 60, 4700-329 Braga", "+351 912"),
    ("Cork", "Ireland", "14 Oliver Plunkett Street, Cork", "+353 87"),
)
VENUES = ("Atelier 9", "Harbour Office, Room 3B", "Cafe Lumen", "Library Hall B", "Studio North", "Riverside Loft")
TOPICS = ("Q3 budget review", "venue contract", "travel plans", "quarterly report", "team offsite", "product launch")


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    job: str
    phone: str
    email: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


class _World:
    """One scenario's people and place, drawn from its own seeded generator."""

    def __init__(self, rng: random.Random, builder: ScenarioBuilder) -> None:
        self.rng = rng
        self.builder = builder
        self.city, self.country, self.address, prefix = rng.choice(PLACES)
        firsts = rng.sample(FIRST, 4)
        lasts = rng.sample(LAST, 4)
        self.people = [
            Person(
                first,
                last,
                rng.choice(JOBS),
                f"{prefix} {rng.randrange(100, 1000)} {rng.randrange(1000, 10000)}",
                f"{first.lower()}.{last.lower()}@example.org",
            )
            for first, last in zip(firsts, lasts, strict=True)
        ]
        self.user, self.friend, self.other = self.people[0], self.people[1], self.people[2]
        self.contact_ids = [builder.hex_id() for _ in self.people]

    def contacts(self, *extra: Person) -> None:
        b = self.builder
        b.standard_apps()
        entries = [
            contact(
                cid,
                person.first,
                person.last,
                is_user=index == 0,
                age=25 + self.rng.randrange(40),
                city_living=self.city,
                country=self.country,
                address=self.address if index == 0 else None,
                status="Employed",
                job=person.job,
                phone=person.phone,
                email=person.email,
            )
            for index, (cid, person) in enumerate(zip(self.contact_ids, self.people, strict=True))
        ]
        entries += [
            contact(b.hex_id(), p.first, p.last, city_living=self.city, job=p.job, phone=p.phone, email=p.email)
            for p in extra
        ]
        b.app("Contacts", contacts_state(*entries))

    def chats(self, *lines: tuple[Person, str]) -> None:
        """A Chats app (phone-number ids) with one conversation with the friend."""
        b, me, friend = self.builder, self.user, self.friend
        conv = b.hex_id()
        messages = [
            message(who.phone, b.hex_id(), f"2024-07-0{1 + n} 18:0{n}:00", text) for n, (who, text) in enumerate(lines)
        ]
        b.app(
            "Chats",
            messaging_state(
                me.phone,
                {me.phone: me.name, friend.phone: friend.name},
                [conversation(conv, friend.name, [me.phone, friend.phone], messages)],
                mode="PHONE_NUMBER",
            ),
        )


def _search(w: _World, j: int) -> None:
    """A question answered from Contacts, an email or the calendar: the oracle only answers."""
    b, friend = w.builder, w.friend
    kind = j % 3
    w.contacts()
    if kind == 0:
        u = b.user(f"What is {friend.name}'s phone number, and what does {friend.first} do for a living?")
        b.answer(
            f"{friend.name}'s phone number is {friend.phone}; {friend.first} works as a {friend.job.lower()}.", [u]
        )
    elif kind == 1:
        topic = w.rng.choice(TOPICS)
        day = 10 + w.rng.randrange(15)
        b.app(
            "EmailClientV2",
            email_state(
                w.user.email,
                inbox=[
                    email(
                        b.hex_id(),
                        friend.email,
                        [w.user.email],
                        topic.capitalize(),
                        f"Hi {w.user.first}, please send me your notes on the {topic} by {day} July.",
                        "2024-07-01 16:12:00",
                    ),
                    email(
                        b.hex_id(), w.other.email, [w.user.email], "Lunch", "Lunch on Friday?", "2024-07-01 11:05:00"
                    ),
                ],
            ),
        )
        u = b.user(f"Who emailed me about the {topic}, and by when do they need my notes?")
        b.answer(f"{friend.name} ({friend.email}) emailed you about the {topic}; the notes are due by {day} July.", [u])
    else:
        venue = w.rng.choice(VENUES)
        b.app(
            "Calendar",
            calendar_state(
                calendar_event(
                    b.hex_id(),
                    f"Meeting with {friend.first}",
                    "2024-07-03 14:00:00",
                    "2024-07-03 15:00:00",
                    tag="work",
                    location=venue,
                    attendees=[w.user.name, friend.name],
                ),
                calendar_event(b.hex_id(), "Dentist", "2024-07-02 08:30:00", "2024-07-02 09:15:00", tag="personal"),
            ),
        )
        u = b.user(f"Where is my next meeting with {friend.name}?")
        b.answer(f"Your next meeting with {friend.name} is on 3 July from 14:00 to 15:00 at {venue}.", [u])


def _execution(w: _World, j: int) -> None:
    """Two independent writes, then the answer; every other one has a second turn that writes again."""
    b, friend = w.builder, w.friend
    w.contacts()
    b.app("EmailClientV2", email_state(w.user.email))
    new_job = w.rng.choice([job for job in JOBS if job != friend.job])
    u = b.user(
        f"{friend.name} is now a {new_job.lower()}. Update {friend.first}'s job in my contacts, then email "
        f"{friend.first} congratulations with the subject 'Congratulations!'."
    )
    w1 = b.oracle("Contacts", "edit_contact", {"contact_id": w.contact_ids[1], "updates": {"job": new_job}}, [u])
    w2 = b.oracle(
        "EmailClientV2",
        "send_email",
        {
            "recipients": [friend.email],
            "subject": "Congratulations!",
            "content": f"Dear {friend.first}, congratulations on the new role! {w.user.first}",
            "cc": [],
            "attachment_paths": [],
        },
        [u],
    )
    a0 = b.answer(f"Done: {friend.name} is now listed as {new_job}, and I emailed the congratulations.", [w1, w2])
    if j % 2:
        w.chats((friend, "Any news?"))
        u1 = b.user(f"Thanks! Now send {friend.first} a Chats message: 'Check your inbox!'", [a0])
        w3 = b.oracle(
            "Chats",
            "send_message",
            {"user_id": friend.phone, "content": "Check your inbox!", "attachment_path": None},
            [u1],
        )
        b.answer(f"Message sent to {friend.first}.", [w3])


def _adaptability(w: _World, j: int) -> None:
    """An email arrives 2 to 4 s after the task; the write depends on what it says."""
    b, friend = w.builder, w.friend
    w.contacts()
    b.app("Calendar", calendar_state())
    b.app("EmailClientV2", email_state(w.user.email))
    venue = w.rng.choice(VENUES)
    u = b.user(
        f"{friend.name} is about to email me the venue for Saturday's workshop. When it arrives, add "
        f"'Workshop' to my calendar on Saturday 6 July from 10:00 to 16:00 at that venue with {friend.first}, "
        "then tell me the venue."
    )
    e = b.env(
        "EmailClientV2",
        "create_and_add_email",
        {
            "sender": friend.email,
            "recipients": [w.user.email],
            "subject": "Workshop venue",
            "content": f"Hi {w.user.first}, the venue is {venue}. See you Saturday!",
            "folder_name": "INBOX",
        },
        [u],
        rel=float(2 + j % 3),
    )
    wr = b.oracle(
        "Calendar",
        "add_calendar_event",
        {
            "title": "Workshop",
            "start_datetime": "2024-07-06 10:00:00",
            "end_datetime": "2024-07-06 16:00:00",
            "tag": None,
            "description": None,
            "location": venue,
            "attendees": [friend.name],
        },
        [e],
    )
    b.answer(f"{friend.first} confirmed the venue: {venue}. The workshop is in your calendar.", [wr])


def _time(w: _World, j: int) -> None:
    """A write due 3 to 6 s after the task, judged on its timing."""
    b, friend = w.builder, w.friend
    w.contacts()
    w.chats((friend, "Text me when you leave."))
    delay = 3 + j % 4
    text = w.rng.choice(("Leaving now!", "On my way.", "Boarding now, talk later!", "Starting the call."))
    u = b.user(f"In {delay} seconds, send {friend.first} a Chats message saying '{text}'.")
    wr = b.oracle(
        "Chats",
        "send_message",
        {"user_id": friend.phone, "content": text, "attachment_path": None},
        [u],
        rel=float(delay),
    )
    b.answer(f"Sent {friend.first} '{text}'.", [wr])


def _ambiguity(w: _World, j: int) -> None:
    """Two contacts share a first name: turn 0 only asks which, turn 1 writes."""
    b, friend = w.builder, w.friend
    namesake = Person(
        friend.first,
        w.other.last if w.other.last != friend.last else "Novak",
        w.other.job,
        w.other.phone,
        f"{friend.first.lower()}.{w.other.last.lower()}@example.net",
    )
    w.contacts(namesake)
    b.app("EmailClientV2", email_state(w.user.email))
    link = f"https://drive.example.org/s/{b.hex_id()[:10]}"
    u0 = b.user(f"Email {friend.first} the link to the slides: {link}")
    a0 = b.answer(f"There are two contacts called {friend.first}: {friend.name} and {namesake.name}. Which one?", [u0])
    u1 = b.user(f"{friend.name}. Use the subject 'Slides'.", [a0])
    wr = b.oracle(
        "EmailClientV2",
        "send_email",
        {
            "recipients": [friend.email],
            "subject": "Slides",
            "content": f"Hi {friend.first}, here: {link}",
            "cc": [],
            "attachment_paths": [],
        },
        [u1],
    )
    b.answer(f"Sent the slides link to {friend.name}.", [wr])


SHAPES: dict[str, Callable[[_World, int], None]] = {
    "search": _search,
    "execution": _execution,
    "adaptability": _adaptability,
    "time": _time,
    "ambiguity": _ambiguity,
}


def shares(count: int) -> dict[str, int]:
    """Scenarios per split: as even as can be, the first splits of ``SPLITS`` taking the rest."""
    if not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be from 1 to {MAX_COUNT}, got {count}")
    return {split: count // len(SPLITS) + (index < count % len(SPLITS)) for index, split in enumerate(SPLITS)}


def _suffix(seed: int, index: int) -> str:
    """Six base-36 characters for the pool's ``index``-th scenario: an affine map of ``index``
    modulo 36**6 whose factor is prime to 36, so no two scenarios of a pool share an id."""
    digest = int(hashlib.sha256(f"pytest-gaia2/rehearsal/{seed}".encode()).hexdigest(), 16)
    factor = digest % _IDS | 1
    factor += 2 if factor % 3 == 0 else 0
    number = (factor * (index + 1) + (digest >> 64)) % _IDS
    return "".join(_BASE36[(number // 36**k) % 36] for k in range(6))


def scenario(seed: int, split: str, j: int) -> ScenarioBuilder:
    """The ``j``-th scenario of ``split`` in the pool of ``seed``."""
    universe = UNIVERSES[j % len(UNIVERSES)]
    index = SPLITS.index(split) * PER_SPLIT + j
    rng = random.Random(f"{seed}/{split}/{j}")
    builder = ScenarioBuilder(
        f"scenario_universe_{universe}_{_suffix(seed, index)}",
        start_time=f"2024-07-01 {8 + rng.randrange(10):02d}:00:00",
        duration=120.0 if split == "time" else 180.0,
        tags=[split, "rehearsal"],
        seed=seed * MAX_COUNT + index,
    )
    SHAPES[split](_World(rng, builder), j)
    return builder


def pool(count: int = DEFAULT_COUNT, seed: int = 0) -> Iterator[tuple[str, ScenarioBuilder]]:
    """``count`` scenarios with their split: ``shares(count)`` per split, universes in turn."""
    for split, share in shares(count).items():
        for j in range(share):
            yield split, scenario(seed, split, j)


def commands(out: Path, count: int) -> list[str]:
    """The rehearsal the README and the docs describe, for this pool."""
    base = (
        f"pytest -n 2 --gaia2-scenarios {shlex.quote(str(out))} --gaia2-env GAIA2_REF_USAGE={USAGE} "
        f"--gaia2-price-file {shlex.quote(str(out / PRICE_FILE))} --gaia2-output rehearsal-results"
    )
    first, larger = min(40, count), min(160, count)
    return [
        f"{base} --gaia2-sample {first} --gaia2-budget-halt 3",
        f"{base} --gaia2-sample {larger} --gaia2-budget-halt 30 --gaia2-resume",
    ]


def readme(out: Path, count: int, seed: int) -> str:
    spread = ", ".join(f"{split} {share}" for split, share in shares(count).items())
    lines = [
        "# A rehearsal pool",
        "",
        f"Written by `pytest-gaia2 rehearsal --count {count} --seed {seed}`: {count} scenarios ({spread}) over "
        f"the {len(UNIVERSES)} universes, for the reference image (no model is called).",
        "",
        f"Each oracle action is one simulated model call of `GAIA2_REF_USAGE={USAGE}` tokens "
        f"(prompt, completion, cached), priced by `{PRICE_FILE}`, so budgets, probes and `plan` have money to "
        "count. Rehearse N=40, halted by the budget, then resume to N=160 (no verdict is paid twice):",
        "",
        "```bash",
        *commands(out, count),
        "```",
        "",
    ]
    return "\n".join(lines)


def _create(path: Path, data: bytes) -> None:
    """A new file, created exclusively and never through a link."""
    try:
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
    except OSError as exc:
        raise CommandError(f"{path}: cannot create it: {exc.strerror or exc}") from None


def write(out: Path, given: Path, count: int, seed: int) -> int:
    """The pool of ``count`` scenarios of ``seed``, its price file and README written into ``out``
    (a new or empty folder the command checked; ``given`` is how the user named it); every file
    created new. Returns how many scenarios were written."""
    files = {
        out / split / f"{built.scenario_id}.json": dumps(built.to_dict()).encode("utf-8")
        for split, built in pool(count, seed)
    }
    try:
        out.mkdir()
    except FileExistsError:
        pass  # the empty folder checked before
    except OSError as exc:
        raise CommandError(f"{given}: cannot create it: {exc.strerror or exc}") from None
    for path, data in files.items():
        _create(path, data)
    prices = "".join(f"{key} = {value}\n" for key, value in PRICES.items())
    _create(out / PRICE_FILE, f'["{MODEL}"]  # USD per million tokens\n{prices}'.encode())
    _create(out / README, readme(out, count, seed).encode("utf-8"))
    return len(files)
