# Util: what every stage uses and none owns: atomic files, progress and one-line messages, Markdown text,
# suggestions, and the process's lifecycle (signals, streams, the collector), opened once by the command line.
