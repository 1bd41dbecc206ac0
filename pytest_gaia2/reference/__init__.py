"""The reference image: a model-free image that honours the gaia2-cli container contract.

Only ``build.py`` runs on the host; the ``gaia2_ref_*.py`` programs and the
shell script run inside the image and are never imported by the host package.
"""
