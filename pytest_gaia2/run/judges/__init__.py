"""Offline judges that ``pytest-gaia2 rejudge`` copies into images which have none of their own.

The scripts here run inside the image, with the image's Python and the image's own judge
code; the host package never imports them.
"""
