"""Regenerate the shipped scenarios (``scenarios/<split>/``) and the plugin's
test variants (``tests/data/scenarios/{judge_fail,no_events,malformed,other_split}``).

    python scripts/scenarios/make_scenarios.py

Deterministic: running it twice gives identical files.  ``make_many.py`` writes
the ``many/search`` bulk set.

Conventions (real Gaia2): oracle (AGENT) events are write actions or
``AgentUserInterface.send_message_to_user`` only; a turn ends with the
oracle's ``send_message_to_user``; a follow-up USER message (or a turn-1 ENV
event) depends on the previous turn's oracle ``send_message_to_user``.
"""

from __future__ import annotations

from pathlib import Path

from pytest_gaia2.plan.builder import (
    ScenarioBuilder,
    calendar_event,
    calendar_state,
    contact,
    contacts_state,
    conversation,
    email,
    email_state,
    message,
    messaging_state,
    write_json,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TEST_DATA = REPO / "tests" / "data" / "scenarios"
SHIPPED = REPO / "scenarios"


# ===========================================================================
# search
# ===========================================================================


def search_contacts_dentist() -> ScenarioBuilder:
    """Search: read-only question answered from Contacts."""
    b = ScenarioBuilder(
        "scenario_universe_21_7kww6e", start_time="2024-10-15 07:00:00", tags=["search", "contacts"], seed=2101
    )
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Elena",
                "Vasquez",
                is_user=True,
                gender="Female",
                age=34,
                nationality="Spanish",
                address="Rua das Flores 12, 1200-195 Lisbon",
                city_living="Lisbon",
                country="Portugal",
                status="Employed",
                job="Product Designer",
                phone="+351 912 345 678",
                email="elena.vasquez@mailbox.pt",
            ),
            contact(
                b.hex_id(),
                "Priya",
                "Raman",
                gender="Female",
                age=47,
                nationality="Indian",
                city_living="Lisbon",
                country="Portugal",
                status="Employed",
                job="Dentist",
                description="Elena's dentist at Clínica Sorriso, Avenida da Liberdade.",
                phone="+351 213 555 019",
                email="dr.raman@clinicasorriso.pt",
            ),
            contact(
                b.hex_id(),
                "Tiago",
                "Ferraz",
                gender="Male",
                age=36,
                city_living="Porto",
                country="Portugal",
                status="Employed",
                job="Physiotherapist",
                phone="+351 222 400 118",
                email="tiago@fisioporto.pt",
            ),
            contact(
                b.hex_id(),
                "Marta",
                "Quintela",
                gender="Female",
                age=29,
                city_living="Lisbon",
                country="Portugal",
                status="Student",
                phone="+351 936 778 201",
                email="marta.q@ulisboa.pt",
            ),
        ),
    )
    u = b.user("What is the phone number of my dentist, Dr. Priya Raman?")
    b.answer("Dr. Priya Raman's phone number is +351 213 555 019.", [u])
    return b


def search_calendar_next_meeting() -> ScenarioBuilder:
    """Search: next meeting with a person, from Calendar."""
    b = ScenarioBuilder(
        "scenario_universe_24_zqzvsf", start_time="2024-06-10 08:00:00", tags=["search", "calendar"], seed=2401
    )
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Ingrid",
                "Solberg",
                is_user=True,
                gender="Female",
                age=41,
                nationality="Norwegian",
                address="Nygårdsgaten 44, 5015 Bergen",
                city_living="Bergen",
                country="Norway",
                status="Employed",
                job="Procurement Manager",
                phone="+47 912 34 567",
                email="ingrid.solberg@fjordfreight.no",
            ),
            contact(
                b.hex_id(),
                "Tomás",
                "Ferreira",
                gender="Male",
                age=38,
                nationality="Portuguese",
                city_living="Bergen",
                country="Norway",
                status="Employed",
                job="Account Manager",
                phone="+47 934 11 220",
                email="tomas.ferreira@nordpack.com",
            ),
        ),
    )
    b.app(
        "Calendar",
        calendar_state(
            calendar_event(
                b.hex_id(),
                "Quarterly planning",
                "2024-06-05 09:00:00",
                "2024-06-05 11:00:00",
                tag="work",
                location="Head office, Room 2A",
                attendees=["Ingrid Solberg", "Tomás Ferreira"],
            ),
            calendar_event(
                b.hex_id(),
                "Dentist",
                "2024-06-11 08:30:00",
                "2024-06-11 09:15:00",
                tag="personal",
                location="Bryggen Dental",
            ),
            calendar_event(
                b.hex_id(),
                "Supplier review",
                "2024-06-12 14:00:00",
                "2024-06-12 15:00:00",
                tag="work",
                description="Review packaging prices for Q3.",
                location="Harbour Office, Room 3B",
                attendees=["Ingrid Solberg", "Tomás Ferreira"],
            ),
            calendar_event(
                b.hex_id(),
                "Contract signing",
                "2024-06-20 10:00:00",
                "2024-06-20 10:30:00",
                tag="work",
                location="Nordpack HQ",
                attendees=["Ingrid Solberg", "Tomás Ferreira", "Kari Nilsen"],
            ),
        ),
    )
    u = b.user("When is my next meeting with Tomás Ferreira, and where is it?")
    b.answer(
        "Your next meeting with Tomás Ferreira is 'Supplier review' on Wednesday 12 June 2024 "
        "from 14:00 to 15:00, at Harbour Office, Room 3B.",
        [u],
    )
    return b


