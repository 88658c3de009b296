# Query: what is read from catalogs: diff, list, explain, match, the analysis, and history across revisions.
