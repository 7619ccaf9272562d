"""fleet: one lock for a mixed cluster.

``nodes`` reads a folder of ``probe --json`` files (one per node or node type); ``classes`` groups the
nodes into classes that share one environment (``decide`` per node, then the union of the class's GPU
architectures); ``record`` keeps the classes in pixi.toml (``[tool.resolver.fleet]``) so every checkout
knows them, turns them into the CI build matrix and finds a node's class; ``channel`` publishes built
kernel packages to a shared channel and fetches a node's exact variants from it. See docs/fleet.md.
"""
