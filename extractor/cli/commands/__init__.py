# Commands: one module per subcommand, named as the command; each has `parser()` and `run(argv) -> int`.
