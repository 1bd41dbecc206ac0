"""Which scenarios run: scenario files, selection (-k/-m aside), shards, the dataset, planned items, the rehearsal pool.

May import: config, store.
"""
