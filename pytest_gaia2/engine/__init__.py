"""The container engine and nothing else: the client, the pool, containers, archives, errors, the adapter's HTTP, ports.

May import: store.
The only room that imports ``docker``.
"""
