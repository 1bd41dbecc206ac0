"""The console command ``pytest-gaia2`` for the week after a run: report, compare, merge, rejudge, list,
plan, export; and ``rehearsal``, a pool to rehearse on before it.

May import: Everything below: run, report, cost, plan, config, engine, store. Not plugin.
It never writes into an existing run folder except the report pages, and never over a file.
"""