def search_email_budget() -> ScenarioBuilder:
    """Search: sender and deadline of an email in the inbox."""
    b = ScenarioBuilder(
        "scenario_universe_27_057i6s", start_time="2024-10-16 08:30:00", tags=["search", "email"], seed=2701
    )
    user_email = "hannah.brooks@larchwood.co.uk"
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Hannah",
                "Brooks",
                is_user=True,
                gender="Female",
                age=39,
                nationality="British",
                address="17 Clarendon Road, Leeds LS2 9NN",
                city_living="Leeds",
                country="United Kingdom",
                status="Employed",
                job="Operations Lead",
                email=user_email,
                phone="+44 7700 900412",
            ),
            contact(
                b.hex_id(),
                "Kofi",
                "Mensah",
                gender="Male",
                age=45,
                city_living="Leeds",
                country="United Kingdom",
                status="Employed",
                job="Finance Director",
                email="kofi.mensah@larchwood.co.uk",
            ),
        ),
    )
    b.app(
        "EmailClientV2",
        email_state(
            user_email,
            inbox=[
                email(
                    b.hex_id(),
                    "kofi.mensah@larchwood.co.uk",
                    [user_email],
                    "Q3 budget review",
                    "Hi Hannah,\n\nWe are closing the Q3 budget review. Please send me your department's final "
                    "figures by Friday 18 October.\n\nThanks,\nKofi",
                    "2024-10-15 16:12:00",
                ),
                email(
                    b.hex_id(),
                    "newsletter@leedsrunners.org",
                    [user_email],
                    "October club news",
                    "Autumn 10K registrations are open.",
                    "2024-10-15 18:40:00",
                    is_read=False,
                ),
                email(
                    b.hex_id(),
                    "it-support@larchwood.co.uk",
                    [user_email],
                    "Laptop refresh",
                    "Your new laptop is ready for collection from the IT desk.",
                    "2024-10-14 11:05:00",
                ),
            ],
        ),
    )
    u = b.user("Who sent me the email about the Q3 budget review, and what deadline did they give?")
    b.answer(
        "The Q3 budget review email came from Kofi Mensah (kofi.mensah@larchwood.co.uk). "
        "He asked for your department's final figures by Friday 18 October.",
        [u],
    )
    return b


def search_chats_train() -> ScenarioBuilder:
    """Search: a detail from a Chats conversation."""
    b = ScenarioBuilder(
        "scenario_universe_30_0vkdpg", start_time="2025-02-12 19:00:00", tags=["search", "chats"], seed=3001
    )
    me, lena, paul = "+49 151 2233 4455", "+49 160 9876 5432", "+49 170 1112 1314"
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Jonah",
                "Keller",
                is_user=True,
                gender="Male",
                age=31,
                city_living="Berlin",
                address="Weserstraße 61, 12045 Berlin",
                country="Germany",
                status="Employed",
                job="Sound Engineer",
                phone=me,
            ),
            contact(b.hex_id(), "Lena", "Hoffmann", gender="Female", age=30, city_living="Munich", phone=lena),
            contact(b.hex_id(), "Paul", "Richter", gender="Male", age=33, city_living="Berlin", phone=paul),
        ),
    )
    b.app(
        "Chats",
        messaging_state(
            me,
            {me: "Jonah Keller", lena: "Lena Hoffmann", paul: "Paul Richter"},
            [
                conversation(
                    b.hex_id(),
                    "Lena Hoffmann",
                    [me, lena],
                    [
                        message(me, b.hex_id(), "2025-02-11 20:01:00", "Are you still coming up this weekend?"),
                        message(
                            lena,
                            b.hex_id(),
                            "2025-02-11 20:07:00",
                            "Yes! My train gets into Berlin Hbf at 17:42 on Sunday.",
                        ),
                        message(me, b.hex_id(), "2025-02-11 20:09:00", "Great, I'll pick you up."),
                    ],
                ),
                conversation(
                    b.hex_id(),
                    "Paul Richter",
                    [me, paul],
                    [message(paul, b.hex_id(), "2025-02-10 12:30:00", "Studio is booked for Tuesday 10:00.")],
                ),
            ],
            mode="PHONE_NUMBER",
        ),
    )
    u = b.user("What time did Lena say her train gets into Berlin on Sunday?")
    b.answer("Lena said her train arrives at Berlin Hbf at 17:42 on Sunday.", [u])
    return b


