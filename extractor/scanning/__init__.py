# Scanning: one file's bytes -> its raise sites, with conditions, functions, fields and message templates
# (ast locates, libcst reads message expressions). Runs in worker processes without pydantic.
