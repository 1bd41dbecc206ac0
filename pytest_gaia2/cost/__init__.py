"""Tokens and money: usage read from traces, prices, the spend ledger, budgets, the cost projection.

May import: config, store (never plan: what the probe needs is passed in).
Every number is finite and range-checked where it enters.
"""