# ===========================================================================
# execution
# ===========================================================================


def execution_contact_and_email() -> ScenarioBuilder:
    """Execution: edit a contact and send an email (two independent writes)."""
    b = ScenarioBuilder(
        "scenario_universe_22_mmow4l",
        start_time="2024-09-02 09:15:00",
        tags=["execution", "contacts", "email"],
        seed=2201,
    )
    user_email = "nadia.karim@postbox.it"
    marco_id = b.hex_id()
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Nadia",
                "Karim",
                is_user=True,
                gender="Female",
                age=37,
                city_living="Bologna",
                address="Via del Pratello 28, 40122 Bologna",
                country="Italy",
                status="Employed",
                job="Food Writer",
                email=user_email,
                phone="+39 333 120 4477",
            ),
            contact(
                marco_id,
                "Marco",
                "Bellini",
                gender="Male",
                age=42,
                nationality="Italian",
                city_living="Bologna",
                country="Italy",
                status="Employed",
                job="Sous Chef",
                description="Works at Osteria Verde.",
                email="marco.bellini@osteriaverde.it",
                phone="+39 347 555 0192",
            ),
            contact(
                b.hex_id(),
                "Giulia",
                "Rinaldi",
                gender="Female",
                age=35,
                city_living="Modena",
                country="Italy",
                status="Employed",
                job="Sommelier",
                email="giulia.rinaldi@enoteca.it",
            ),
        ),
    )
    b.app("EmailClientV2", email_state(user_email))
    u = b.user(
        "Marco Bellini has been promoted to Head Chef at Osteria Verde. Update his job in my contacts, "
        "then email him congratulations with the subject 'Congratulations, Head Chef!'."
    )
    w1 = b.oracle("Contacts", "edit_contact", {"contact_id": marco_id, "updates": {"job": "Head Chef"}}, [u])
    w2 = b.oracle(
        "EmailClientV2",
        "send_email",
        {
            "recipients": ["marco.bellini@osteriaverde.it"],
            "subject": "Congratulations, Head Chef!",
            "content": "Dear Marco,\n\nCongratulations on becoming Head Chef at Osteria Verde! "
            "Well deserved.\n\nBest,\nNadia",
            "cc": [],
            "attachment_paths": [],
        },
        [u],
    )
    b.answer("Done: Marco Bellini's job is now Head Chef, and I emailed him your congratulations.", [w1, w2])
    return b


