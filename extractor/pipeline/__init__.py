# Pipeline: one extraction: the options, the worker processes, the scheduler and its cache, the catalog
# lines, fields and flags resolved, and the catalog written.
