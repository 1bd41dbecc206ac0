"""pytest-gaia2: every Gaia2 scenario is a pytest test that runs in its own container."""

__version__ = "0.1.0"