def execution_two_turns() -> ScenarioBuilder:
    """Execution, two turns: add a calendar event, then (follow-up) message the guest."""
    b = ScenarioBuilder(
        "scenario_universe_28_5zyiit",
        start_time="2024-10-14 10:00:00",
        tags=["execution", "calendar", "chats", "multi_turn"],
        seed=2801,
    )
    me, aiko = "+46 70 123 45 67", "+46 73 987 65 43"
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Sofia",
                "Lindqvist",
                is_user=True,
                gender="Female",
                age=33,
                city_living="Stockholm",
                address="Götgatan 78, 118 30 Stockholm",
                country="Sweden",
                status="Employed",
                job="Architect",
                phone=me,
            ),
            contact(
                b.hex_id(),
                "Aiko",
                "Tanaka",
                gender="Female",
                age=32,
                city_living="Stockholm",
                country="Sweden",
                job="Illustrator",
                status="Employed",
                phone=aiko,
            ),
        ),
    )
    b.app(
        "Calendar",
        calendar_state(
            calendar_event(
                b.hex_id(),
                "Site visit",
                "2024-10-18 09:00:00",
                "2024-10-18 11:00:00",
                tag="work",
                location="Hammarby Sjöstad",
            ),
        ),
    )
    b.app(
        "Chats",
        messaging_state(
            me,
            {me: "Sofia Lindqvist", aiko: "Aiko Tanaka"},
            [
                conversation(
                    b.hex_id(),
                    "Aiko Tanaka",
                    [me, aiko],
                    [message(aiko, b.hex_id(), "2024-10-13 18:20:00", "Lunch this week? Friday works for me.")],
                )
            ],
            mode="PHONE_NUMBER",
        ),
    )
    u0 = b.user("Add a lunch with Aiko Tanaka to my calendar this Friday from 12:30 to 13:30 at Café Lumen.")
    w0 = b.oracle(
        "Calendar",
        "add_calendar_event",
        {
            "title": "Lunch with Aiko",
            "start_datetime": "2024-10-18 12:30:00",
            "end_datetime": "2024-10-18 13:30:00",
            "tag": None,
            "description": None,
            "location": "Café Lumen",
            "attendees": ["Aiko Tanaka"],
        },
        [u0],
    )
    a0 = b.answer("I added 'Lunch with Aiko' on Friday 18 October, 12:30-13:30, at Café Lumen.", [w0])
    u1 = b.user("Thanks! Now send Aiko a Chats message: 'Lunch is on for Friday 12:30 at Café Lumen!'", [a0], rel=0.0)
    w1 = b.oracle(
        "Chats",
        "send_message",
        {"user_id": aiko, "content": "Lunch is on for Friday 12:30 at Café Lumen!", "attachment_path": None},
        [u1],
    )
    b.answer("Message sent to Aiko.", [w1])
    return b


# ===========================================================================
# adaptability
# ===========================================================================


def adaptability_email_venue() -> ScenarioBuilder:
    """Adaptability: an email arrives (ENV, 3 s after the task); the agent books the event it announces."""
    b = ScenarioBuilder(
        "scenario_universe_23_9j1nnt",
        start_time="2024-11-13 09:00:00",
        tags=["adaptability", "email", "calendar"],
        seed=2301,
    )
    user_email = "amara.osei@brightmail.com"
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Amara",
                "Osei",
                is_user=True,
                gender="Female",
                age=29,
                city_living="Paris",
                address="23 Rue de la Roquette, 75011 Paris",
                country="France",
                status="Employed",
                job="UX Researcher",
                email=user_email,
            ),
            contact(
                b.hex_id(),
                "Noor",
                "Haddad",
                gender="Female",
                age=35,
                city_living="Paris",
                country="France",
                status="Employed",
                job="Design Lead",
                email="noor.haddad@studiolumen.com",
            ),
        ),
    )
    b.app("Calendar", calendar_state())
    b.app(
        "EmailClientV2",
        email_state(
            user_email,
            inbox=[
                email(
                    b.hex_id(),
                    "noor.haddad@studiolumen.com",
                    [user_email],
                    "Saturday workshop",
                    "Hi Amara, the design workshop is on for Saturday, 10:00-16:00. I'll confirm the venue shortly.",
                    "2024-11-12 17:30:00",
                ),
            ],
        ),
    )
    u = b.user(
        "Noor Haddad is about to email me the venue for Saturday's design workshop. As soon as her email "
        "arrives, add 'Design workshop' to my calendar on Saturday from 10:00 to 16:00 at that venue, with Noor "
        "as attendee, then tell me the venue."
    )
    e = b.env(
        "EmailClientV2",
        "create_and_add_email",
        {
            "sender": "noor.haddad@studiolumen.com",
            "recipients": [user_email],
            "subject": "Workshop venue",
            "content": "Hi Amara, the venue is confirmed: Atelier 9, 14 Rue Oberkampf, Paris. See you Saturday!",
            "folder_name": "INBOX",
        },
        [u],
        rel=3.0,
    )
    w = b.oracle(
        "Calendar",
        "add_calendar_event",
        {
            "title": "Design workshop",
            "start_datetime": "2024-11-16 10:00:00",
            "end_datetime": "2024-11-16 16:00:00",
            "tag": None,
            "description": None,
            "location": "Atelier 9, 14 Rue Oberkampf, Paris",
            "attendees": ["Noor Haddad"],
        },
        [e],
    )
    b.answer("Noor confirmed the venue: Atelier 9, 14 Rue Oberkampf, Paris. The workshop is in your calendar.", [w])
    return b


