"""The pytest face: hooks, the scenario item, report annotations, Allure, live status, hookspecs.

May import: Everything below: run, report, cost, plan, config, engine, store. Not cli.
The only room that registers pytest hooks; private pytest or allure-pytest API only through :mod:`.private_api`.
"""
