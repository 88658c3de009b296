# Site: a catalog as a static site: its inputs read from disk, its pages rendered (source highlighted with its
# own lexer), and the build that writes and swaps them in; assets/ holds the templates and static files.