def adaptability_reply_two_turns() -> ScenarioBuilder:
    """Adaptability, two turns: the agent asks a friend; the reply arrives (ENV after the turn-0 answer)
    and the agent must act on it (delete a calendar event)."""
    b = ScenarioBuilder(
        "scenario_universe_29_r5pzv7",
        start_time="2024-12-04 13:00:00",
        tags=["adaptability", "chats", "calendar", "multi_turn"],
        seed=2901,
    )
    me, jonas = "+34 611 222 333", "+34 622 444 555"
    shift_id = b.hex_id()
    conv_id = b.hex_id()
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Mateo",
                "Rojas",
                is_user=True,
                gender="Male",
                age=27,
                city_living="Valencia",
                address="Carrer de Sueca 15, 46006 Valencia",
                country="Spain",
                status="Employed",
                job="Hotel Receptionist",
                phone=me,
            ),
            contact(
                b.hex_id(),
                "Jonas",
                "Weber",
                gender="Male",
                age=30,
                city_living="Valencia",
                country="Spain",
                status="Employed",
                job="Hotel Receptionist",
                phone=jonas,
            ),
        ),
    )
    b.app(
        "Calendar",
        calendar_state(
            calendar_event(
                shift_id,
                "Front-desk shift",
                "2024-12-05 14:00:00",
                "2024-12-05 22:00:00",
                tag="work",
                location="Hotel Mar Blau",
            ),
            calendar_event(
                b.hex_id(), "Football practice", "2024-12-06 19:00:00", "2024-12-06 20:30:00", tag="personal"
            ),
        ),
    )
    b.app(
        "Chats",
        messaging_state(
            me,
            {me: "Mateo Rojas", jonas: "Jonas Weber"},
            [
                conversation(
                    conv_id,
                    "Jonas Weber",
                    [me, jonas],
                    [message(jonas, b.hex_id(), "2024-12-01 10:00:00", "Thanks for covering Sunday!")],
                )
            ],
            mode="PHONE_NUMBER",
        ),
    )
    u = b.user(
        "Ask Jonas Weber on Chats whether he can cover my front-desk shift this Thursday. "
        "If he says yes, remove that shift from my calendar."
    )
    w0 = b.oracle(
        "Chats",
        "send_message",
        {
            "user_id": jonas,
            "content": "Hi Jonas, could you cover my front-desk shift this Thursday?",
            "attachment_path": None,
        },
        [u],
    )
    a0 = b.answer("I asked Jonas; I'll remove the shift once he confirms.", [w0])
    e = b.env(
        "Chats",
        "create_and_add_message",
        {"conversation_id": conv_id, "sender_id": jonas, "content": "Sure, I can take Thursday's shift!"},
        [a0],
        rel=2.0,
    )
    w1 = b.oracle("Calendar", "delete_calendar_event", {"event_id": shift_id}, [e])
    b.answer("Jonas agreed to cover Thursday, so I removed the front-desk shift from your calendar.", [w1])
    return b


# ===========================================================================
# time
# ===========================================================================


def time_delayed_chat() -> ScenarioBuilder:
    """Time: a write that must happen 5 s after the task."""
    b = ScenarioBuilder(
        "scenario_universe_25_rwvpxg",
        start_time="2025-03-05 06:40:00",
        duration=120,
        tags=["time", "chats"],
        seed=2501,
    )
    me, beatriz = "+351 912 000 111", "+351 913 222 333"
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Rafael",
                "Mendes",
                is_user=True,
                gender="Male",
                age=40,
                city_living="Porto",
                address="Rua de Cedofeita 310, 4050-174 Porto",
                country="Portugal",
                status="Employed",
                job="Consultant",
                phone=me,
            ),
            contact(
                b.hex_id(),
                "Beatriz",
                "Costa",
                gender="Female",
                age=38,
                city_living="Porto",
                country="Portugal",
                status="Employed",
                job="Teacher",
                phone=beatriz,
            ),
        ),
    )
    b.app(
        "Chats",
        messaging_state(
            me,
            {me: "Rafael Mendes", beatriz: "Beatriz Costa"},
            [
                conversation(
                    b.hex_id(),
                    "Beatriz Costa",
                    [me, beatriz],
                    [message(beatriz, b.hex_id(), "2025-03-05 06:15:00", "Safe flight! Text me before take-off.")],
                )
            ],
            mode="PHONE_NUMBER",
        ),
    )
    u = b.user("I'm about to board. In 5 seconds, send Beatriz a Chats message saying 'Boarding now, talk later!'.")
    w = b.oracle(
        "Chats",
        "send_message",
        {"user_id": beatriz, "content": "Boarding now, talk later!", "attachment_path": None},
        [u],
        rel=5.0,
    )
    b.answer("Sent Beatriz 'Boarding now, talk later!'.", [w])
    return b


