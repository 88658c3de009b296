# Catalog: a catalog from anywhere (a revision, a release, a folder or a records.jsonl), and the nightly
# root that publishes them.
