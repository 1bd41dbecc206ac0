"""The console command ``pytest-gaia2`` for the week after a run: report, compare, merge, rejudge, list,
plan, export; and ``rehearsal``, a pool to rehearse on before it.

Argument parsing and printing: ``main`` dispatches to one module per command by name, and no
command module imports another (an import-linter contract). The work is done below: rejudge's
containers in ``run.rejudge``, the merged folder in ``run.merge``, the comparison, the export,
the plan and the list in ``report.comparison``, ``report.export``, ``report.planning`` and
``report.run_list``, the run-folder readers the commands share in ``report.runs``, the
rehearsal pool in ``plan.rehearsal``, the commands' error and new files in ``store.console``.

May import: Everything below: run, report, cost, plan, config, engine, store. Not plugin.
It never writes into an existing run folder except the report pages, and never over a file.
"""