def time_followup_reminder() -> ScenarioBuilder:
    """Time: an email now, then a Messages reminder 4 s after the email (timed AGENT->AGENT dependency)."""
    b = ScenarioBuilder(
        "scenario_universe_26_quwx1e",
        start_time="2025-01-21 15:00:00",
        duration=120,
        tags=["time", "email", "messages"],
        seed=2601,
    )
    user_email = "oliver.grant@fieldnote.io"
    me, dana = "9f0c6a51d2b34e7a8c1d", "3b7e2d90a4c54f1e9b6a"
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Oliver",
                "Grant",
                is_user=True,
                gender="Male",
                age=44,
                city_living="Dublin",
                address="9 Leeson Park, Dublin 6",
                country="Ireland",
                status="Employed",
                job="Team Lead",
                email=user_email,
            ),
            contact(
                b.hex_id(),
                "Dana",
                "Whitfield",
                gender="Female",
                age=36,
                city_living="Dublin",
                country="Ireland",
                status="Employed",
                job="Event Coordinator",
                email="dana.whitfield@fieldnote.io",
            ),
        ),
    )
    b.app("EmailClientV2", email_state(user_email))
    b.app(
        "Messages",
        messaging_state(
            me,
            {me: "Oliver Grant", dana: "Dana Whitfield"},
            [
                conversation(
                    b.hex_id(),
                    "Dana Whitfield",
                    [me, dana],
                    [message(dana, b.hex_id(), "2025-01-21 09:12:00", "Can you send me the offsite agenda today?")],
                )
            ],
            mode="NAME",
        ),
    )
    u = b.user(
        "Email Dana Whitfield the draft agenda for Thursday's offsite now: subject 'Offsite agenda draft', body "
        "'Hi Dana, draft agenda: 9:30 welcome, 10:00 roadmap, 12:30 lunch, 14:00 team workshop.'. "
        "Then, 4 seconds after the email, send her this on Messages: 'Just emailed you the offsite agenda draft.'"
    )
    w1 = b.oracle(
        "EmailClientV2",
        "send_email",
        {
            "recipients": ["dana.whitfield@fieldnote.io"],
            "subject": "Offsite agenda draft",
            "content": "Hi Dana, draft agenda: 9:30 welcome, 10:00 roadmap, 12:30 lunch, 14:00 team workshop.",
            "cc": [],
            "attachment_paths": [],
        },
        [u],
    )
    w2 = b.oracle(
        "Messages",
        "send_message",
        {"user_id": dana, "content": "Just emailed you the offsite agenda draft.", "attachment_path": None},
        [w1],
        rel=4.0,
    )
    b.answer("I emailed Dana the agenda draft and, 4 seconds later, sent her the reminder on Messages.", [w2])
    return b


# ===========================================================================
# ambiguity
# ===========================================================================


def ambiguity_which_sam() -> ScenarioBuilder:
    """Ambiguity: two contacts match 'Sam'; the agent asks, the user answers, the agent books."""
    b = ScenarioBuilder(
        "scenario_universe_21_83x6ru",
        start_time="2024-10-15 08:00:00",
        tags=["ambiguity", "contacts", "calendar", "multi_turn"],
        seed=2102,
    )
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Elena",
                "Vasquez",
                is_user=True,
                gender="Female",
                age=34,
                city_living="Lisbon",
                address="Rua das Flores 12, 1200-195 Lisbon",
                country="Portugal",
                status="Employed",
                job="Product Designer",
                email="elena.vasquez@mailbox.pt",
            ),
            contact(
                b.hex_id(),
                "Sam",
                "Okafor",
                gender="Male",
                age=39,
                city_living="Lisbon",
                country="Portugal",
                status="Employed",
                job="Engineering Manager",
                email="sam.okafor@tidewater.io",
            ),
            contact(
                b.hex_id(),
                "Samantha",
                "Reyes",
                gender="Female",
                age=31,
                city_living="Madrid",
                country="Spain",
                status="Employed",
                job="Recruiter",
                email="samantha.reyes@hirewell.es",
            ),
        ),
    )
    b.app(
        "Calendar",
        calendar_state(
            calendar_event(
                b.hex_id(),
                "Design critique",
                "2024-10-16 10:00:00",
                "2024-10-16 11:00:00",
                tag="work",
                attendees=["Elena Vasquez", "Marta Quintela"],
            ),
        ),
    )
    u0 = b.user("Set up a 30-minute call with Sam tomorrow at 15:00.")
    a0 = b.answer("I found two contacts named Sam: Sam Okafor and Samantha Reyes. Which one do you mean?", [u0])
    u1 = b.user("Sam Okafor, please.", [a0])
    w = b.oracle(
        "Calendar",
        "add_calendar_event",
        {
            "title": "Call with Sam Okafor",
            "start_datetime": "2024-10-16 15:00:00",
            "end_datetime": "2024-10-16 15:30:00",
            "tag": None,
            "description": None,
            "location": None,
            "attendees": ["Sam Okafor"],
        },
        [u1],
    )
    b.answer("Booked: 'Call with Sam Okafor' tomorrow, 15:00-15:30.", [w])
    return b


