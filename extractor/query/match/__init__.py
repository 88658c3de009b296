# Match: a pasted error or a log -> the catalog records that raised it: normalize, pattern, answer, matcher, index.
