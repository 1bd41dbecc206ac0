"""One run: its context (without pytest: the plugin's controller is its pytest half) and the terms it speaks with the process it runs in (``terms``: the invocation in, the exit statuses out), its plan (``run_plan``: the scenarios found, the items, chains, probe and baseline), pre-flight, the run folder's opening (``folder_opening``: its place, creation and lock, the resume check, run_config.json), the run's end (``run_end``: the workers wound down, records recovered, the run's files and exit status, the sweep), its model gateway from plan to stop (``run_gateway``), a scenario's attempts in a container (several in flight in one process: ``ahead``), the evidence copied out, the verdict rules, provenance and interrupts; and the re-judge of a finished run's saved events in containers (``rejudge``), and one run folder merged from several (``merge``).

May import: report, cost, plan, config, engine, store.
The only room that starts containers, for scenarios and for re-judges.
"""
