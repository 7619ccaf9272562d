from resolver.cli import entry

entry()
