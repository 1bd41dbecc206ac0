"""What a run's records say: rates and intervals, repeats, paired comparisons (of runs: ``comparison``), the leaderboard export, the plan of a run to come, the list of runs, the gate, the summary, progress, the pages (index, trace, report; their one jinja2 environment and its cache of compiled templates: ``templating``) and Allure's run files.

May import: cost, config, store (never plan: the record carries what a scenario file said).
Pure reading and writing of run folders: no engine, no pytest hooks.
"""
