"""Unit tests, in folders that mirror the package's rooms (``tests/unit/store`` tests
``pytest_gaia2.store``, and so on). No engine, no subprocess pytest run: the fast lane.

This conftest's folder is put on ``sys.path`` by pytest, so the shared builders in
``gaia2_records.py`` import from every room's folder.
"""
