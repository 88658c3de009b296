# CLI: the command line: main (the process, every failure one line), options (what the parsers share), extract
# (the default command) and commands/ (one module per subcommand, found by name).
