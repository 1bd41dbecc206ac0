"""What a run's records say: rates and intervals, repeats, paired comparisons (of runs: ``comparison``), the leaderboard export, the plan of a run to come, the list of runs, the gate, the summary, progress, the pages (index, trace, report) and Allure's run files.

May import: cost, plan, config, store.
Pure reading and writing of run folders: no engine, no pytest hooks.
"""
