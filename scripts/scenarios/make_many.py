"""Write 40 small, valid search scenarios to ``many/search/`` (for selection,
sampling, sharding and xdist tests).

    python scripts/scenarios/make_many.py

Deterministic: ids, file names and content depend only on the index, so the
set is identical on every run and every machine.  Universes cycle over
21..30; ids look like ``scenario_universe_<u>_<6 base36 chars>``.  Each
scenario is one USER question answered by one oracle send_message_to_user
(the usual Gaia2 search shape).  These files use lower-case
``operation_type`` values (the shipped scenarios use ARE's upper-case), so the
set also exercises case-insensitive handling.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from pytest_gaia2.plan.builder import ScenarioBuilder, contact, contacts_state

HERE = Path(__file__).resolve().parent
OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "scenarios" / "many" / "search"
COUNT = 40
BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"

FIRST = ["Aino", "Bram", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hugo", "Ines", "Jasper"]
LAST = ["Korhonen", "Visser", "Galli", "Orlov", "Hart", "Nazari", "Berg", "Lemaire", "Sousa", "Quinn"]
CITIES = ["Helsinki", "Utrecht", "Turin", "Riga", "Bristol", "Lyon", "Gdansk", "Ghent", "Braga", "Cork"]
JOBS = ["Pharmacist", "Pilot", "Baker", "Translator", "Geologist", "Nurse", "Editor", "Plumber", "Chemist", "Tailor"]


def suffix(i: int) -> str:
    digest = int(hashlib.sha256(f"pytest-gaia2/many/{i}".encode()).hexdigest(), 16)
    chars = []
    for _ in range(6):
        digest, r = divmod(digest, 36)
        chars.append(BASE36[r])
    return "".join(chars)


def make(i: int) -> ScenarioBuilder:
    universe = 21 + i % 10
    sid = f"scenario_universe_{universe}_{suffix(i)}"
    first, last = FIRST[i % 10], LAST[(i * 3 + 1) % 10]
    city, job = CITIES[(i * 7) % 10], JOBS[(i // 10 + i) % 10]
    day = 1 + i % 28
    b = ScenarioBuilder(
        sid,
        start_time=f"2024-07-{day:02d} 09:00:00",
        duration=180,
        tags=["search", "contacts"],
        seed=i,
        op_case="lower",
    )
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Robin",
                "Ellis",
                is_user=True,
                gender="Unknown",
                age=35,
                city_living="London",
                address="48 Mildmay Grove, London N1 4RH",
                country="United Kingdom",
                status="Employed",
                email="robin.ellis@example.org",
            ),
            contact(
                b.hex_id(),
                first,
                last,
                gender="Unknown",
                age=25 + i % 40,
                city_living=city,
                job=job,
                status="Employed",
                email=f"{first.lower()}.{last.lower()}@example.org",
            ),
        ),
    )
    kind = i % 3
    if kind == 0:
        q, a = f"Which city does {first} {last} live in?", f"{first} {last} lives in {city}."
    elif kind == 1:
        q, a = f"What does {first} {last} do for a living?", f"{first} {last} works as a {job.lower()}."
    else:
        q, a = (
            f"What is {first} {last}'s email address?",
            f"{first} {last}'s email address is {first.lower()}.{last.lower()}@example.org.",
        )
    u = b.user(q)
    b.answer(a, [u])
    return b


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    ids = set()
    for i in range(COUNT):
        b = make(i)
        assert b.scenario_id not in ids, b.scenario_id
        ids.add(b.scenario_id)
        b.write(OUT / f"{b.scenario_id}.json")
    print(f"wrote {COUNT} scenarios to {OUT}")


if __name__ == "__main__":
    main()
