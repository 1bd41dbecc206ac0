"""The pytest face: hooks, the run's pytest half (the controller), the options as pytest reads them, the scenario item, report annotations, Allure, live status, hookspecs, the xdist schedulers (chains, items in flight).

May import: Everything below: run, report, cost, plan, config, engine, store. Not cli.
The only room that imports pytest, _pytest or xdist (an import-linter contract) and registers pytest hooks;
private pytest or allure-pytest API only through :mod:`.private_api`.
"""
