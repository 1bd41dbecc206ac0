"""Which scenarios run: scenario files, selection (-k/-m aside), shards, the dataset, planned items.

May import: config, store.
"""
