# The extractor's version, recorded in every manifest and part of every cache key.
__version__ = "0.1.0"