def ambiguity_which_chris() -> ScenarioBuilder:
    """Ambiguity: two 'Chris' contacts; clarification, then send the email."""
    b = ScenarioBuilder(
        "scenario_universe_27_9ue7tu",
        start_time="2024-10-16 11:00:00",
        tags=["ambiguity", "contacts", "email", "multi_turn"],
        seed=2702,
    )
    user_email = "hannah.brooks@larchwood.co.uk"
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Hannah",
                "Brooks",
                is_user=True,
                gender="Female",
                age=39,
                city_living="Leeds",
                address="17 Clarendon Road, Leeds LS2 9NN",
                country="United Kingdom",
                status="Employed",
                job="Operations Lead",
                email=user_email,
            ),
            contact(
                b.hex_id(),
                "Chris",
                "Adeyemi",
                gender="Male",
                age=41,
                city_living="Leeds",
                country="United Kingdom",
                status="Employed",
                job="Logistics Analyst",
                email="chris.adeyemi@northwind.io",
            ),
            contact(
                b.hex_id(),
                "Christine",
                "Lund",
                gender="Female",
                age=28,
                city_living="York",
                country="United Kingdom",
                status="Student",
                email="christine.lund@gmail.com",
            ),
        ),
    )
    b.app("EmailClientV2", email_state(user_email))
    link = "https://drive.larchwood.co.uk/s/ops-review-v3"
    u0 = b.user(f"Email Chris the link to the updated slides: {link}")
    a0 = b.answer(
        "There are two contacts called Chris: Chris Adeyemi and Christine Lund. Who should get the link?", [u0]
    )
    u1 = b.user("Chris Adeyemi. Use the subject 'Updated slides'.", [a0])
    w = b.oracle(
        "EmailClientV2",
        "send_email",
        {
            "recipients": ["chris.adeyemi@northwind.io"],
            "subject": "Updated slides",
            "content": f"Hi Chris,\n\nHere is the link to the updated slides: {link}\n\nBest,\nHannah",
            "cc": [],
            "attachment_paths": [],
        },
        [u1],
    )
    b.answer("Sent the slides link to Chris Adeyemi.", [w])
    return b


SHIPPED_SCENARIOS = {
    "search": [search_contacts_dentist, search_calendar_next_meeting, search_email_budget, search_chats_train],
    "execution": [execution_contact_and_email, execution_two_turns],
    "adaptability": [adaptability_email_venue, adaptability_reply_two_turns],
    "time": [time_delayed_chat, time_followup_reminder],
    "ambiguity": [ambiguity_which_sam, ambiguity_which_chris],
}


# ===========================================================================
# test variants
# ===========================================================================


def _small_contacts(b: ScenarioBuilder) -> str:
    """Add a user and one friend; return the friend's contact id."""
    friend = b.hex_id()
    b.standard_apps()
    b.app(
        "Contacts",
        contacts_state(
            contact(
                b.hex_id(),
                "Ada",
                "Lindgren",
                is_user=True,
                gender="Female",
                age=30,
                city_living="Malmö",
                address="Davidshallsgatan 5, 211 45 Malmö",
                country="Sweden",
                email="ada.lindgren@example.se",
                phone="+46 70 555 0101",
            ),
            contact(
                friend,
                "Liam",
                "Novak",
                gender="Male",
                age=33,
                city_living="Malmö",
                country="Sweden",
                job="Carpenter",
                email="liam.novak@example.se",
                phone="+46 70 555 0199",
            ),
        ),
    )
    return friend


def variant_judge_fail() -> ScenarioBuilder:
    """Valid scenario whose oracle holds a READ action (search_contacts): the oracle replay is judged a
    failure ('Tool count mismatch: agent={}, oracle={'ContactsApp__search_contacts': 1}')."""
    b = ScenarioBuilder("scenario_universe_22_ygzpjz", start_time="2024-05-06 09:00:00", tags=["search"], seed=1)
    _small_contacts(b)
    u = b.user("What is Liam Novak's email address?")
    r = b.oracle("Contacts", "search_contacts", {"query": "Liam"}, [u], op="read")
    b.answer("Liam Novak's email address is liam.novak@example.se.", [r])
    return b


