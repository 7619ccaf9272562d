"""Environment building blocks for lock and install: the lock file model and the PyPI side."""
