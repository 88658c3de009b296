# History: revisions listed, each one's checks, the lineage of every check across them, its folder and its changelog.