def variant_no_events() -> ScenarioBuilder:
    """``events: []``; the task is only in ``completed_events`` (the host must POST /notify)."""
    b = ScenarioBuilder("scenario_universe_23_wuprci", start_time="2024-05-07 09:00:00", tags=["search"], seed=2)
    _small_contacts(b)
    b.completed_user_message("What is Liam Novak's phone number?")
    return b


def variant_other_split() -> ScenarioBuilder:
    """A valid scenario stored under a directory that is not one of the five splits."""
    b = ScenarioBuilder("scenario_universe_24_h029tx", start_time="2024-05-08 09:00:00", tags=["custom"], seed=3)
    _small_contacts(b)
    u = b.user("Which city does Liam Novak live in?")
    b.answer("Liam Novak lives in Malmö.", [u])
    return b


def write_variants() -> list[Path]:
    out: list[Path] = []
    jf = variant_judge_fail()
    out.append(jf.write(TEST_DATA / "judge_fail" / "search" / f"{jf.scenario_id}.json"))
    ne = variant_no_events()
    out.append(ne.write(TEST_DATA / "no_events" / "search" / f"{ne.scenario_id}.json"))
    os_ = variant_other_split()
    out.append(os_.write(TEST_DATA / "other_split" / "custom" / f"{os_.scenario_id}.json"))

    mal = TEST_DATA / "malformed"
    mal.mkdir(parents=True, exist_ok=True)

    # Broken JSON: a valid-looking scenario cut off mid-object.
    p = mal / "not_json.json"
    p.write_text(
        '{\n  "metadata": {"definition": {"scenario_id": "scenario_universe_25_vncgvt",\n  "events": [\n',
        encoding="utf-8",
    )
    out.append(p)

    # A JSON list instead of an object.
    p = mal / "not_object.json"
    write_json(p, [{"scenario_id": "scenario_universe_25_wvrz2i", "events": []}])
    out.append(p)

    # No metadata.definition.scenario_id.
    b = ScenarioBuilder("scenario_universe_26_kt6swg", start_time="2024-05-09 09:00:00", tags=["search"])
    _small_contacts(b)
    u = b.user("What is Liam Novak's job?")
    b.answer("Liam Novak is a carpenter.", [u])
    d = b.to_dict()
    del d["metadata"]["definition"]["scenario_id"]
    p = mal / "missing_id.json"
    write_json(p, d)
    out.append(p)

    # events is an object, not a list.
    b = ScenarioBuilder("scenario_universe_27_sbru4h", start_time="2024-05-09 09:00:00", tags=["search"])
    _small_contacts(b)
    u = b.user("What is Liam Novak's job?")
    b.answer("Liam Novak is a carpenter.", [u])
    d = b.to_dict()
    d["events"] = {ev["event_id"]: ev for ev in d["events"]}
    p = mal / "events_not_list.json"
    write_json(p, d)
    out.append(p)

    # An event whose action lacks "function".
    b = ScenarioBuilder("scenario_universe_28_vn6cq9", start_time="2024-05-09 09:00:00", tags=["search"])
    _small_contacts(b)
    u = b.user("What is Liam Novak's job?")
    b.answer("Liam Novak is a carpenter.", [u])
    d = b.to_dict()
    del d["events"][1]["action"]["function"]
    p = mal / "action_missing_function.json"
    write_json(p, d)
    out.append(p)

    # Two valid files (different content) sharing one scenario_id.
    for sub, question, ans in (
        ("dup_a", "What is Liam Novak's job?", "Liam Novak is a carpenter."),
        ("dup_b", "Which city does Liam Novak live in?", "Liam Novak lives in Malmö."),
    ):
        b = ScenarioBuilder("scenario_universe_29_dup0aa", start_time="2024-05-10 09:00:00", tags=["search"])
        _small_contacts(b)
        u = b.user(question)
        b.answer(ans, [u])
        out.append(b.write(mal / sub / "search" / "x.json"))
    return out


def write_shipped() -> list[Path]:
    out = []
    for split, makers in SHIPPED_SCENARIOS.items():
        for make in makers:
            b = make()
            out.append(b.write(SHIPPED / split / f"{b.scenario_id}.json"))
    return out


def main() -> None:
    for p in write_shipped() + write_variants():
        print(p.relative_to(REPO))


if __name__ == "__main__":
    main()
