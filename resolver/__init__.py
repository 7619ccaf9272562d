"""mamba-resolver: choose, lock, build and verify PyTorch + Mamba kernel environments.

Importing this package is cheap on purpose: no torch, no py-rattler, no network. Each stage
imports what it needs when it runs.
"""

__version__ = "0.1.0"
