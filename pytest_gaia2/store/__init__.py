"""The results store and the typed record: run folders, atomic masked writes, bounded JSON readers, an attempt folder's evidence read in one pass, names, limits, redaction, phases, the version; the console command's error and the new files it writes outside every run folder (``console``); the user's cache folder and its private folders (``user_cache``).

May import: nothing of the package: it is the floor.
Every write's final bytes are masked here.
"""
