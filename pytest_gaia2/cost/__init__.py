"""Tokens and money: usage read from traces, prices, the spend ledger, budgets, the cost projection.

May import: plan, config, store.
Every number is finite and range-checked where it enters.
"""
